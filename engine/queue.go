package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// queue holds refs and hands them to competing consumers. Point-to-point
// destinations are queues; so is every topic subscription (durable or not,
// shared or not), fed by its topic.
type queue struct {
	b      *Broker
	dest   message.Destination // the queue, or the subscription's topic
	sub    *subscription       // non-nil when this queue is a topic subscription
	bucket string              // store bucket of its refs; "" when nothing is stored

	mu        sync.Mutex
	quotaCond *sync.Cond // signalled when messages leave (quota waiters)
	ready     [10]refList
	nready    int
	consumers []*Consumer
	rr        int
	inflight  int
	scheduled int
	count     int64  // refs held in any state but gone
	gen       uint32 // bumped by a deletion: scheduled refs of older generations are dropped when they wake
	bytes     int64
	deleted   bool
	stats     queueStats
	delivered atomic.Uint64 // deliveries to consumers; bumped without mu

	// Room reserved under the quota by sends in progress, by message
	// (reserve): a send takes its room when it checks the quota, so that
	// concurrent sends cannot all see the same room; adding its ref turns
	// the reservation into a held message, a failed send gives it back.
	reserved map[*message.Message]int64
	resN     int64
	resBytes int64

	// undeliverable holds the scheduled refs waiting to try again a move
	// to the error destination that the store refused
	// (keepUndeliverable); when one wakes it is moved, not delivered.
	undeliverable map[*ref]undeliverable
}

// undeliverable is why a ref waits for a move to the error destination,
// and how many attempts failed.
type undeliverable struct {
	reason string
	tries  int
}

// Retry delays of a move to the error destination that the store refused:
// the first after undeliverableRetry, doubling up to undeliverableRetryMax.
const (
	undeliverableRetry    = 250 * time.Millisecond
	undeliverableRetryMax = 30 * time.Second
)

// keepUndeliverable gives back to q refs whose move to the error
// destination (or deletion) the store refused after tries attempts: they
// count again as held by q, where the store still has them, but wait in the
// scheduler, never given to a consumer, until the move is tried again. It
// returns the delay before that, and false when q was deleted meanwhile
// (the refs are then dropped).
func (q *queue) keepUndeliverable(refs []*ref, reason string, tries int) (time.Duration, bool) {
	retry := undeliverableRetryMax
	if tries < 16 {
		retry = min(undeliverableRetry<<(tries-1), undeliverableRetryMax)
	}
	at := q.b.nowMillis() + retry.Milliseconds()
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		q.b.dropRefs(refs)
		return 0, false
	}
	if q.undeliverable == nil {
		q.undeliverable = map[*ref]undeliverable{}
	}
	for _, r := range refs {
		q.undeliverable[r] = undeliverable{reason: reason, tries: tries}
		r.deliverAt = at
		r.gen = q.gen
		r.state = refScheduled
		q.scheduled++
		q.count++
		q.bytes += int64(r.size)
		// Counted when the move is made.
		if reason == reasonExpired {
			q.stats.Expired--
		} else {
			q.stats.Undelivered--
		}
	}
	q.mu.Unlock()
	// Straight to the scheduler: the pager would forget why they wait.
	for _, r := range refs {
		q.b.sched.add(at, r)
	}
	return retry, true
}

// queueStats are a destination's counters, reported by the admin API.
type queueStats struct {
	Enqueued    uint64
	Dequeued    uint64
	Expired     uint64
	Redelivered uint64
	Undelivered uint64
}

func newQueue(b *Broker, dest message.Destination, sub *subscription, bucket string) *queue {
	q := &queue{b: b, dest: dest, sub: sub, bucket: bucket}
	q.quotaCond = sync.NewCond(&q.mu)
	return q
}

// policy returns the destination's policy (a subscription uses its topic's).
func (q *queue) policy() Policy { return q.b.policyFor(q.dest) }

// add puts new refs into the queue (they are already durable where they need
// to be) and dispatches.
func (q *queue) add(refs ...*ref) {
	var now int64
	var due, undue []*ref
	q.mu.Lock()
	if q.deleted {
		for _, r := range refs {
			q.unreserveLocked(r.msg)
		}
		q.mu.Unlock()
		q.b.dropRefs(refs)
		return
	}
	for _, r := range refs {
		if len(q.reserved) > 0 {
			q.unreserveLocked(r.msg)
		}
		if r.size == 0 {
			// Made without its size (an import into a subscription): what
			// it adds here must be what leaving takes away.
			r.size = int32(r.msg.Size())
		}
		q.count++
		q.bytes += int64(r.size)
		q.stats.Enqueued++
		q.b.totals.enqueued.Add(1)
		if r.deliverAt != 0 && now == 0 {
			now = q.b.nowMillis()
		}
		if len(q.undeliverable) > 0 {
			if _, ok := q.undeliverable[r]; ok {
				// Given back (an administrator's move failed) while it
				// waits to go to the error destination: it still waits.
				r.gen = q.gen
				r.state = refScheduled
				q.scheduled++
				undue = append(undue, r)
				continue
			}
		}
		if r.deliverAt > now {
			r.gen = q.gen
			r.state = refScheduled
			q.scheduled++
			due = append(due, r)
			continue
		}
		r.state = refReady
		q.ready[r.msg.Priority].insert(r)
		q.nready++
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.b.schedule(due, now)
	for _, r := range undue {
		q.b.sched.add(r.deliverAt, r)
	}
	q.b.expireRefs(q, expired)
}

// addPaged accounts for messages recovered straight into the pager.
func (q *queue) addPaged(entries []pagedRef) {
	q.mu.Lock()
	for i := range entries {
		entries[i].gen = q.gen
		q.count++
		q.bytes += int64(entries[i].size)
		q.scheduled++
	}
	q.mu.Unlock()
	for _, e := range entries {
		q.b.pager.add(e)
	}
}

// forgetPaged drops the accounting of a paged message that is gone.
func (q *queue) forgetPaged(e pagedRef) {
	q.mu.Lock()
	if q.deleted || e.gen != q.gen {
		q.mu.Unlock()
		return
	}
	q.count--
	q.bytes -= int64(e.size)
	q.scheduled--
	q.quotaCond.Broadcast()
	q.mu.Unlock()
	q.roomFreed()
}

// roomFreed tells the sends waiting for quota on a subscription's topic
// that messages left (a queue's own waiters wait on quotaCond). Call it
// without holding q.mu.
func (q *queue) roomFreed() {
	if q.sub != nil {
		q.sub.topic.t.roomFreed()
	}
}

// wake moves scheduled refs whose time has come into the ready lists, all
// of them before it dispatches, so that messages due together go out in
// priority, then arrival order.
func (q *queue) wake(refs []*ref) {
	var drop []*ref
	var retry map[string][]*ref // undeliverable refs due for another move, by reason
	var tries map[string]int    // and the most failed attempts among them
	// The scheduler hands refs over in time order; insert them in arrival
	// order, so that each lands at the tail of its ready list instead of
	// moving the list's tail once per ref.
	slices.SortFunc(refs, func(a, b *ref) int { return cmp.Compare(a.seq, b.seq) })
	q.mu.Lock()
	for _, r := range refs {
		if r.state != refScheduled {
			if len(q.undeliverable) > 0 {
				delete(q.undeliverable, r) // gone another way meanwhile
			}
			continue
		}
		if q.deleted || r.gen != q.gen {
			r.state = refGone
			drop = append(drop, r)
			continue
		}
		q.scheduled--
		if len(q.undeliverable) > 0 {
			if u, ok := q.undeliverable[r]; ok {
				// Its move to the error destination is due again.
				delete(q.undeliverable, r)
				r.state = refGone
				q.count--
				q.bytes -= int64(r.size)
				if u.reason == reasonExpired {
					q.stats.Expired++
				} else {
					q.stats.Undelivered++
				}
				if retry == nil {
					retry, tries = map[string][]*ref{}, map[string]int{}
				}
				retry[u.reason] = append(retry[u.reason], r)
				tries[u.reason] = max(tries[u.reason], u.tries)
				continue
			}
		}
		r.state = refReady
		q.ready[r.msg.Priority].insert(r)
		q.nready++
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	if len(drop) > 0 {
		q.b.dropRefs(drop)
	}
	q.b.expireRefs(q, expired)
	for reason, rs := range retry {
		q.b.moveUndeliverable(context.Background(), q, rs, reason, tries[reason])
	}
}

// kick dispatches after something changed outside add (a consumer joined,
// credit came back, a connection started).
func (q *queue) kick() {
	q.mu.Lock()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.b.expireRefs(q, expired)
}

// dispatchLocked hands ready refs to consumers with credit, round robin,
// each consumer taking the first ref (by priority, then arrival) that its
// selector matches. Refs found expired on the way are removed and returned
// for the caller to handle after unlocking.
func (q *queue) dispatchLocked() (expired []*ref) {
	n := len(q.consumers)
	if n == 0 || q.nready == 0 {
		return nil
	}
	var now int64 // read from the clock only when a message can expire
	for q.nready > 0 {
		progress := false
		for i := 0; i < n; i++ {
			c := q.consumers[(q.rr+i)%n]
			if !c.eligible() {
				continue
			}
			r := q.takeFor(c, &now, &expired)
			if r == nil {
				continue
			}
			q.rr = (q.rr + i + 1) % n
			q.inflight++
			r.state = refInflight
			r.owner = c
			c.push(r)
			progress = true
			break
		}
		if !progress {
			break
		}
	}
	return expired
}

// takeFor removes and returns the first ready ref c may receive.
func (q *queue) takeFor(c *Consumer, now *int64, expired *[]*ref) *ref {
	for p := 9; p >= 0; p-- {
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			r := l.at(i)
			if r.msg.Expiration != 0 && *now == 0 {
				*now = q.b.nowMillis()
			}
			if r.msg.Expiration != 0 && r.msg.Expiration <= *now {
				l.removeAt(i)
				i--
				q.nready--
				r.state = refGone
				*expired = append(*expired, r)
				continue
			}
			if !c.accepts(r) {
				continue
			}
			l.removeAt(i)
			q.nready--
			return r
		}
	}
	return nil
}

// settleOne is settle for one ref that is not in the store.
func (q *queue) settleOne(r *ref) {
	var one [1]*ref
	one[0] = r
	q.settle(one[:])
}

// settle removes refs that were delivered and are now acknowledged.
func (q *queue) settle(refs []*ref) {
	q.mu.Lock()
	for _, r := range refs {
		if r.state != refInflight {
			continue
		}
		r.state = refGone
		if c := r.owner; c != nil {
			c.settled(1)
		}
		r.owner = nil
		q.inflight--
		q.count--
		q.bytes -= int64(r.size)
		q.stats.Dequeued++
		q.b.totals.acked.Add(1)
	}
	q.quotaCond.Broadcast()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.roomFreed()
	q.b.expireRefs(q, expired)
}

// requeue puts in-flight refs back. Every delivery attempt counts against
// the redelivery limit, whether it ended in a failure (rollback, recover,
// NACK) or in a close that left it unacknowledged: a message that makes its
// consumer crash must not come back forever. Only a failed delivery waits
// the redelivery delay. A ref never handed to the application (prefetched)
// or released was not counted as an attempt. Refs over their limit are
// returned for the caller to dead-letter.
//
// ops are the store writes that keep the refs' records true (a delayed
// redelivery keeps its delay across a restart; an attempt recorded but
// never made is taken back). The refs they concern come back as held: they
// are neither ready nor scheduled until the caller has made ops durable and
// calls release, so that no consumer can be given one (and record a newer
// attempt) before its record is written.
func (q *queue) requeue(refs []*ref, failed bool, delay time.Duration) (undeliverable, held []*ref, ops []store.Op) {
	now := q.b.nowMillis()
	pol := q.policy()
	if q.sub != nil && !q.sub.durable {
		// A session's redelivery delay does not apply to messages of
		// non-durable topic subscriptions (WebLogic JMS "Managing Your
		// Applications", "Setting a Redelivery Delay").
		delay = 0
	}
	if failed && pol.RedeliveryDelayOverride >= 0 {
		delay = pol.RedeliveryDelayOverride
	}
	var later []*ref
	q.mu.Lock()
	for _, r := range refs {
		if r.state != refInflight {
			continue
		}
		if c := r.owner; c != nil {
			c.settled(1)
		}
		r.owner = nil
		q.inflight--
		if q.deleted {
			r.state = refGone
			q.count--
			q.bytes -= int64(r.size)
			continue
		}
		if r.count > 0 {
			limit := r.msg.RedeliveryLimit
			if pol.RedeliveryLimit >= 0 {
				limit = pol.RedeliveryLimit
			}
			if limit >= 0 && r.count > limit {
				r.state = refGone
				q.count--
				q.bytes -= int64(r.size)
				q.stats.Undelivered++
				undeliverable = append(undeliverable, r)
				continue
			}
		}
		if r.count > 0 {
			q.stats.Redelivered++
			q.b.totals.redelivered.Add(1)
		}
		delayed := failed && delay > 0
		if delayed {
			r.deliverAt = now + delay.Milliseconds()
			r.gen = q.gen
		}
		if r.rec != nil && q.bucket != "" && (delayed || r.marked > r.count) {
			ops = append(ops, refRecordOp(q.bucket, r, r.count))
			r.marked = r.count
			r.state = refHeld
			held = append(held, r)
			continue
		}
		if delayed {
			r.state = refScheduled
			q.scheduled++
			later = append(later, r)
			continue
		}
		r.state = refReady
		q.ready[r.msg.Priority].insert(r)
		q.nready++
	}
	q.quotaCond.Broadcast()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	if len(undeliverable) > 0 {
		q.roomFreed()
	}
	q.b.schedule(later, now)
	q.b.expireRefs(q, expired)
	return undeliverable, held, ops
}

// release makes held refs ready, or scheduled when their delivery time is
// still ahead.
func (q *queue) release(held []*ref) {
	now := q.b.nowMillis()
	var later, drop []*ref
	q.mu.Lock()
	for _, r := range held {
		if r.state != refHeld {
			continue
		}
		if q.deleted {
			r.state = refGone
			drop = append(drop, r)
			continue
		}
		if r.deliverAt > now {
			r.state = refScheduled
			q.scheduled++
			later = append(later, r)
			continue
		}
		r.state = refReady
		q.ready[r.msg.Priority].insert(r)
		q.nready++
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.b.schedule(later, now)
	if len(drop) > 0 {
		q.b.dropRefs(drop)
	}
	q.b.expireRefs(q, expired)
}

// addConsumer attaches c and dispatches to it.
func (q *queue) addConsumer(c *Consumer) error {
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return errorf(CodeInvalidDestination, "destination %s was deleted", q.dest)
	}
	q.consumers = append(q.consumers, c)
	q.mu.Unlock()
	q.kick()
	return nil
}

// removeConsumer detaches c and returns the refs dispatched to it that its
// application never took.
func (q *queue) removeConsumer(c *Consumer) {
	q.mu.Lock()
	for i, x := range q.consumers {
		if x == c {
			q.consumers = append(q.consumers[:i], q.consumers[i+1:]...)
			break
		}
	}
	if q.rr >= len(q.consumers) {
		q.rr = 0
	}
	q.mu.Unlock()
}

// expireScan removes every expired ref in the ready lists, so that expired
// messages behind live ones do not pile up. Scheduled refs are checked when
// they wake.
func (q *queue) expireScan(now int64) {
	var expired []*ref
	q.mu.Lock()
	for p := range q.ready {
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			r := l.at(i)
			if r.msg.Expiration != 0 && r.msg.Expiration <= now {
				l.removeAt(i)
				i--
				q.nready--
				r.state = refGone
				expired = append(expired, r)
			}
		}
	}
	q.mu.Unlock()
	q.b.expireRefs(q, expired)
}

// forgetExpired updates counters for refs removed as expired.
func (q *queue) forgetExpired(n int, bytes int64) {
	q.mu.Lock()
	q.count -= int64(n)
	q.bytes -= bytes
	q.stats.Expired += uint64(n)
	q.quotaCond.Broadcast()
	q.mu.Unlock()
	q.roomFreed()
}

// snapshot returns the ready and scheduled refs in delivery order (priority,
// then arrival) for browsing, filtered by accept.
func (q *queue) snapshot(accept func(*ref) bool) []*ref {
	now := q.b.nowMillis()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*ref
	for p := 9; p >= 0; p-- {
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			r := l.at(i)
			if r.msg.Expiration != 0 && r.msg.Expiration <= now {
				continue
			}
			if accept == nil || accept(r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// reserve waits until the queue has room for m under the policy's quota
// and reserves it, or fails with a resource-allocation error. The check
// and the reservation are one step under q.mu, and count the room other
// sends have reserved, so concurrent senders never take more than the
// quota. The reservation ends when m's ref is added (it becomes a held
// message) or when the send fails and calls unreserve.
func (q *queue) reserve(m *message.Message, pol Policy) error {
	if pol.MaxMessages <= 0 && pol.MaxBytes <= 0 {
		return nil
	}
	size := int64(m.Size())
	full := func() bool {
		return (pol.MaxMessages > 0 && q.count+q.resN+1 > pol.MaxMessages) ||
			(pol.MaxBytes > 0 && q.bytes+q.resBytes+size > pol.MaxBytes)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if full() {
		if pol.BlockingSendTimeout <= 0 {
			return errorf(CodeResourceAllocation, "destination %s is full (quota %d messages, %d bytes)", q.dest, pol.MaxMessages, pol.MaxBytes)
		}
		deadline := time.Now().Add(pol.BlockingSendTimeout)
		t := time.AfterFunc(pol.BlockingSendTimeout, func() {
			q.mu.Lock()
			q.quotaCond.Broadcast()
			q.mu.Unlock()
		})
		defer t.Stop()
		for full() && !q.deleted && time.Now().Before(deadline) {
			q.quotaCond.Wait()
		}
		if q.deleted {
			return errorf(CodeResourceAllocation, "destination %s was deleted while the send waited for quota", q.dest)
		}
		if full() {
			return errorf(CodeResourceAllocation, "destination %s is full (quota %d messages, %d bytes); waited %s", q.dest, pol.MaxMessages, pol.MaxBytes, pol.BlockingSendTimeout)
		}
	}
	q.reserveLocked(m, size)
	return nil
}

// reserveLocked reserves room for m, of size bytes, once.
func (q *queue) reserveLocked(m *message.Message, size int64) {
	if q.reserved == nil {
		q.reserved = map[*message.Message]int64{}
	}
	if _, dup := q.reserved[m]; !dup {
		q.reserved[m] = size
		q.resN++
		q.resBytes += size
	}
}

// unreserve gives back the room a send reserved for m, if it still holds
// it: the send failed before m reached the queue.
func (q *queue) unreserve(m *message.Message) {
	q.mu.Lock()
	freed := q.unreserveLocked(m)
	if freed {
		q.quotaCond.Broadcast()
	}
	q.mu.Unlock()
	if freed {
		q.roomFreed()
	}
}

// unreserveLocked ends m's reservation, if any, and reports whether there
// was one.
func (q *queue) unreserveLocked(m *message.Message) bool {
	size, ok := q.reserved[m]
	if !ok {
		return false
	}
	delete(q.reserved, m)
	q.resN--
	q.resBytes -= size
	return true
}

// purge removes every message waiting on q: ready, scheduled in memory and
// paged out to the store (messages in flight, or held while their
// redelivery is recorded, stay), taking them out of q's accounting and out
// of the scheduler and the pager. It returns them for the caller to delete
// from the store, or to give back with unpurge when that fails, and n, how
// many of them q held (a scheduled ref of an older generation, left over
// from a deletion, is returned without counting).
func (q *queue) purge() (refs []*ref, paged []pagedRef, n int) {
	b := q.b
	var cands []*ref
	b.sched.mu.Lock()
	b.sched.heap.filter(func(e schedEntry) bool {
		if e.r.q != q {
			return true
		}
		cands = append(cands, e.r)
		return false
	})
	b.sched.mu.Unlock()
	b.pager.mu.Lock()
	b.pager.heap.filter(func(e pagedRef) bool {
		if e.q != q {
			return true
		}
		paged = append(paged, e)
		return false
	})
	b.pager.mu.Unlock()

	q.mu.Lock()
	defer q.mu.Unlock()
	for p := range q.ready {
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			r := l.at(i)
			r.state = refGone
			q.count--
			q.bytes -= int64(r.size)
			refs = append(refs, r)
		}
		clear(l.items)
		l.items, l.head = l.items[:0], 0
	}
	n = len(refs)
	q.nready = 0
	// A ref the scheduler held may have left already (an administrator
	// moved or deleted it) or be there twice (given back after a failed
	// move); only those still scheduled go.
	seen := make(map[*ref]struct{}, len(cands))
	for _, r := range cands {
		if r.state != refScheduled {
			continue
		}
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		r.state = refGone
		refs = append(refs, r)
		if len(q.undeliverable) > 0 {
			delete(q.undeliverable, r)
		}
		if r.gen != q.gen {
			continue
		}
		n++
		q.scheduled--
		q.count--
		q.bytes -= int64(r.size)
	}
	for _, e := range paged {
		if e.gen != q.gen {
			continue
		}
		n++
		q.scheduled--
		q.count--
		q.bytes -= int64(e.size)
	}
	q.quotaCond.Broadcast()
	return refs, paged, n
}

// pagedRemoveOps appends the writes that delete paged entries of q, and
// their messages when nothing else holds them.
func (q *queue) pagedRemoveOps(paged []pagedRef, ops []store.Op) []store.Op {
	for _, e := range paged {
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: q.bucket, Key: seqKey(e.seq)})
		if e.rec == nil || e.rec.refs.Add(-1) == 0 {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: seqKey(e.seq)})
		}
	}
	return ops
}

// unpurge gives back what purge took when its store write failed: refs
// (whose store identities were recs before storeOpsForRemove dropped them)
// ready or scheduled again, paged entries to the pager.
func (q *queue) unpurge(refs []*ref, recs []*stored, paged []pagedRef) {
	q.b.restore(q, refs, recs)
	for _, e := range paged {
		if e.rec != nil {
			e.rec.refs.Add(1)
		}
	}
	if len(paged) > 0 {
		q.addPaged(paged)
	}
}

// drainAll removes every ready ref of a queue being deleted and returns
// them; its scheduled refs are dropped when they wake.
func (q *queue) drainAll(markDeleted bool) []*ref {
	q.mu.Lock()
	var out []*ref
	for p := range q.ready {
		l := &q.ready[p]
		for l.len() > 0 {
			r := l.removeAt(0)
			r.state = refGone
			out = append(out, r)
		}
	}
	q.nready = 0
	q.count -= int64(q.scheduled)
	q.scheduled = 0
	q.gen++
	if markDeleted {
		q.deleted = true
	}
	q.count -= int64(len(out))
	for _, r := range out {
		q.bytes -= int64(r.size)
	}
	q.quotaCond.Broadcast()
	q.mu.Unlock()
	return out
}
