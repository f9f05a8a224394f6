package engine

// Paging: a deep queue's ready messages live in the store, not in memory.
//
// Each queue or durable subscription with a store bucket keeps at most a
// window of ready messages in memory (Policy.WindowMessages and
// WindowBytes, or the broker's defaults). A persistent message that
// arrives while the window is full is not kept: its ref is dropped and
// only its store records remain. It is "paged". What the queue remembers of
// its paged messages does not grow with their number: per priority (a
// lane), the sequence number from which the bucket's records of that
// priority are paged, how many there are and their size, plus a set of the
// few sequence numbers at or after that point that are in memory all the
// same (skip: a message whose first write could still be taken back, a
// scheduled message, one put back by a consumer). A paged message that
// other subscriptions share leaves its message record to the collector
// (collect.go).
//
// As the window drains, a worker goroutine reads the next records of the
// highest lane back from the store (Store.Range, then Get for the
// messages) and puts them in the ready lists, so delivery keeps its order:
// priority, then arrival. Dispatch never hands out a message of a lower
// priority while a higher lane has paged messages, and never one of a lane
// past its paged messages: it waits for the worker instead. A consumer
// with a selector that matches nothing in memory makes the worker search
// the paged records for it (from where its last search ended), so that a
// restrictive selector on a deep queue neither starves behind paged
// messages nor holds up the other consumers.
//
// Paging changes none of a queue's counts: a paged message is held, and
// counted by quotas, metrics and browsing, like any other.
//
// Lock order: pages.io, then queue.mu. pages.io serializes the goroutines
// that read the paged records (the worker, administrators' operations), so
// that a record is never read back twice; the fields are guarded by
// queue.mu and changed only by queue methods.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
)

// Defaults of a queue's in-memory window of ready messages.
const (
	DefaultWindowMessages = 16384
	DefaultWindowBytes    = 16 << 20
)

// Bounds of one read of paged records.
const (
	// pageScanRecords bounds the ref records one load or search reads.
	pageScanRecords = 4096
	// pageLoadMin is the least a load asks for, so that loads are few.
	pageLoadMin = 256
)

// pages is what a queue knows of its paged messages; guarded by queue.mu.
type pages struct {
	io      sync.Mutex // see the lock order above
	lanes   [10]pageLane
	n       int64 // paged messages, every lane
	bytes   int64
	working bool   // the worker goroutine runs
	busy    bool   // a read of paged records is under way: track what is paged meanwhile
	epoch   uint32 // bumped when the paged set is dropped (deletion)
	// minExp is the earliest expiration (ms) of a paged message, 0 when
	// none expires: the expiry scan reads the paged records only once it
	// has come (expirePaged).
	minExp int64
	// winMsgs and winBytes are the window (see window); 0 until known.
	winMsgs  int
	winBytes int64
	// searches are the consumers with selectors that found nothing in
	// memory and want the paged records searched.
	searches map[*Consumer]struct{}
	// sched is the scheduled messages paged out to the time index
	// (pager.go); their ref records are flagged and every reader of the
	// bucket's records here skips them.
	sched schedPages
}

// pageLane is one priority's paged records: those of the bucket with that
// priority and a sequence number of at least from, except the ones in skip.
type pageLane struct {
	from  uint64
	n     int64
	bytes int64
	tail  uint64              // the highest paged sequence number
	hi    uint64              // the highest sequence number of this priority put in memory
	low   uint64              // the least paged out while pages.busy; 0 for none
	skip  map[uint64]struct{} // in memory although at or after from
}

// window returns q's window bounds; under q.mu. Policies do not change
// while the broker runs, so the answer is kept.
func (q *queue) window() (msgs int, bytes int64) {
	if q.pg.winMsgs == 0 {
		pol := q.policy()
		q.pg.winMsgs, q.pg.winBytes = pol.WindowMessages, pol.WindowBytes
		if q.pg.winMsgs <= 0 {
			q.pg.winMsgs = q.b.cfg.WindowMessages
		}
		if q.pg.winBytes <= 0 {
			q.pg.winBytes = q.b.cfg.WindowBytes
		}
	}
	return q.pg.winMsgs, q.pg.winBytes
}

// windowFullLocked reports whether the ready lists fill q's window.
func (q *queue) windowFullLocked() bool {
	msgs, bytes := q.window()
	return q.nready >= msgs || q.readyBytes >= bytes
}

// readyInsert puts r in its ready list; under q.mu. A ref at or after its
// lane's paging point is in memory all the same: the lane skips it.
func (q *queue) readyInsert(r *ref) {
	p := r.msg.Priority
	r.state = refReady
	q.ready[p].insert(r)
	q.nready++
	q.readyBytes += int64(r.size)
	q.pg.lanes[p].inMemory(r.seq)
}

// readyRemoved accounts for r leaving the ready lists; under q.mu.
func (q *queue) readyRemoved(r *ref) {
	q.nready--
	q.readyBytes -= int64(r.size)
}

// inMemoryLocked records that r, about to be scheduled, is held in memory
// although it may be at or after its lane's paging point; under q.mu.
func (q *queue) inMemoryLocked(r *ref) {
	q.pg.lanes[r.msg.Priority].inMemory(r.seq)
}

// pageOutLocked pages r out instead of making it ready, when it should be;
// under q.mu. The caller has counted r as held.
func (q *queue) pageOutLocked(r *ref) bool {
	if q.bucket == "" || r.rec == nil || !r.rec.durable() {
		return false
	}
	p := r.msg.Priority
	l := &q.pg.lanes[p]
	if l.n == 0 {
		if r.seq <= l.hi || !q.windowFullLocked() {
			return false
		}
		l.from, l.tail, l.skip = r.seq, 0, nil
	} else if r.seq < l.from {
		return false
	}
	delete(l.skip, r.seq)
	l.n++
	l.bytes += int64(r.size)
	l.tail = max(l.tail, r.seq)
	if q.pg.busy && (l.low == 0 || r.seq < l.low) {
		l.low = r.seq
	}
	q.pg.n++
	q.pg.bytes += int64(r.size)
	if e := r.msg.Expiration; e != 0 && (q.pg.minExp == 0 || e < q.pg.minExp) {
		q.pg.minExp = e
	}
	if r.rec.shared || r.rec.refs.Load() > 1 {
		// Nothing in memory stands for this holder any more: the message
		// record is the collector's to delete (collect.go).
		r.rec.uncounted.Store(true)
	}
	r.state = refPaged
	return true
}

// durable reports whether the message's record is in the store for good:
// its first write, if it was sent consume-before-store, is durable.
func (s *stored) durable() bool {
	ew := s.early
	if ew == nil {
		return true
	}
	ew.mu.Lock()
	p := ew.pending
	ew.mu.Unlock()
	select {
	case <-p.Done():
		return p.Err() == nil
	default:
		return false
	}
}

// pagedStopLocked is told by dispatch that c found no message in memory at
// priority p or above while lane p has paged messages; under q.mu. It
// reports whether c must wait for the worker (true), or may look at lower
// priorities (its selector was checked against all of lane p already).
func (q *queue) pagedStopLocked(c *Consumer, p int) bool {
	l := &q.pg.lanes[p]
	if c.sel == nil {
		q.startWorkerLocked()
		return true
	}
	if c.pageSeen[p] > l.tail {
		return false
	}
	if q.pg.searches == nil {
		q.pg.searches = map[*Consumer]struct{}{}
	}
	q.pg.searches[c] = struct{}{}
	q.startWorkerLocked()
	return true
}

// startWorkerLocked starts the worker unless it runs; under q.mu.
func (q *queue) startWorkerLocked() {
	if q.pg.working || q.deleted {
		return
	}
	q.pg.working = true
	go q.pageWorker()
}

// needLoadLocked returns the lane the worker should load next, or -1:
// a lane above every ready message's priority, or any lane once the window
// is half empty; under q.mu.
func (q *queue) needLoadLocked() int {
	if q.pg.n == 0 || q.deleted {
		return -1
	}
	top := -1
	for p := 9; p >= 0; p-- {
		if q.ready[p].len() > 0 {
			top = p
			break
		}
	}
	msgs, bytes := q.window()
	half := q.nready <= msgs/2 && q.readyBytes <= bytes/2
	for p := 9; p >= 0; p-- {
		if q.pg.lanes[p].n == 0 {
			continue
		}
		if p > top || half {
			return p
		}
		return -1
	}
	return -1
}

// pageJob is one read of paged records by the worker.
type pageJob struct {
	lane     int
	from     uint64
	want     int
	search   *Consumer // a search for this consumer's selector, else a load
	epoch    uint32
	lanesTop uint64
}

// nextJobLocked picks the worker's next job; ok is false when there is
// nothing to do (the worker then stops); under q.mu.
func (q *queue) nextJobLocked() (pageJob, bool) {
	if p := q.needLoadLocked(); p >= 0 {
		msgs, _ := q.window()
		want := max(msgs-q.nready, min(pageLoadMin, msgs))
		return pageJob{lane: p, from: q.pg.lanes[p].from, want: want, epoch: q.pg.epoch}, true
	}
	for c := range q.pg.searches {
		delete(q.pg.searches, c)
		if c.closed.Load() || c.credit <= 0 {
			continue
		}
		for p := 9; p >= 0; p-- {
			l := &q.pg.lanes[p]
			if l.n == 0 || c.pageSeen[p] > l.tail {
				continue
			}
			from := max(c.pageSeen[p], l.from)
			return pageJob{lane: p, from: from, want: c.credit, search: c, epoch: q.pg.epoch}, true
		}
	}
	return pageJob{}, false
}

// pageWorker reads paged records back while there is a need.
func (q *queue) pageWorker() {
	for {
		q.pg.io.Lock()
		q.mu.Lock()
		job, ok := q.nextJobLocked()
		if !ok {
			q.pg.working = false
			q.mu.Unlock()
			q.pg.io.Unlock()
			return
		}
		q.pg.busy = true
		q.mu.Unlock()
		recs, msgs, end, err := q.readPaged(job)
		if err != nil {
			q.b.log.Error("read paged messages back from the store", slog.String("destination", q.dest.String()), slog.Any("err", err))
		}
		q.mu.Lock()
		q.pg.busy = false
		var expired []*ref
		if err == nil {
			expired = q.commitJobLocked(job, recs, msgs, end)
		} else {
			q.clearLowLocked()
			// The store failing: stop; the next dispatch tries again.
			q.pg.working = false
			q.mu.Unlock()
			q.pg.io.Unlock()
			return
		}
		expired = append(expired, q.dispatchLocked()...)
		q.mu.Unlock()
		q.pg.io.Unlock()
		q.b.expireRefs(q, expired)
	}
}

// clearLowLocked forgets what was paged out during a read.
func (q *queue) clearLowLocked() {
	for p := range q.pg.lanes {
		q.pg.lanes[p].low = 0
	}
}

// readPaged reads the records of a job's lane from job.from: up to
// pageScanRecords ref records, and the messages of those of the lane's
// priority (up to job.want of them for a load). end is the sequence number
// after the last record looked at, or 0 when the bucket's end was reached.
// It runs with pages.io held and queue.mu not.
func (q *queue) readPaged(job pageJob) (recs []records.Ref, msgs []*message.Message, end uint64, err error) {
	var last uint64
	n := 0
	full := false
	err = q.b.store.Range(q.bucket, records.SeqKey(job.from), pageScanRecords, func(k, v []byte) error {
		rr, err := records.ParseRef(q.bucket, k, v)
		if err != nil {
			return err
		}
		n++
		last = rr.Seq
		if rr.Legacy || rr.Indexed || int(rr.Prio) != job.lane {
			return nil
		}
		recs = append(recs, rr)
		if job.search == nil && len(recs) >= job.want {
			full = true
			return errRangeDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errRangeDone) {
		return nil, nil, 0, fmt.Errorf("read ref records of %s: %w", q.dest, err)
	}
	if full || n == pageScanRecords {
		end = last + 1
	}
	msgs, err = q.b.readMessages(recs)
	if err != nil || job.search == nil {
		return recs, msgs, end, err
	}
	// A search keeps what the selector matches, matched here rather than
	// under queue.mu.
	kept := 0
	for i, rr := range recs {
		if m := msgs[i]; m != nil && job.search.matches(m, rr.Count) {
			recs[kept], msgs[kept] = rr, m
			kept++
		}
	}
	return recs[:kept], msgs[:kept], end, nil
}

// errRangeDone stops a Store.Range walk that has what it wanted.
var errRangeDone = errors.New("engine: range walk done")

// readMessages reads the messages of ref records; a missing one is nil.
func (b *Broker) readMessages(recs []records.Ref) ([]*message.Message, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	keys := make([][]byte, len(recs))
	for i, rr := range recs {
		keys[i] = records.SeqKey(rr.Seq)
	}
	msgs := make([]*message.Message, len(recs))
	err := b.store.Get(records.Messages, keys, func(i int, v []byte) error {
		m := new(message.Message)
		if err := m.UnmarshalBinary(v); err != nil {
			return fmt.Errorf("message %d: %w", recs[i].Seq, err)
		}
		msgs[i] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read paged messages: %w", err)
	}
	return msgs, nil
}

// commitJobLocked puts what a job read into the queue; under q.mu. It
// returns the refs found expired.
func (q *queue) commitJobLocked(job pageJob, recs []records.Ref, msgs []*message.Message, end uint64) (expired []*ref) {
	defer q.clearLowLocked()
	if q.deleted || job.epoch != q.pg.epoch {
		return nil
	}
	l := &q.pg.lanes[job.lane]
	if l.n == 0 {
		return nil
	}
	var now int64
	take := func(rr records.Ref, m *message.Message) {
		if m == nil {
			q.b.log.Error("a paged message is missing from the store", slog.Uint64("seq", rr.Seq), slog.String("destination", q.dest.String()))
			q.forgetPagedLocked(l, rr)
			q.count--
			q.bytes -= int64(rr.Size)
			return
		}
		q.forgetPagedLocked(l, rr)
		r := &ref{msg: m, rec: newPagedRec(rr), seq: rr.Seq, q: q, count: rr.Count, marked: rr.Count,
			size: rr.Size, deliverAt: rr.At, gen: q.gen}
		if m.Expiration != 0 {
			if now == 0 {
				now = q.b.nowMillis()
			}
			if m.Expiration <= now {
				r.state = refGone
				expired = append(expired, r)
				return
			}
		}
		q.readyInsert(r)
	}
	if job.search != nil {
		c := job.search
		wanted := c.credit
		seen := end
		if end == 0 {
			seen = l.tail + 1
		}
		for i, rr := range recs {
			if !l.isPaged(rr.Seq) {
				continue
			}
			if wanted == 0 {
				// More matches than credit: the next search starts here.
				seen = rr.Seq
				break
			}
			take(rr, msgs[i])
			wanted--
		}
		c.pageSeen[job.lane] = seen
		return expired
	}
	// A load: everything of the lane up to end (or the bucket's end) is
	// read back, except what was paged out meanwhile below it.
	newFrom := end
	if end == 0 {
		newFrom = max(l.tail+1, job.from)
	}
	if l.low != 0 && l.low < newFrom {
		newFrom = l.low
	}
	for i, rr := range recs {
		if rr.Seq >= newFrom || !l.isPaged(rr.Seq) {
			continue
		}
		take(rr, msgs[i])
	}
	if newFrom > l.from {
		l.from = newFrom
		for s := range l.skip {
			if s < newFrom {
				delete(l.skip, s)
			}
		}
	}
	if l.n > 0 && end == 0 && l.low == 0 {
		// Nothing of the lane is left in the store: the count was wrong.
		q.b.log.Error("paged messages counted but not found in the store", slog.String("destination", q.dest.String()),
			slog.Int64("messages", l.n), slog.Int("priority", job.lane))
		q.count -= l.n
		q.bytes -= l.bytes
		q.pg.n -= l.n
		q.pg.bytes -= l.bytes
		l.n, l.bytes = 0, 0
	}
	if l.n == 0 {
		l.skip = nil
	}
	return expired
}

// isPaged reports whether the lane's record seq is a paged message.
func (l *pageLane) isPaged(seq uint64) bool {
	if l.n == 0 || seq < l.from {
		return false
	}
	_, in := l.skip[seq]
	return !in
}

// forgetPagedLocked takes one record off the lane's paged count: it is
// back in memory, or gone; under q.mu.
func (q *queue) forgetPagedLocked(l *pageLane, rr records.Ref) {
	l.n--
	l.bytes -= int64(rr.Size)
	q.pg.n--
	q.pg.bytes -= int64(rr.Size)
	if rr.Seq >= l.from {
		if l.skip == nil {
			l.skip = map[uint64]struct{}{}
		}
		l.skip[rr.Seq] = struct{}{}
	}
	if l.n == 0 {
		l.skip = nil
	}
}

// newPagedRec is the store identity of a message read back from the store
// (paged, or scheduled and paged out): a shared one is uncounted, its
// other holders being unknown here.
func newPagedRec(rr records.Ref) *stored {
	rec := &stored{key: rr.Seq, shared: rr.Shared, transient: rr.Transient}
	rec.refs.Store(1)
	if rr.Shared {
		rec.uncounted.Store(true)
	}
	return rec
}

// matches reports whether c's selector matches m delivered for the
// (count+1)-th time. It needs no lock: a selector does not change.
func (c *Consumer) matches(m *message.Message, count int32) bool {
	if c.sel == nil {
		return true
	}
	d := message.Delivery{Msg: m, DeliveryCount: count + 1, Redelivered: count > 0}
	return c.sel.Matches(message.SelectorView{D: &d})
}

// pagedInfoLocked adds what q has paged to into; under q.mu.
func (q *queue) pagedInfoLocked(into *DestinationInfo) {
	into.Paged += q.pg.n + q.pg.sched.n
	into.PagedBytes += q.pg.bytes + q.pg.sched.bytes
}

// transientRef is a paged message read back for browsing or an administrator:
// a ref that is not in the queue (state refPaged).
func (q *queue) transientRef(rr records.Ref, m *message.Message) *ref {
	return &ref{msg: m, seq: rr.Seq, q: q, count: rr.Count, marked: rr.Count, size: rr.Size, deliverAt: rr.At, state: refPaged}
}

// eachPaged calls fn, lane by lane from the highest priority and in
// arrival order within a lane, with every paged message of q (read back,
// not put in the queue) in chunks; fn returning false stops. It holds
// pages.io, so the worker does not move the records meanwhile; fn runs
// without queue.mu. lane is the priority of the chunk.
func (q *queue) eachPaged(fn func(lane int, recs []records.Ref, msgs []*message.Message) (bool, error)) error {
	if q.bucket == "" || q.b.store == nil {
		return nil
	}
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	for p := 9; p >= 0; p-- {
		q.mu.Lock()
		l := q.pg.lanes[p]
		skip := make(map[uint64]struct{}, len(l.skip))
		for s := range l.skip {
			skip[s] = struct{}{}
		}
		q.mu.Unlock()
		if l.n == 0 {
			continue
		}
		from := l.from
		for from <= l.tail {
			var recs []records.Ref
			var last uint64
			n := 0
			err := q.b.store.Range(q.bucket, records.SeqKey(from), pageScanRecords, func(k, v []byte) error {
				n++
				rr, err := records.ParseRef(q.bucket, k, v)
				if err != nil {
					return err
				}
				last = rr.Seq
				if _, in := skip[rr.Seq]; !in && !rr.Legacy && !rr.Indexed && int(rr.Prio) == p && rr.Seq <= l.tail {
					recs = append(recs, rr)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("read ref records of %s: %w", q.dest, err)
			}
			msgs, err := q.b.readMessages(recs)
			if err != nil {
				return err
			}
			if len(recs) > 0 {
				more, err := fn(p, recs, msgs)
				if err != nil || !more {
					return err
				}
			}
			if n < pageScanRecords {
				break
			}
			from = last + 1
		}
	}
	return nil
}

// pagedWaiting returns q's paged messages that match, as transient refs,
// by lane, for waiting.
func (q *queue) pagedWaiting(match func(*ref) bool) (byLane [10][]*ref, err error) {
	err = q.eachPaged(func(p int, recs []records.Ref, msgs []*message.Message) (bool, error) {
		for i, rr := range recs {
			if msgs[i] == nil {
				continue
			}
			r := q.transientRef(rr, msgs[i])
			if match == nil || match(r) {
				byLane[p] = append(byLane[p], r)
			}
		}
		return true, nil
	})
	return byLane, err
}

// takePaged removes paged messages that match (all, with a nil match)
// from q, ready ones then scheduled ones (takeIndexed), chunk by chunk, handing each chunk's refs to fn, which removes
// them from the store and reports whether it did; a chunk fn fails stays
// paged, and ends the walk with fn's error. It returns how many were
// removed. Removed refs are counted out of q's count and size.
func (q *queue) takePaged(match func(*ref) bool, fn func(refs []*ref) error) (int, error) {
	removed := 0
	err := q.eachPaged(func(p int, recs []records.Ref, msgs []*message.Message) (bool, error) {
		var refs []*ref
		var rrs []records.Ref
		q.mu.Lock()
		for i, rr := range recs {
			if msgs[i] == nil {
				continue
			}
			r := q.transientRef(rr, msgs[i])
			if match != nil && !match(r) {
				continue
			}
			if !q.pg.lanes[p].isPaged(rr.Seq) {
				continue
			}
			r.rec = newPagedRec(rr)
			refs = append(refs, r)
			rrs = append(rrs, rr)
		}
		q.mu.Unlock()
		for len(refs) > 0 {
			n := min(len(refs), AdminBatch)
			recs := recsOf(refs[:n])
			if err := fn(refs[:n]); err != nil {
				// Their records are still in the store, and so are their
				// holds on shared messages (unless the outcome is unknown:
				// fenced, nothing is undone).
				for i, r := range refs[:n] {
					if r.rec == nil && recs[i] != nil && !indeterminate(err) {
						recs[i].refs.Add(1)
					}
				}
				return false, err
			}
			q.mu.Lock()
			l := &q.pg.lanes[p]
			for i, rr := range rrs[:n] {
				if !l.isPaged(rr.Seq) {
					continue
				}
				q.forgetPagedLocked(l, rr)
				refs[i].state = refGone
				q.count--
				q.bytes -= int64(rr.Size)
			}
			q.quota.freed()
			q.mu.Unlock()
			q.roomFreed()
			removed += n
			refs, rrs = refs[n:], rrs[n:]
		}
		return true, nil
	})
	if err != nil {
		return removed, err
	}
	// Then the scheduled messages paged out to the time index.
	n, err := q.takeIndexed(match, fn)
	return removed + n, err
}

// dropPagesLocked forgets every paged message of a queue being deleted and
// returns what the deletion must remove from the store besides the
// bucket; under q.mu.
func (q *queue) dropPagesLocked() droppedPages {
	d := droppedPages{lanes: q.pg.lanes, sched: q.pg.sched}
	q.count -= q.pg.n
	q.bytes -= q.pg.bytes
	q.pg.lanes = [10]pageLane{}
	q.pg.n, q.pg.bytes = 0, 0
	// Paged-out scheduled messages are counted as scheduled too.
	q.count -= q.pg.sched.n
	q.bytes -= q.pg.sched.bytes
	q.scheduled -= int(q.pg.sched.n)
	q.pg.sched = schedPages{}
	q.pg.epoch++
	return d
}

// droppedPages is the paged set of a deleted queue.
type droppedPages struct {
	lanes [10]pageLane
	sched schedPages
}

// any reports whether anything was paged.
func (d droppedPages) any() bool {
	for _, l := range d.lanes {
		if l.n > 0 {
			return true
		}
	}
	return d.sched.n > 0
}

// deletePagedMessages removes from the store the messages of a deleted
// queue's paged refs that no other queue holds, in batches, before the
// queue's bucket goes. A failure is logged: the messages are then left
// unreferenced in the store.
func (b *Broker) deletePagedMessages(ctx context.Context, bucket string, d droppedPages) {
	if !d.any() || b.store == nil {
		return
	}
	var ops []store.Op
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if err := b.store.Update(ctx, ops); err != nil {
			b.log.Error("delete the paged messages of a deleted destination", slog.String("bucket", bucket), slog.Any("err", err))
		}
		ops = ops[:0]
	}
	err := walkRefRecords(b.store, bucket, 0, func(rr records.Ref) error {
		if rr.Legacy {
			return nil
		}
		if rr.Indexed {
			if !d.sched.pagedLocked(rr) {
				return nil // loaded back: in memory, dropped with the queue's refs
			}
		} else if !d.lanes[rr.Prio].isPaged(rr.Seq) {
			return nil
		}
		if rr.Shared {
			// Other subscriptions may hold it: the collector decides.
			ops = append(ops, collectOp(rr.Seq, bucket))
			return nil
		}
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(rr.Seq)})
		return nil
	}, flush)
	if err != nil {
		b.log.Error("read the paged messages of a deleted destination", slog.String("bucket", bucket), slog.Any("err", err))
	}
	b.coll.poke()
}

// sortRefsBySeq orders refs by arrival.
func sortRefsBySeq(refs []*ref) {
	slices.SortFunc(refs, func(a, b *ref) int { return cmp.Compare(a.seq, b.seq) })
}

// inMemory records that the lane's message seq is held in memory (or by
// the scheduler's pager) although it may come after the lane's paging
// point; for recovery, and for inMemoryLocked.
func (l *pageLane) inMemory(seq uint64) {
	l.hi = max(l.hi, seq)
	if l.n > 0 && seq >= l.from {
		if l.skip == nil {
			l.skip = map[uint64]struct{}{}
		}
		l.skip[seq] = struct{}{}
	}
}

// installPages gives a recovered queue its paged lanes, counting their
// messages as held, and the earliest expiration among them. It runs before
// the queue's in-memory messages are added, and returns how many messages
// are paged.
func (q *queue) installPages(lanes [10]pageLane, minExp int64) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pg.minExp = minExp
	n := 0
	for p := range lanes {
		l := lanes[p]
		if l.n == 0 {
			l = pageLane{hi: l.hi}
		}
		q.pg.lanes[p] = l
		q.pg.n += l.n
		q.pg.bytes += l.bytes
		q.count += l.n
		q.bytes += l.bytes
		n += int(l.n)
	}
	return n
}

// installScheduled gives a recovered queue its paged-out scheduled
// messages, counted as held and scheduled; before its in-memory messages
// are added.
func (q *queue) installScheduled(sp schedPages) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pg.sched = sp
	q.count += sp.n
	q.bytes += sp.bytes
	q.scheduled += int(sp.n)
}

// expirePaged removes the paged messages of q that have expired by now,
// as the expiry scan does for those in memory, reading only the store's
// ref records (which carry each message's expiration) and, of the
// messages, only the expired ones. It does nothing until the earliest
// expiration among the paged messages has come.
func (q *queue) expirePaged(now int64) {
	if q.bucket == "" || q.b.store == nil {
		return
	}
	q.pg.io.Lock()
	q.mu.Lock()
	if q.pg.n == 0 || q.pg.minExp == 0 || q.pg.minExp > now || q.deleted {
		q.mu.Unlock()
		q.pg.io.Unlock()
		return
	}
	lanes := q.pg.lanes
	skips := make([]map[uint64]struct{}, len(lanes))
	for p := range lanes {
		skips[p] = maps.Clone(lanes[p].skip)
	}
	epoch := q.pg.epoch
	q.pg.minExp = 0 // page-outs from now on count again
	q.mu.Unlock()

	var expired []records.Ref
	next := int64(0)
	from := uint64(0)
	for p := range lanes {
		if lanes[p].n > 0 && (from == 0 || lanes[p].from < from) {
			from = lanes[p].from
		}
	}
	err := walkRefRecords(q.b.store, q.bucket, from, func(rr records.Ref) error {
		l := &lanes[rr.Prio]
		if rr.Legacy || rr.Indexed || rr.Expiration == 0 || l.n == 0 || rr.Seq < l.from || rr.Seq > l.tail {
			return nil
		}
		if _, in := skips[rr.Prio][rr.Seq]; in {
			return nil
		}
		if rr.Expiration <= now {
			expired = append(expired, rr)
		} else if next == 0 || rr.Expiration < next {
			next = rr.Expiration
		}
		return nil
	}, nil)
	if err != nil {
		q.b.log.Error("expiry scan of paged messages", slog.String("destination", q.dest.String()), slog.Any("err", err))
		q.mu.Lock()
		q.pg.minExp = now // try again at the next scan
		q.mu.Unlock()
		q.pg.io.Unlock()
		return
	}
	msgs, err := q.b.readMessages(expired)
	if err != nil {
		q.b.log.Error("expiry scan of paged messages", slog.String("destination", q.dest.String()), slog.Any("err", err))
		msgs = make([]*message.Message, len(expired))
		expired = nil
		next = now
	}
	var refs []*ref
	q.mu.Lock()
	if q.deleted || epoch != q.pg.epoch {
		q.mu.Unlock()
		q.pg.io.Unlock()
		return
	}
	for i, rr := range expired {
		l := &q.pg.lanes[rr.Prio]
		if !l.isPaged(rr.Seq) {
			continue
		}
		rec := newPagedRec(rr)
		q.forgetPagedLocked(l, rr)
		if msgs[i] == nil {
			q.b.log.Error("a paged message is missing from the store", slog.Uint64("seq", rr.Seq), slog.String("destination", q.dest.String()))
			q.count--
			q.bytes -= int64(rr.Size)
			continue
		}
		r := q.transientRef(rr, msgs[i])
		r.rec, r.state = rec, refGone
		refs = append(refs, r)
	}
	if next != 0 && (q.pg.minExp == 0 || next < q.pg.minExp) {
		q.pg.minExp = next
	}
	q.mu.Unlock()
	q.pg.io.Unlock()
	q.b.expireRefs(q, refs)
}

// browsed is a ready ref as a browseSource took it, with its delivery
// count then: the ref's own may change (a consumer takes it) while the
// browser goes on, outside queue.mu.
type browsed struct {
	r     *ref
	count int32
}

// browseSource walks a queue's waiting messages for a browser in delivery
// order: lane by lane from the highest priority, within a lane by arrival,
// merging the ready refs in memory when it was made with the lane's paged
// records, read from the store a chunk at a time as the browser goes. It
// is weakly consistent: a message consumed meanwhile may or may not show,
// none shows twice.
type browseSource struct {
	q      *queue
	accept func(*ref) bool
	now    int64
	lane   int
	mem    [10][]browsed // ready refs per lane, by seq
	lanes  [10]pageLane
	paged  int64 // paged messages when it was made
	cursor uint64
	buf    []*ref // read from the store, not yet handed out
	done   bool   // the current lane's paged records are all read
	err    error
}

// browse makes a browseSource of q's ready messages that accept takes.
func (q *queue) browse(accept func(*ref) bool) *browseSource {
	src := &browseSource{q: q, accept: accept, now: q.b.nowMillis(), lane: 9}
	q.mu.Lock()
	for p := range q.ready {
		l := &q.ready[p]
		for _, r := range l.items[l.head:] {
			src.mem[p] = append(src.mem[p], browsed{r: r, count: r.count})
		}
		src.lanes[p] = q.pg.lanes[p]
		src.lanes[p].skip = maps.Clone(q.pg.lanes[p].skip)
	}
	src.paged = q.pg.n
	q.mu.Unlock()
	src.startLane()
	return src
}

func (s *browseSource) startLane() {
	s.buf, s.done = s.buf[:0], s.lanes[s.lane].n == 0
	s.cursor = s.lanes[s.lane].from
}

// live reports whether r, with the delivery count count, is shown: not
// expired, and accepted. accept is given a copy of what it may read (the
// message and the count), not r, whose state a consumer may be changing.
func (s *browseSource) live(r *ref, count int32) bool {
	if r.msg.Expiration != 0 && r.msg.Expiration <= s.now {
		return false
	}
	return s.accept == nil || s.accept(&ref{msg: r.msg, seq: r.seq, size: r.size, q: r.q, count: count})
}

// next returns up to n more deliveries; none when the walk is over.
func (s *browseSource) next(n int) []message.Delivery {
	var out []message.Delivery
	for len(out) < n && s.lane >= 0 {
		if len(s.buf) == 0 && !s.done {
			s.read()
			continue
		}
		mem := s.mem[s.lane]
		var r *ref
		var count int32
		switch {
		case len(mem) > 0 && (len(s.buf) == 0 || mem[0].r.seq < s.buf[0].seq):
			r, count, s.mem[s.lane] = mem[0].r, mem[0].count, mem[1:]
		case len(s.buf) > 0:
			r, s.buf = s.buf[0], s.buf[1:]
			count = r.count // a transient ref of this source's
		default:
			s.lane--
			if s.lane >= 0 {
				s.startLane()
			}
			continue
		}
		if s.live(r, count) {
			out = append(out, message.Delivery{Msg: r.msg, DeliveryCount: count + 1, Redelivered: count > 0})
		}
	}
	return out
}

// read reads the current lane's next paged records and their messages.
func (s *browseSource) read() {
	q, l := s.q, &s.lanes[s.lane]
	var recs []records.Ref
	var last uint64
	n := 0
	err := q.b.store.Range(q.bucket, records.SeqKey(s.cursor), pageScanRecords, func(k, v []byte) error {
		rr, err := records.ParseRef(q.bucket, k, v)
		if err != nil {
			return err
		}
		n++
		last = rr.Seq
		if _, in := l.skip[rr.Seq]; !in && !rr.Legacy && !rr.Indexed && int(rr.Prio) == s.lane && rr.Seq <= l.tail {
			recs = append(recs, rr)
		}
		return nil
	})
	var msgs []*message.Message
	if err == nil {
		msgs, err = q.b.readMessages(recs)
	}
	if err != nil {
		s.err, s.done = err, true
		q.b.log.Error("read paged messages for a browser", slog.String("destination", q.dest.String()), slog.Any("err", err))
		return
	}
	for i, rr := range recs {
		if msgs[i] != nil {
			s.buf = append(s.buf, q.transientRef(rr, msgs[i]))
		}
	}
	if n < pageScanRecords || last >= l.tail {
		s.done = true
	}
	s.cursor = last + 1
}

// pagedCount returns how many of q's messages are paged.
func (q *queue) pagedCount() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pg.n + q.pg.sched.n
}

// eachWaiting calls fn with q's waiting messages that match, in the order
// of waiting (ready ones, paged ones included, by priority then arrival;
// then scheduled ones by time: those in memory, then those paged out),
// reading paged ones from the store as it goes; an error from fn stops it.
func (q *queue) eachWaiting(match func(*ref) bool, fn func(MessageEntry) error) error {
	src := q.browse(match)
	for {
		ds := src.next(browseChunk)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if err := fn(MessageEntry{Delivery: d}); err != nil {
				return err
			}
		}
	}
	if src.err != nil {
		return fmt.Errorf("read the paged messages of %s: %w", q.dest, src.err)
	}
	// The scheduled messages in memory, then those in the time index,
	// both under pages.io: the pager moves none from one to the other
	// meanwhile, which would list it twice (or not at all).
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	cands := q.scheduledRefs()
	now := q.b.nowMillis()
	q.mu.Lock()
	ws := q.waitingLocked(now, cands, nil, match)
	q.mu.Unlock()
	for _, w := range ws {
		if !w.scheduled {
			continue
		}
		e := MessageEntry{Delivery: message.Delivery{Msg: w.r.msg, DeliveryCount: w.count + 1, Redelivered: w.count > 0},
			Scheduled: true, DeliverAt: w.deliverAt}
		if err := fn(e); err != nil {
			return err
		}
	}
	// Then the scheduled messages paged out to the time index, in due
	// order, a chunk at a time.
	var fnErr error
	err := q.eachIndexedIO(func(refs []*ref) (bool, error) {
		for _, r := range refs {
			if match != nil && !match(r) {
				continue
			}
			e := MessageEntry{Delivery: message.Delivery{Msg: r.msg, DeliveryCount: r.count + 1, Redelivered: r.count > 0},
				Scheduled: true, DeliverAt: r.deliverAt}
			if fnErr = fn(e); fnErr != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("read the paged scheduled messages of %s: %w", q.dest, err)
	}
	return nil
}

// walkRefRecords calls fn with every ref record of bucket from seq from
// on, in order, reading the bucket a chunk at a time (each chunk its own
// consistent view, so records written meanwhile may or may not be seen).
// An error from fn, or a record that cannot be parsed, stops the walk.
// fn runs within the store's read: it must not write to the store;
// between, if set, runs after each chunk, outside it, and may.
func walkRefRecords(st store.Store, bucket string, from uint64, fn func(rr records.Ref) error, between func()) error {
	for {
		var last uint64
		n := 0
		err := st.Range(bucket, records.SeqKey(from), pageScanRecords, func(k, v []byte) error {
			rr, err := records.ParseRef(bucket, k, v)
			if err != nil {
				return err
			}
			n++
			last = rr.Seq
			return fn(rr)
		})
		if err != nil {
			return err
		}
		if between != nil {
			between()
		}
		if n < pageScanRecords {
			return nil
		}
		from = last + 1
	}
}
