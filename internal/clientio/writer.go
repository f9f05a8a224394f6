// Package clientio is the output side of the project's own minimal clients
// (internal/amqp1client and the load generator's lean AMQP 0-9-1 client):
// frames that any goroutine queues are coalesced by one flusher goroutine
// into few writes; an idle frame (a heart-beat) goes out when half the idle
// interval passed with nothing queued; the bytes queued can be bounded, so
// that a producer faster than the socket waits instead of growing the
// buffer. The server side has its own (protocol/internal/netserve).
package clientio

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// writeTimeout bounds one write to the socket.
const writeTimeout = 10 * time.Second

// Writer coalesces frames for one connection. Its lock guards the queued
// bytes and the error; no other lock is taken inside it.
type Writer struct {
	nc        net.Conn
	idle      time.Duration
	idleFrame func([]byte) []byte
	limit     int

	mu    sync.Mutex
	room  sync.Cond // on mu: the flusher took the queued bytes, or the connection failed
	buf   []byte    // queued frames
	err   error     // why nothing more can be written
	spare []byte    // the flusher's other buffer (flusher only)
	kick  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// New returns a Writer for nc. With idle > 0 the flusher appends
// idleFrame's frame when idle/2 passed with nothing queued. With limit > 0,
// QueueBounded waits while limit bytes are queued. Run starts the flusher.
func New(nc net.Conn, idle time.Duration, idleFrame func([]byte) []byte, limit int) *Writer {
	w := &Writer{nc: nc, idle: idle, idleFrame: idleFrame, limit: limit,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	w.room.L = &w.mu
	return w
}

// Queue appends a frame (fn appends it to the bytes it is given and
// returns them) and wakes the flusher. It returns the connection's error
// once there is one, and fn's error, which leaves the queue as it was.
func (w *Writer) Queue(fn func(b []byte) ([]byte, error)) error {
	return w.queue(false, fn)
}

// QueueBounded is Queue, waiting first while the limit is reached.
func (w *Writer) QueueBounded(fn func(b []byte) ([]byte, error)) error {
	return w.queue(true, fn)
}

func (w *Writer) queue(bounded bool, fn func(b []byte) ([]byte, error)) error {
	w.mu.Lock()
	for bounded && w.limit > 0 && w.err == nil && len(w.buf) >= w.limit {
		w.room.Wait()
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	n := len(w.buf)
	b, err := fn(w.buf)
	if err != nil {
		w.buf = b[:n]
		w.mu.Unlock()
		return err
	}
	w.buf = b
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return nil
}

// Fail makes every later Queue fail with err (the first error stays) and
// wakes the producers waiting for room.
func (w *Writer) Fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.room.Broadcast()
	w.mu.Unlock()
}

// Err returns the connection's error, nil while it can be written.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the flusher; frames queued and not yet written are dropped.
func (w *Writer) Stop() {
	w.once.Do(func() { close(w.done) })
}

// Run writes the queued frames until Stop or a write fails; a failed write
// closes the connection and fails the Writer.
func (w *Writer) Run() {
	var tick <-chan time.Time
	if w.idle > 0 && w.idleFrame != nil {
		t := time.NewTicker(w.idle / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.kick:
		case <-tick:
			w.mu.Lock()
			if len(w.buf) == 0 {
				w.buf = w.idleFrame(w.buf)
			}
			w.mu.Unlock()
		case <-w.done:
			return
		}
		w.mu.Lock()
		b := w.buf
		w.buf = w.spare[:0]
		w.room.Broadcast()
		w.mu.Unlock()
		if len(b) == 0 {
			w.spare = b
			continue
		}
		_ = w.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := w.nc.Write(b)
		w.spare = b[:0]
		if err != nil {
			w.Fail(fmt.Errorf("write: %w", err))
			_ = w.nc.Close()
			return
		}
	}
}
