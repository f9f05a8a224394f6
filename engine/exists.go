package engine

import "github.com/sluicemq/sluice/engine/message"

// Cheap questions about destinations, for front-ends that ask them on
// every send (AMQP 0-9-1 routes by name, and returns what nothing takes):
// unlike DestinationInfo they take no queue's lock and count nothing.

// DestinationExists reports whether dest exists now.
func (b *Broker) DestinationExists(dest message.Destination) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.dests[dest] != nil
}

// HasSubscriptions reports whether topic exists and has a subscription,
// durable or not, active or not: whether a message published to it now
// would be kept anywhere (before selectors and noLocal).
func (b *Broker) HasSubscriptions(topic message.Destination) bool {
	b.mu.RLock()
	d := b.dests[topic]
	b.mu.RUnlock()
	if d == nil || d.t == nil {
		return false
	}
	return d.t.hasSubscriptions()
}

func (t *topic) hasSubscriptions() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.plain) > 0 {
		return true
	}
	for _, set := range t.index {
		if len(set) > 0 {
			return true
		}
	}
	return false
}
