package engine

// Paging of scheduled messages: a persistent message due far ahead lives
// in the store only, like the paged ready messages of page.go, and is read
// back shortly before it is due.
//
// Each queue or durable subscription with a store bucket has a time index
// beside it (bucket records.SchedBucket(bucket)): one key per paged-out scheduled
// message, its due time then its sequence number, whose value is a copy of
// its ref record. The ref record itself carries the flag records.FlagIndexed. Index
// entry and flag are written together and removed together, so a flagged
// ref record is one the index holds and no reader of the queue's records
// takes it for a paged ready message. What stays in memory does not grow
// with the messages: per queue, their count, size and a cursor, and (in
// the pager) the earliest due time. A shared one leaves its message record
// to the collector (collect.go).
//
// The pager is one goroutine for the broker. It writes the index for the
// scheduled refs that schedule hands it (they stay in the scheduler until
// the write is durable, then leave memory), and, a lookahead before a
// queue's earliest indexed message is due, reads the index from its start,
// loads those due, clears their flag and index entry, and hands them to
// the scheduler.
//
// Lock order: the pager takes pages.io (page.go) for each queue it writes
// or reads, then queue.mu; pager.mu is taken alone. Deleting a queue takes
// pages.io around forgetting its messages, so that no index write lands
// after the deletion's. Browsing takes pages.io around its reads of the
// scheduled messages in memory (queue.mu, then the scheduler's lock) and
// in the index, so that it sees each on one side only.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
)

// Defaults of Config.PageScheduledAfter and Config.PageLookahead.
const (
	DefaultPageScheduledAfter = 30 * time.Second
	DefaultPageLookahead      = 2 * time.Second
)

// pageInBatch bounds the messages of one index write or read.
const pageInBatch = 4096

// schedPages is what a queue knows of its paged-out scheduled messages;
// guarded by queue.mu.
type schedPages struct {
	n     int64
	bytes int64
	// cursor is the index key after the last entry loaded back (nil: the
	// start). The write that removes loaded entries may still be under
	// way, so every reader of the index starts here: index keys only grow
	// past it (a message is paged out only when due well after the
	// lookahead).
	cursor []byte
}

// pagedLocked reports whether the flagged ref record rr is still paged
// out, not loaded back with its unflagging write under way; under q.mu,
// or on a snapshot of schedPages.
func (sp *schedPages) pagedLocked(rr records.Ref) bool {
	return sp.cursor == nil || bytes.Compare(records.SchedKey(rr.At, rr.Seq), sp.cursor) >= 0
}

// pager writes and reads the time indexes (see above).
type pager struct {
	b    *Broker
	mu   sync.Mutex
	due  timeHeap[queueDue]
	next map[*queue]int64 // each queue's earliest indexed due time, while it has one; the heap entry that matches it is live
	todo []*ref           // scheduled refs to page out
	wake chan struct{}
	// after: refs due further away than this (ms) are paged out; ahead:
	// indexed messages due within this are loaded. after < 0: no paging.
	after int64
	ahead int64
}

// queueDue is a pager heap entry: q has an indexed message due at at.
type queueDue struct {
	at int64
	q  *queue
}

func (e queueDue) dueAt() int64 { return e.at }

func newPager(b *Broker, after, ahead time.Duration) *pager {
	if after == 0 {
		after = DefaultPageScheduledAfter
	}
	if ahead <= 0 {
		ahead = DefaultPageLookahead
	}
	if after > 0 && after < 2*ahead {
		after = 2 * ahead
	}
	return &pager{b: b, wake: make(chan struct{}, 1), next: map[*queue]int64{}, after: after.Milliseconds(), ahead: ahead.Milliseconds()}
}

// schedule hands scheduled refs to the scheduler, and those due far enough
// ahead to the pager too.
func (b *Broker) schedule(refs []*ref, now int64) {
	var far []*ref
	for _, r := range refs {
		b.sched.add(r.deliverAt, r)
		if b.pager.wants(r, now) {
			far = append(far, r)
		}
	}
	if len(far) > 0 {
		b.pager.pageOut(far)
	}
}

// wants reports whether a scheduled ref should be paged out.
func (p *pager) wants(r *ref, now int64) bool {
	return p.after > 0 && r.rec != nil && r.q.bucket != "" && r.deliverAt-now > p.after
}

// pageOut queues scheduled refs for the pager to write to the index.
func (p *pager) pageOut(refs []*ref) {
	p.mu.Lock()
	p.todo = append(p.todo, refs...)
	p.mu.Unlock()
	p.poke()
}

func (p *pager) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// note records that q has an indexed message due at at.
func (p *pager) note(q *queue, at int64) {
	p.mu.Lock()
	n, ok := p.next[q]
	first := false
	if !ok || at < n {
		p.next[q] = at
		first = p.due.push(queueDue{at: at, q: q})
	}
	p.mu.Unlock()
	if first {
		p.poke()
	}
}

// run serves the pager until ctx ends.
func (p *pager) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := p.b.nowMillis()
		p.mu.Lock()
		todo := p.todo
		p.todo = nil
		var due []*queue
		for p.due.len() > 0 && p.due.first().at <= now+p.ahead && len(due) < 64 {
			e := p.due.pop()
			if n, ok := p.next[e.q]; ok && n == e.at {
				delete(p.next, e.q)
				due = append(due, e.q)
			}
		}
		wait := time.Hour
		if p.due.len() > 0 {
			wait = time.Duration(max(p.due.first().at-p.ahead-now, 0)) * time.Millisecond
		}
		p.mu.Unlock()
		byQueue(todo, func(q *queue, rs []*ref) {
			for len(rs) > 0 {
				n := min(len(rs), pageInBatch)
				q.indexScheduled(ctx, rs[:n])
				rs = rs[n:]
			}
		})
		clear(todo)
		busy := len(todo) > 0
		todo = nil // not kept while waiting
		for _, q := range due {
			if next := q.loadScheduled(ctx, now+p.ahead, pageInBatch); next != 0 {
				p.note(q, next)
			}
		}
		if busy || len(due) > 0 {
			continue
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-t.C:
		}
	}
}

// indexScheduled pages out refs of q that are still scheduled and due far
// enough ahead: it writes their index entries and flags, then drops them
// from memory (and from the scheduler). A failed write leaves them
// scheduled in memory.
func (q *queue) indexScheduled(ctx context.Context, refs []*ref) {
	b := q.b
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	now := b.nowMillis()
	var ops []store.Op
	q.mu.Lock()
	kept := refs[:0]
	for _, r := range refs {
		if q.deleted || r.state != refScheduled || r.gen != q.gen || r.rec == nil || !r.rec.durable() ||
			r.deliverAt-now <= 2*b.pager.ahead {
			continue
		}
		if _, ok := q.undeliverable[r]; ok {
			continue // waits for a move to the error destination: kept in memory
		}
		if c := q.pg.sched.cursor; c != nil && bytes.Compare(records.SchedKey(r.deliverAt, r.seq), c) < 0 {
			continue // before what was loaded back (the clock went back): kept in memory
		}
		r.state = refIndexing
		kept = append(kept, r)
	}
	q.mu.Unlock()
	if len(kept) == 0 {
		return
	}
	sb := records.SchedBucket(q.bucket)
	for _, r := range kept {
		v := refValueFlags(r, r.marked, records.FlagIndexed)
		ops = append(ops, store.Op{Kind: store.Put, Bucket: sb, Key: records.SchedKey(r.deliverAt, r.seq), Value: v},
			store.Op{Kind: store.Put, Bucket: q.bucket, Key: records.SeqKey(r.seq), Value: v})
	}
	err := b.updateLinger(ctx, ops, markLinger)
	gone := make(map[*ref]struct{}, len(kept))
	next := int64(math.MaxInt64)
	q.mu.Lock()
	for _, r := range kept {
		if r.state != refIndexing {
			continue
		}
		if err != nil {
			r.state = refScheduled
			continue
		}
		// Only the store holds it now.
		r.state = refGone
		gone[r] = struct{}{}
		sp := &q.pg.sched
		sp.n++
		sp.bytes += int64(r.size)
		if r.rec.shared || r.rec.refs.Load() > 1 {
			r.rec.uncounted.Store(true) // the collector's to delete (collect.go)
		}
		delete(q.pg.lanes[r.msg.Priority].skip, r.seq) // readers skip flagged records
		next = min(next, r.deliverAt)
	}
	q.mu.Unlock()
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			b.log.Error("page out scheduled messages", slog.String("destination", q.dest.String()), slog.Int("messages", len(kept)), slog.Any("err", err))
		}
		return
	}
	b.sched.removeRefs(gone)
	if len(gone) > 0 {
		b.pager.note(q, next)
	}
}

// loadScheduled reads back up to limit of q's indexed messages due by
// until, in due order, clears their index entries and flags, and hands
// them to the scheduler. It returns the due time of the earliest indexed
// message left, 0 when none is (or the queue is gone). A failed read or
// write is tried again a second later.
func (q *queue) loadScheduled(ctx context.Context, until int64, limit int) (next int64) {
	b := q.b
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	q.mu.Lock()
	if q.deleted || q.pg.sched.n == 0 {
		q.mu.Unlock()
		return 0
	}
	gen := q.gen
	from := q.pg.sched.cursor
	q.mu.Unlock()
	sb := records.SchedBucket(q.bucket)
	var recs []records.Ref
	err := b.store.Range(sb, from, limit+1, func(k, v []byte) error {
		rr, err := records.ParseSchedEntry(sb, k, v)
		if err != nil {
			return err
		}
		if rr.At > until || len(recs) == limit {
			next = max(rr.At, 1)
			return errRangeDone
		}
		recs = append(recs, rr)
		return nil
	})
	retry := func(what string, err error) int64 {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, store.ErrClosed) {
			b.log.Error(what, slog.String("destination", q.dest.String()), slog.Any("err", err))
		}
		return b.nowMillis() + 1000
	}
	if err != nil && !errors.Is(err, errRangeDone) {
		return retry("read the time index of scheduled messages", err)
	}
	msgs, err := b.readMessages(recs)
	if err != nil {
		return retry("read paged scheduled messages", err)
	}
	ops := make([]store.Op, 0, 3*len(recs))
	refs := make([]*ref, 0, len(recs))
	q.mu.Lock()
	for i, rr := range recs {
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: sb, Key: records.SchedKey(rr.At, rr.Seq)})
		if msgs[i] == nil {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: q.bucket, Key: records.SeqKey(rr.Seq)})
			refs = append(refs, nil)
			continue
		}
		r := &ref{msg: msgs[i], rec: newPagedRec(rr), seq: rr.Seq, q: q, count: rr.Count, marked: rr.Count,
			deliverAt: rr.At, size: rr.Size, gen: gen, state: refScheduled}
		ops = append(ops, refRecordOp(q.bucket, r, rr.Count))
		refs = append(refs, r)
	}
	q.mu.Unlock()
	if len(ops) > 0 {
		// The write that unflags them need not be durable before they
		// are delivered: every later write about them (a delivery mark,
		// an acknowledgement) is applied after it, and until it is, a
		// restart finds them paged out, as they were. Readers of the index
		// start at the cursor, past them.
		if sub, ok := b.submitter(); ok {
			p := sub.Submit(ops, 0)
			b.acks.watchThen(b, p, 0, func(err error) {
				if err != nil && !errors.Is(err, store.ErrClosed) {
					b.log.Error("clear the time index entries of loaded scheduled messages", slog.String("destination", q.dest.String()), slog.Any("err", err))
				}
			})
		} else if err := b.update(ctx, ops); err != nil {
			return retry("load paged scheduled messages", err)
		}
	}
	var missing int
	q.mu.Lock()
	if len(recs) > 0 {
		last := recs[len(recs)-1]
		q.pg.sched.cursor = records.SchedKey(last.At, last.Seq+1)
	}
	if q.deleted || q.gen != gen {
		q.mu.Unlock()
		return 0
	}
	live := refs[:0]
	for i, r := range refs {
		rr := recs[i]
		sp := &q.pg.sched
		sp.n--
		sp.bytes -= int64(rr.Size)
		if r == nil {
			b.log.Error("a paged scheduled message is missing from the store", slog.Uint64("seq", rr.Seq), slog.String("destination", q.dest.String()))
			q.count--
			q.bytes -= int64(rr.Size)
			q.scheduled--
			missing++
			continue
		}
		q.inMemoryLocked(r)
		live = append(live, r)
	}
	if missing > 0 {
		q.quota.freed()
	}
	if q.pg.sched.n == 0 {
		next = 0
	}
	q.mu.Unlock()
	if missing > 0 {
		q.roomFreed()
	}
	b.sched.addBatch(live)
	return next
}

// eachIndexed calls fn with q's paged-out scheduled messages, in due order
// and in chunks, read back as transient refs (flagged indexed, so that
// storeOpsForRemove deletes their index entries too); fn returning false
// stops. It holds pages.io, so the pager does not move them meanwhile; fn
// runs without queue.mu.
func (q *queue) eachIndexed(fn func(refs []*ref) (bool, error)) error {
	if q.bucket == "" || q.b.store == nil {
		return nil
	}
	q.pg.io.Lock()
	defer q.pg.io.Unlock()
	return q.eachIndexedIO(fn)
}

// eachIndexedIO is eachIndexed for a caller that holds pages.io: one that
// lists the scheduled messages in memory too, and must see each message
// once, on one side of the pager or the other.
func (q *queue) eachIndexedIO(fn func(refs []*ref) (bool, error)) error {
	if q.bucket == "" || q.b.store == nil {
		return nil
	}
	q.mu.Lock()
	n := q.pg.sched.n
	from := q.pg.sched.cursor
	q.mu.Unlock()
	if n == 0 {
		return nil
	}
	sb := records.SchedBucket(q.bucket)
	for {
		var recs []records.Ref
		err := q.b.store.Range(sb, from, pageScanRecords, func(k, v []byte) error {
			rr, err := records.ParseSchedEntry(sb, k, v)
			if err != nil {
				return err
			}
			recs = append(recs, rr)
			return nil
		})
		if err != nil {
			return err
		}
		msgs, err := q.b.readMessages(recs)
		if err != nil {
			return err
		}
		refs := make([]*ref, 0, len(recs))
		for i, rr := range recs {
			if msgs[i] == nil {
				continue
			}
			r := q.transientRef(rr, msgs[i])
			r.indexed = true
			r.rec = newPagedRec(rr)
			refs = append(refs, r)
		}
		if len(refs) > 0 {
			more, err := fn(refs)
			if err != nil || !more {
				return err
			}
		}
		if len(recs) < pageScanRecords {
			return nil
		}
		last := recs[len(recs)-1]
		from = records.SchedKey(last.At, last.Seq+1)
	}
}

// takeIndexed removes q's paged-out scheduled messages that match (all,
// with a nil match), chunk by chunk, handing each chunk's refs to fn,
// which removes them from the store (storeOpsForRemove) and reports
// whether it did; a chunk fn fails stays, and ends the walk with fn's
// error. It returns how many were removed.
func (q *queue) takeIndexed(match func(*ref) bool, fn func(refs []*ref) error) (int, error) {
	removed := 0
	err := q.eachIndexed(func(refs []*ref) (bool, error) {
		var mine []*ref
		q.mu.Lock()
		for _, r := range refs {
			if match != nil && !match(r) {
				continue
			}
			mine = append(mine, r)
		}
		q.mu.Unlock()
		for len(mine) > 0 {
			n := min(len(mine), AdminBatch)
			recs := recsOf(mine[:n])
			if err := fn(mine[:n]); err != nil {
				for i, r := range mine[:n] {
					if r.rec == nil && recs[i] != nil && !indeterminate(err) {
						recs[i].refs.Add(1)
					}
				}
				return false, err
			}
			q.mu.Lock()
			sp := &q.pg.sched
			for _, r := range mine[:n] {
				sp.n--
				sp.bytes -= int64(r.size)
				r.state = refGone
				q.count--
				q.bytes -= int64(r.size)
				q.scheduled--
			}
			q.quota.freed()
			q.mu.Unlock()
			q.roomFreed()
			removed += n
			mine = mine[n:]
		}
		return true, nil
	})
	return removed, err
}

// indexedWaiting returns q's paged-out scheduled messages that match, as
// transient refs in due order, for waiting, which holds pages.io.
func (q *queue) indexedWaiting(match func(*ref) bool) ([]*ref, error) {
	var out []*ref
	err := q.eachIndexedIO(func(refs []*ref) (bool, error) {
		for _, r := range refs {
			if match == nil || match(r) {
				out = append(out, r)
			}
		}
		return true, nil
	})
	return out, err
}

// pagedScheduled returns how many scheduled messages the broker keeps only
// in the store.
func (b *Broker) pagedScheduled() int {
	n := 0
	for _, q := range b.allQueues() {
		q.mu.Lock()
		n += int(q.pg.sched.n)
		q.mu.Unlock()
	}
	return n
}
