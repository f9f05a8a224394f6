package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// Defaults of Config.PageScheduledAfter and Config.PageLookahead.
const (
	DefaultPageScheduledAfter = 30 * time.Second
	DefaultPageLookahead      = 2 * time.Second
)

// pagedRef is a scheduled persistent message kept only in the store until
// shortly before it is due. It is the whole in-memory cost of such a
// message: a million of them take 48 MB, whatever their bodies weigh.
type pagedRef struct {
	at    int64
	seq   uint64
	q     *queue
	rec   *stored // the shared store identity when other refs hold the message too
	count int32
	size  int32
	gen   uint32
}

// pager holds paged-out scheduled messages in a min-heap by due time and
// loads them back from the store, in batches, a lookahead before they are
// due, handing them to the scheduler. Loading runs on its own goroutine so
// that a slow store read never delays the scheduler's timer.
type pager struct {
	b     *Broker
	mu    sync.Mutex
	heap  timeHeap[pagedRef]
	wake  chan struct{}
	after int64 // ms: refs due further away than this are paged out
	ahead int64 // ms: refs due within this are loaded
}

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
	return &pager{b: b, wake: make(chan struct{}, 1), after: after.Milliseconds(), ahead: ahead.Milliseconds()}
}

// schedule hands scheduled refs to the scheduler, or pages out those due
// far enough ahead.
func (b *Broker) schedule(refs []*ref, now int64) {
	for _, r := range refs {
		if b.pager.wants(r, now) {
			b.pager.pageOut(r)
			continue
		}
		b.sched.add(r.deliverAt, r)
	}
}

// wants reports whether a scheduled ref should be paged out.
func (p *pager) wants(r *ref, now int64) bool {
	return p.after > 0 && r.rec != nil && r.q.bucket != "" && r.deliverAt-now > p.after
}

// pageOut replaces r by a paged entry; r must be scheduled and held by
// nothing else.
func (p *pager) pageOut(r *ref) {
	e := pagedRef{at: r.deliverAt, seq: r.seq, q: r.q, count: r.count, size: r.size, gen: r.gen}
	if r.rec.refs.Load() > 1 {
		e.rec = r.rec
	}
	p.add(e)
}

func (e pagedRef) dueAt() int64 { return e.at }

func (p *pager) add(e pagedRef) {
	p.mu.Lock()
	first := p.heap.push(e)
	p.mu.Unlock()
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// len returns the number of paged-out messages.
func (p *pager) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heap.len()
}

// removeOf removes every paged entry of q and returns them.
func (p *pager) removeOf(q *queue) []pagedRef {
	var mine []pagedRef
	p.mu.Lock()
	p.heap.filter(func(e pagedRef) bool {
		if e.q == q {
			mine = append(mine, e)
			return false
		}
		return true
	})
	p.mu.Unlock()
	return mine
}

// materialize loads every paged message of q back into memory (the
// scheduler), for management operations that must see them all.
func (p *pager) materialize(q *queue) {
	mine := p.removeOf(q)
	for len(mine) > 0 {
		n := min(len(mine), pageInBatch)
		p.load(mine[:n])
		mine = mine[n:]
	}
}

// pageInBatch bounds the messages loaded in one store read.
const pageInBatch = 4096

func (p *pager) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var batch []pagedRef
	for {
		now := p.b.nowMillis()
		batch = batch[:0]
		p.mu.Lock()
		for p.heap.len() > 0 && p.heap.first().at <= now+p.ahead && len(batch) < pageInBatch {
			batch = append(batch, p.heap.pop())
		}
		wait := time.Hour
		if len(batch) == pageInBatch {
			wait = 0
		} else if p.heap.len() > 0 {
			wait = time.Duration(p.heap.first().at-p.ahead-now) * time.Millisecond
		}
		p.mu.Unlock()
		if len(batch) > 0 {
			p.load(batch)
		}
		if wait == 0 {
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

// load reads a batch of paged messages from the store and schedules them.
func (p *pager) load(batch []pagedRef) {
	b := p.b
	keys := make([][]byte, len(batch))
	for i, e := range batch {
		keys[i] = seqKey(e.seq)
	}
	msgs := make([]*message.Message, len(batch))
	err := b.store.Get(bucketMsgs, keys, func(i int, v []byte) error {
		m := new(message.Message)
		if err := m.UnmarshalBinary(v); err != nil {
			b.log.Error("page in a scheduled message", slog.Uint64("seq", batch[i].seq), slog.Any("err", err))
			return nil
		}
		msgs[i] = m
		return nil
	})
	if err != nil {
		// The store is closing or failing: keep them paged; a restart
		// recovers them from the store.
		b.log.Error("page in scheduled messages", slog.Int("messages", len(batch)), slog.Any("err", err))
		for _, e := range batch {
			p.add(e)
		}
		return
	}
	refs := make([]*ref, 0, len(batch))
	for i, e := range batch {
		m := msgs[i]
		if m == nil {
			b.log.Error("a paged scheduled message is missing from the store", slog.Uint64("seq", e.seq), slog.String("destination", e.q.dest.String()))
			e.q.forgetPaged(e)
			continue
		}
		rec := e.rec
		if rec == nil {
			rec = &stored{key: e.seq}
			rec.refs.Store(1)
		}
		refs = append(refs, &ref{msg: m, rec: rec, seq: e.seq, q: e.q, count: e.count, marked: e.count,
			deliverAt: e.at, size: e.size, gen: e.gen, state: refScheduled})
	}
	b.sched.addBatch(refs)
}
