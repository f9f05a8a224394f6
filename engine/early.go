package engine

import (
	"context"
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
// redelivered.

// earlyLinger is how long a write may wait for its message to be consumed.
const earlyLinger = time.Millisecond

// earlyWrite is the pending first write of a message sent early.
type earlyWrite struct {
	mu       sync.Mutex
	pending  store.Pending
	consumed chan struct{} // closed when the message was settled and its write withdrawn
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
	ew.pending = sub.Submit(b.storeOpsForAdd([]*ref{r}, nil), linger)
	r.rec.early = ew
	r.q.add(r)
	return &Confirmation{ew: ew, dest: r.q.dest}
}

// hasEligibleConsumer reports whether a consumer could take a message now.
func (q *queue) hasEligibleConsumer() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range q.consumers {
		if c.eligible() {
			return true
		}
	}
	return false
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
		return false
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
	sub := b.store.(store.Submitter)
	ew.mu.Lock()
	defer ew.mu.Unlock()
	select {
	case <-ew.consumed:
		return false
	default:
	}
	if !ew.pending.Withdraw() {
		return false
	}
	ops := b.storeOpsForAdd([]*ref{r}, nil)
	ops[len(ops)-1] = refRecordOp(r.q.bucket, r, n)
	ew.pending = sub.Submit(ops, earlyLinger)
	return true
}
