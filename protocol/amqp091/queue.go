package amqp091

import (
	"context"
	"errors"
	"strings"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// resolveQueue maps a queue name a client uses to the engine queue: one of
// the connection's exclusive queues by the name it declared, a server-named
// queue ("amq.gen-…", of any connection), else the engine queue NAME, the
// one STOMP's /queue/NAME and AMQP 1.0's NAME reach.
func (c *conn) resolveQueue(name string) message.Destination {
	if d, ok := c.lookupTemp(name); ok {
		return d
	}
	if d, ok := isServerNamed(name); ok {
		return d
	}
	return message.Destination{Kind: message.Queue, Name: name}
}

// queueInfo describes a queue; ok is false when it does not exist.
func (c *conn) queueInfo(d message.Destination) (engine.DestinationInfo, bool) {
	info, err := c.srv.eng.DestinationInfo(d)
	return info, err == nil
}

// allowed reports whether the connection's user may take action a on d
// (always with security off).
func (c *conn) allowed(a engine.Action, d message.Destination) bool {
	p := c.identity.Permissions
	return p == nil || d.Kind.IsTemporary() || p.Allows(a, d)
}

func (ch *channel) queueDeclare(m *spec.QueueDeclare) error {
	c := ch.c
	name := m.Queue
	if !m.Passive && strings.HasPrefix(name, "amq.") {
		if _, ours := c.lookupTemp(name); !ours {
			return refuse(spec.AccessRefused, m, "queue name '%s' contains reserved prefix 'amq.*'", name)
		}
	}
	var d message.Destination
	switch {
	case name == "" || m.Exclusive:
		if m.Passive {
			d = c.resolveQueue(name)
			break
		}
		if _, ok := c.lookupTemp(name); ok && name != "" {
			d = c.resolveQueue(name)
			break
		}
		if name != "" {
			if _, exists := c.queueInfo(message.Destination{Kind: message.Queue, Name: name}); exists {
				return refuse(spec.ResourceLocked, m, "cannot obtain exclusive access to locked queue '%s'", name)
			}
		}
		var err error
		if name, d, err = c.temporaryQueue(name); err != nil {
			return err
		}
	default:
		d = c.resolveQueue(name)
		if d.Kind == message.Queue {
			if err := engine.ValidateDestinationName(name); err != nil {
				return refuse(spec.PreconditionFailed, m, "queue name '%s': %v", name, err)
			}
		}
		if !m.Passive && d.Kind == message.Queue {
			if _, exists := c.queueInfo(d); !exists {
				if !c.allowed(engine.ActionCreate, d) {
					return refuse(spec.AccessRefused, m, "access to queue '%s' refused for user '%s'", name, c.identity.User)
				}
				if _, err := c.srv.eng.CreateDestination(context.Background(), d); err != nil {
					return err
				}
			}
		}
	}
	info, ok := c.queueInfo(d)
	if !ok {
		return refuse(spec.NotFound, m, "no queue '%s'", name)
	}
	if m.AutoDelete && !m.Passive && d.Kind == message.Queue {
		c.srv.markAutoDelete(d)
	}
	if !m.NoWait {
		c.method(ch.id, &spec.QueueDeclareOk{Queue: name, MessageCount: uint32(min(info.Messages, 1<<32-1)),
			ConsumerCount: uint32(info.Consumers)})
	}
	return nil
}

func (ch *channel) queuePurge(m *spec.QueuePurge) error {
	d := ch.c.resolveQueue(m.Queue)
	if _, ok := ch.c.queueInfo(d); !ok {
		return refuse(spec.NotFound, m, "no queue '%s'", m.Queue)
	}
	if !ch.c.allowed(engine.ActionConsume, d) {
		return refuse(spec.AccessRefused, m, "access to queue '%s' refused for user '%s'", m.Queue, ch.c.identity.User)
	}
	n, err := ch.c.srv.eng.Purge(context.Background(), d)
	if err != nil {
		return err
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.QueuePurgeOk{MessageCount: uint32(min(n, 1<<32-1))})
	}
	return nil
}

func (ch *channel) queueDelete(m *spec.QueueDelete) error {
	c := ch.c
	d := c.resolveQueue(m.Queue)
	info, ok := c.queueInfo(d)
	if !ok {
		// RabbitMQ answers delete-ok for a queue that is not there: the
		// outcome the client asked for holds.
		if !m.NoWait {
			c.method(ch.id, &spec.QueueDeleteOk{})
		}
		return nil
	}
	if m.IfUnused && info.Consumers > 0 {
		return refuse(spec.PreconditionFailed, m, "queue '%s' in use", m.Queue)
	}
	if m.IfEmpty && info.Messages > 0 {
		return refuse(spec.PreconditionFailed, m, "queue '%s' not empty", m.Queue)
	}
	if !c.allowed(engine.ActionCreate, d) {
		return refuse(spec.AccessRefused, m, "access to queue '%s' refused for user '%s'", m.Queue, c.identity.User)
	}
	var err error
	if d.Kind.IsTemporary() {
		// The queue's consumers on this connection are cancelled first:
		// the engine deletes a temporary queue only without consumers.
		for _, other := range c.channels {
			for tag, cs := range other.consumers {
				if cs.dest == d {
					other.dropConsumer(tag, cs)
					c.method(other.id, &spec.BasicCancel{ConsumerTag: tag, NoWait: true})
				}
			}
		}
		err = c.eng.DeleteTemporary(d)
		if err == nil {
			c.forgetTemp(m.Queue)
		}
	} else {
		err = c.srv.eng.DeleteDestination(context.Background(), d)
	}
	c.srv.ex.unbindQueue(d)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	if !m.NoWait {
		c.method(ch.id, &spec.QueueDeleteOk{MessageCount: uint32(min(info.Messages, 1<<32-1))})
	}
	return nil
}
