package netserve

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a protocol's side of a Writer: what was buffered, and what
// each flush sent.
type recorder struct {
	mu       sync.Mutex
	buf      []string
	batches  [][]string
	flushErr error
	failed   error
	closed   bool
}

func (r *recorder) writer(out chan string, done chan struct{}) *Writer[string] {
	a, b := net.Pipe()
	go func() { <-done; a.Close(); b.Close() }()
	return &Writer[string]{
		Conn: a, Out: out, Done: done,
		Put: func(s string) Put {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.buf = append(r.buf, s)
			var p Put
			if d, ok := strings.CutPrefix(s, "setup "); ok {
				p.KeepAlive, _ = time.ParseDuration(d)
			}
			p.Close = s == "close"
			return p
		},
		KeepAlive: func() error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.buf = append(r.buf, "keep-alive")
			return nil
		},
		Flush: func() error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.batches = append(r.batches, r.buf)
			r.buf = nil
			return r.flushErr
		},
		Failed:  func(err error) { r.mu.Lock(); r.failed = err; r.mu.Unlock() },
		Closing: func() { r.mu.Lock(); r.closed = true; r.mu.Unlock() },
	}
}

func (r *recorder) snapshot() ([][]string, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.batches...), r.failed, r.closed
}

// run starts w and returns a channel closed when Run returns.
func run(w *Writer[string]) chan struct{} {
	ended := make(chan struct{})
	go func() { w.Run(); close(ended) }()
	return ended
}

func waitEnded(t *testing.T, ended chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestWriterCoalescesQueuedItems(t *testing.T) {
	tests := []struct {
		name    string
		queued  int
		batches []int // items per flush
	}{
		{"one", 1, []int{1}},
		{"a few", 5, []int{5}},
		{"a full batch", MaxBatch, []int{MaxBatch}},
		{"more than a batch", MaxBatch + 3, []int{MaxBatch, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, done := make(chan string, 2*MaxBatch), make(chan struct{})
			for range tt.queued {
				out <- "frame"
			}
			r := &recorder{}
			ended := run(r.writer(out, done))
			deadline := time.Now().Add(5 * time.Second)
			for {
				b, _, _ := r.snapshot()
				if len(b) == len(tt.batches) {
					for i, n := range tt.batches {
						if len(b[i]) != n {
							t.Fatalf("flush %d wrote %d items, want %d", i, len(b[i]), n)
						}
					}
					break
				}
				if len(b) > len(tt.batches) || time.Now().After(deadline) {
					t.Fatalf("%d flushes, want %d", len(b), len(tt.batches))
				}
				time.Sleep(time.Millisecond)
			}
			close(done)
			waitEnded(t, ended)
		})
	}
}

func TestWriterKeepAliveOnlyWhenQuiet(t *testing.T) {
	out, done := make(chan string, 8), make(chan struct{})
	r := &recorder{}
	ended := run(r.writer(out, done))
	out <- "setup 100ms"
	// Busy: a frame every 10 ms leaves no quiet interval.
	for range 10 {
		out <- "frame"
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // quiet: keep-alives
	close(done)
	waitEnded(t, ended)
	b, _, _ := r.snapshot()
	var keepAlives, busyKeepAlives int
	framesSeen := 0
	for _, batch := range b {
		for _, it := range batch {
			switch it {
			case "frame":
				framesSeen++
			case "keep-alive":
				keepAlives++
				if framesSeen < 10 {
					busyKeepAlives++
				}
			}
		}
	}
	if busyKeepAlives != 0 {
		t.Errorf("%d keep-alives while frames flowed", busyKeepAlives)
	}
	if keepAlives < 1 {
		t.Errorf("no keep-alive in 300 ms of quiet at a 100 ms interval (flushes %v)", b)
	}
}

func TestWriterCloseAfterLastFrame(t *testing.T) {
	out, done := make(chan string, 8), make(chan struct{})
	defer close(done)
	out <- "frame"
	out <- "close"
	out <- "never"
	r := &recorder{}
	waitEnded(t, run(r.writer(out, done)))
	b, failed, closed := r.snapshot()
	if len(b) != 1 || strings.Join(b[0], ",") != "frame,close" || failed != nil || !closed {
		t.Fatalf("flushes %v, failed %v, closed %v; want frame,close flushed, then the close", b, failed, closed)
	}
}

func TestWriterFlushFailure(t *testing.T) {
	out, done := make(chan string, 8), make(chan struct{})
	defer close(done)
	r := &recorder{flushErr: errors.New("broken pipe")}
	w := r.writer(out, done)
	var flushedErr error
	w.Flushed = func(err error) { flushedErr = err }
	out <- "frame"
	waitEnded(t, run(w))
	_, failed, closed := r.snapshot()
	if failed == nil || failed.Error() != "write: broken pipe" || flushedErr == nil || closed {
		t.Fatalf("failed %v, flushed with %v, closed %v", failed, flushedErr, closed)
	}
}
