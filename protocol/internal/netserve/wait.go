package netserve

import (
	"context"
	"time"
)

// UntilClosed returns a context that is cancelled when done closes (a
// connection's end), for the goroutines of a connection that wait on the
// engine. cancel releases it earlier.
func UntilClosed(done <-chan struct{}) (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// WaitBounded waits until ch closes, and reports whether it did; it gives
// up when done closes (the connection ended) or after d.
func WaitBounded(ch, done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-done:
	case <-t.C:
	}
	return false
}
