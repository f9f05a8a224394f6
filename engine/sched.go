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
	mu    sync.Mutex
	heap  []schedEntry
	timer *time.Timer
	wake  chan struct{}
	now   func() int64
}

type schedEntry struct {
	at int64
	r  *ref
}

func newScheduler(now func() int64) *scheduler {
	return &scheduler{wake: make(chan struct{}, 1), now: now}
}

// add schedules r to be made ready at the given time (ms).
func (s *scheduler) add(at int64, r *ref) {
	s.mu.Lock()
	s.heap = append(s.heap, schedEntry{at: at, r: r})
	s.up(len(s.heap) - 1)
	first := s.heap[0].r == r
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// addBatch schedules refs at their deliverAt under one lock.
func (s *scheduler) addBatch(refs []*ref) {
	if len(refs) == 0 {
		return
	}
	s.mu.Lock()
	var before int64
	if len(s.heap) > 0 {
		before = s.heap[0].at
	}
	for _, r := range refs {
		s.heap = append(s.heap, schedEntry{at: r.deliverAt, r: r})
		s.up(len(s.heap) - 1)
	}
	earlier := len(s.heap) == len(refs) || s.heap[0].at < before
	s.mu.Unlock()
	if earlier {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// len returns the number of scheduled entries.
func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
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
		for len(s.heap) > 0 && s.heap[0].at <= now {
			due = append(due, s.heap[0].r)
			s.pop()
		}
		wait := time.Hour
		if len(s.heap) > 0 {
			wait = time.Duration(s.heap[0].at-now) * time.Millisecond
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

func (s *scheduler) up(i int) {
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (s *scheduler) pop() {
	h := s.heap
	n := len(h) - 1
	h[0] = h[n]
	h[n] = schedEntry{}
	s.heap = h[:n]
	h = s.heap
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].at < h[l].at {
			m = r
		}
		if h[i].at <= h[m].at {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
