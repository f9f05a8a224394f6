package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Confirmation is the outcome, still to come, of a message sent with
// Producer.SendToAsync. A nil Confirmation is a send already confirmed.
type Confirmation struct {
	ew   *earlyWrite // nil: confirmed when made
	dest message.Destination
}

// Ready reports whether Wait would return at once.
func (c *Confirmation) Ready() bool {
	if c == nil || c.ew == nil {
		return true
	}
	select {
	case <-c.ew.consumed:
		return true
	default:
	}
	c.ew.mu.Lock()
	p := c.ew.pending
	c.ew.mu.Unlock()
	select {
	case <-p.Done():
		// A write withdrawn to be replaced by one carrying a delivery mark
		// is not an outcome yet.
		return !errors.Is(p.Err(), store.ErrWithdrawn) || c.consumed()
	default:
		return false
	}
}

func (c *Confirmation) consumed() bool {
	select {
	case <-c.ew.consumed:
		return true
	default:
		return false
	}
}

// Wait returns once the message is durable or consumed (nil), or could not
// be stored, or ctx ends. The message is on its queue either way: a failed
// confirmation means only that the broker cannot vouch for it.
func (c *Confirmation) Wait(ctx context.Context) error {
	if c == nil || c.ew == nil {
		return nil
	}
	ew := c.ew
	for {
		ew.mu.Lock()
		p := ew.pending
		ew.mu.Unlock()
		select {
		case <-ew.consumed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
		}
		switch err := p.Err(); {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrWithdrawn):
			// Taken back for a settlement (consumed is closed) or replaced
			// by a write with a delivery mark: look again.
		default:
			return fmt.Errorf("store message for %s: %w", c.dest, err)
		}
	}
}

// sendAsync is send without waiting for a persistent queue message's
// write: the message goes on its queue at once, in the order of the calls,
// and its write commits with others (consume-before-store applies: a
// consumer's acknowledgement before the commit takes the write back). Sends
// that cannot go this way (topics, scheduled messages, a store without
// Submit, consume_before_store off) are made synchronously and return a nil
// Confirmation.
func (b *Broker) sendAsync(ctx context.Context, conn *Connection, dest message.Destination, m *message.Message, def ProducerDefaults, o SendOptions) (*Confirmation, error) {
	d, err := b.prepareSend(conn, dest, m, def, o)
	if err != nil {
		return nil, err
	}
	if b.cfg.ConsumeBeforeStore && d.q != nil && d.q.bucket != "" && m.DeliveryMode == message.Persistent && deliverAt(m) == 0 {
		r := b.queueRef(d.q, m)
		linger := time.Duration(0)
		if r.q.hasEligibleConsumer() {
			linger = earlyLinger
		}
		if c := b.submitEarly(r, linger); c != nil {
			return c, nil
		}
	}
	return nil, b.sendPrepared(ctx, d, m)
}
