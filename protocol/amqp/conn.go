package amqp

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// outItem is one thing for the writer goroutine to write.
type outItem struct {
	fr     frames.Frame
	header *frames.ProtocolHeader // a protocol header instead of a frame
	after  func()                 // run once the batch holding it is flushed
	close  bool                   // close the connection once written
	setup  *writerSetup           // what open negotiated
	marker bool                   // write nothing: only run after once flushed
}

// writerSetup tells the writer the peer's max-frame-size and how often to
// send empty frames.
type writerSetup struct {
	maxFrame  uint32
	heartbeat time.Duration
}

// conn is one client connection.
type conn struct {
	srv *Server
	nc  net.Conn
	log *slog.Logger

	rd          *frames.Reader
	out         chan outItem
	done        chan struct{}
	closeOnce   sync.Once
	releaseOnce sync.Once
	failing     atomic.Bool
	opened      atomic.Bool        // our open is queued: a close frame may follow
	confirms    confirmer          // see confirm.go
	ctx         context.Context    // cancelled when the connection ends
	end         netserve.EndReason // why it ends, for the engine's "connection closed"

	// Set by the reader before open (TLS, SASL), then read-only.
	peerCert      *x509.Certificate // the client certificate TLS verified
	identity      security.Identity // who the client authenticated as
	authenticated bool              // the SASL exchange admitted the client

	// Set at open, then read-only.
	containerID    string
	remoteMaxFrame uint32
	channelMax     uint16
	idleTimeout    time.Duration // how long the peer may be silent

	eng      *engine.Connection
	prodSess *engine.Session
	prod     *engine.Producer

	// Reader goroutine only.
	sessions  map[uint16]*session
	globalEng *engine.Connection // for shared subscriptions without a client ID
	txns      map[string]*engine.Txn
	txnSeq    uint64
	linkNames map[string]*link // attached links by role and name

	held   flowHeld         // receiving links whose credit flow control withheld (flow.go)
	budget *netserve.Budget // bounds the transfer bytes queued for the writer
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:       s,
		nc:        nc,
		log:       s.opts.Logger.With(slog.String("remote", remoteAddr(nc))),
		out:       make(chan outItem, 256),
		done:      make(chan struct{}),
		sessions:  map[uint16]*session{},
		txns:      map[string]*engine.Txn{},
		linkNames: map[string]*link{},
		budget:    netserve.NewBudget(s.opts.OutputBuffer),
		ctx:       context.Background(), // Run gives it the connection's end
	}
}

func remoteAddr(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Run serves the connection until it ends.
func (c *conn) Run() {
	ctx, cancel := netserve.UntilClosed(c.done)
	defer cancel()
	c.ctx = ctx
	netserve.RunLoops(netserve.Loops{
		Read:     c.serve,
		Write:    c.writeLoop,
		Failing:  c.failing.Load, // a close frame with an error is on its way
		Shutdown: c.shutdown,
		Ended:    func(err error) { c.log.Debug("amqp connection ended", slog.Any("err", err)) },
	})
}

// abort ends the connection at once.
func (c *conn) abort() {
	c.closeOnce.Do(func() { close(c.done) })
	_ = c.nc.Close()
}

// Abort closes the connection with amqp:connection:forced (shutdown).
func (c *conn) Abort() {
	c.end.Set(engine.ClosedShutdown, nil)
	if !c.opened.Load() {
		// No open sent yet (a protocol header or SASL exchange under
		// way): a close frame would not be understood; end it at once.
		c.abort()
		return
	}
	if c.failing.CompareAndSwap(false, true) {
		select {
		case c.out <- outItem{fr: frames.Frame{Type: frames.TypeAMQP, Body: &types.Close{Error: &types.Error{
			Condition: types.ConnectionErrorConnectionForced, Description: "the broker is shutting down"}}}, close: true}:
		case <-c.done:
		case <-time.After(time.Second):
		}
	}
	time.AfterFunc(2*time.Second, c.abort)
}

// shutdown releases the engine side: links close, transactions roll back,
// unsettled messages return to their destinations, temporary destinations
// go.
func (c *conn) shutdown() {
	c.releaseEngine()
	c.closeOnce.Do(func() { close(c.done) })
	_ = c.nc.Close()
}

// releaseEngine closes the engine side once. Open transactions are
// abandoned by the engine connection's close: their work comes back without
// a redelivery delay, as for anything a client leaves uncommitted.
func (c *conn) releaseEngine() {
	c.releaseOnce.Do(func() {
		for _, s := range c.sessions {
			s.closeAll(false)
		}
		reason, cause := c.end.Get()
		if c.globalEng != nil {
			_ = c.globalEng.CloseWithReason(reason, cause)
		}
		if c.eng != nil {
			_ = c.eng.CloseWithReason(reason, cause)
		}
	})
}

// send queues an item for the writer, waiting while the writer is behind.
// It reports false when the connection is closing.
func (c *conn) send(it outItem) bool {
	select {
	case c.out <- it:
		return true
	case <-c.done:
		return false
	}
}

// flushWrites waits until everything queued for the writer before it has
// been written and flushed, and the afters of those writes have run (or
// the connection ends, or a few seconds pass). Closing a link calls it
// before the engine takes back the link's unacknowledged messages, so that
// a pre-settled delivery already on the wire is acknowledged, not sent
// again to someone else.
func (c *conn) flushWrites() {
	done := make(chan struct{})
	if c.send(outItem{marker: true, after: func() { close(done) }}) {
		netserve.WaitBounded(done, c.done, 5*time.Second)
	}
}

func (c *conn) sendFrame(ch uint16, body frames.Body) bool {
	return c.send(outItem{fr: frames.Frame{Type: frames.TypeAMQP, Channel: ch, Body: body}})
}

// fail closes the connection with an error condition.
func (c *conn) fail(err error) {
	c.end.Set(engine.ClosedError, err)
	if !c.failing.CompareAndSwap(false, true) {
		return
	}
	ae := condOf(err)
	c.log.Info("amqp connection closed with an error", slog.String("condition", string(ae.Cond)), slog.String("description", ae.Desc))
	c.send(outItem{fr: frames.Frame{Type: frames.TypeAMQP, Body: &types.Close{Error: ae.wire()}}, close: true})
}

// writeLoop writes queued frames through the shared coalescing writer,
// with empty frames when the connection has been quiet for half the
// peer's idle time-out. An item's after runs once its batch reached the
// socket.
func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	w := frames.NewWriter(bw, types.SpecMinMaxFrameSize)
	var afters []func()
	sw := netserve.Writer[outItem]{
		Conn: c.nc,
		Out:  c.out,
		Done: c.done,
		Put: func(it outItem) netserve.Put {
			var p netserve.Put
			if it.setup != nil {
				w.SetMaxFrameSize(it.setup.maxFrame)
				p.KeepAlive = it.setup.heartbeat
			}
			switch {
			case it.marker: // nothing to write
			case it.header != nil:
				b := it.header.Bytes()
				_, _ = bw.Write(b[:])
			default:
				if err := w.WriteFrame(it.fr); err != nil {
					c.log.Warn("amqp frame not written", slog.Any("err", err))
				}
			}
			if it.after != nil {
				afters = append(afters, it.after)
			}
			p.Close = it.close
			return p
		},
		Flush:     bw.Flush,
		KeepAlive: w.WriteEmptyFrame,
		Flushed: func(err error) {
			if err == nil {
				for _, fn := range afters {
					fn()
				}
			}
			clear(afters)
			afters = afters[:0]
		},
		Failed: func(err error) {
			c.end.Set(engine.ClosedNetworkError, err)
			c.abort()
		},
		Closing: c.abort,
	}
	sw.Run()
}

// serve runs the protocol: headers, SASL, open, then frames until close.
func (c *conn) serve() error {
	opts := &c.srv.opts
	_ = c.nc.SetReadDeadline(time.Now().Add(opts.ConnectTimeout))
	if err := c.tlsHandshake(); err != nil {
		return err
	}
	c.rd = frames.NewReader(bufio.NewReaderSize(c.nc, 64<<10), types.SpecMinMaxFrameSize)
	h, err := c.rd.ReadProtocolHeader()
	if err != nil {
		c.refuseHeader()
		return err
	}
	if !h.IsAMQP10() {
		c.refuseHeader()
		return fmt.Errorf("unsupported protocol header %s", h)
	}
	switch h.ID {
	case frames.ProtocolSASL:
		c.send(outItem{header: ptr(frames.NewProtocolHeader(frames.ProtocolSASL))})
		if err := c.sasl(); err != nil {
			return err
		}
		h, err = c.rd.ReadProtocolHeader()
		if err != nil {
			return err
		}
		if h.ID != frames.ProtocolAMQP || !h.IsAMQP10() {
			c.send(outItem{header: ptr(frames.NewProtocolHeader(frames.ProtocolAMQP)), close: true})
			return fmt.Errorf("protocol header %s after SASL", h)
		}
		c.send(outItem{header: ptr(frames.NewProtocolHeader(frames.ProtocolAMQP))})
	case frames.ProtocolAMQP:
		if opts.RequireSASL {
			c.refuseHeader()
			return errors.New("client skipped SASL, which is required")
		}
		c.send(outItem{header: ptr(frames.NewProtocolHeader(frames.ProtocolAMQP))})
	default:
		c.refuseHeader()
		return fmt.Errorf("unsupported protocol header %s", h)
	}

	f, err := c.rd.ReadFrame()
	if err != nil {
		c.failRead(err)
		return err
	}
	open, ok := f.Body.(*types.Open)
	if !ok || f.Type != frames.TypeAMQP {
		c.fail(errf(types.AMQPErrorIllegalState, "the first frame must be open, not %s", bodyName(f.Body)))
		return nil
	}
	if err := c.open(open); err != nil {
		c.fail(err)
		return nil
	}
	for {
		if c.idleTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.idleTimeout))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		f, err := c.rd.ReadFrame()
		if err != nil {
			c.failRead(err)
			return err
		}
		stop, err := c.handle(f)
		if err != nil {
			c.fail(err)
			return nil
		}
		if stop || c.failing.Load() {
			return nil
		}
	}
}

func ptr[T any](v T) *T { return &v }

// refuseHeader answers an unusable protocol header with the header the
// server speaks, then closes, as the specification asks.
func (c *conn) refuseHeader() {
	id := frames.ProtocolAMQP
	if c.srv.opts.RequireSASL {
		id = frames.ProtocolSASL
	}
	c.failing.Store(true)
	c.send(outItem{header: ptr(frames.NewProtocolHeader(id)), close: true})
}

// failRead closes the connection for a read error with the condition that
// says what was wrong.
func (c *conn) failRead(err error) {
	var ne net.Error
	var de *types.DecodeError
	switch {
	case errors.Is(err, net.ErrClosed):
		return // closed here, for a reason set already
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		c.end.Set(engine.ClosedNetworkError, errors.New("the client closed the network connection without close"))
		return
	case errors.As(err, &ne) && ne.Timeout():
		idle := errf(types.AMQPErrorResourceLimitExceeded, "idle time-out: nothing received for %s", c.idleTimeout)
		c.end.Set(engine.ClosedHeartbeatTimeout, idle)
		c.fail(idle)
	case errors.Is(err, frames.ErrFrameTooLarge):
		c.fail(errf(types.ConnectionErrorFramingError, "%v", err))
	case errors.Is(err, frames.ErrBadHeader), errors.Is(err, frames.ErrUnexpectedBody):
		c.fail(errf(types.ConnectionErrorFramingError, "%v", err))
	case errors.As(err, &de):
		c.fail(errf(types.AMQPErrorDecodeError, "%v", err))
	default:
		c.fail(errf(types.ConnectionErrorFramingError, "%v", err))
	}
}

func bodyName(b frames.Body) string {
	if b == nil {
		return "an empty frame"
	}
	name, _ := b.Descriptor()
	return string(name)
}

// open handles the client's open and answers with the server's.
func (c *conn) open(o *types.Open) error {
	opts := &c.srv.opts
	c.containerID = o.ContainerID
	c.remoteMaxFrame = o.MaxFrameSize
	c.channelMax = min(o.ChannelMax, opts.ChannelMax)
	if opts.IdleTimeout > 0 {
		c.idleTimeout = opts.IdleTimeout
	}
	var heartbeat time.Duration
	if t, ok := o.IdleTimeOut.Get(); ok && t > 0 {
		heartbeat = time.Duration(t) * time.Millisecond / 2
		heartbeat = max(heartbeat, 100*time.Millisecond)
	}
	reply := types.NewOpen()
	reply.ContainerID = opts.ContainerID
	reply.MaxFrameSize = opts.MaxFrameSize
	reply.ChannelMax = opts.ChannelMax
	if c.idleTimeout > 0 {
		reply.IdleTimeOut = types.Some(types.Milliseconds(c.idleTimeout / time.Millisecond))
	}
	reply.OfferedCapabilities = []types.Symbol{capDelayed, capSharedSubs, capAnonymousRelay}
	reply.Properties = types.Fields{
		{Key: types.Symbol("product"), Value: "Sluice"},
		{Key: types.Symbol("version"), Value: opts.Version},
	}
	var err error
	if o.MaxFrameSize < types.SpecMinMaxFrameSize {
		err = errf(types.AMQPErrorFrameSizeTooSmall, "max-frame-size %d is below the minimum of %d", o.MaxFrameSize, types.SpecMinMaxFrameSize)
	} else {
		err = c.connectEngine(o)
	}
	if err != nil {
		// A refused connection still answers with an open, then closes
		// with the reason; the property tells JMS clients (Qpid JMS) to
		// wait for that close.
		reply.Properties = append(reply.Properties, types.MapEntry{Key: types.Symbol("amqp:connection-establishment-failed"), Value: true})
	}
	c.rd.SetMaxFrameSize(opts.MaxFrameSize)
	c.send(outItem{fr: frames.Frame{Type: frames.TypeAMQP, Body: reply},
		setup: &writerSetup{maxFrame: max(o.MaxFrameSize, types.SpecMinMaxFrameSize), heartbeat: heartbeat}})
	c.opened.Store(true)
	return err
}

// engineOptions are the options of this client's engine connections: the
// connection-factory defaults, the client's address, and the user and
// permissions it authenticated with.
func (c *conn) engineOptions() engine.ConnectionOptions {
	eopts := c.srv.opts.Connection
	eopts.RemoteAddr = remoteAddr(c.nc)
	eopts.Protocol = "amqp/1.0"
	eopts.User = c.identity.User
	eopts.Permissions = c.identity.Permissions
	eopts.MaxTransactions = c.srv.opts.MaxTransactions
	return eopts
}

// connectEngine makes the engine connection, claiming container-id as the
// client ID. A client that skipped SASL is anonymous: with security on it
// is let in only when the realm has an anonymous role, and refused with
// amqp:unauthorized-access otherwise (after the realm's failure delay).
func (c *conn) connectEngine(o *types.Open) error {
	if !c.authenticated {
		id, err := c.srv.opts.Realm.Anonymous(c.ctx, security.Attempt{Protocol: "amqp", Remote: remoteAddr(c.nc), Mechanism: mechNone, ClientID: o.ContainerID})
		if err != nil {
			return errf(types.AMQPErrorUnauthorizedAccess, "%s", errNoAnonymous)
		}
		c.identity = id
	}
	// JMS clients put the client ID in container-id: claimed by Connect,
	// so that the "connection opened" line names it.
	opts := c.engineOptions()
	opts.ClientID = o.ContainerID
	eng, err := c.srv.eng.Connect(opts)
	if err != nil {
		return err
	}
	c.eng = eng
	eng.SetExceptionListener(func(err error) {
		c.log.Info("engine reported a connection problem", slog.Any("err", err))
	})
	if c.prodSess, err = eng.CreateSession(engine.AutoAcknowledge); err != nil {
		return err
	}
	if c.prod, err = c.prodSess.CreateProducer(message.Destination{}); err != nil {
		return err
	}
	if err := eng.Start(); err != nil {
		return err
	}
	return nil
}

// handle processes one frame after open. stop ends the connection
// normally (close).
func (c *conn) handle(f frames.Frame) (stop bool, err error) {
	if f.Type != frames.TypeAMQP {
		return false, errf(types.ConnectionErrorFramingError, "SASL frame after the SASL exchange")
	}
	switch b := f.Body.(type) {
	case nil:
		return false, nil
	case *types.Open:
		return false, errf(types.AMQPErrorIllegalState, "second open")
	case *types.Close:
		if b.Error != nil {
			c.log.Debug("client closed with an error", slog.String("condition", string(b.Error.Condition)), slog.String("description", b.Error.Description))
		}
		c.end.Set(engine.ClosedByClient, nil)
		// Release the client ID and everything else before answering:
		// once the close is answered, the client may reconnect with it.
		c.releaseEngine()
		done := make(chan struct{})
		if c.send(outItem{fr: frames.Frame{Type: frames.TypeAMQP, Body: types.NewClose()}, after: func() { close(done) }}) {
			select {
			case <-done:
			case <-c.done:
			case <-time.After(5 * time.Second):
			}
		}
		return true, nil
	case *types.Begin:
		return false, c.begin(f.Channel, b)
	}
	s := c.sessions[f.Channel]
	if s == nil {
		return false, errf(types.ConnectionErrorFramingError, "%s on channel %d, which has no session", bodyName(f.Body), f.Channel)
	}
	if end, ok := f.Body.(*types.End); ok {
		s.remoteEnd(end)
		return false, nil
	}
	if s.ending {
		return false, nil // discarded until the peer's end
	}
	if err := s.handle(f); err != nil {
		var se *sessionError
		if errors.As(err, &se) {
			s.endWith(se.err)
			return false, nil
		}
		return false, err
	}
	return false, nil
}

// sessionError ends a session (not the connection).
type sessionError struct{ err *amqpError }

func (e *sessionError) Error() string { return e.err.Error() }

func sessionErr(cond types.ErrorCondition, format string, args ...any) error {
	return &sessionError{err: errf(cond, format, args...)}
}

// begin handles a client's begin.
func (c *conn) begin(ch uint16, b *types.Begin) error {
	if _, ok := b.RemoteChannel.Get(); ok {
		return errf(types.AMQPErrorNotAllowed, "begin with a remote-channel: the server does not begin sessions")
	}
	if ch > c.channelMax {
		return errf(types.ConnectionErrorFramingError, "channel %d is above channel-max %d", ch, c.channelMax)
	}
	if _, dup := c.sessions[ch]; dup {
		return errf(types.ConnectionErrorFramingError, "begin on channel %d, which already has a session", ch)
	}
	s := newSession(c, ch, b)
	c.sessions[ch] = s
	reply := types.NewBegin()
	reply.RemoteChannel = types.Some(ch)
	reply.NextOutgoingID = 0
	reply.IncomingWindow = s.incomingWindow
	reply.OutgoingWindow = 1<<32 - 1
	reply.HandleMax = types.Handle(c.srv.opts.HandleMax)
	c.sendFrame(ch, reply)
	return nil
}

// engineFor returns the engine connection a subscription uses: the
// connection's own, or (for global shared subscriptions, which no client
// ID scopes) one without a client ID.
func (c *conn) engineFor(global bool) (*engine.Connection, error) {
	if !global || c.eng.ClientID() == "" {
		return c.eng, nil
	}
	if c.globalEng == nil {
		opts := c.engineOptions()
		opts.ClientID = ""
		e, err := c.srv.eng.Connect(opts)
		if err != nil {
			return nil, err
		}
		if err := e.Start(); err != nil {
			_ = e.Close()
			return nil, err
		}
		c.globalEng = e
	}
	return c.globalEng, nil
}
