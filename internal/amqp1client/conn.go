// Package amqp1client is a small AMQP 1.0 client over Sluice's own codec
// (protocol/amqp/types and protocol/amqp/frames), for the tools that drive
// the broker from outside: the load generator's lean client
// (internal/loadgen) and the conformance suite's transacted client
// (conformance). It depends on the codec only, never on the broker.
//
// It holds what those clients share, not a client library's whole model:
// Dial (TCP, SASL ANONYMOUS or PLAIN, open, and one session on channel 0),
// a coalescing writer (Queue: frames queued while the last write was under
// way go out in one write, and empty frames keep the broker's idle
// time-out), a synchronous Attach for a connection's first link, the
// reassembly of multi-frame deliveries (Assembler), the link and session
// numbers of flow control (Credit, SenderCredit, SessionRoom), and the
// errors the broker's detach, end and close mean. The callers keep their
// own reading loops and their own state: one link per connection tuned
// for speed in one, several links, transactions and outcomes in the
// other.
package amqp1client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sluicemq/sluice/internal/clientio"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// Defaults of Config.
const (
	// DefaultMaxFrameSize is the max-frame-size this side announces, and
	// the largest frame it reads.
	DefaultMaxFrameSize = 1 << 20
	// DefaultWindow is the session window this side announces.
	DefaultWindow = 5000
)

// Config says how to connect.
type Config struct {
	// Addr is the broker's host:port.
	Addr string
	// ContainerID is the open's container-id (the JMS client ID, when
	// there is one).
	ContainerID string
	// Hostname is the open's and the SASL init's hostname (the virtual
	// host); empty means the host of Addr.
	Hostname string
	// User and Password authenticate with SASL PLAIN; with no User, SASL
	// ANONYMOUS.
	User, Password string
	// MaxFrameSize is the max-frame-size this side announces and reads;
	// 0 means DefaultMaxFrameSize.
	MaxFrameSize uint32
	// Window is the session's incoming and outgoing window this side
	// announces at begin; 0 means DefaultWindow.
	Window uint32
	// ReadIdle, when above zero, fails ReadFrame when the broker has sent
	// nothing (not even an empty frame) for that long.
	ReadIdle time.Duration
}

// Conn is a connection with its one session (channel 0).
//
// ReadFrame is for one goroutine at a time; Queue for any number.
type Conn struct {
	nc       net.Conn
	r        *frames.Reader
	readIdle time.Duration
	window   uint32

	// Set by Dial, then read-only.
	maxFrame     uint32        // the broker's max-frame-size
	idle         time.Duration // the broker's idle time-out
	nextIncoming uint32        // the broker's next-outgoing-id, from its begin
	remoteIn     uint32        // the broker's session incoming window, from its begin

	w *clientio.Writer // the coalescing writer, from the end of the handshake
}

// RefusedError is the broker refusing something, or ending what it
// served: a SASL outcome other than ok, a close or end answering open or
// begin, a detach answering attach, or a detach, end or close later on.
type RefusedError struct {
	// Op is what was refused or ended: "open", "begin session", an
	// attach's description, or "link", "session", "connection".
	Op string
	// Reason says why, with the broker's error condition and description
	// when it gave one.
	Reason string
}

func (e *RefusedError) Error() string { return e.Op + ": " + e.Reason }

// ErrText is the text of an error condition the broker sent.
func ErrText(e *types.Error) string {
	if e == nil {
		return "no error condition"
	}
	return string(e.Condition) + ": " + e.Description
}

// FrameErr is the *RefusedError a detach, end or close from the broker
// means, and nil for any other frame.
func FrameErr(f frames.Frame) error {
	switch b := f.Body.(type) {
	case *types.Detach:
		return &RefusedError{Op: "link", Reason: "the broker detached the link: " + ErrText(b.Error)}
	case *types.End:
		return &RefusedError{Op: "session", Reason: "the broker ended the session: " + ErrText(b.Error)}
	case *types.Close:
		return &RefusedError{Op: "connection", Reason: "the broker closed the connection: " + ErrText(b.Error)}
	}
	return nil
}

// Deadline is the deadline of a step that waits for the broker: ctx's, or
// 10 seconds from now if that comes first.
func Deadline(ctx context.Context) time.Time {
	dl := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	return dl
}

// Dial connects to cfg.Addr, authenticates, opens the connection and
// begins the session, each step bounded by ctx (and 10 seconds).
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.MaxFrameSize == 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _, _ = net.SplitHostPort(cfg.Addr)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{nc: nc, readIdle: cfg.ReadIdle, window: cfg.Window}
	c.r = frames.NewReader(bufio.NewReaderSize(nc, 64<<10), cfg.MaxFrameSize)
	_ = nc.SetDeadline(Deadline(ctx))
	if err := c.handshake(cfg); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	// Empty frames keep the broker's idle time-out from ending the
	// connection.
	c.w = clientio.New(nc, c.idle, func(b []byte) []byte {
		b, _ = frames.AppendFrame(b, frames.Frame{Type: frames.TypeAMQP})
		return b
	}, 0)
	go c.w.Run()
	return c, nil
}

// handshake does SASL, open and begin, writing directly.
func (c *Conn) handshake(cfg Config) error {
	w := frames.NewWriter(c.nc, cfg.MaxFrameSize)
	if err := w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolSASL)); err != nil {
		return err
	}
	h, err := c.r.ReadProtocolHeader()
	if err != nil {
		return fmt.Errorf("protocol header: %w", err)
	}
	if h.ID != frames.ProtocolSASL {
		return fmt.Errorf("the broker answered the SASL header with %s", h)
	}
	mech, resp := "ANONYMOUS", []byte(nil)
	if cfg.User != "" {
		mech, resp = "PLAIN", []byte("\x00"+cfg.User+"\x00"+cfg.Password)
	}
	for done := false; !done; {
		f, err := c.r.ReadFrame()
		if err != nil {
			return fmt.Errorf("SASL: %w", err)
		}
		switch b := f.Body.(type) {
		case *types.SASLMechanisms:
			offered := false
			for _, m := range b.SASLServerMechanisms {
				offered = offered || string(m) == mech
			}
			if !offered {
				return &RefusedError{Op: "open", Reason: fmt.Sprintf("SASL: the broker does not offer %s (it offers %v)", mech, b.SASLServerMechanisms)}
			}
			init := &types.SASLInit{Mechanism: types.Symbol(mech), InitialResponse: resp, Hostname: cfg.Hostname}
			if err := w.WriteFrame(frames.Frame{Type: frames.TypeSASL, Body: init}); err != nil {
				return fmt.Errorf("SASL: %w", err)
			}
		case *types.SASLOutcome:
			if b.Code != types.SASLCodeOK {
				return &RefusedError{Op: "open", Reason: fmt.Sprintf("SASL %s: outcome %v", mech, b.Code)}
			}
			done = true
		}
	}
	if err := w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP)); err != nil {
		return err
	}
	o := types.NewOpen()
	o.ContainerID, o.Hostname, o.MaxFrameSize = cfg.ContainerID, cfg.Hostname, cfg.MaxFrameSize
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = cfg.Window, cfg.Window
	for _, p := range []types.Performative{o, b} {
		if err := w.WriteFrame(frames.Frame{Type: frames.TypeAMQP, Body: p}); err != nil {
			return err
		}
	}
	if _, err := c.r.ReadProtocolHeader(); err != nil {
		return fmt.Errorf("protocol header: %w", err)
	}
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return err
		}
		switch b := f.Body.(type) {
		case *types.Open:
			c.maxFrame = b.MaxFrameSize
			if t, ok := b.IdleTimeOut.Get(); ok {
				c.idle = time.Duration(t) * time.Millisecond
			}
		case *types.Close:
			return &RefusedError{Op: "open", Reason: "the broker answered open with close: " + ErrText(b.Error)}
		case *types.End:
			return &RefusedError{Op: "begin session", Reason: ErrText(b.Error)}
		case *types.Begin:
			c.nextIncoming, c.remoteIn = uint32(b.NextOutgoingID), b.IncomingWindow
			return nil
		}
	}
}

// Window is the session window this side announced.
func (c *Conn) Window() uint32 { return c.window }

// NextIncoming is the transfer id of the broker's first transfer, from
// its begin.
func (c *Conn) NextIncoming() uint32 { return c.nextIncoming }

// RemoteIncomingWindow is the broker's session incoming window, from its
// begin: how many transfers it takes before its first flow.
func (c *Conn) RemoteIncomingWindow() uint32 { return c.remoteIn }

// ReadFrame reads the next frame from the broker (empty frames included).
func (c *Conn) ReadFrame() (frames.Frame, error) {
	if c.readIdle > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.readIdle))
	}
	return c.r.ReadFrame()
}

// Queue queues a frame on channel 0 for the writer; payload follows a
// transfer. It fails when the frame is larger than the broker takes (the
// frame is not sent) or an earlier write failed. p and payload are
// encoded before Queue returns: the caller may reuse them.
func (c *Conn) Queue(p types.Performative, payload []byte) error {
	return c.w.Queue(func(b []byte) ([]byte, error) {
		n := len(b)
		b, err := frames.AppendFrame(b, frames.Frame{Type: frames.TypeAMQP, Body: p, Payload: payload})
		if err == nil && c.maxFrame > 0 && uint64(len(b)-n) > uint64(c.maxFrame) {
			err = fmt.Errorf("%w: %d bytes, limit %d", frames.ErrFrameTooLarge, len(b)-n, c.maxFrame)
		}
		return b, err
	})
}

// Attach attaches a link and reads until the broker answers, for a
// connection whose frames nobody else reads yet (before the caller starts
// its reading loop). a's Name and Handle are the caller's. A link the
// broker refuses (no terminus in its answer, then a detach) is a
// *RefusedError with Op what.
func (c *Conn) Attach(ctx context.Context, a *types.Attach, what string) error {
	if err := c.Queue(a, nil); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_ = c.nc.SetReadDeadline(Deadline(ctx))
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		switch b := f.Body.(type) {
		case *types.Attach:
			if AttachRefused(a, b) {
				continue // a detach follows
			}
			return nil
		case *types.Detach:
			return &RefusedError{Op: what, Reason: ErrText(b.Error)}
		case *types.End, *types.Close:
			err := FrameErr(f).(*RefusedError)
			err.Op = what
			return err
		}
	}
}

// AttachRefused reports whether reply, the broker's answer to this side's
// attach req, refuses the link: it carries no terminus where req asked
// for one, and a detach follows.
func AttachRefused(req, reply *types.Attach) bool {
	return reply == nil || (req.Role == types.RoleSender && reply.Target == nil) ||
		(req.Role == types.RoleReceiver && reply.Source == nil)
}

// Shutdown closes the connection: it queues a close, waits up to d for
// readerDone (closed by the caller's reading loop once it has read the
// broker's close, or the connection failed), then tears the connection
// down and waits for readerDone.
func (c *Conn) Shutdown(readerDone <-chan struct{}, d time.Duration) error {
	var err error
	if qerr := c.Queue(types.NewClose(), nil); qerr == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-readerDone:
		case <-t.C:
			err = fmt.Errorf("connection close not answered within %v", d)
		}
	}
	c.Close()
	<-readerDone
	return err
}

// Close tears the connection down at once: the writer stops, the socket
// closes (a reading loop then fails) and Queue fails from then on.
func (c *Conn) Close() {
	if c.w != nil {
		c.w.Fail(fmt.Errorf("queue: %w", net.ErrClosed))
		c.w.Stop()
	}
	_ = c.nc.Close()
}
