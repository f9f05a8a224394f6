package engine

import "github.com/sluicemq/sluice/engine/message"

// DestinationExists reports whether dest exists now, without the counts
// DestinationInfo gathers under the destination's lock: a front-end that
// routes by name (AMQP 0-9-1's default exchange) asks it on every send.
func (b *Broker) DestinationExists(dest message.Destination) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.dests[dest] != nil
}
