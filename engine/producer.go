package engine

import (
	"context"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// ProducerDefaults are the values a producer gives messages that a send does
// not set (JMS producer attributes plus WebLogic's time-to-deliver and
// redelivery limit).
type ProducerDefaults struct {
	// DeliveryMode; zero means Persistent, the JMS default.
	DeliveryMode message.DeliveryMode
	// Priority 0-9; nil-like zero value is 0, so the JMS default 4 must be
	// given explicitly: use DefaultProducerDefaults.
	Priority uint8
	// TimeToLive; 0 means messages never expire.
	TimeToLive time.Duration
	// TimeToDeliver is a relative delivery delay; 0 delivers at once.
	TimeToDeliver time.Duration
	// RedeliveryLimit; message.NoRedeliveryLimit means none.
	RedeliveryLimit int32
}

// DefaultProducerDefaults returns the JMS defaults: persistent, priority 4,
// no expiry, no delay, no redelivery limit.
func DefaultProducerDefaults() ProducerDefaults {
	return ProducerDefaults{DeliveryMode: message.Persistent, Priority: 4, RedeliveryLimit: message.NoRedeliveryLimit}
}

// SendField says which fields of SendOptions a send sets.
type SendField uint8

// SendOptions fields.
const (
	SetDeliveryMode SendField = 1 << iota
	SetPriority
	SetTimeToLive
	SetTimeToDeliver
	SetDeliveryTime
	SetRedeliveryLimit
	SetExpiration
)

// SendOptions override the producer's defaults for one send.
type SendOptions struct {
	// Set says which of the fields below apply.
	Set             SendField
	DeliveryMode    message.DeliveryMode
	Priority        uint8
	TimeToLive      time.Duration // relative; 0 = never expires
	Expiration      int64         // absolute ms (STOMP "expires"); 0 = never
	TimeToDeliver   time.Duration // relative delay
	DeliveryTime    int64         // absolute ms; wins over TimeToDeliver
	RedeliveryLimit int32
}

// Producer sends messages (JMS MessageProducer).
type Producer struct {
	sess *Session
	dest message.Destination
	// Defaults are the producer's attributes; change them between sends.
	Defaults ProducerDefaults
}

// Destination returns the producer's destination (zero when anonymous).
func (p *Producer) Destination() message.Destination { return p.dest }

// Send sends m to the producer's destination. Send takes ownership of m: the
// engine sets its header fields (JMSTimestamp, JMSDestination, …) and shares
// it with consumers, so the caller must not change or send it again. A
// JMSMessageID already set (AMQP clients such as Qpid JMS choose their own,
// and correlate replies on it) is kept; an empty one is assigned. A persistent
// message to a durable destination is stored before Send returns.
func (p *Producer) Send(ctx context.Context, m *message.Message, o SendOptions) error {
	return p.SendTo(ctx, p.dest, m, o)
}

// SendTo sends m to dest (for anonymous producers; a producer with a
// destination may not name another).
func (p *Producer) SendTo(ctx context.Context, dest message.Destination, m *message.Message, o SendOptions) error {
	if err := p.checkSend(dest); err != nil {
		return err
	}
	if p.sess.mode == Transacted {
		return p.SendIn(ctx, p.sess.txn, dest, m, o)
	}
	return p.sess.conn.b.send(ctx, p.sess.conn, dest, m, p.Defaults, o)
}

// SendIn sends m as part of tx: it becomes visible when tx commits. The
// message takes its room under the destination's quota now, as a send
// outside a transaction does: a send over quota fails at once (or after the
// policy's BlockingSendTimeout) with CodeResourceAllocation, leaving tx
// open; the room is held until tx commits (the message is then on the
// destination) or rolls back or is abandoned (the room comes back).
func (p *Producer) SendIn(ctx context.Context, tx *Txn, dest message.Destination, m *message.Message, o SendOptions) error {
	if err := p.sess.checkOpen(); err != nil {
		return err
	}
	if dest.IsZero() {
		dest = p.dest
	}
	if err := p.sess.conn.authorize(ActionSend, dest); err != nil {
		return err
	}
	b := p.sess.conn.b
	d, err := b.resolve(dest, p.sess.conn, false)
	if err != nil {
		return err
	}
	if err := b.stamp(d, p.sess.conn, m, p.Defaults, o); err != nil {
		return err
	}
	return tx.addSend(d, m)
}

// SendToAsync is SendTo without waiting for a persistent message to be
// stored, for front-ends that pipeline sends (AMQP transfers, STOMP frames
// with receipts). The session's messages keep their order (with consume
// before store a message is enqueued before SendToAsync returns; without,
// once its write is durable, after the session's earlier ones), and the
// Confirmation tells when the broker vouches for it (durable or consumed)
// or that its write failed. Errors known at once (destination, format,
// quota) are returned here. In a transacted session it is SendTo,
// confirmed at once.
func (p *Producer) SendToAsync(ctx context.Context, dest message.Destination, m *message.Message, o SendOptions) (*Confirmation, error) {
	if err := p.checkSend(dest); err != nil {
		return nil, err
	}
	if p.sess.mode == Transacted {
		return nil, p.SendIn(ctx, p.sess.txn, dest, m, o)
	}
	b := p.sess.conn.b
	conf, err := b.sendAsync(ctx, p.sess, dest, m, p.Defaults, o)
	if err == nil && conf == nil {
		b.totals.confirmed.Add(1) // nothing to wait for: confirmed now
	}
	return conf, err
}

// checkSend checks that the producer may send to dest.
func (p *Producer) checkSend(dest message.Destination) error {
	if err := p.sess.checkOpen(); err != nil {
		return err
	}
	if !p.dest.IsZero() && dest != p.dest {
		return errorf(CodeJMS, "producer is bound to %s; cannot send to %s", p.dest, dest)
	}
	if dest.IsZero() {
		return errorf(CodeInvalidDestination, "no destination given")
	}
	return p.sess.conn.authorize(ActionSend, dest)
}
