package engine

// timed is something kept in a timeHeap: it is due at a time in ms.
type timed interface {
	dueAt() int64
}

// timeHeap is a binary min-heap by due time, the index of the scheduler and
// of the pager. It stores values, not pointers, so an entry costs its own
// size and nothing more.
type timeHeap[T timed] struct {
	items []T
}

func (h *timeHeap[T]) len() int { return len(h.items) }

// first returns the entry due soonest; the heap must not be empty.
func (h *timeHeap[T]) first() T { return h.items[0] }

// push adds x and reports whether it is now the first.
func (h *timeHeap[T]) push(x T) bool {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].dueAt() <= h.items[i].dueAt() {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
	return i == 0
}

// pop removes and returns the first entry.
func (h *timeHeap[T]) pop() T {
	top := h.items[0]
	n := len(h.items) - 1
	var zero T
	h.items[0] = h.items[n]
	h.items[n] = zero
	h.items = h.items[:n]
	h.down(0)
	h.shrink()
	return top
}

// shrink gives back the backing array of a heap that has emptied out to a
// quarter of it, so that a burst of entries (a million scheduled messages
// before the pager takes them) does not keep its memory.
func (h *timeHeap[T]) shrink() {
	if c := cap(h.items); c > 1024 && len(h.items) < c/4 {
		h.items = append(make([]T, 0, 2*len(h.items)), h.items...)
	}
}

// filter keeps the entries keep accepts and restores the heap order.
func (h *timeHeap[T]) filter(keep func(T) bool) {
	kept := h.items[:0]
	for _, x := range h.items {
		if keep(x) {
			kept = append(kept, x)
		}
	}
	clear(h.items[len(kept):])
	h.items = kept
	h.shrink()
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *timeHeap[T]) down(i int) {
	items := h.items
	n := len(items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && items[r].dueAt() < items[l].dueAt() {
			m = r
		}
		if items[i].dueAt() <= items[m].dueAt() {
			return
		}
		items[i], items[m] = items[m], items[i]
		i = m
	}
}
