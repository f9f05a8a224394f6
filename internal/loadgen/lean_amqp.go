package loadgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// The lean AMQP 1.0 client: frames through Sluice's own codec
// (protocol/amqp/types and protocol/amqp/frames), one connection, session
// and link per producer or consumer, one reader goroutine per connection
// and a flusher that writes whatever frames piled up while it last wrote
// (so a window of transfers, or a run of dispositions, goes out in one
// write). go-amqp costs ~150 µs of CPU per message on a small machine,
// which makes the load generator the bottleneck; select this client with
// AMQPConfig.Client = "lean". It behaves as the go-amqp driver does:
// SASL ANONYMOUS or PLAIN, producers send unsettled (durable when
// persistent) and keep a window of unsettled sends, consumers with ack
// auto ask for pre-settled deliveries, otherwise accept each message.

const (
	// leanAMQPWindow is the session window this side announces (again
	// with every link flow).
	leanAMQPWindow = 1 << 20
	// leanAMQPMaxFrame is the max-frame-size this side announces.
	leanAMQPMaxFrame = 1 << 20
)

var leanAMQPConns atomic.Uint64

var leanAccepted = &types.Accepted{}

// leanAMQPConn is a connection with its one session (channel 0).
type leanAMQPConn struct {
	nc           net.Conn
	r            *frames.Reader
	container    string
	maxFrame     uint32        // the broker's max-frame-size
	idle         time.Duration // the broker's idle time-out
	nextIncoming uint32        // from the broker's begin
	remoteIn     uint32        // the broker's session incoming window, from its begin

	wmu   sync.Mutex
	buf   []byte // frames for the flusher
	spare []byte // the flusher's other buffer
	werr  error
	kick  chan struct{}
	done  chan struct{} // stops the flusher
	stop  sync.Once
}

func leanAMQPErrText(e *types.Error) string {
	if e == nil {
		return "no error condition"
	}
	return string(e.Condition) + ": " + e.Description
}

// leanDial connects, authenticates and begins the session.
func (a *AMQP) leanDial(ctx context.Context) (*leanAMQPConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", a.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &leanAMQPConn{nc: nc, kick: make(chan struct{}, 1), done: make(chan struct{}),
		container: fmt.Sprintf("sluice-bench-lean-%d-%d", os.Getpid(), leanAMQPConns.Add(1))}
	c.r = frames.NewReader(bufio.NewReaderSize(nc, 64<<10), leanAMQPMaxFrame)
	_ = nc.SetDeadline(leanDeadline(ctx))
	if err := c.handshake(a.cfg); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", a.cfg.Addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	go c.flusher()
	return c, nil
}

func leanDeadline(ctx context.Context) time.Time {
	dl := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	return dl
}

// handshake does SASL, open and begin, writing directly.
func (c *leanAMQPConn) handshake(cfg AMQPConfig) error {
	w := frames.NewWriter(c.nc, leanAMQPMaxFrame)
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
				return fmt.Errorf("SASL: the broker does not offer %s (it offers %v)", mech, b.SASLServerMechanisms)
			}
			init := &types.SASLInit{Mechanism: types.Symbol(mech), InitialResponse: resp}
			if err := w.WriteFrame(frames.Frame{Type: frames.TypeSASL, Body: init}); err != nil {
				return fmt.Errorf("SASL: %w", err)
			}
		case *types.SASLOutcome:
			if b.Code != types.SASLCodeOK {
				return fmt.Errorf("SASL %s: outcome %v", mech, b.Code)
			}
			done = true
		}
	}
	if err := w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP)); err != nil {
		return err
	}
	host := cfg.VirtualHost
	if host == "" {
		host, _, _ = net.SplitHostPort(cfg.Addr)
	}
	o := types.NewOpen()
	o.ContainerID, o.Hostname, o.MaxFrameSize = c.container, host, leanAMQPMaxFrame
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = leanAMQPWindow, leanAMQPWindow
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
			return errors.New("the broker answered open with close: " + leanAMQPErrText(b.Error))
		case *types.End:
			return errors.New("the broker refused the session: " + leanAMQPErrText(b.Error))
		case *types.Begin:
			c.nextIncoming, c.remoteIn = uint32(b.NextOutgoingID), b.IncomingWindow
			return nil
		}
	}
}

// queue appends a frame for the flusher.
func (c *leanAMQPConn) queue(p types.Performative, payload []byte) error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	n := len(c.buf)
	b, err := frames.AppendFrame(c.buf, frames.Frame{Type: frames.TypeAMQP, Body: p, Payload: payload})
	if err == nil && c.maxFrame > 0 && uint64(len(b)-n) > uint64(c.maxFrame) {
		err = fmt.Errorf("%w: %d bytes, limit %d", frames.ErrFrameTooLarge, len(b)-n, c.maxFrame)
		b = b[:n]
	}
	c.buf = b
	c.wmu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return err
}

// flusher writes the queued frames, and empty frames for the broker's
// idle time-out.
func (c *leanAMQPConn) flusher() {
	var tick <-chan time.Time
	if c.idle > 0 {
		t := time.NewTicker(c.idle / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-c.kick:
		case <-tick:
			c.wmu.Lock()
			if len(c.buf) == 0 {
				c.buf, _ = frames.AppendFrame(c.buf, frames.Frame{Type: frames.TypeAMQP})
			}
			c.wmu.Unlock()
		case <-c.done:
			return
		}
		c.wmu.Lock()
		b := c.buf
		c.buf = c.spare[:0]
		c.wmu.Unlock()
		if len(b) == 0 {
			c.spare = b
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := c.nc.Write(b)
		c.spare = b[:0]
		if err != nil {
			c.wmu.Lock()
			c.werr = err
			c.wmu.Unlock()
			_ = c.nc.Close()
			return
		}
	}
}

// attach attaches the connection's one link (handle 0) and reads until
// the broker answers; it runs before the reader goroutine starts.
func (c *leanAMQPConn) attach(ctx context.Context, a *types.Attach, what string) error {
	a.Name, a.Handle = c.container+"-link", 0
	if err := c.queue(a, nil); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_ = c.nc.SetReadDeadline(leanDeadline(ctx))
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		switch b := f.Body.(type) {
		case *types.Attach:
			if (a.Role == types.RoleSender && b.Target == nil) || (a.Role == types.RoleReceiver && b.Source == nil) {
				continue // refused: a detach follows
			}
			return nil
		case *types.Detach:
			return fmt.Errorf("%s: refused: %s", what, leanAMQPErrText(b.Error))
		case *types.End:
			return fmt.Errorf("%s: the broker ended the session: %s", what, leanAMQPErrText(b.Error))
		case *types.Close:
			return fmt.Errorf("%s: the broker closed the connection: %s", what, leanAMQPErrText(b.Error))
		}
	}
}

// shutdown sends close, waits (bounded) for readerDone, and tears the
// connection down.
func (c *leanAMQPConn) shutdown(readerDone <-chan struct{}) error {
	var err error
	if qerr := c.queue(types.NewClose(), nil); qerr == nil {
		select {
		case <-readerDone:
		case <-time.After(5 * time.Second):
			err = errors.New("connection close not answered within 5s")
		}
	}
	c.stop.Do(func() { close(c.done) })
	_ = c.nc.Close()
	<-readerDone
	return err
}

func leanSymbols(ss []string) []types.Symbol {
	if ss == nil {
		return nil
	}
	out := make([]types.Symbol, len(ss))
	for i, s := range ss {
		out[i] = types.Symbol(s)
	}
	return out
}

// leanFrameErr is the error a Detach, End or Close from the broker means.
func leanFrameErr(f frames.Frame) error {
	switch b := f.Body.(type) {
	case *types.Detach:
		return errors.New("the broker detached the link: " + leanAMQPErrText(b.Error))
	case *types.End:
		return errors.New("the broker ended the session: " + leanAMQPErrText(b.Error))
	case *types.Close:
		return errors.New("the broker closed the connection: " + leanAMQPErrText(b.Error))
	}
	return nil
}

// newLeanProducer attaches a sender on a connection of its own.
func (a *AMQP) newLeanProducer(ctx context.Context, o *Options) (Producer, error) {
	c, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	tgt := types.NewTarget()
	tgt.Address, tgt.Capabilities = addr, leanSymbols(caps)
	at := types.NewAttach()
	at.Role, at.Source, at.Target = types.RoleSender, types.NewSource(), tgt
	at.SndSettleMode, at.RcvSettleMode = types.SenderSettleModeUnsettled, types.ReceiverSettleModeFirst
	at.InitialDeliveryCount = types.Some(types.SequenceNo(0))
	if err := c.attach(ctx, at, "attach sender to "+addr); err != nil {
		c.stop.Do(func() { close(c.done) })
		_ = c.nc.Close()
		return nil, err
	}
	window := a.cfg.SendWindow
	if o.Receipts {
		window = o.ReceiptWindow
	}
	p := &leanAMQPProducer{c: c, o: o, window: window, remoteIn: int64(c.remoteIn),
		notify: make(chan struct{}, 1), readDone: make(chan struct{})}
	p.hdr.Durable = types.Some(o.Persistent)
	p.msg.Header = &p.hdr
	p.t.MessageFormat = types.Some(types.MessageFormat(0))
	go p.read()
	return p, nil
}

type leanAMQPProducer struct {
	c      *leanAMQPConn
	o      *Options
	window int

	mu          sync.Mutex
	credit      uint32 // link credit left
	count       uint32 // link delivery-count
	nextOut     uint32 // next transfer (and delivery) id
	remoteIn    int64  // transfers the broker's session still takes
	outstanding int    // unsettled sends
	err         error
	notify      chan struct{} // the reader changed the state above

	closing  atomic.Bool
	readDone chan struct{}

	// Send's scratch.
	t       types.Transfer
	msg     types.Message
	hdr     types.Header
	props   [4]types.MapEntry
	data    [1]types.Data
	tag     [4]byte
	payload []byte
}

func (p *leanAMQPProducer) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *leanAMQPProducer) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.wake()
}

// read handles the broker's flows and dispositions.
func (p *leanAMQPProducer) read() {
	defer close(p.readDone)
	for {
		f, err := p.c.r.ReadFrame()
		if err != nil {
			if !p.closing.Load() {
				p.fail(fmt.Errorf("AMQP connection lost: %w", err))
			}
			return
		}
		switch b := f.Body.(type) {
		case *types.Flow:
			p.mu.Lock()
			w := uint32(b.NextIncomingID.Or(0)) + b.IncomingWindow - p.nextOut
			p.remoteIn = int64(w)
			if w > 1<<31 {
				p.remoteIn = 0
			}
			if _, ok := b.Handle.Get(); ok {
				cr := uint32(b.DeliveryCount.Or(0)) + b.LinkCredit.Or(0) - p.count
				if cr > 1<<31 {
					cr = 0
				}
				p.credit = cr
			}
			p.mu.Unlock()
			p.wake()
		case *types.Disposition:
			if b.Role != types.RoleReceiver || !b.Settled {
				continue
			}
			var serr error
			switch s := b.State.(type) {
			case *types.Accepted:
			case *types.Rejected:
				serr = fmt.Errorf("message rejected: %s", leanAMQPErrText(s.Error))
			default:
				serr = fmt.Errorf("message settled as %T", b.State)
			}
			n := int(uint32(b.Last.Or(b.First))-uint32(b.First)) + 1
			p.mu.Lock()
			p.outstanding = max(0, p.outstanding-n)
			if serr != nil && p.err == nil {
				p.err = serr
			}
			p.mu.Unlock()
			p.wake()
		case *types.Detach, *types.End, *types.Close:
			if _, ok := b.(*types.Close); ok && p.closing.Load() {
				return
			}
			p.fail(leanFrameErr(f))
			if _, ok := b.(*types.Close); ok {
				return
			}
		}
	}
}

// wait returns with mu held once ready holds, or an error without it.
func (p *leanAMQPProducer) wait(ctx context.Context, ready func() bool) error {
	for {
		p.mu.Lock()
		if p.err != nil {
			err := p.err
			p.mu.Unlock()
			return err
		}
		if ready() {
			return nil
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *leanAMQPProducer) Send(ctx context.Context, m Msg, body []byte) error {
	if err := p.wait(ctx, func() bool { return p.outstanding < p.window && p.credit > 0 && p.remoteIn > 0 }); err != nil {
		return err
	}
	id := p.nextOut
	p.nextOut++
	p.credit--
	p.count++
	p.remoteIn--
	p.outstanding++
	p.mu.Unlock()

	p.props[0] = types.MapEntry{Key: hdrRun, Value: m.Run}
	p.props[1] = types.MapEntry{Key: hdrSeq, Value: strconv.Itoa(m.Producer) + "." + strconv.FormatUint(m.Seq, 10)}
	p.props[2] = types.MapEntry{Key: hdrTS, Value: m.Sent}
	n := 3
	if m.Probe {
		p.props[3] = types.MapEntry{Key: hdrProbe, Value: "1"}
		n = 4
	}
	p.msg.ApplicationProperties = p.props[:n]
	p.data[0] = body
	p.msg.Data = p.data[:]
	payload, err := p.msg.AppendAMQP(p.payload[:0])
	if err != nil {
		p.fail(fmt.Errorf("encode: %w", err))
		return err
	}
	p.payload = payload
	binary.BigEndian.PutUint32(p.tag[:], id)
	p.t.DeliveryID = types.Some(types.DeliveryNumber(id))
	p.t.DeliveryTag = p.tag[:]
	if err := p.c.queue(&p.t, payload); err != nil {
		p.fail(err)
		return err
	}
	if m.Confirm || m.Probe {
		return p.Flush(ctx)
	}
	return nil
}

// Flush waits until every send is settled.
func (p *leanAMQPProducer) Flush(ctx context.Context) error {
	if err := p.wait(ctx, func() bool { return p.outstanding == 0 }); err != nil {
		return err
	}
	p.mu.Unlock()
	return nil
}

func (p *leanAMQPProducer) Close() error {
	p.closing.Store(true)
	return p.c.shutdown(p.readDone)
}

// newLeanConsumer attaches a receiver on a connection of its own.
func (a *AMQP) newLeanConsumer(ctx context.Context, o *Options, h Handler) (Consumer, error) {
	c, err := a.leanDial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	src := types.NewSource()
	src.Address, src.Capabilities = addr, leanSymbols(caps)
	at := types.NewAttach()
	at.Role, at.Source, at.Target = types.RoleReceiver, src, types.NewTarget()
	at.SndSettleMode, at.RcvSettleMode = types.SenderSettleModeUnsettled, types.ReceiverSettleModeFirst
	if o.AckMode == AckAuto {
		at.SndSettleMode = types.SenderSettleModeSettled
	}
	fail := func(err error) (Consumer, error) {
		c.stop.Do(func() { close(c.done) })
		_ = c.nc.Close()
		return nil, err
	}
	if err := c.attach(ctx, at, "attach receiver to "+addr); err != nil {
		return fail(err)
	}
	credit := o.Prefetch
	if credit <= 0 {
		credit = a.cfg.DefaultCredit
	}
	credit = min(credit, leanAMQPWindow/2)
	lc := &leanAMQPConsumer{c: c, window: uint32(credit), nextIncoming: c.nextIncoming, done: make(chan struct{})}
	lc.fl.Handle = types.Some(types.Handle(0))
	lc.disp = types.Disposition{Role: types.RoleReceiver, Settled: true, State: leanAccepted}
	if err := lc.flow(); err != nil {
		return fail(fmt.Errorf("flow: %w", err))
	}
	go lc.run(h)
	return lc, nil
}

type leanAMQPConsumer struct {
	c       *leanAMQPConn
	closing atomic.Bool
	done    chan struct{}

	// The reader's own.
	window, credit, count uint32
	nextIncoming          uint32
	fl                    types.Flow
	disp                  types.Disposition
}

// flow grants the link its whole window of credit again.
func (lc *leanAMQPConsumer) flow() error {
	lc.credit = lc.window
	lc.fl.NextIncomingID = types.Some(types.TransferNumber(lc.nextIncoming))
	lc.fl.IncomingWindow, lc.fl.OutgoingWindow = leanAMQPWindow, leanAMQPWindow
	lc.fl.DeliveryCount = types.Some(types.SequenceNo(lc.count))
	lc.fl.LinkCredit = types.Some(lc.window)
	return lc.c.queue(&lc.fl, nil)
}

func (lc *leanAMQPConsumer) run(h Handler) {
	defer close(lc.done)
	failed := func(err error) {
		if !lc.closing.Load() {
			h(Msg{}, err)
		}
	}
	var partial []byte
	var partialID uint32
	for {
		f, err := lc.c.r.ReadFrame()
		if err != nil {
			failed(fmt.Errorf("AMQP connection lost: %w", err))
			return
		}
		switch b := f.Body.(type) {
		case *types.Transfer:
			lc.nextIncoming++
			payload := f.Payload
			id, hasID := b.DeliveryID.Get()
			if partial != nil {
				if hasID && uint32(id) != partialID {
					failed(errors.New("a new delivery in the middle of a multi-frame one"))
					return
				}
				id, payload = types.DeliveryNumber(partialID), append(partial, payload...)
			}
			if b.More && !b.Aborted {
				partial, partialID = payload, uint32(id)
				if partial == nil {
					partial = []byte{}
				}
				continue
			}
			partial = nil
			lc.count++
			if lc.credit > 0 {
				lc.credit--
			}
			if !b.Aborted && !b.Settled.Or(false) {
				lc.disp.First = id
				if err := lc.c.queue(&lc.disp, nil); err != nil {
					failed(fmt.Errorf("accept: %w", err))
					return
				}
			}
			if lc.credit <= lc.window/2 {
				if err := lc.flow(); err != nil {
					failed(fmt.Errorf("flow: %w", err))
					return
				}
			}
			if b.Aborted {
				continue
			}
			msg, err := types.DecodeMessage(payload)
			if err != nil {
				failed(fmt.Errorf("decode message: %w", err))
				return
			}
			m, err := parseMsg(func(name string) string {
				v, _ := msg.ApplicationProperties.Get(name)
				switch v := v.(type) {
				case string:
					return v
				case int64:
					return strconv.FormatInt(v, 10)
				case nil:
					return ""
				default:
					return fmt.Sprint(v)
				}
			})
			if err != nil {
				h(Msg{}, err)
				return
			}
			h(m, nil)
		case *types.Detach, *types.End, *types.Close:
			if _, ok := b.(*types.Close); ok && lc.closing.Load() {
				return
			}
			failed(leanFrameErr(f))
			return
		}
	}
}

func (lc *leanAMQPConsumer) Close() error {
	lc.closing.Store(true)
	return lc.c.shutdown(lc.done)
}
