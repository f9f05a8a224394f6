package engine

// The queue owns its state. Its lists, counters, consumers' credit,
// reservations and the reasons of refs waiting for the error destination
// are guarded by queue.mu, and queue.mu is taken only by the methods in
// this file: everything else (the administrator, sessions, consumers,
// topics, recovery) goes through them. Removing waiting messages is one
// path, take, undone by restore.
//
// Lock order, outermost first; a lock may be taken while holding only
// locks above it:
//
//	Connection.mu  (SetClientID claims the client ID under it)
//	  Session.mu   (under Connection.mu only for management's snapshot)
//	Broker.mu
//	  topic.quotaMu
//	    topic.mu
//	      queue.mu       never two at once
//	        Consumer.bufMu, quota.mu   leaves
//
// A queue's pages.io (page.go) is taken before its queue.mu, by the
// goroutines that read its paged records back from the store.
//
// scheduler.mu and pager.mu are taken alone: a queue method hands refs to
// the scheduler or the pager, or gathers them from it, with queue.mu
// released. Waking a queue (its quota.freed) is safe under queue.mu; a
// topic's quota is freed (queue.roomFreed) after queue.mu is released.

import (
	"cmp"
	"context"
	"log/slog"
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
	// early decides how long consume before store holds a first write.
	early earlyFast

	mu     sync.Mutex // see the lock order at the top of this file
	quota  quota      // sends waiting for room: freed when messages or reservations leave
	ready  [10]refList
	nready int
	// readyBytes is the size of the ready refs in memory, and pg the
	// messages paged out of memory (page.go).
	readyBytes int64
	pg         pages
	consumers  []*Consumer
	rr         int
	inflight   int
	scheduled  int
	count      int64  // refs held in any state but gone
	gen        uint32 // bumped by a deletion: scheduled refs of older generations are dropped when they wake
	bytes      int64
	deleted    bool
	stats      queueStats
	delivered  atomic.Uint64 // deliveries to consumers; bumped without mu

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
	return &queue{b: b, dest: dest, sub: sub, bucket: bucket}
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
				q.inMemoryLocked(r)
				undue = append(undue, r)
				continue
			}
		}
		if r.deliverAt > now {
			r.gen = q.gen
			r.state = refScheduled
			q.scheduled++
			q.inMemoryLocked(r)
			due = append(due, r)
			continue
		}
		if !q.pageOutLocked(r) {
			q.readyInsert(r)
		}
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.b.schedule(due, now)
	for _, r := range undue {
		q.b.sched.add(r.deliverAt, r)
	}
	q.b.expireRefs(q, expired)
}

// addAgain is add for refs the queue counted as enqueued before: given
// back after a failed removal, or recovered from the store.
func (q *queue) addAgain(refs []*ref) {
	q.add(refs...)
	q.mu.Lock()
	q.stats.Enqueued -= uint64(len(refs))
	q.mu.Unlock()
	q.b.totals.uncountEnqueued(len(refs))
}

// roomFreed tells the sends waiting for quota on a subscription's topic
// that messages left (a queue's own waiters wait on q.quota, freed under
// q.mu). Call it without holding q.mu.
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
		q.readyInsert(r)
	}
	if len(retry) > 0 {
		q.quota.freed()
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	if len(drop) > 0 {
		q.b.dropRefs(drop)
	}
	if len(retry) > 0 {
		q.roomFreed()
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
	if n == 0 || (q.nready == 0 && q.pg.n == 0) {
		return nil
	}
	var now int64 // read from the clock only when a message can expire
	// With nothing ready in memory but messages paged, one round finds
	// no message and asks the page worker for them (takeFor).
	for q.nready > 0 || q.pg.n > 0 {
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
				q.readyRemoved(r)
				r.state = refGone
				*expired = append(*expired, r)
				continue
			}
			if !c.accepts(r) {
				continue
			}
			l.removeAt(i)
			q.readyRemoved(r)
			return r
		}
		if q.pg.lanes[p].n > 0 && q.pagedStopLocked(c, p) {
			// The next message for c in delivery order is in the store.
			return nil
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
	q.quota.freed()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.roomFreed()
	q.b.expireRefs(q, expired)
}

// reject removes in-flight refs as undeliverable (counted so) and returns
// those it removed, for the caller to move to the error destination.
func (q *queue) reject(refs []*ref) []*ref {
	var taken []*ref
	q.mu.Lock()
	for _, r := range refs {
		if r.state != refInflight {
			continue
		}
		if c := r.owner; c != nil {
			c.settled(1)
		}
		r.owner = nil
		r.state = refGone
		q.inflight--
		q.count--
		q.bytes -= int64(r.size)
		q.stats.Undelivered++
		taken = append(taken, r)
	}
	q.quota.freed()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.roomFreed()
	q.b.expireRefs(q, expired)
	return taken
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
	var later, gone []*ref
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
			// Its record went with the queue's bucket; its message goes
			// when no other queue holds it.
			r.state = refGone
			q.count--
			q.bytes -= int64(r.size)
			gone = append(gone, r)
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
			q.inMemoryLocked(r)
			later = append(later, r)
			continue
		}
		q.readyInsert(r)
	}
	q.quota.freed()
	expired := q.dispatchLocked()
	q.mu.Unlock()
	if len(undeliverable) > 0 {
		q.roomFreed()
	}
	q.b.schedule(later, now)
	q.b.expireRefs(q, expired)
	if len(gone) > 0 {
		q.b.dropRefs(gone)
	}
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
			q.inMemoryLocked(r)
			later = append(later, r)
			continue
		}
		q.readyInsert(r)
	}
	expired := q.dispatchLocked()
	q.mu.Unlock()
	q.b.schedule(later, now)
	if len(drop) > 0 {
		q.b.dropRefs(drop)
	}
	q.b.expireRefs(q, expired)
}

// addCredit gives c n more credit, and dispatches when dispatch says so.
// A consumer's credit is part of its queue's state: it changes under q.mu.
func (q *queue) addCredit(c *Consumer, n int, dispatch bool) {
	q.mu.Lock()
	c.credit += n
	var expired []*ref
	if dispatch {
		expired = q.dispatchLocked()
	}
	q.mu.Unlock()
	q.b.expireRefs(q, expired)
}

// takeCredit takes back all of c's credit and returns how much it was.
func (q *queue) takeCredit(c *Consumer) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := c.credit
	c.credit = 0
	return n
}

// creditOf returns c's credit.
func (q *queue) creditOf(c *Consumer) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return c.credit
}

// backlogged reports whether q's ready messages fill its window, or some
// wait in the store: a message sent now goes behind them.
func (q *queue) backlogged() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pg.n > 0 || q.windowFullLocked()
}

// sendState reports whether q has a backlog that fills its window (a new
// message waits behind it, maybe in the store only) and, if not, whether a
// consumer could take a message now.
func (q *queue) sendState() (backlog, waiting bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pg.n > 0 || (q.bucket != "" && q.windowFullLocked()) {
		return true, false
	}
	for _, c := range q.consumers {
		if c.eligible() {
			return false, true
		}
	}
	return false, false
}

// hasEligibleConsumer reports whether a consumer could take a message now.
func (q *queue) hasEligibleConsumer() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pg.n > 0 || (q.bucket != "" && q.windowFullLocked()) {
		// A backlog waits: a new message goes behind it.
		return false
	}
	for _, c := range q.consumers {
		if c.eligible() {
			return true
		}
	}
	return false
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
				q.readyRemoved(r)
				r.state = refGone
				expired = append(expired, r)
			}
		}
	}
	q.mu.Unlock()
	q.b.expireRefs(q, expired)
	q.expirePaged(now)
}

// forgetExpired updates counters for refs removed as expired.
func (q *queue) forgetExpired(n int, bytes int64) {
	q.mu.Lock()
	q.count -= int64(n)
	q.bytes -= bytes
	q.stats.Expired += uint64(n)
	q.quota.freed()
	q.mu.Unlock()
	q.roomFreed()
}

// snapshot returns the ready refs, paged ones included (read back, not put
// in the queue), in delivery order (priority, then arrival) for browsing,
// filtered by accept.
func (q *queue) snapshot(accept func(*ref) bool) []*ref {
	now := q.b.nowMillis()
	live := func(r *ref) bool {
		return (r.msg.Expiration == 0 || r.msg.Expiration > now) && (accept == nil || accept(r))
	}
	paged, err := q.pagedWaiting(live)
	if err != nil {
		q.b.log.Error("read paged messages for browsing", slog.String("destination", q.dest.String()), slog.Any("err", err))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*ref
	for p := 9; p >= 0; p-- {
		laneStart := len(out)
		out = append(out, paged[p]...)
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			if r := l.at(i); live(r) {
				out = append(out, r)
			}
		}
		if len(paged[p]) > 0 {
			sortRefsBySeq(out[laneStart:])
		}
	}
	return out
}

// reserve waits until the queue has room for m under the policy's quota
// and reserves it, or fails with a resource-allocation error. The check
// and the reservation are one step under q.mu, and count the room other
// sends have reserved, so concurrent senders never take more than the
// quota; a send that waits sleeps on q.quota until room comes back. The reservation ends when m's ref is added (it becomes a held
// message) or when the send fails and calls unreserve.
func (q *queue) reserve(m *message.Message, pol Policy) error {
	if pol.MaxMessages <= 0 && pol.MaxBytes <= 0 {
		return nil
	}
	size := int64(m.Size())
	st := q.quota.take(pol.BlockingSendTimeout, func(waited bool) roomState {
		q.mu.Lock()
		defer q.mu.Unlock()
		if waited && q.deleted {
			return roomGone
		}
		if (pol.MaxMessages > 0 && q.count+q.resN+1 > pol.MaxMessages) ||
			(pol.MaxBytes > 0 && q.bytes+q.resBytes+size > pol.MaxBytes) {
			return roomFull
		}
		q.reserveLocked(m, size)
		return roomTaken
	})
	switch {
	case st == roomTaken:
		return nil
	case pol.BlockingSendTimeout <= 0:
		return errorf(CodeResourceAllocation, "destination %s is full (quota %d messages, %d bytes)", q.dest, pol.MaxMessages, pol.MaxBytes)
	case st == roomGone:
		return errorf(CodeResourceAllocation, "destination %s was deleted while the send waited for quota", q.dest)
	}
	return errorf(CodeResourceAllocation, "destination %s is full (quota %d messages, %d bytes); waited %s", q.dest, pol.MaxMessages, pol.MaxBytes, pol.BlockingSendTimeout)
}

// reserveAll reserves room for msgs under pol's quota in one step, or
// fails with a resource-allocation error when the queue, with the room
// that sends in progress have reserved, has not enough for all of them.
func (q *queue) reserveAll(msgs []*message.Message, pol Policy) error {
	sizes := make([]int64, len(msgs))
	var size int64
	for i, m := range msgs {
		sizes[i] = int64(m.Size())
		size += sizes[i]
	}
	n := int64(len(msgs))
	q.mu.Lock()
	defer q.mu.Unlock()
	if (pol.MaxMessages > 0 && q.count+q.resN+n > pol.MaxMessages) || (pol.MaxBytes > 0 && q.bytes+q.resBytes+size > pol.MaxBytes) {
		return errorf(CodeResourceAllocation, "destination %s has no room for %d more messages (quota %d messages, %d bytes; it holds %d, %d bytes, and sends in progress reserved %d, %d bytes)",
			q.dest, n, pol.MaxMessages, pol.MaxBytes, q.count, q.bytes, q.resN, q.resBytes)
	}
	for i, m := range msgs {
		q.reserveLocked(m, sizes[i])
	}
	return nil
}

// reserveFor reserves room for m, of size bytes, without checking the
// quota: a topic checked its own (see topic.reserve).
func (q *queue) reserveFor(m *message.Message, size int64) {
	q.mu.Lock()
	q.reserveLocked(m, size)
	q.mu.Unlock()
}

// held returns what q holds and has reserved for sends in progress; 0 once
// it is deleted.
func (q *queue) held() (count, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return 0, 0
	}
	return q.count + q.resN, q.bytes + q.resBytes
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
		q.quota.freed()
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

// info adds what q holds and counts to into: the part of a
// DestinationInfo one queue contributes.
func (q *queue) info(into *DestinationInfo) {
	q.mu.Lock()
	into.Messages += q.count
	into.Ready += q.nready + int(q.pg.n)
	q.pagedInfoLocked(into)
	into.InFlight += q.inflight
	into.Scheduled += q.scheduled
	into.Bytes += q.bytes
	into.Consumers += len(q.consumers)
	into.Enqueued += q.stats.Enqueued
	into.Dequeued += q.stats.Dequeued
	into.Expired += q.stats.Expired
	into.Redelivered += q.stats.Redelivered
	into.Delivered += q.delivered.Load()
	into.Undelivered += q.stats.Undelivered
	for p := range q.ready {
		if l := &q.ready[p]; l.len() > 0 {
			if ts := l.at(0).msg.Timestamp; ts > 0 && (into.OldestTimestamp == 0 || ts < into.OldestTimestamp) {
				into.OldestTimestamp = ts
			}
		}
	}
	q.mu.Unlock()
}

// inFlight returns how many of q's messages are in flight.
func (q *queue) inFlight() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inflight
}

// consumerList returns q's consumers.
func (q *queue) consumerList() []*Consumer {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.consumers)
}

// consumerCount returns how many consumers q has.
func (q *queue) consumerCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.consumers)
}

// waiting is a ref seen waiting, with what browsing reports of it.
type waiting struct {
	r         *ref
	scheduled bool
	deliverAt int64
	count     int32
}

// scheduledRefs returns the refs of q waiting in the scheduler
// (candidates: their state is checked under q.mu); those paged out to the
// time index are not among them (eachIndexed). Call without q.mu.
func (q *queue) scheduledRefs() []*ref {
	q.mu.Lock()
	n := q.scheduled
	q.mu.Unlock()
	if n == 0 {
		return nil
	}
	return q.b.sched.refsOf(q)
}

// waiting returns q's waiting refs that match, in delivery order: the
// ready ones by priority then arrival, then the scheduled ones by time then
// arrival. Expired ready refs are left out. It changes nothing.
func (q *queue) waiting(match func(*ref) bool) []waiting {
	paged, err := q.pagedWaiting(match)
	if err != nil {
		q.b.log.Error("read paged messages for browsing", slog.String("destination", q.dest.String()), slog.Any("err", err))
	}
	// The scheduled messages in memory and those in the time index are
	// read under pages.io, so that the pager moves none from one side to
	// the other between the two reads (it would be listed twice, or not
	// at all).
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	cands := q.scheduledRefs()
	indexed, err := q.indexedWaiting(match)
	if err != nil {
		q.b.log.Error("read paged scheduled messages for browsing", slog.String("destination", q.dest.String()), slog.Any("err", err))
	}
	now := q.b.nowMillis()
	q.mu.Lock()
	ws := q.waitingLocked(now, cands, &paged, match)
	q.mu.Unlock()
	if len(indexed) == 0 {
		return ws
	}
	first := len(ws)
	for first > 0 && ws[first-1].scheduled {
		first--
	}
	for _, r := range indexed {
		ws = append(ws, waiting{r: r, scheduled: true, deliverAt: r.deliverAt, count: r.count})
	}
	slices.SortStableFunc(ws[first:], func(a, b waiting) int {
		return cmp.Or(cmp.Compare(a.deliverAt, b.deliverAt), cmp.Compare(a.r.seq, b.r.seq))
	})
	return ws
}

// waitingLocked is waiting once the scheduled candidates (and paged
// messages, read back by lane, if any) are gathered. With a nil match it
// returns every waiting ref, expired ready ones too.
func (q *queue) waitingLocked(now int64, cands []*ref, paged *[10][]*ref, match func(*ref) bool) []waiting {
	var out []waiting
	for p := 9; p >= 0; p-- {
		laneStart := len(out)
		if paged != nil && len(paged[p]) > 0 {
			for _, r := range paged[p] {
				if r.msg.Expiration != 0 && r.msg.Expiration <= now && match != nil {
					continue
				}
				out = append(out, waiting{r: r, count: r.count})
			}
		}
		l := &q.ready[p]
		for i := 0; i < l.len(); i++ {
			r := l.at(i)
			if match == nil {
				out = append(out, waiting{r: r, count: r.count})
				continue
			}
			if r.msg.Expiration != 0 && r.msg.Expiration <= now {
				continue
			}
			if match(r) {
				out = append(out, waiting{r: r, count: r.count})
			}
		}
		if paged != nil && len(paged[p]) > 0 {
			slices.SortFunc(out[laneStart:], func(a, b waiting) int { return cmp.Compare(a.r.seq, b.r.seq) })
		}
	}
	first := len(out)
	seen := make(map[*ref]struct{}, len(cands))
	for _, r := range cands {
		if r.state != refScheduled || r.gen != q.gen {
			continue
		}
		if _, dup := seen[r]; dup {
			continue
		}
		seen[r] = struct{}{}
		if match == nil || match(r) {
			out = append(out, waiting{r: r, scheduled: true, deliverAt: r.deliverAt, count: r.count})
		}
	}
	slices.SortFunc(out[first:], func(a, b waiting) int {
		return cmp.Or(cmp.Compare(a.deliverAt, b.deliverAt), cmp.Compare(a.r.seq, b.r.seq))
	})
	return out
}

// taken is what queue.take removed from a queue: its caller owns it, and
// either removes it from the store or gives it back with queue.restore.
type taken struct {
	// refs are the refs taken, in delivery order, marked gone; recs their
	// store identities when taken (storeOpsForUndoableRemove drops them).
	refs []*ref
	recs []*stored
	// undeliverable is why those of refs that waited for a move to the
	// error destination waited (only when everything was taken: their
	// scheduler entries went with them).
	undeliverable map[*ref]undeliverable
}

// len returns how many messages t holds.
func (t taken) len() int { return len(t.refs) }

// split cuts t after its first n refs; both parts keep the reasons of
// waiting refs, which restore looks up.
func (t taken) split(n int) (first, rest taken) {
	first, rest = t, t
	first.refs, first.recs = t.refs[:n], t.recs[:n]
	rest.refs, rest.recs = t.refs[n:], t.recs[n:]
	return first, rest
}

// removeOps appends the store writes that delete what t holds: undoable
// (see storeOpsForUndoableRemove), so that restore can give it back when
// they fail.
func (t taken) removeOps(q *queue, ops []store.Op) []store.Op {
	return q.b.storeOpsForUndoableRemove(t.refs, ops)
}

// take removes q's waiting messages in memory (ready, or scheduled) that
// match from its lists and accounting, in delivery order, marking them
// gone; messages in flight, or held while their redelivery is recorded,
// stay, and so do those kept only in the store (paged ready ones and
// paged-out scheduled ones: takePaged takes those, a chunk at a time).
// With a nil match it takes every waiting message in memory, expired ones
// included, and scheduled ones out of the scheduler; with a match the
// scheduler skips the refs taken when their time comes. The room they took
// under the quota is free at once. This is the one remove-with-undo path
// of a queue: the caller removes what it took from the store, or gives it
// back with restore.
func (q *queue) take(match func(*ref) bool) taken {
	var t taken
	var cands []*ref
	if match == nil {
		cands = q.b.sched.removeOf(q)
	} else {
		cands = q.scheduledRefs()
	}
	now := q.b.nowMillis()
	var stale []*ref
	q.mu.Lock()
	ws := q.waitingLocked(now, cands, nil, match)
	taken := make(map[*ref]struct{}, len(ws))
	t.refs = make([]*ref, len(ws))
	for i, w := range ws {
		t.refs[i] = w.r
		taken[w.r] = struct{}{}
		if w.scheduled {
			q.scheduled-- // the scheduler skips it when it fires: it is no longer refScheduled
		}
	}
	for p := range q.ready {
		l := &q.ready[p]
		kept := l.items[:l.head]
		for _, r := range l.items[l.head:] {
			if _, ok := taken[r]; ok {
				q.readyRemoved(r)
				continue
			}
			kept = append(kept, r)
		}
		clear(l.items[len(kept):])
		l.items = kept
		if l.head == len(l.items) {
			l.items, l.head = l.items[:0], 0
		}
	}
	for _, r := range t.refs {
		r.state = refGone
		q.count--
		q.bytes -= int64(r.size) // what it added, whatever its message's size now
	}
	if match == nil {
		for _, r := range t.refs {
			if u, ok := q.undeliverable[r]; ok {
				if t.undeliverable == nil {
					t.undeliverable = map[*ref]undeliverable{}
				}
				t.undeliverable[r] = u
				delete(q.undeliverable, r)
			}
		}
		// Scheduled refs left from an older generation lost their
		// scheduler entries: drop them now rather than when they wake.
		for _, r := range cands {
			if r.state == refScheduled && r.gen != q.gen {
				r.state = refGone
				stale = append(stale, r)
			}
		}
	}
	q.quota.freed()
	q.mu.Unlock()
	if len(stale) > 0 {
		q.b.dropRefs(stale)
	}
	if t.len() > 0 {
		q.roomFreed()
	}
	t.recs = recsOf(t.refs)
	return t
}

// restore gives back to q what take took, once t's removeOps failed (or
// were never built), in their places: ready refs by arrival, scheduled
// ones at their time.
func (q *queue) restore(t taken) {
	for i, r := range t.refs {
		if rec := t.recs[i]; rec != nil && r.rec == nil {
			rec.refs.Add(1)
			r.rec = rec
		}
	}
	if len(t.refs) > 0 {
		if len(t.undeliverable) > 0 {
			q.mu.Lock()
			if !q.deleted {
				if q.undeliverable == nil {
					q.undeliverable = map[*ref]undeliverable{}
				}
				for r, u := range t.undeliverable {
					q.undeliverable[r] = u
				}
			}
			q.mu.Unlock()
		}
		q.addAgain(t.refs)
	}
}

// drainAllIO is drainAll(true) for a queue being deleted, under pages.io:
// no paged record is read back, and no scheduled message is paged out,
// once it returns.
func (q *queue) drainAllIO() ([]*ref, droppedPages) {
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	return q.drainAll(true)
}

// drainAll removes every ready ref of a queue being deleted and returns
// them, with its paged messages (whose store records the deletion removes:
// see Broker.deletePagedMessages); its scheduled refs are dropped when
// they wake.
func (q *queue) drainAll(markDeleted bool) ([]*ref, droppedPages) {
	q.mu.Lock()
	dropped := q.dropPagesLocked()
	var out []*ref
	for p := range q.ready {
		l := &q.ready[p]
		for l.len() > 0 {
			r := l.removeAt(0)
			r.state = refGone
			out = append(out, r)
		}
	}
	q.nready, q.readyBytes = 0, 0
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
	q.quota.freed()
	q.mu.Unlock()
	return out, dropped
}
