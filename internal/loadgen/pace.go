package loadgen

import (
	"context"
	"time"
)

// pacer spaces one producer's sends so that all the producers together
// send Options.Rate messages per second, evenly: producer i of p sends its
// k-th message at (k·p + i) / rate seconds after the start, so the
// producers interleave instead of sending in bursts. A producer that falls
// behind (waiting for confirmations) sends at once until it is back on
// schedule; it never skips a message.
type pacer struct {
	start     time.Time
	interval  time.Duration // between two sends of this producer: p / rate
	offset    time.Duration // of this producer's first send: i / rate
	behind    int64         // sends that started more than paceSlack late
	maxBehind time.Duration
}

// paceSlack is how late a send may start before it counts as behind.
const paceSlack = time.Millisecond

// newPacer returns the pacer of producer idx of producers at rate
// messages/s in all, or nil when rate is not positive (no pacing).
func newPacer(start time.Time, rate float64, producers, idx int) *pacer {
	if rate <= 0 || producers <= 0 {
		return nil
	}
	return &pacer{
		start:    start,
		interval: time.Duration(float64(producers) / rate * float64(time.Second)),
		offset:   time.Duration(float64(idx) / rate * float64(time.Second)),
	}
}

// due is when the send of sequence number seq is scheduled.
func (p *pacer) due(seq uint64) time.Time {
	return p.start.Add(p.offset + time.Duration(seq)*p.interval)
}

// wait sleeps until seq is due (or ctx ends) and records how late it is.
func (p *pacer) wait(ctx context.Context, seq uint64) error {
	at := p.due(seq)
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		return nil
	}
	if late := time.Since(at); late > paceSlack {
		p.behind++
		p.maxBehind = max(p.maxBehind, late)
	}
	return nil
}
