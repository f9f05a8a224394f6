package engine

import (
	"testing"
	"time"
)

// A queue holds first writes long while its early messages are delivered
// and acknowledged quickly, short once a good share of them takes longer
// than the long hold (a hold would not save their writes), and long again
// once they are quick again.
func TestEarlyHoldFollowsTheConsumer(t *testing.T) {
	fast, slow := time.Millisecond, 10*time.Millisecond
	steps := []struct {
		name string
		wait time.Duration
		n    int
		want time.Duration
	}{
		{"new queue", 0, 0, earlyHoldLong},
		{"quick consumer", fast, 1000, earlyHoldLong},
		{"a few slow ones", slow, 3, earlyHoldLong},
		{"consumer slows down", slow, 100, earlyHoldShort},
		{"one quick one", fast, 1, earlyHoldShort},
		{"quick again", fast, 200, earlyHoldLong},
	}
	var f earlyFast
	for _, s := range steps {
		for range s.n {
			f.note(s.wait)
		}
		if got := f.hold(); got != s.want {
			t.Errorf("%s: hold %v, want %v (slow share %d/%d)", s.name, got, s.want, f.slow.Load(), earlyFastOne)
		}
	}
}
