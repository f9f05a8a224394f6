package netserve

import (
	"errors"
	"io"
	"net"
	"time"
)

// Loops are the parts of a served connection that RunLoops puts together.
type Loops struct {
	// Read is the reader: it runs on the caller's goroutine and returns
	// when the connection ends.
	Read func() error
	// Write is the writer: it runs on a goroutine of its own and returns
	// when the connection ends.
	Write func()
	// Failing reports that an error frame is on its way to the client: the
	// writer then gets a moment to deliver it before Shutdown.
	Failing func() bool
	// Shutdown releases everything the connection holds and makes Write
	// return.
	Shutdown func()
	// Ended is told why Read returned, unless the client simply went away
	// (io.EOF) or the connection was closed here (net.ErrClosed).
	Ended func(error)
}

// FailingGrace is how long RunLoops waits for the writer to deliver a last
// error frame.
const FailingGrace = 5 * time.Second

// RunLoops serves a connection: the writer on its own goroutine, the reader
// on this one; when the reader ends, a moment for a last error frame, then
// Shutdown, and it returns once the writer has.
func RunLoops(l Loops) {
	writerDone := make(chan struct{})
	go func() { l.Write(); close(writerDone) }()
	if err := l.Read(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		l.Ended(err)
	}
	if l.Failing() {
		t := time.NewTimer(FailingGrace)
		select {
		case <-writerDone:
		case <-t.C:
		}
		t.Stop()
	}
	l.Shutdown()
	<-writerDone
}
