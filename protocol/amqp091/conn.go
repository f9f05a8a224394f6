package amqp091

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// frameMinSize is the frame size every peer must accept (the
// specification's frame-min-size): the limit before connection.tune.
const frameMinSize = spec.FrameMinSize

// frameOverhead is what a frame adds to its payload: type, channel and
// size, then the frame-end octet.
const frameOverhead = 8

// outItem is one thing for the writer goroutine to send.
type outItem struct {
	ch    uint16
	m     spec.Method
	props *spec.BasicProperties // with a content method: its header
	body  []byte
	raw   []byte // bytes written as they are (the protocol header)

	size   int64     // bytes taken from the connection's output budget
	auto   *consumer // a delivery of a no-ack consumer: acknowledged once written
	engTag uint64
	setup  *writerSetup  // what tune-ok negotiated
	close  bool          // close the connection once written
	done   chan struct{} // closed once written and flushed
}

// writerSetup tells the writer what connection.tune-ok negotiated.
type writerSetup struct {
	frameMax  uint32
	heartBeat time.Duration
}

// conn is one client connection. The reader goroutine owns the handshake
// state, the channel table and every channel's reader-side state; see
// channel for what the delivery goroutines share.
type conn struct {
	srv *Server
	nc  net.Conn
	log *slog.Logger

	rd        *spec.FrameReader
	out       chan outItem
	budget    *netserve.Budget
	done      chan struct{}
	closeOnce sync.Once
	failing   atomic.Bool // a connection.close is on its way
	opened    atomic.Bool // connection.open-ok is queued
	ctx       context.Context
	end       netserve.EndReason

	frameMax   uint32
	channelMax uint16
	heartBeat  time.Duration
	clientCaps spec.Table
	identity   security.Identity

	eng      *engine.Connection
	since    int64           // when eng was opened, epoch ms (see local)
	tempSess *engine.Session // makes the connection's temporary queues

	channels  map[uint16]*channel // reader goroutine only
	consumers atomic.Int32        // over all channels, for MaxConsumers
	closing   bool                // connection.close sent or received (reader goroutine)

	mu    sync.Mutex // guards temps
	temps map[string]message.Destination
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:      s,
		nc:       nc,
		log:      s.opts.Logger.With(slog.String("remote", nc.RemoteAddr().String())),
		rd:       spec.NewFrameReader(nc, s.opts.MaxFrameSize),
		out:      make(chan outItem, 256),
		budget:   netserve.NewBudget(s.opts.OutputBuffer),
		done:     make(chan struct{}),
		ctx:      context.Background(),
		frameMax: frameMinSize,
		channels: map[uint16]*channel{},
		temps:    map[string]message.Destination{},
	}
}

// Run serves the connection until it ends.
func (c *conn) Run() {
	ctx, cancel := netserve.UntilClosed(c.done)
	defer cancel()
	c.ctx = ctx
	netserve.RunLoops(netserve.Loops{
		Read:     c.readLoop,
		Write:    c.writeLoop,
		Failing:  c.failing.Load,
		Shutdown: c.shutdown,
		Ended:    func(err error) { c.log.Debug("amqp091 connection ended", slog.Any("err", err)) },
	})
}

// Abort closes the connection because the server shuts down: an open
// connection is told so with connection.close 320 CONNECTION_FORCED, as
// RabbitMQ does, and the socket closes once that is written (two seconds
// at most).
func (c *conn) Abort() {
	c.end.Set(engine.ClosedShutdown, nil)
	if !c.opened.Load() {
		c.abort() // mid-handshake: a close would not be understood
		return
	}
	if c.failing.CompareAndSwap(false, true) {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case c.out <- outItem{m: &spec.ConnectionClose{ReplyCode: spec.ConnectionForced,
			ReplyText: replyText(spec.ConnectionForced, "broker forced connection closure with reason 'shutdown'")}, close: true}:
		case <-c.done:
		case <-t.C:
		}
	}
	time.AfterFunc(2*time.Second, c.abort)
}

func (c *conn) abort() {
	c.closeOnce.Do(func() { close(c.done) })
	_ = c.nc.Close()
}

// shutdown releases the engine side: channels close, transactions roll
// back, unacknowledged messages return to their queues.
func (c *conn) shutdown() {
	c.closeOnce.Do(func() { close(c.done) })
	for _, ch := range c.channels {
		ch.release()
	}
	c.srv.ex.unbindOwner(c)
	if c.eng != nil {
		_ = c.eng.CloseWithReason(c.end.Get())
	}
	_ = c.nc.Close()
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

// method queues a method without content on channel ch.
func (c *conn) method(ch uint16, m spec.Method) bool { return c.send(outItem{ch: ch, m: m}) }

// closeConnection sends connection.close for e, and the connection ends
// once it is written (the client's close-ok is not waited for: the
// writer half-closes the socket and lingers so that the client reads it).
func (c *conn) closeConnection(e *amqpError) {
	if c.failing.Swap(true) {
		return
	}
	c.end.Set(engine.ClosedError, e)
	c.log.Info("amqp091 connection closed by the server", slog.Int("code", int(e.code)), slog.String("text", e.text))
	c.send(outItem{m: &spec.ConnectionClose{ReplyCode: e.code, ReplyText: replyText(e.code, e.text),
		FailingClassID: e.classID, FailingMethodID: e.methodID}, close: true})
}

// writeLoop writes queued items through the shared coalescing writer. The
// deliveries of no-ack consumers are acknowledged once they reached the
// socket; heart-beats run at the negotiated interval.
func (c *conn) writeLoop() {
	var buf []byte
	frameMax := uint32(frameMinSize)
	settle := netserve.Settle{Budget: c.budget} // what the batch leaves to do once written
	sw := netserve.Writer[outItem]{
		Conn: c.nc,
		Out:  c.out,
		Done: c.done,
		Put: func(it outItem) netserve.Put {
			var p netserve.Put
			if it.setup != nil {
				frameMax = it.setup.frameMax
				p.KeepAlive = it.setup.heartBeat
			}
			buf = append(buf, it.raw...)
			if it.m != nil {
				buf = spec.AppendMethodFrame(buf, it.ch, it.m)
				if it.props != nil {
					var trimmed bool
					buf, trimmed = appendContent(buf, it.ch, frameMax, it.props, it.body)
					if trimmed {
						c.log.Warn("amqp091: a delivery's headers did not fit in one frame of frame-max and were left out",
							slog.Int("frame_max", int(frameMax)))
					}
				}
			}
			if it.auto != nil {
				settle.AckOnWrite(it.auto.sess, it.engTag)
			}
			settle.Add(it.size, it.done)
			p.Close = it.close
			return p
		},
		Flush: func() error {
			if len(buf) == 0 {
				return nil
			}
			_, err := c.nc.Write(buf)
			if cap(buf) > 1<<20 {
				buf = nil // a large message's buffer is not kept
			} else {
				buf = buf[:0]
			}
			return err
		},
		KeepAlive: func() error { buf = spec.AppendHeartbeat(buf); return nil },
		Flushed:   settle.Flushed,
		Failed: func(err error) {
			c.end.Set(engine.ClosedNetworkError, err)
			c.abort()
		},
		Closing: c.abort,
	}
	sw.Run()
}

// appendContent appends the content header frame and the body frames of a
// message, each frame at most frameMax octets. The header must fit in one
// frame: when the properties of a message from another protocol are too
// many for the client's frame-max, its headers table is left out
// (trimmed reports it) rather than sending a frame the client refuses.
func appendContent(b []byte, ch uint16, frameMax uint32, props *spec.BasicProperties, body []byte) (_ []byte, trimmed bool) {
	h := spec.ContentHeader{ClassID: spec.ClassBasic, BodySize: uint64(len(body)), Properties: *props}
	hp := spec.AppendContentHeader(nil, &h)
	if len(hp)+frameOverhead > int(frameMax) {
		h.Properties.Headers = nil
		h.Properties.Flags &^= spec.FlagHeaders
		hp, trimmed = spec.AppendContentHeader(hp[:0], &h), true
	}
	b = spec.AppendFrame(b, spec.FrameHeader, ch, hp)
	chunk := int(frameMax) - frameOverhead
	for len(body) > 0 {
		n := min(chunk, len(body))
		b = spec.AppendFrame(b, spec.FrameBody, ch, body[:n])
		body = body[n:]
	}
	return b, trimmed
}

// readLoop runs the handshake, then reads frames until the connection
// ends.
func (c *conn) readLoop() error {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.ConnectTimeout))
	if err := c.handshake(); err != nil {
		var ae *amqpError
		if errors.As(err, &ae) {
			c.closeConnection(ae)
			return nil
		}
		c.noteReadError(err)
		return err
	}
	for {
		if c.heartBeat > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(2*c.heartBeat + time.Second))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		f, err := c.rd.ReadFrame()
		if err != nil {
			var fe *spec.Error
			if errors.As(err, &fe) && !errors.Is(err, io.ErrUnexpectedEOF) {
				c.closeConnection(refuse(fe.Code, nil, "%s", fe.Msg))
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.end.Set(engine.ClosedHeartbeatTimeout, fmt.Errorf("missed heart-beats: nothing received for %s", 2*c.heartBeat))
				return err
			}
			c.noteReadError(err)
			return err
		}
		stop, err := c.handleFrame(f)
		if err != nil {
			var ae *amqpError
			if !errors.As(err, &ae) {
				ae = asAMQPError(err, nil)
			}
			c.closeConnection(ae)
			return nil
		}
		if stop {
			return nil
		}
	}
}

func (c *conn) noteReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		c.end.Set(engine.ClosedNetworkError, errors.New("the client closed the network connection without connection.close"))
	case !errors.Is(err, net.ErrClosed):
		c.end.Set(engine.ClosedNetworkError, err)
	}
}

// readMethod reads the next frame of the handshake, which must be the
// method want on channel 0 (a heart-beat in between is skipped).
func (c *conn) readMethod(want spec.Method) error {
	for range 16 {
		f, err := c.rd.ReadFrame()
		if err != nil {
			var fe *spec.Error
			if errors.As(err, &fe) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return refuse(fe.Code, nil, "%s", fe.Msg)
			}
			return err
		}
		if f.Type == spec.FrameHeartbeat {
			continue
		}
		if f.Type != spec.FrameMethod || f.Channel != 0 {
			return refuse(spec.UnexpectedFrame, nil, "expected %s on channel 0, got a frame of type %d on channel %d", want.Name(), f.Type, f.Channel)
		}
		m, err := spec.DecodeMethod(f.Payload)
		if err != nil {
			return refuse(spec.SyntaxError, nil, "%v", err)
		}
		if m.ClassID() == spec.ClassConnection && m.MethodID() == (&spec.ConnectionClose{}).MethodID() {
			c.method(0, &spec.ConnectionCloseOk{})
			c.failing.Store(true)
			c.send(outItem{close: true})
			return io.EOF
		}
		if m.ClassID() != want.ClassID() || m.MethodID() != want.MethodID() {
			return refuse(spec.CommandInvalid, m, "expected %s, got %s", want.Name(), m.Name())
		}
		if err := want.Decode(f.Payload[4:]); err != nil {
			return refuse(spec.SyntaxError, m, "%v", err)
		}
		return nil
	}
	return refuse(spec.UnexpectedFrame, nil, "expected %s, got only heart-beats", want.Name())
}

// handshake reads the protocol header and runs start, tune and open.
func (c *conn) handshake() error {
	var hdr [8]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return err
	}
	if string(hdr[:]) != spec.ProtocolHeader {
		// The specification: answer with the header of the version the
		// server speaks, then close.
		c.failing.Store(true)
		c.end.Set(engine.ClosedError, fmt.Errorf("protocol header %q is not AMQP 0-9-1", hdr[:]))
		c.send(outItem{raw: []byte(spec.ProtocolHeader), close: true})
		return io.EOF
	}
	mechs := "PLAIN AMQPLAIN"
	if c.srv.opts.Realm.AnonymousAllowed() {
		mechs += " ANONYMOUS"
	}
	c.method(0, &spec.ConnectionStart{
		VersionMajor: 0, VersionMinor: 9,
		ServerProperties: spec.Table{
			"product":      "Sluice",
			"version":      c.srv.opts.Version,
			"platform":     "Go",
			"copyright":    "the Sluice authors",
			"information":  "AMQP 0-9-1 front-end of the Sluice JMS broker",
			"capabilities": serverCapabilities(),
			"cluster_name": "sluice",
		},
		Mechanisms: []byte(mechs),
		Locales:    []byte("en_US"),
	})
	var so spec.ConnectionStartOk
	if err := c.readMethod(&so); err != nil {
		return err
	}
	if caps, ok := so.ClientProperties["capabilities"].(spec.Table); ok {
		c.clientCaps = caps
	}
	id, err := c.authenticate(so.Mechanism, so.Response)
	if err != nil {
		return err
	}
	c.identity = id
	tune := &spec.ConnectionTune{ChannelMax: c.srv.opts.MaxChannels, FrameMax: c.srv.opts.MaxFrameSize,
		Heartbeat: uint16(c.srv.opts.HeartBeat / time.Second)}
	c.method(0, tune)
	var to spec.ConnectionTuneOk
	if err := c.readMethod(&to); err != nil {
		return err
	}
	switch {
	case to.FrameMax != 0 && to.FrameMax < frameMinSize:
		return refuse(spec.NotAllowed, &to, "frame_max=%d < %d min size", to.FrameMax, frameMinSize)
	case to.FrameMax > c.srv.opts.MaxFrameSize:
		return refuse(spec.NotAllowed, &to, "frame_max=%d > %d max size", to.FrameMax, c.srv.opts.MaxFrameSize)
	case to.ChannelMax > c.srv.opts.MaxChannels:
		return refuse(spec.NotAllowed, &to, "channel_max=%d > %d max channels", to.ChannelMax, c.srv.opts.MaxChannels)
	}
	c.frameMax = to.FrameMax
	if c.frameMax == 0 {
		c.frameMax = c.srv.opts.MaxFrameSize
	}
	c.channelMax = to.ChannelMax
	if c.channelMax == 0 {
		c.channelMax = c.srv.opts.MaxChannels
	}
	c.heartBeat = time.Duration(to.Heartbeat) * time.Second
	c.rd.SetMaxFrame(c.frameMax)
	// The client expects a frame at least every interval: beat a little
	// sooner, as the STOMP server does.
	c.send(outItem{setup: &writerSetup{frameMax: c.frameMax, heartBeat: c.heartBeat * 9 / 10}})
	var open spec.ConnectionOpen
	if err := c.readMethod(&open); err != nil {
		return err
	}
	if err := c.connectEngine(); err != nil {
		return asAMQPError(err, &open)
	}
	c.method(0, &spec.ConnectionOpenOk{})
	c.opened.Store(true)
	if b, _ := c.clientCaps["connection.blocked"].(bool); b {
		go c.watchFlow()
	}
	return nil
}

// serverCapabilities are the extensions of RabbitMQ's that the server
// implements, announced in connection.start.
func serverCapabilities() spec.Table {
	return spec.Table{
		"publisher_confirms":           true,
		"exchange_exchange_bindings":   true,
		"basic.nack":                   true,
		"consumer_cancel_notify":       true,
		"connection.blocked":           true,
		"authentication_failure_close": true,
		"per_consumer_qos":             true,
	}
}

// authenticate asks the realm who the client is: PLAIN ("\0user\0pass"),
// AMQPLAIN (a field table of LOGIN and PASSWORD, without its length) or
// ANONYMOUS; PLAIN or AMQPLAIN with an empty user name is anonymous too.
// A refusal is 403 ACCESS_REFUSED with one generic text, after the
// realm's failure delay (the client asked to be told:
// authentication_failure_close). The password is never logged.
func (c *conn) authenticate(mech string, resp []byte) (security.Identity, error) {
	realm := c.srv.opts.Realm
	at := security.Attempt{Protocol: "amqp091", Remote: c.nc.RemoteAddr().String(), Mechanism: mech}
	refused := refuse(spec.AccessRefused, nil, "Login was refused using authentication mechanism %s", mech)
	var user, pass string
	switch mech {
	case "PLAIN":
		parts := bytes.SplitN(resp, []byte{0}, 3)
		if len(parts) != 3 {
			return security.Identity{}, refuse(spec.AccessRefused, nil, "malformed PLAIN response")
		}
		user, pass = string(parts[1]), string(parts[2])
	case "AMQPLAIN":
		b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(resp)), uint32(len(resp)))
		t, _, err := spec.DecodeTable(append(b, resp...))
		if err != nil {
			return security.Identity{}, refuse(spec.AccessRefused, nil, "malformed AMQPLAIN response")
		}
		user, _ = t["LOGIN"].(string)
		pass, _ = t["PASSWORD"].(string)
	case "ANONYMOUS":
		if !realm.AnonymousAllowed() {
			return security.Identity{}, refused
		}
	default:
		return security.Identity{}, refuse(spec.AccessRefused, nil, "authentication mechanism %.40q is not offered", mech)
	}
	if !realm.Enabled() {
		return security.Identity{User: user}, nil
	}
	var id security.Identity
	var err error
	if user == "" {
		at.Mechanism = "anonymous"
		id, err = realm.Anonymous(c.ctx, at)
	} else {
		id, err = realm.Login(c.ctx, at, user, pass)
	}
	if err != nil {
		return security.Identity{}, refused
	}
	return id, nil
}

// connectEngine opens the engine connection of an authenticated client.
func (c *conn) connectEngine() error {
	opts := c.srv.opts.Connection
	opts.RemoteAddr = c.nc.RemoteAddr().String()
	opts.Protocol = "amqp091"
	opts.User, opts.Permissions = c.identity.User, c.identity.Permissions
	opts.MaxTransactions = c.srv.opts.MaxTransactions
	c.since = time.Now().UnixMilli()
	eng, err := c.srv.eng.Connect(opts)
	if err != nil {
		return err
	}
	c.eng = eng
	eng.SetExceptionListener(func(err error) {
		c.log.Info("engine ended the connection", slog.Any("err", err))
		c.closeConnection(refuse(spec.ConnectionForced, nil, "%v", err))
	})
	if c.tempSess, err = eng.CreateSession(engine.AutoAcknowledge); err != nil {
		return err
	}
	return eng.Start()
}

// local reports whether m was published on this connection, for no-local
// consumers: the engine stamps a message with its producer's connection,
// whether a client published it to the queue (through any exchange but
// amq.topic) or the bridge of an exclusive queue passed on what the
// connection published to the topic (bridge). Engine connection numbers
// start again after a restart, so a message older than the connection
// is never its own.
func (c *conn) local(m *message.Message) bool {
	return m.Producer == c.eng.ID() && m.Timestamp >= c.since
}

// watchFlow tells a client that asked for it (the connection.blocked
// client capability) when the broker's flow gate holds producers, and
// when it lets them go again.
func (c *conn) watchFlow() {
	fl := c.srv.eng.Flow()
	blocked := false
	for {
		ch := fl.Changed()
		now, why := fl.Blocked()
		if now != blocked {
			blocked = now
			var m spec.Method = &spec.ConnectionUnblocked{}
			if now {
				m = &spec.ConnectionBlocked{Reason: "low on " + why.String()}
			}
			if !c.method(0, m) {
				return
			}
		}
		select {
		case <-ch:
		case <-c.done:
			return
		}
	}
}

// holdPublisher is called by the reader before it takes a published
// message: while the flow gate holds producers it reads nothing more, so
// that TCP holds the client. It reports false when the connection ended
// meanwhile.
func (c *conn) holdPublisher() bool {
	fl := c.srv.eng.Flow()
	if blocked, _ := fl.Blocked(); !blocked {
		return true
	}
	return fl.WaitChan(c.done)
}

// handleFrame dispatches one frame after the handshake; stop ends the
// connection normally.
func (c *conn) handleFrame(f spec.Frame) (stop bool, err error) {
	switch f.Type {
	case spec.FrameHeartbeat:
		if f.Channel != 0 {
			return false, refuse(spec.FrameError, nil, "heart-beat frame on channel %d", f.Channel)
		}
		return false, nil
	case spec.FrameMethod:
		m, err := spec.DecodeMethod(f.Payload)
		if err != nil {
			if cid, mid, ierr := spec.MethodIDs(f.Payload); ierr == nil && spec.NewMethod(cid, mid) == nil {
				return false, refuse(spec.NotImplemented, nil, "unknown method %d.%d", cid, mid)
			}
			return false, refuse(spec.SyntaxError, nil, "%v", err)
		}
		if f.Channel == 0 {
			return c.connectionMethod(m)
		}
		if c.closing {
			return false, nil // only close-ok matters now
		}
		return false, c.channelMethod(f.Channel, m)
	case spec.FrameHeader, spec.FrameBody:
		if f.Channel == 0 {
			return false, refuse(spec.CommandInvalid, nil, "content frame on channel 0")
		}
		if c.closing {
			return false, nil
		}
		ch := c.channels[f.Channel]
		if ch == nil {
			return false, refuse(spec.ChannelError, nil, "content frame on channel %d, which is not open", f.Channel)
		}
		return false, ch.content(f)
	}
	return false, refuse(spec.FrameError, nil, "unknown frame type %d", f.Type)
}

// connectionMethod handles a method on channel 0.
func (c *conn) connectionMethod(m spec.Method) (bool, error) {
	switch m := m.(type) {
	case *spec.ConnectionClose:
		c.log.Debug("amqp091 connection.close", slog.Int("code", int(m.ReplyCode)), slog.String("text", m.ReplyText))
		c.end.Set(engine.ClosedByClient, nil)
		for id, ch := range c.channels {
			ch.release()
			delete(c.channels, id)
		}
		c.closing = true
		c.failing.Store(true)
		c.send(outItem{m: &spec.ConnectionCloseOk{}, close: true})
		return true, nil
	case *spec.ConnectionCloseOk:
		return true, nil
	case *spec.ConnectionUpdateSecret:
		c.method(0, &spec.ConnectionUpdateSecretOk{})
		return false, nil
	case *spec.ConnectionBlocked, *spec.ConnectionUnblocked:
		return false, nil // a client's own flow state: nothing to do
	}
	return false, refuse(spec.CommandInvalid, m, "%s is not a method a client sends on channel 0 after connection.open", m.Name())
}

// channelMethod routes a method on a channel other than 0.
func (c *conn) channelMethod(id uint16, m spec.Method) error {
	ch := c.channels[id]
	if open, ok := m.(*spec.ChannelOpen); ok {
		if ch != nil {
			return refuse(spec.ChannelError, open, "second 'channel.open' seen on channel %d", id)
		}
		if id > c.channelMax {
			return refuse(spec.NotAllowed, open, "channel %d is beyond channel_max %d", id, c.channelMax)
		}
		ch, err := newChannel(c, id)
		if err != nil {
			return asAMQPError(err, open)
		}
		c.channels[id] = ch
		c.method(id, &spec.ChannelOpenOk{})
		return nil
	}
	if ch == nil {
		return refuse(spec.ChannelError, m, "expected 'channel.open' on channel %d, got %s", id, m.Name())
	}
	if ch.closing {
		// After the server's channel.close only close and close-ok count.
		switch m.(type) {
		case *spec.ChannelCloseOk:
			delete(c.channels, id)
		case *spec.ChannelClose:
			c.method(id, &spec.ChannelCloseOk{})
		}
		return nil
	}
	err := ch.handle(m)
	if err == nil {
		return nil
	}
	ae := asAMQPError(err, m)
	if ae.hard() {
		return ae
	}
	ch.fail(ae)
	return nil
}

// temporaryQueue makes a temporary queue of this connection, known to it
// as name (the engine's own name when name is empty).
func (c *conn) temporaryQueue(name string) (string, message.Destination, error) {
	d, err := c.tempSess.CreateTemporaryQueue()
	if err != nil {
		return "", message.Destination{}, err
	}
	if name == "" {
		name = "amq.gen-" + d.Name
	}
	c.mu.Lock()
	c.temps[name] = d
	c.mu.Unlock()
	return name, d, nil
}

// lookupTemp resolves one of the connection's temporary queue names.
func (c *conn) lookupTemp(name string) (message.Destination, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.temps[name]
	return d, ok
}

// forgetTemp removes a temporary queue name.
func (c *conn) forgetTemp(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.temps, name)
}

// tempName returns this connection's name for an engine temporary queue.
func (c *conn) tempName(d message.Destination) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, t := range c.temps {
		if t == d {
			return n, true
		}
	}
	return "", false
}

// isServerNamed reports whether name has the form of a server-named
// queue, "amq.gen-<connection>.<sequence>", which every connection can
// publish to (a reply address).
func isServerNamed(name string) (message.Destination, bool) {
	rest, ok := strings.CutPrefix(name, "amq.gen-")
	if !ok {
		return message.Destination{}, false
	}
	return message.Destination{Kind: message.TempQueue, Name: rest}, true
}
