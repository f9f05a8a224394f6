package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type dueAtInt int64

func (d dueAtInt) dueAt() int64 { return int64(d) }

// The heap pops in due order after pushes, pops and filters, and gives its
// memory back once it has emptied out.
func TestTimeHeapOrderAndShrink(t *testing.T) {
	var h timeHeap[dueAtInt]
	rng := rand.New(rand.NewPCG(1, 2))
	var want []int64
	for i := 0; i < 100000; i++ {
		v := rng.Int64N(1 << 40)
		h.push(dueAtInt(v))
		want = append(want, v)
	}
	peak := cap(h.items)
	// Keep one in a hundred, as the pager leaves the scheduler.
	h.filter(func(x dueAtInt) bool { return int64(x)%100 == 0 })
	kept := want[:0]
	for _, v := range want {
		if v%100 == 0 {
			kept = append(kept, v)
		}
	}
	slices.Sort(kept)
	if cap(h.items) >= peak/4 {
		t.Fatalf("after filtering down to %d of %d the heap keeps capacity %d", h.len(), len(want), cap(h.items))
	}
	for i, v := range kept {
		if got := int64(h.pop()); got != v {
			t.Fatalf("pop %d: %d, want %d", i, got, v)
		}
	}
	if h.len() != 0 || cap(h.items) > 1024 {
		t.Fatalf("empty heap: len %d cap %d", h.len(), cap(h.items))
	}
}
