package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/records"
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
// redelivered; the replacement is held for the acknowledgement
// (earlyAckHold). The message is encoded only if its write is committed.
//
// On a store whose authority can end unseen (store.Verifier: a replicated
// store's leader), a message taken back is confirmed only once the store
// has confirmed that it still leads, after the acknowledgement: a leader
// cut off from the majority confirms nothing, although the withdrawal
// wrote nothing that could fail. Its producer is told the outcome is
// unknown instead.

// How long a message's first write is held. A write that outlives its
// hold costs a sync, a delete later and, when it is committed before the
// delivery, a synchronous mark that holds up the consumer's next
// deliveries, so that the messages behind it outlive their holds too. At
// 25,000 persistent messages/s over AMQP 1.0 (64 in flight, a pre-settled
// consumer, 2 busy cores) holds of 1 ms wrote 16-25% of the messages, as
// a fifth of them waited over 1 ms to be delivered or, once delivered, to
// be acknowledged; holds of 4 ms wrote 1-3%. But a consumer that takes
// longer anyway (an application that leaves messages in its prefetch
// buffer, or acknowledges in batches) gains nothing from a longer hold,
// and its producers, confirmed a hold plus a sync after each send, lose
// the difference. So a queue holds writes earlyHoldLong while at least
// earlyFastShare of its recent early messages (an exponentially weighted
// share, over about earlyFastWeight of them) were each delivered, and
// then acknowledged, within earlyHoldLong, and earlyHoldShort otherwise.
const (
	earlyHoldShort  = time.Millisecond
	earlyHoldLong   = 4 * time.Millisecond
	earlyFastOne    = 1 << 16 // earlyFastShare's fixed point
	earlyFastShare  = earlyFastOne * 7 / 8
	earlyFastWeight = 32
)

// earlyFast tracks the share of a queue's early messages delivered and
// acknowledged within earlyHoldLong; lock-free (its methods use atomics
// only), so it takes no place in the lock order.
type earlyFast struct {
	slow atomic.Int64 // the share that was slow, of earlyFastOne: zero, none
}

// note adds one observation: a delivery or an acknowledgement that came
// after wait.
func (f *earlyFast) note(wait time.Duration) {
	var x int64
	if wait > earlyHoldLong {
		x = earlyFastOne
	}
	for {
		old := f.slow.Load()
		if f.slow.CompareAndSwap(old, old+(x-old)/earlyFastWeight) {
			return
		}
	}
}

// hold is how long the queue holds a first write now.
func (f *earlyFast) hold() time.Duration {
	if f.slow.Load() <= earlyFastOne-earlyFastShare {
		return earlyHoldLong
	}
	return earlyHoldShort
}

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
	// verify is the store's confirmation that it still leads, asked for
	// when the write was withdrawn (store.Verifier); set before consumed
	// closes, nil on a store that needs none.
	verify store.Pending
	// since is when the message was sent, or delivered once marked.
	since  time.Time
	marked bool
}

// sendEarly tries to send r (a persistent message's only ref, on a queue)
// consume-before-store. ok is false when it does not apply; the caller then
// stores and enqueues as usual.
func (b *Broker) sendEarly(ctx context.Context, r *ref) (ok bool, err error) {
	if !b.cfg.ConsumeBeforeStore || r.rec == nil || r.deliverAt != 0 || !r.q.hasEligibleConsumer() {
		return false, nil
	}
	c := b.submitEarly(r, r.q.early.hold())
	if c == nil {
		return false, nil
	}
	return true, c.Wait(ctx)
}

// submitEarly submits r's first write, withdrawable for linger, and puts r
// on its queue at once. It returns nil when the store cannot take writes
// back.
func (b *Broker) submitEarly(r *ref, linger time.Duration) *Confirmation {
	sub, can := b.submitter()
	if !can {
		return nil
	}
	ew := &earlyWrite{consumed: make(chan struct{}), since: time.Now()}
	ew.pending = b.hold(sub, b.earlyOps(r, 0), linger)
	r.rec.early = ew
	r.q.add(r)
	return &Confirmation{ew: ew, dest: r.q.dest, b: b, r: r, counter: &b.totals}
}

// withdrawEarly is told that r is being settled (acknowledged, moved,
// expired): when its message's write can still be taken back, it is, the
// producer is confirmed (once the store confirms it still leads, where it
// must), and true means there is nothing to delete.
func (b *Broker) withdrawEarly(r *ref) bool {
	ew := r.rec.early
	if ew == nil {
		return false
	}
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.marked {
		ew.marked = false
		r.q.early.note(time.Since(ew.since))
	}
	if !ew.pending.Withdraw() {
		return false
	}
	if v, ok := b.verifier(); ok {
		ew.verify = v.Verify()
	}
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
	sub, _ := b.submitter()
	ew.mu.Lock()
	defer ew.mu.Unlock()
	select {
	case <-ew.consumed:
		return false
	default:
	}
	now := time.Now()
	r.q.early.note(now.Sub(ew.since))
	ew.since, ew.marked = now, true
	if !ew.pending.Withdraw() {
		return false
	}
	ew.pending = b.hold(sub, b.earlyOps(r, n), r.q.early.hold())
	return true
}

// earlyOps returns what makes the ops of r's first write (storeOpsForAdd's
// for r alone), with delivery attempt count in its ref record: the ref
// record now, the message's encoding, most of the write, only when it is
// made. A message does not change once sent, so a store may make them on
// another goroutine.
func (b *Broker) earlyOps(r *ref, count int32) func() []store.Op {
	refOp := refRecordOp(r.q.bucket, r, count)
	m, key, log := r.msg, records.SeqKey(r.rec.key), b.log
	return func() []store.Op {
		data, err := m.MarshalBinary()
		if err != nil {
			log.Error("encode message", slog.String("message_id", m.ID), slog.Any("err", err))
			return []store.Op{refOp}
		}
		return []store.Op{{Kind: store.Put, Bucket: records.Messages, Key: key, Value: data}, refOp}
	}
}

// hold submits a message's first write, withdrawable for d: held where
// the store can hold writes, else lingering.
func (b *Broker) hold(sub store.Submitter, makeOps func() []store.Op, d time.Duration) store.Pending {
	if h, ok := b.holdStore(); ok {
		return h.HoldFunc(makeOps, d)
	}
	return sub.Submit(makeOps(), d)
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
