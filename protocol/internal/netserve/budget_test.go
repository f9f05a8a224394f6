package netserve

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	tests := []struct {
		name   string
		limit  int64
		held   []int64 // taken first
		take   int64
		blocks bool
	}{
		{"fits", 100, []int64{40}, 60, false},
		{"over", 100, []int64{40}, 61, true},
		{"larger than all, nothing queued", 100, nil, 500, false},
		{"larger than all, something queued", 100, []int64{1}, 500, true},
		{"default limit", 0, []int64{DefaultOutputBuffer - 10}, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.limit)
			for _, n := range tt.held {
				if !b.Take(n, nil) {
					t.Fatal("take failed")
				}
			}
			done := make(chan struct{})
			got := make(chan bool, 1)
			go func() { got <- b.Take(tt.take, done) }()
			select {
			case ok := <-got:
				if tt.blocks {
					t.Fatalf("took %d beyond the limit (ok=%v)", tt.take, ok)
				}
				return
			case <-time.After(20 * time.Millisecond):
				if !tt.blocks {
					t.Fatal("take waited with room")
				}
			}
			// Giving back the bytes held lets it through.
			for _, n := range tt.held {
				b.Give(n)
			}
			if ok := <-got; !ok {
				t.Fatal("take failed after room came back")
			}
			if b.Used() != tt.take {
				t.Fatalf("used %d, want %d", b.Used(), tt.take)
			}
		})
	}
}

func TestBudgetDone(t *testing.T) {
	b := NewBudget(10)
	b.Take(10, nil)
	done := make(chan struct{})
	got := make(chan bool, 1)
	go func() { got <- b.Take(5, done) }()
	close(done)
	if <-got {
		t.Fatal("take succeeded after done closed")
	}
	if b.Used() != 10 {
		t.Fatalf("used %d", b.Used())
	}
}
