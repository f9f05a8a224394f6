package ws

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// conn is one WebSocket connection as the net.Conn the STOMP server
// serves.
//
// Reading: a pump goroutine reads the client's messages, text and binary
// alike, one after the other as one stream of octets (a frame may span
// messages, a message may hold several frames), and hands them to Read a
// buffer at a time; it reads the next only once Read has taken all of it,
// so a slow STOMP reader slows the client down rather than filling memory.
// Read deadlines behave as on a TCP connection: a Read that times out
// leaves the connection usable (the STOMP server then writes an ERROR
// frame).
//
// Writing: every Write is cut into heart-beats and whole frames (see
// splitter), each written as one WebSocket message: a text message when
// the frame is valid UTF-8, a binary one otherwise.
type conn struct {
	ws     *websocket.Conn
	local  net.Addr
	remote net.Addr
	tls    *tls.ConnectionState // nil without TLS

	chunks   chan []byte   // pump → Read: the next octets; closed when the pump stops
	consumed chan struct{} // Read → pump: the last chunk is used up (capacity 1)
	readErr  error         // why the pump stopped; written before chunks closes
	rmu      sync.Mutex    // serialises Read; guards rest
	rest     []byte        // what Read has not returned yet of the last chunk
	readDL   deadline

	wmu     sync.Mutex // serialises Write; guards split
	split   splitter
	writeDL atomic.Int64 // UnixNano of the write deadline; 0 for none

	closed    chan struct{}
	closeOnce sync.Once
}

// readBufferSize is how many octets the pump reads at a time.
const readBufferSize = 16 << 10

// newConn wraps ws, accepted for the request r, and starts its pump.
func newConn(ws *websocket.Conn, r *http.Request) *conn {
	c := &conn{
		ws:       ws,
		remote:   tcpAddr(r.RemoteAddr),
		chunks:   make(chan []byte),
		consumed: make(chan struct{}, 1),
		readDL:   makeDeadline(),
		closed:   make(chan struct{}),
		tls:      r.TLS,
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		c.local = a
	} else {
		c.local = textAddr("")
	}
	go c.pump()
	return c
}

// tcpAddr is the address of an HTTP request's client (its RemoteAddr,
// "IP:port"): the peer of the TCP connection, whatever a proxy says in a
// header.
func tcpAddr(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return textAddr(s)
	}
	return net.TCPAddrFromAddrPort(ap)
}

// textAddr is an address known only as text.
type textAddr string

func (a textAddr) Network() string { return "tcp" }
func (a textAddr) String() string  { return string(a) }

// pump reads the client's messages into Read until the connection ends.
func (c *conn) pump() {
	defer close(c.chunks)
	buf := make([]byte, readBufferSize)
	for {
		// Not cancelled by Close: a cancelled read closes the connection at
		// once, and Close leaves it open for the closing handshake.
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.readErr = readError(err)
			return
		}
		for {
			n, err := r.Read(buf)
			if n > 0 {
				select {
				case c.chunks <- buf[:n]:
				case <-c.closed:
					c.readErr = net.ErrClosed
					return
				}
				select {
				case <-c.consumed:
				case <-c.closed:
					c.readErr = net.ErrClosed
					return
				}
			}
			if errors.Is(err, io.EOF) {
				break // the end of this message; the stream goes on
			}
			if err != nil {
				c.readErr = readError(err)
				return
			}
		}
	}
}

// readError is what Read reports once the pump has stopped with err: io.EOF
// when the client closed the connection, with a close frame or without.
func readError(err error) error {
	switch {
	case errors.Is(err, net.ErrClosed):
		return net.ErrClosed
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure,
		websocket.CloseStatus(err) == websocket.StatusGoingAway,
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return io.EOF
	}
	return fmt.Errorf("websocket read: %w", err)
}

// Read reads what the client sent, across message boundaries.
func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if isClosed(c.closed) {
		return 0, net.ErrClosed
	}
	if isClosed(c.readDL.wait()) {
		return 0, os.ErrDeadlineExceeded
	}
	if len(c.rest) == 0 {
		select {
		case chunk, ok := <-c.chunks:
			if !ok {
				return 0, c.readErr
			}
			c.rest = chunk
		case <-c.readDL.wait():
			return 0, os.ErrDeadlineExceeded
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	if len(c.rest) == 0 {
		c.consumed <- struct{}{} // never blocks: one chunk is out at a time
	}
	return n, nil
}

// Write sends p as WebSocket messages, one per heart-beat or frame; an
// incomplete frame at its end waits for the next Write.
func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if isClosed(c.closed) {
		return 0, net.ErrClosed
	}
	ctx := context.Background()
	if dl := c.writeDL.Load(); dl != 0 {
		t := time.Unix(0, dl)
		if !time.Now().Before(t) {
			return 0, os.ErrDeadlineExceeded
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t)
		defer cancel()
	}
	err := c.split.write(p, func(msg []byte) error {
		typ := websocket.MessageText
		if !utf8.Valid(msg) {
			typ = websocket.MessageBinary
		}
		return c.ws.Write(ctx, typ, msg)
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = os.ErrDeadlineExceeded
		}
		return 0, fmt.Errorf("websocket write: %w", err)
	}
	return len(p), nil
}

// Close ends the connection: Read and Write fail from now on, and the
// WebSocket closing handshake (status 1000) runs in the background,
// bounded by the library's timeouts (a few seconds when the client does
// not answer), so that Close never waits for the client.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		go func() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }()
	})
	return nil
}

// LocalAddr is the address the client connected to.
func (c *conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the client's address: the peer of the TCP connection.
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// ConnectionState is the TLS state of a wss connection (the zero value
// without TLS), so that the STOMP server can log in the client by its
// verified certificate.
func (c *conn) ConnectionState() tls.ConnectionState {
	if c.tls == nil {
		return tls.ConnectionState{}
	}
	return *c.tls
}

// SetDeadline sets both deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline bounds the wait of Read, now and later, as on a TCP
// connection; the zero time removes the bound.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.readDL.set(t)
	return nil
}

// SetWriteDeadline bounds Write. A write that times out closes the
// connection (the WebSocket library cannot abandon a message halfway).
func (c *conn) SetWriteDeadline(t time.Time) error {
	var v int64
	if !t.IsZero() {
		v = t.UnixNano()
	}
	c.writeDL.Store(v)
	return nil
}

// deadline is a cancel channel closed when its time comes, as in net.Pipe.
type deadline struct {
	mu     sync.Mutex // guards timer and cancel
	timer  *time.Timer
	cancel chan struct{}
}

func makeDeadline() deadline { return deadline{cancel: make(chan struct{})} }

// set arms the deadline for t; the zero time disarms it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait until its function has closed cancel
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

// wait returns a channel that is closed when the deadline passes.
func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
