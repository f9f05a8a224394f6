package netserve

import (
	"testing"
	"time"
)

func TestUntilClosed(t *testing.T) {
	done := make(chan struct{})
	ctx, cancel := UntilClosed(done)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("cancelled before done closed")
	}
	close(done)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not cancelled when done closed")
	}
}

func TestWaitBounded(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	open := make(chan struct{})
	for _, tc := range []struct {
		name     string
		ch, done chan struct{}
		want     bool
	}{
		{"closed", closed, open, true},
		{"connection ended", open, closed, false},
		{"timed out", open, open, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if got := WaitBounded(tc.ch, tc.done, 20*time.Millisecond); got != tc.want {
				t.Fatalf("WaitBounded = %v, want %v", got, tc.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("did not return in time")
			}
		})
	}
}
