package engine

import (
	"context"
	"sync"
	"time"
)

// scheduler wakes refs whose delivery time (time-to-deliver, schedule,
// redelivery delay) has come. One goroutine and one timer serve the whole
// broker; entries live in a binary min-heap of 16-byte entries, so holding a
// million scheduled messages costs 16 MB of index beyond the refs.
type scheduler struct {
	mu   sync.Mutex
	heap timeHeap[schedEntry]
	wake chan struct{}
	now  func() int64
}

type schedEntry struct {
	at int64
	r  *ref
}

func (e schedEntry) dueAt() int64 { return e.at }

func newScheduler(now func() int64) *scheduler {
	return &scheduler{wake: make(chan struct{}, 1), now: now}
}

// add schedules r to be made ready at the given time (ms).
func (s *scheduler) add(at int64, r *ref) {
	s.mu.Lock()
	first := s.heap.push(schedEntry{at: at, r: r})
	s.mu.Unlock()
	if first {
		s.poke()
	}
}

// addBatch schedules refs at their deliverAt under one lock.
func (s *scheduler) addBatch(refs []*ref) {
	s.mu.Lock()
	first := false
	for _, r := range refs {
		first = s.heap.push(schedEntry{at: r.deliverAt, r: r}) || first
	}
	s.mu.Unlock()
	if first {
		s.poke()
	}
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// len returns the number of scheduled entries.
func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heap.len()
}

// run fires due entries until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*ref
	for {
		now := s.now()
		due = due[:0]
		s.mu.Lock()
		for s.heap.len() > 0 && s.heap.first().at <= now {
			due = append(due, s.heap.pop().r)
		}
		wait := time.Hour
		if s.heap.len() > 0 {
			wait = time.Duration(s.heap.first().at-now) * time.Millisecond
		}
		s.mu.Unlock()
		// Wake each queue's due refs together: messages due at the same
		// time are then dispatched in priority and arrival order, not in
		// the heap's arbitrary order among equal times.
		byQueue(due, func(q *queue, rs []*ref) { q.wake(rs) })
		clear(due)
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
		case <-s.wake:
		case <-t.C:
		}
	}
}

// refsOf returns the refs of q that have entries in the heap, leaving them
// there. They are candidates: a ref may have left q already (its entry is
// skipped when it fires) or appear twice (given back after a failed
// administrator's move); q checks their state under its own lock.
func (s *scheduler) refsOf(q *queue) []*ref {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*ref
	for _, e := range s.heap.items {
		if e.r.q == q {
			out = append(out, e.r)
		}
	}
	return out
}

// removeOf removes every entry of q from the heap and returns their refs,
// candidates as refsOf's are.
func (s *scheduler) removeOf(q *queue) []*ref {
	var out []*ref
	s.mu.Lock()
	s.heap.filter(func(e schedEntry) bool {
		if e.r.q != q {
			return true
		}
		out = append(out, e.r)
		return false
	})
	s.mu.Unlock()
	return out
}

// removeRefs removes the entries of the given refs from the heap.
func (s *scheduler) removeRefs(set map[*ref]struct{}) {
	if len(set) == 0 {
		return
	}
	s.mu.Lock()
	s.heap.filter(func(e schedEntry) bool {
		_, drop := set[e.r]
		return !drop
	})
	s.mu.Unlock()
}
