package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// Consume before store.
//
// A persistent message sent to a queue that has a consumer waiting is
// handed to the consumer at once, while its write lingers briefly in the
// store's queue (earlyLinger). When the consumer acknowledges it before
// the write's commit has begun, the write is taken back: the message was
// never written, and its producer is confirmed because the message is
// consumed. Otherwise the producer is confirmed when the write is durable.
// Either way, a confirmed message is durable or consumed, never lost;
// RabbitMQ confirms the same way. A delivery mark that comes while the
// write can still be taken back replaces the write by one that carries the
// mark, so a message delivered before a crash still comes back flagged as
// redelivered; the replacement reuses the message's encoding and is held
// for the acknowledgement (earlyAckHold).

// earlyLinger is how long a write may wait for its message to be
// delivered, and earlyAckHold how long it may wait, once the message is
// delivered (markEarly), for the acknowledgement that takes it back. A
// write that outlives its hold costs a sync, a delete later and, when it
// is committed before the delivery, a synchronous mark that holds up the
// consumer's next deliveries, so that the messages behind it outlive
// their holds too. At 1 ms each, 25,000 persistent messages/s over AMQP
// 1.0 (64 in flight, a pre-settled consumer, 2 busy cores) wrote 16-25%
// of the messages, as a fifth of the acknowledgements came over 1 ms
// after the delivery; at 4 ms, 1-3%. A consumer slower than that gets its
// producer confirmed a hold plus a sync after the send, once the write is
// durable.
const (
	earlyLinger  = 4 * time.Millisecond
	earlyAckHold = 4 * time.Millisecond
)

// earlyAwaitMax bounds how long a removal that may be undone waits for the
// pending first writes of its messages (awaitEarlyWrites).
const earlyAwaitMax = 30 * time.Second

// earlyAwaitReplacements bounds how many times awaitEarlyWrites follows a
// pending write replaced by one carrying a delivery mark (markEarly).
const earlyAwaitReplacements = 16

// earlyWrite is the pending first write of a message sent early.
type earlyWrite struct {
	mu       sync.Mutex
	pending  store.Pending
	consumed chan struct{} // closed when the message was settled and its write withdrawn
	// msg is the message record's put of the pending write, encoded once,
	// for markEarly's replacement; dropped once the write cannot be
	// replaced any more.
	msg store.Op
}

// sendEarly tries to send r (a persistent message's only ref, on a queue)
// consume-before-store. ok is false when it does not apply; the caller then
// stores and enqueues as usual.
func (b *Broker) sendEarly(ctx context.Context, r *ref) (ok bool, err error) {
	if !b.cfg.ConsumeBeforeStore || r.rec == nil || r.deliverAt != 0 || !r.q.hasEligibleConsumer() {
		return false, nil
	}
	c := b.submitEarly(r, earlyLinger)
	if c == nil {
		return false, nil
	}
	return true, c.Wait(ctx)
}

// submitEarly submits r's first write, withdrawable for linger, and puts r
// on its queue at once. It returns nil when the store cannot take writes
// back.
func (b *Broker) submitEarly(r *ref, linger time.Duration) *Confirmation {
	sub, can := b.store.(store.Submitter)
	if !can {
		return nil
	}
	ew := &earlyWrite{consumed: make(chan struct{})}
	ops := b.storeOpsForAdd([]*ref{r}, nil)
	if len(ops) == 2 && ops[0].Bucket == bucketMsgs {
		ew.msg = ops[0]
	}
	ew.pending = b.hold(sub, ops, linger)
	r.rec.early = ew
	r.q.add(r)
	return &Confirmation{ew: ew, dest: r.q.dest, b: b, r: r, counter: &b.totals}
}

// withdrawEarly is told that r is being settled (acknowledged, moved,
// expired): when its message's write can still be taken back, it is, the
// producer is confirmed, and true means there is nothing to delete.
func withdrawEarly(r *ref) bool {
	ew := r.rec.early
	if ew == nil {
		return false
	}
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if !ew.pending.Withdraw() {
		ew.msg = store.Op{}
		return false
	}
	ew.msg = store.Op{}
	close(ew.consumed)
	return true
}

// markEarly records the delivery attempt n of r by replacing its message's
// pending write with one that carries it; false means the write is already
// committing or durable, and the mark must be written as usual.
func (b *Broker) markEarly(r *ref, n int32) bool {
	ew := r.rec.early
	if ew == nil {
		return false
	}
	sub := b.store.(store.Submitter)
	ew.mu.Lock()
	defer ew.mu.Unlock()
	select {
	case <-ew.consumed:
		return false
	default:
	}
	if !ew.pending.Withdraw() {
		ew.msg = store.Op{}
		return false
	}
	var ops []store.Op
	if ew.msg.Key != nil {
		ops = []store.Op{ew.msg, refRecordOp(r.q.bucket, r, n)}
	} else {
		ops = b.storeOpsForAdd([]*ref{r}, nil)
		ops[len(ops)-1] = refRecordOp(r.q.bucket, r, n)
	}
	ew.pending = b.hold(sub, ops, earlyAckHold)
	return true
}

// holder is a store that can hold a write until a deadline so that it can
// still be taken back, without it counting as company for other writes
// (journal.Store.Hold): at a light load, a delivery mark or an
// acknowledgement then commits at once instead of lingering beside a
// message's first write that is waiting to be withdrawn.
type holder interface {
	Hold(ops []store.Op, hold time.Duration) store.Pending
}

// hold submits a message's first write, withdrawable for d: held where
// the store can hold writes, else lingering.
func (b *Broker) hold(sub store.Submitter, ops []store.Op, d time.Duration) store.Pending {
	if h, ok := b.store.(holder); ok {
		return h.Hold(ops, d)
	}
	return sub.Submit(ops, d)
}

// storeOpsForUndoableRemove is storeOpsForRemove for a removal that is
// undone when its store write fails (a move to the error destination, a
// transaction's acknowledgements, an administrator's move or deletion):
// it never takes back a message's pending first write (consume before
// store), but waits for it to be durable and deletes it as part of the
// removal. Taking the write back first would leave the message, should
// the removal then fail and the message stay, only in memory, with its
// producer already told it was consumed.
func (b *Broker) storeOpsForUndoableRemove(refs []*ref, ops []store.Op) []store.Op {
	b.awaitEarlyWrites(refs)
	return b.storeOpsForRemove(refs, ops)
}

// awaitEarlyWrites waits until no message of refs has a first write that
// can still be taken back: each is durable, failed, or was taken back by a
// settlement. It gives up after earlyAwaitMax (the store is stuck; the
// removal then goes on as storeOpsForRemove would) and logs it.
func (b *Broker) awaitEarlyWrites(refs []*ref) {
	var timeout <-chan time.Time
	for _, r := range refs {
		if r.rec == nil || r.rec.early == nil {
			continue
		}
		if timeout == nil {
			t := time.NewTimer(earlyAwaitMax)
			defer t.Stop()
			timeout = t.C
		}
		ew := r.rec.early
		for range earlyAwaitReplacements {
			ew.mu.Lock()
			p := ew.pending
			ew.mu.Unlock()
			select {
			case <-ew.consumed:
			case <-p.Done():
			case <-timeout:
				b.log.Warn("the first write of a message being moved or removed is still pending; it may be taken back before the move is durable",
					slog.String("destination", r.q.dest.String()), slog.String("message_id", r.msg.ID), slog.Duration("waited", earlyAwaitMax))
				return
			}
			if !errors.Is(p.Err(), store.ErrWithdrawn) || isClosed(ew.consumed) {
				break
			}
			// Replaced by a write carrying a delivery mark: wait for that.
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
