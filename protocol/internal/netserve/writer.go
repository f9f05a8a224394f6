package netserve

import (
	"fmt"
	"net"
	"time"
)

// Writer is a connection's coalescing writer: the one loop both front-ends
// run to turn queued frames into as few system calls as the queue allows.
// The protocol supplies the encoding; the loop owns batching, flushing,
// keep-alives, write deadlines and the close after a last frame.
type Writer[T any] struct {
	// Conn is the connection written to.
	Conn net.Conn
	// Out is the queue of items to write.
	Out <-chan T
	// Done closes when the connection ends; Run then returns.
	Done <-chan struct{}
	// Put buffers one item (the protocol's encoder) and says what follows
	// from it.
	Put func(T) Put
	// Flush writes what Put and KeepAlive buffered to Conn.
	Flush func() error
	// Flushed, if set, runs after each flush of items with the flush's
	// error: nil when the batch reached the socket.
	Flushed func(err error)
	// KeepAlive buffers the protocol's keep-alive (a STOMP heart-beat
	// EOL, an empty AMQP frame).
	KeepAlive func() error
	// Failed is told why a write failed; Run then returns. It records the
	// reason and ends the connection.
	Failed func(error)
	// Closing ends the connection after a Put asked for a close; Run then
	// returns.
	Closing func()
}

// Put is what buffering one item implies.
type Put struct {
	// Close ends the connection once the batch holding the item is
	// flushed (an error frame, a close).
	Close bool
	// KeepAlive, when positive and keep-alives are not running yet,
	// starts them: a keep-alive is written whenever this long passes
	// without a flush.
	KeepAlive time.Duration
}

// Coalescing limits.
const (
	// MaxBatch is the most items written per flush: enough to amortize
	// the system call, few enough that the first item of a long queue is
	// not held back.
	MaxBatch = 128
	// WriteTimeout bounds one flush of items; a keep-alive gets its
	// interval plus KeepAliveSlack.
	WriteTimeout   = 30 * time.Second
	KeepAliveSlack = 10 * time.Second
	// CloseLinger is how long the writer waits, after half-closing the
	// connection behind a last frame, before closing it: a peer still
	// sending would otherwise get a reset that can discard the frame
	// before it reads it.
	CloseLinger = 50 * time.Millisecond
)

// Run writes until Done closes, a write fails, or an item closes the
// connection. Items already queued are written together, up to MaxBatch,
// then flushed at once. Keep-alives start when a Put asks for them; the
// interval restarts at every flush, so no more than one interval passes
// without the peer hearing from the server.
func (w *Writer[T]) Run() {
	var hb <-chan time.Time
	var ticker *time.Ticker
	var interval time.Duration
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		select {
		case <-w.Done:
			return
		case <-hb:
			_ = w.Conn.SetWriteDeadline(time.Now().Add(interval + KeepAliveSlack))
			err := w.KeepAlive()
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				w.Failed(fmt.Errorf("write keep-alive: %w", err))
				return
			}
		case it := <-w.Out:
			closeAfter := false
			for n := 1; ; n++ {
				p := w.Put(it)
				if p.KeepAlive > 0 && ticker == nil {
					interval = p.KeepAlive
					ticker = time.NewTicker(interval)
					hb = ticker.C
				}
				if p.Close {
					closeAfter = true
					break
				}
				if n >= MaxBatch {
					break
				}
				more := false
				select {
				case it = <-w.Out:
					more = true
				default:
				}
				if !more {
					break
				}
			}
			_ = w.Conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
			err := w.Flush()
			if ticker != nil {
				ticker.Reset(interval)
			}
			if w.Flushed != nil {
				w.Flushed(err)
			}
			if err != nil {
				w.Failed(fmt.Errorf("write: %w", err))
				return
			}
			if closeAfter {
				// TCP: a FIN; TLS: a close_notify, then the FIN.
				CloseWrite(w.Conn)
				time.Sleep(CloseLinger)
				w.Closing()
				return
			}
		}
	}
}
