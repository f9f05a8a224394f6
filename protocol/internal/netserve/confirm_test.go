package netserve

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// gate is a Waiter the test opens: an engine write that finishes when the
// test says so.
type gate struct {
	open      chan struct{}
	err       error
	called    atomic.Bool // Wait was called
	abandoned atomic.Bool // Wait was called with the connection's context done
}

func newGate(err error) *gate { return &gate{open: make(chan struct{}), err: err} }

func readyGate(err error) *gate {
	g := newGate(err)
	close(g.open)
	return g
}

func (g *gate) Ready() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

func (g *gate) Wait(ctx context.Context) error {
	g.called.Store(true)
	if ctx.Err() != nil {
		g.abandoned.Store(true)
		return ctx.Err()
	}
	select {
	case <-g.open:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answers is a protocol's side of a Confirmer: each answer and each flush,
// in the order they happened.
type answers struct{ events chan string }

func newAnswers() *answers { return &answers{events: make(chan string, 64)} }

func (a *answers) Confirmed(item int, err error) {
	if err != nil {
		a.events <- fmt.Sprintf("%d:%v", item, err)
		return
	}
	a.events <- fmt.Sprint(item)
}

func (a *answers) Flush() { a.events <- "flush" }

// expect reads the next events and compares them with want.
func (a *answers) expect(t *testing.T, want ...string) {
	t.Helper()
	for i, w := range want {
		select {
		case got := <-a.events:
			if got != w {
				t.Fatalf("event %d: got %q, want %q (want %q)", i, got, w, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d: nothing after 5s, want %q (want %q)", i, w, want)
		}
	}
}

// expectAnswers is expect without the flushes, for a test where they
// depend on timing.
func (a *answers) expectAnswers(t *testing.T, want ...string) {
	t.Helper()
	for i := 0; i < len(want); {
		select {
		case got := <-a.events:
			if got == "flush" {
				continue
			}
			if got != want[i] {
				t.Fatalf("answer %d: got %q, want %q (want %q)", i, got, want[i], want)
			}
			i++
		case <-time.After(5 * time.Second):
			t.Fatalf("answer %d: nothing after 5s, want %q (want %q)", i, want[i], want)
		}
	}
}

// eventually waits up to 5s for cond, and fails the test with what
// when it does not hold by then.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// taken waits until the confirmer waits on g.
func taken(t *testing.T, g *gate) {
	t.Helper()
	eventually(t, "the confirmer did not take its first item", g.called.Load)
}

// result waits up to 5s for a call's result on ch and checks it is want;
// what names the call.
func result(t *testing.T, ch <-chan bool, want bool, what string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no result after 5s", what)
	}
}

// quiet checks that nothing more happens for a short while.
func (a *answers) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-a.events:
		t.Fatalf("unexpected event %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func startConfirmer(t *testing.T, size int) (*Confirmer[int], *answers, chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			close(done)
		}
	})
	a := newAnswers()
	q := &Confirmer[int]{}
	q.Start(done, size, a)
	return q, a, done
}

func TestConfirmerAnswersInQueueOrder(t *testing.T) {
	errWrite := errors.New("disk full")
	tests := []struct {
		name   string
		gates  []*gate
		open   []int      // gates to open, in this order, after queueing all
		events [][]string // what follows each open
	}{
		{
			name:   "later writes finish first",
			gates:  []*gate{newGate(nil), newGate(nil), newGate(nil)},
			open:   []int{2, 1, 0},
			events: [][]string{nil, nil, {"0", "1", "2", "flush"}},
		},
		{
			name:   "ready ones after a wait coalesce into one flush",
			gates:  []*gate{newGate(nil), readyGate(nil), readyGate(nil), readyGate(nil)},
			open:   []int{0},
			events: [][]string{{"0", "1", "2", "3", "flush"}},
		},
		{
			name:   "a flush before each wait that blocks",
			gates:  []*gate{newGate(nil), readyGate(nil), newGate(nil), readyGate(nil)},
			open:   []int{0, 2},
			events: [][]string{{"0", "1", "flush"}, {"2", "3", "flush"}},
		},
		{
			name:   "a failure is answered in its place",
			gates:  []*gate{newGate(nil), readyGate(errWrite), readyGate(nil)},
			open:   []int{0},
			events: [][]string{{"0", "1:disk full", "2", "flush"}},
		},
		{
			name:   "nothing to wait for",
			gates:  []*gate{newGate(nil), nil, nil},
			open:   []int{0},
			events: [][]string{{"0", "1", "2", "flush"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, a, _ := startConfirmer(t, 16)
			for i, g := range tt.gates {
				var w Waiter
				if g != nil {
					w = g
				}
				if !q.Later(w, i) {
					t.Fatalf("Later(%d) refused", i)
				}
			}
			if got := q.Pending(); got != int64(len(tt.gates)) {
				t.Fatalf("Pending = %d, want %d", got, len(tt.gates))
			}
			a.quiet(t)
			for i, g := range tt.open {
				close(tt.gates[g].open)
				if tt.events[i] == nil {
					a.quiet(t)
					continue
				}
				a.expect(t, tt.events[i]...)
			}
			a.quiet(t)
			if got := q.Pending(); got != 0 {
				t.Fatalf("Pending = %d after all answered, want 0", got)
			}
		})
	}
}

func TestConfirmerWaitQueued(t *testing.T) {
	q, a, _ := startConfirmer(t, 16)
	if !q.WaitQueued(time.Second) {
		t.Fatal("WaitQueued with nothing queued: false")
	}
	g := newGate(nil)
	q.Later(g, 1)
	q.Later(readyGate(nil), 2)
	returned := make(chan bool)
	go func() { returned <- q.WaitQueued(5 * time.Second) }()
	select {
	case <-returned:
		t.Fatal("WaitQueued returned while a confirmation was pending")
	case <-time.After(50 * time.Millisecond):
	}
	close(g.open)
	a.expect(t, "1", "2", "flush") // answered, held answers flushed, before WaitQueued returns
	result(t, returned, true, "WaitQueued once everything was answered")
	a.quiet(t)
}

func TestConfirmerWaitQueuedGivesUp(t *testing.T) {
	q, _, done := startConfirmer(t, 16)
	q.Later(newGate(nil), 1)
	if q.WaitQueued(20 * time.Millisecond) {
		t.Fatal("WaitQueued: true while a confirmation is pending")
	}
	returned := make(chan bool)
	go func() { returned <- q.WaitQueued(time.Minute) }()
	close(done)
	result(t, returned, false, "WaitQueued when the connection ends")
}

func TestConfirmerQueueIsBounded(t *testing.T) {
	q, a, _ := startConfirmer(t, 2)
	first := newGate(nil)
	q.Later(first, 0)
	taken(t, first)
	// Fill the queue behind it, until a Later blocks.
	queued := make(chan int, 8)
	go func() {
		for i := 1; i <= 4; i++ {
			q.Later(readyGate(nil), i)
			queued <- i
		}
	}()
	var n int
	for stop := false; !stop; {
		select {
		case n = <-queued:
		case <-time.After(100 * time.Millisecond):
			stop = true
		}
	}
	if n != 2 {
		t.Fatalf("%d Later calls returned with a queue of 2 behind a pending confirmation, want 2", n)
	}
	close(first.open)
	a.expectAnswers(t, "0", "1", "2", "3", "4")
	select {
	case n = <-queued:
	case <-time.After(5 * time.Second):
	}
	for len(queued) > 0 {
		n = <-queued
	}
	if n != 4 {
		t.Fatalf("last Later to return: %d, want 4", n)
	}
}

func TestConfirmerEndsWithTheConnection(t *testing.T) {
	q, a, done := startConfirmer(t, 2)
	first, second := newGate(nil), newGate(nil)
	q.Later(first, 1)
	taken(t, first)
	q.Later(second, 2)
	q.Later(newGate(nil), 3)   // the queue is full now
	refused := make(chan bool) // Later's result
	go func() { refused <- q.Later(readyGate(nil), 4) }()
	close(done)
	result(t, refused, false, "Later on a full queue of a connection that ends")
	close(first.open)
	a.quiet(t)
	eventually(t, "a confirmation still queued at the end was not handed back to the engine", second.abandoned.Load)
	if q.Later(readyGate(nil), 5) {
		t.Fatal("Later after the connection ended: accepted")
	}
}

func TestConfirmerStartOnce(t *testing.T) {
	q, a, done := startConfirmer(t, 4)
	other := newAnswers()
	q.Start(done, 1, other) // ignored: already started
	q.Later(readyGate(nil), 1)
	a.expect(t, "1", "flush")
	other.quiet(t)
}

// TestConfirmerAllocatesNothingPerItem holds the hot path to no allocation
// per queued and answered item (the protocols' per-message cost).
func TestConfirmerAllocatesNothingPerItem(t *testing.T) {
	q, h := countingConfirmer(t, 64)
	w := readyGate(nil)
	allocs := testing.AllocsPerRun(2000, func() { q.Later(w, 1) })
	if !q.WaitQueued(5 * time.Second) {
		t.Fatal("not all answered")
	}
	if allocs >= 1 {
		t.Fatalf("%.1f allocations per item, want 0", allocs)
	}
	if h.n.Load() != 2001 { // AllocsPerRun runs the function once more first
		t.Fatalf("answered %d, want 2001", h.n.Load())
	}
}

// countAnswers counts the answers.
type countAnswers struct{ n atomic.Int64 }

func (h *countAnswers) Confirmed(int, error) { h.n.Add(1) }
func (h *countAnswers) Flush()               {}

// countingConfirmer is a started Confirmer that counts its answers, for
// the test's lifetime.
func countingConfirmer(tb testing.TB, size int) (*Confirmer[int], *countAnswers) {
	done := make(chan struct{})
	tb.Cleanup(func() { close(done) })
	h := &countAnswers{}
	q := &Confirmer[int]{}
	q.Start(done, size, h)
	return q, h
}

func BenchmarkConfirmer(b *testing.B) {
	q, _ := countingConfirmer(b, 4096)
	w := readyGate(nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		q.Later(w, i)
	}
	q.WaitQueued(time.Minute)
}
