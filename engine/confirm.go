package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Confirmation is the outcome, still to come, of a message sent with
// Producer.SendToAsync, of an acknowledgement made with
// Session.AcknowledgeConfirm, or of a settlement made with
// Session.SettleConfirm. A nil Confirmation is already confirmed.
type Confirmation struct {
	ew   *earlyWrite   // consume before store
	add  *orderedAdd   // store first
	ack  store.Pending // an acknowledgement's delete (AcknowledgeConfirm), or redelivery records
	dest message.Destination
	// record says ack writes redelivery records (SettleConfirm), not an
	// acknowledgement's delete.
	record bool

	// Consume before store: the message, taken off its queue when its
	// write fails (once).
	b        *Broker
	r        *ref
	takeOnce sync.Once

	// counter is the broker's totals, counted once per Confirmation
	// (counted), when Wait first tells its outcome.
	counter *totals
	counted atomic.Bool
}

// Ready reports whether Wait would return at once.
func (c *Confirmation) Ready() bool {
	if c == nil {
		return true
	}
	if c.add != nil {
		return isClosed(c.add.done)
	}
	if c.ack != nil {
		return isClosed(c.ack.Done())
	}
	if c.ew == nil {
		return true
	}
	if isClosed(c.ew.consumed) {
		return c.ew.verify == nil || isClosed(c.ew.verify.Done())
	}
	c.ew.mu.Lock()
	p := c.ew.pending
	c.ew.mu.Unlock()
	select {
	case <-p.Done():
		// A write withdrawn to be replaced by one carrying a delivery mark
		// is not an outcome yet.
		return !errors.Is(p.Err(), store.ErrWithdrawn) || isClosed(c.ew.consumed)
	default:
		return false
	}
}

// Wait returns once the message is durable or consumed (nil), or could not
// be stored (the message is then taken off its queue unless a consumer has
// it), or ctx ends (the outcome is then followed in the background, so a
// failed write still takes its message back). When the store cannot tell
// whether it stored the write (store.ErrIndeterminate), the error says the
// outcome is unknown and wraps ErrFenced; nothing is taken back (fence.go).
func (c *Confirmation) Wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	err := c.wait(ctx)
	if c.counter != nil && (err == nil || ctx.Err() == nil) && c.counted.CompareAndSwap(false, true) {
		if err == nil {
			c.counter.confirmed.Add(1)
		} else {
			c.counter.confirmFailed.Add(1)
		}
	}
	return err
}

// wait is Wait without counting the outcome.
func (c *Confirmation) wait(ctx context.Context) error {
	if c.add != nil {
		select {
		case <-c.add.done:
			return c.add.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.ack != nil {
		select {
		case <-c.ack.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := c.ack.Err(); err != nil {
			if indeterminate(err) {
				what := "the acknowledgement on " + c.dest.String()
				if c.record {
					what = "the redelivery record on " + c.dest.String()
				}
				return outcomeUnknown(what, err)
			}
			if c.record {
				return fmt.Errorf("store redelivery record on %s: %w", c.dest, err)
			}
			return fmt.Errorf("store acknowledgement on %s: %w", c.dest, err)
		}
		return nil
	}
	if c.ew == nil {
		return nil
	}
	ew := c.ew
	for {
		ew.mu.Lock()
		p := ew.pending
		ew.mu.Unlock()
		select {
		case <-ew.consumed:
			return c.verified(ctx)
		case <-ctx.Done():
			// Nobody waits any more: a write that fails must still take
			// its message back (takeBack), so follow it to its end.
			go func() { _ = c.wait(context.Background()) }()
			return ctx.Err()
		case <-p.Done():
		}
		switch err := p.Err(); {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrWithdrawn):
			// Taken back for a settlement (consumed is closed) or replaced
			// by a write with a delivery mark: look again.
		case indeterminate(err):
			// Fenced: the message may be stored; it is not taken back.
			return outcomeUnknown("the message to "+c.dest.String(), err)
		default:
			c.takeBack()
			return fmt.Errorf("store message for %s: %w", c.dest, err)
		}
	}
}

// verified waits, for a message consumed before it was stored, until the
// store has confirmed that it still leads (store.Verifier), where it
// must. A store that cannot confirm it (a deposed leader) makes the
// outcome unknown: the message was consumed here, but by a node that may
// no longer have been the leader.
func (c *Confirmation) verified(ctx context.Context) error {
	v := c.ew.verify
	if v == nil {
		return nil
	}
	select {
	case <-v.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := v.Err(); err != nil {
		return unknownOutcome("the message to "+c.dest.String()+" was consumed before it was stored, but this node could not confirm that it still leads", err)
	}
	return nil
}

// takeBack takes a message whose write failed off its queue, unless a
// consumer has it already: its producer is told the send failed and may
// send it again, so it should not be delivered as well.
func (c *Confirmation) takeBack() {
	if c.b == nil || c.r == nil {
		return
	}
	c.takeOnce.Do(func() {
		r := c.r
		if n := r.q.take(func(x *ref) bool { return x == r }).len(); n > 0 {
			c.b.log.Warn("a message whose write failed was taken off its queue",
				slog.String("destination", r.q.dest.String()), slog.String("message_id", r.msg.ID))
		}
	})
}

// sendAsync is send without waiting for a persistent queue message's
// write, for sends from s. With consume before store the message goes on
// its queue at once and its write commits with others (a consumer's
// acknowledgement before the commit takes the write back); without it the
// write is submitted at once and the message goes on its queue when the
// write is durable, after the session's earlier such sends (ordered
// writes). Either way a session's persistent messages keep their order.
// Sends that cannot go this way (topics, scheduled messages, a store
// without Submit) are made synchronously and return a nil Confirmation.
func (b *Broker) sendAsync(ctx context.Context, s *Session, dest message.Destination, m *message.Message, def ProducerDefaults, o SendOptions) (*Confirmation, error) {
	d, err := b.prepareSend(s.conn, dest, m, def, o)
	if err != nil {
		return nil, err
	}
	if d.q != nil && d.q.bucket != "" && deliverAt(m) == 0 && (m.DeliveryMode == message.Persistent || d.q.backlogged()) {
		if sub, ok := b.submitter(); ok {
			r := b.queueRef(d.q, m)
			if r.rec == nil {
				// Non-persistent, and the backlog went meanwhile.
				r.q.add(r)
				return nil, nil
			}
			backlog, waiting := r.q.sendState()
			if r.rec.transient {
				backlog = true
			}
			if !b.cfg.ConsumeBeforeStore || backlog {
				// Behind a backlog a message is not consumed before its
				// write: store it first, so that it can be paged.
				return s.writes.submit(b, sub, r), nil
			}
			linger := time.Duration(0)
			if waiting {
				linger = r.q.early.hold()
			}
			return b.submitEarly(r, linger), nil
		}
	}
	return nil, b.sendPrepared(ctx, d, m)
}

// orderedWrites are a session's store-first sends whose writes are not
// yet durable, in the order sent. A goroutine, running while there are
// any, puts each message on its queue once its write is durable, in that
// order, so the messages are never visible before they are on disk and
// keep their order, while the session goes on sending.
type orderedWrites struct {
	mu      sync.Mutex
	adds    []*orderedAdd
	running bool
}

// orderedAdd is one store-first send.
type orderedAdd struct {
	r    *ref
	p    store.Pending
	done chan struct{} // closed once r is on its queue, or its write failed
	err  error
}

// submit submits r's write and queues r to be added once it is durable.
func (w *orderedWrites) submit(b *Broker, sub store.Submitter, r *ref) *Confirmation {
	a := &orderedAdd{r: r, done: make(chan struct{})}
	a.p = sub.Submit(b.storeOpsForAdd([]*ref{r}, nil), 0)
	w.mu.Lock()
	w.adds = append(w.adds, a)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.run(b)
	}
	return &Confirmation{add: a, dest: r.q.dest, counter: &b.totals}
}

// run adds the messages in order as their writes become durable; it ends
// when none is left.
func (w *orderedWrites) run(b *Broker) {
	for {
		w.mu.Lock()
		if len(w.adds) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		a := w.adds[0]
		w.mu.Unlock()
		<-a.p.Done()
		if err := a.p.Err(); indeterminate(err) {
			// Fenced: the message may be stored; it is neither forgotten
			// nor delivered from this engine.
			a.err = outcomeUnknown("the message to "+a.r.q.dest.String(), err)
		} else if err != nil {
			b.undoAdd([]*ref{a.r})
			a.err = fmt.Errorf("store message for %s: %w", a.r.q.dest, err)
		} else {
			a.r.q.add(a.r)
		}
		close(a.done)
		w.mu.Lock()
		w.adds[0] = nil
		w.adds = w.adds[1:]
		w.mu.Unlock()
	}
}
