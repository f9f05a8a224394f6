package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
)

// Headers every benchmark message carries. Their names are plain
// identifiers, so brokers that turn headers into JMS properties (ActiveMQ,
// Sluice) accept them.
const (
	hdrRun   = "bench_run"   // run ID
	hdrSeq   = "bench_seq"   // producer "." sequence
	hdrTS    = "bench_ts"    // send time, Unix nanoseconds
	hdrProbe = "bench_probe" // present on warm-up probes
)

// STOMPConfig is how to reach a STOMP broker.
type STOMPConfig struct {
	Addr     string // host:port
	Login    string // login and passcode headers of CONNECT, when set
	Passcode string
	// Host is CONNECT's host header (RabbitMQ reads it as the virtual
	// host, so give "/" there); default: the address's host.
	Host string
	// PrefetchHeaders are the SUBSCRIBE headers that carry
	// Options.Prefetch; default activemq.prefetchSize (ActiveMQ, Sluice)
	// and prefetch-count (RabbitMQ, Sluice).
	PrefetchHeaders []string
	// Client is "go-stomp" (default: github.com/go-stomp/stomp/v3's Conn)
	// or "lean" (this package's minimal client, see lean.go), for when
	// go-stomp's CPU cost would make the load generator the bottleneck.
	Client string
}

// STOMP clients.
const (
	ClientGoSTOMP = "go-stomp"
	ClientLean    = "lean"
)

// STOMP is the STOMP driver.
type STOMP struct {
	cfg STOMPConfig
}

// NewSTOMP returns a STOMP driver for the broker cfg names.
func NewSTOMP(cfg STOMPConfig) *STOMP {
	if cfg.PrefetchHeaders == nil {
		cfg.PrefetchHeaders = []string{"activemq.prefetchSize", "prefetch-count"}
	}
	if cfg.Client == "" {
		cfg.Client = ClientGoSTOMP
	}
	return &STOMP{cfg: cfg}
}

// Protocol is "stomp", or "stomp/lean" with the lean client.
func (s *STOMP) Protocol() string { return protocolName("stomp", s.cfg.Client) }

// Name describes the target.
func (s *STOMP) Name() string { return targetName("stomp", s.cfg.Addr, s.cfg.Client) }

func stompDestination(o *Options) string {
	if strings.HasPrefix(o.Destination, "/") {
		return o.Destination
	}
	if o.Topic {
		return "/topic/" + o.Destination
	}
	return "/queue/" + o.Destination
}

// quietLogger keeps go-stomp from printing to stderr; it remembers the last
// error it was told about.
type quietLogger struct{ last atomic.Pointer[string] }

func (l *quietLogger) Debugf(string, ...any) {}
func (l *quietLogger) Infof(string, ...any)  {}
func (l *quietLogger) Warningf(f string, v ...any) {
	s := fmt.Sprintf(f, v...)
	l.last.Store(&s)
}
func (l *quietLogger) Errorf(f string, v ...any) {
	s := fmt.Sprintf(f, v...)
	l.last.Store(&s)
}
func (l *quietLogger) Debug(string)     {}
func (l *quietLogger) Info(string)      {}
func (l *quietLogger) Warning(m string) { l.last.Store(&m) }
func (l *quietLogger) Error(m string)   { l.last.Store(&m) }

func (l *quietLogger) wrap(err error) error {
	if p := l.last.Load(); p != nil && err != nil {
		return fmt.Errorf("%w (client log: %s)", err, *p)
	}
	return err
}

// defaultChannelCapacity is go-stomp's read and write channel capacity
// for producers and for consumers that do not acknowledge.
const defaultChannelCapacity = 256

// brokerDefaultPrefetch is the prefetch assumed when Options.Prefetch
// leaves it to the broker: Sluice's and ActiveMQ's default.
const brokerDefaultPrefetch = 1000

// channelCapacity is the go-stomp channel capacity for a consumer of o.
// go-stomp's one processing goroutine both hands MESSAGE frames to the
// subscription and takes the subscriber's ACKs off the write channel; if
// the write channel fills while that goroutine waits on the subscription,
// neither moves. With room for an ACK of every message the broker may have
// outstanding (the prefetch) the subscriber never blocks queueing one.
func channelCapacity(o *Options) int {
	if o.AckMode == AckAuto {
		return defaultChannelCapacity
	}
	prefetch := o.Prefetch
	if prefetch <= 0 {
		prefetch = brokerDefaultPrefetch
	}
	return max(defaultChannelCapacity, prefetch+64)
}

// dial connects a go-stomp client with read and write channels of the
// given capacity. It dials the TCP connection itself so Close can always
// end it, even when the broker stops answering.
func (s *STOMP) dial(ctx context.Context, capacity int) (*stomp.Conn, net.Conn, *quietLogger, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return nil, nil, nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	log := &quietLogger{}
	host := s.cfg.Host
	if host == "" {
		host, _, _ = net.SplitHostPort(s.cfg.Addr)
	}
	opts := []func(*stomp.Conn) error{
		stomp.ConnOpt.Host(host),
		stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.Logger(log),
		stomp.ConnOpt.MsgSendTimeout(2 * time.Minute),
		stomp.ConnOpt.RcvReceiptTimeout(2 * time.Minute),
		stomp.ConnOpt.DisconnectReceiptTimeout(5 * time.Second),
		stomp.ConnOpt.ReadChannelCapacity(capacity),
		stomp.ConnOpt.WriteChannelCapacity(capacity),
	}
	if s.cfg.Login != "" || s.cfg.Passcode != "" {
		opts = append(opts, stomp.ConnOpt.Login(s.cfg.Login, s.cfg.Passcode))
	}
	c, err := stomp.ConnectWithContext(ctx, nc, opts...)
	if err != nil {
		_ = nc.Close()
		return nil, nil, nil, err
	}
	return c, nc, log, nil
}

// closeConn disconnects politely, and in any case within a few seconds.
func closeConn(c *stomp.Conn, nc net.Conn) {
	done := make(chan struct{})
	go func() { _ = c.Disconnect(); close(done) }()
	select {
	case <-done:
	case <-time.After(6 * time.Second):
	}
	_ = nc.Close()
}

// sendHeaders are the SEND options of message m.
func sendHeaders(o *Options, m Msg, receipt bool) []func(*frame.Frame) error {
	opts := make([]func(*frame.Frame) error, 0, 6)
	opts = append(opts,
		stomp.SendOpt.Header(hdrRun, m.Run),
		stomp.SendOpt.Header(hdrSeq, strconv.Itoa(m.Producer)+"."+strconv.FormatUint(m.Seq, 10)),
		stomp.SendOpt.Header(hdrTS, strconv.FormatInt(m.Sent, 10)))
	if m.Probe {
		opts = append(opts, stomp.SendOpt.Header(hdrProbe, "1"))
	}
	// RabbitMQ refuses "persistent:false" on a durable queue: the header
	// goes only when true (false is every peer's default).
	if o.Persistent {
		opts = append(opts, stomp.SendOpt.Header("persistent", "true"))
	}
	if receipt {
		opts = append(opts, stomp.SendOpt.Receipt)
	}
	return opts
}

// parseMsg reads the benchmark headers of a received message.
func parseMsg(get func(string) string) (Msg, error) {
	var m Msg
	m.Run = get(hdrRun)
	if get(hdrProbe) != "" {
		m.Probe = true
		return m, nil
	}
	seq := get(hdrSeq)
	p, n, ok := strings.Cut(seq, ".")
	if !ok {
		if m.Run == "" {
			// Not a benchmark message: someone else's, counted as foreign.
			m.Producer = -1
			return m, nil
		}
		return m, fmt.Errorf("message with a malformed %s header %q", hdrSeq, seq)
	}
	var err1, err2, err3 error
	m.Producer, err1 = strconv.Atoi(p)
	m.Seq, err2 = strconv.ParseUint(n, 10, 64)
	m.Sent, err3 = strconv.ParseInt(get(hdrTS), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return m, fmt.Errorf("message with malformed benchmark headers: %w", err)
	}
	return m, nil
}

// NewProducer connects a producer. With receipts and a window above 1 it
// pipelines SEND frames itself (go-stomp's Conn.Send waits for each
// receipt), still with go-stomp's frame codec.
func (s *STOMP) NewProducer(ctx context.Context, o *Options, idx int) (Producer, error) {
	if s.cfg.Client == ClientLean {
		return s.newLeanProducer(ctx, o)
	}
	if o.Receipts && o.ReceiptWindow > 1 {
		return s.newWindowProducer(ctx, o)
	}
	c, nc, log, err := s.dial(ctx, defaultChannelCapacity)
	if err != nil {
		return nil, err
	}
	return &stompProducer{o: o, c: c, nc: nc, log: log, dest: stompDestination(o)}, nil
}

type stompProducer struct {
	o    *Options
	c    *stomp.Conn
	nc   net.Conn
	log  *quietLogger
	dest string
}

func (p *stompProducer) Send(ctx context.Context, m Msg, body []byte) error {
	receipt := p.o.Receipts || m.Probe || m.Confirm
	if err := p.c.Send(p.dest, "application/octet-stream", body, sendHeaders(p.o, m, receipt)...); err != nil {
		return p.log.wrap(err)
	}
	return nil
}

func (p *stompProducer) Flush(context.Context) error { return nil }

func (p *stompProducer) Close() error {
	closeConn(p.c, p.nc)
	return nil
}

// NewConsumer subscribes a consumer on a connection of its own.
func (s *STOMP) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	if s.cfg.Client == ClientLean {
		return s.newLeanConsumer(ctx, o, h)
	}
	c, nc, log, err := s.dial(ctx, channelCapacity(o))
	if err != nil {
		return nil, err
	}
	mode := stomp.AckAuto
	switch o.AckMode {
	case AckClient:
		mode = stomp.AckClient
	case AckClientIndividual:
		mode = stomp.AckClientIndividual
	}
	var opts []func(*frame.Frame) error
	if o.Prefetch > 0 {
		for _, name := range s.cfg.PrefetchHeaders {
			opts = append(opts, stomp.SubscribeOpt.Header(name, strconv.Itoa(o.Prefetch)))
		}
	}
	sub, err := c.Subscribe(stompDestination(o), mode, opts...)
	if err != nil {
		closeConn(c, nc)
		return nil, log.wrap(err)
	}
	sc := &stompConsumer{c: c, nc: nc, log: log, done: make(chan struct{})}
	go sc.run(sub, o, h)
	return sc, nil
}

type stompConsumer struct {
	c       *stomp.Conn
	nc      net.Conn
	log     *quietLogger
	closing atomic.Bool
	done    chan struct{}
}

func (sc *stompConsumer) run(sub *stomp.Subscription, o *Options, h Handler) {
	defer close(sc.done)
	n := 0
	for msg := range sub.C {
		if sc.closing.Load() {
			continue // drain until go-stomp closes the channel
		}
		if msg.Err != nil {
			h(Msg{}, sc.log.wrap(msg.Err))
			sc.closing.Store(true)
			continue
		}
		m, err := parseMsg(msg.Header.Get)
		if err != nil {
			h(Msg{}, err)
			sc.closing.Store(true)
			continue
		}
		if o.AckMode != AckAuto {
			n++
			if o.AckMode == AckClientIndividual || n%o.AckEvery == 0 || m.Probe {
				if err := sc.c.Ack(msg); err != nil {
					h(Msg{}, fmt.Errorf("ack: %w", sc.log.wrap(err)))
					sc.closing.Store(true)
					continue
				}
			}
		}
		h(m, nil)
	}
}

func (sc *stompConsumer) Close() error {
	sc.closing.Store(true)
	closeConn(sc.c, sc.nc)
	select {
	case <-sc.done:
	case <-time.After(5 * time.Second):
		return errors.New("consumer did not stop within 5s")
	}
	return nil
}

// windowProducer keeps up to ReceiptWindow SEND frames with a receipt
// outstanding on one connection.
type windowProducer struct {
	o      *Options
	nc     net.Conn
	w      *frame.Writer
	dest   string
	tokens chan struct{} // one per outstanding receipt
	next   uint64
	err    atomic.Pointer[error]
	failed chan struct{}
	once   sync.Once
	done   chan struct{} // reader ended
}

func (s *STOMP) newWindowProducer(ctx context.Context, o *Options) (*windowProducer, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	host := s.cfg.Host
	if host == "" {
		host, _, _ = net.SplitHostPort(s.cfg.Addr)
	}
	cf := frame.New(frame.CONNECT, frame.AcceptVersion, "1.0,1.1,1.2", frame.Host, host, frame.HeartBeat, "0,0")
	if s.cfg.Login != "" || s.cfg.Passcode != "" {
		cf.Header.Add(frame.Login, s.cfg.Login)
		cf.Header.Add(frame.Passcode, s.cfg.Passcode)
	}
	w := frame.NewWriterSize(nc, 64<<10)
	r := frame.NewReaderSize(nc, 64<<10)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if err := w.Write(cf); err != nil {
		_ = nc.Close()
		return nil, err
	}
	var resp *frame.Frame
	for resp == nil {
		if resp, err = r.Read(); err != nil {
			_ = nc.Close()
			return nil, err
		}
	}
	_ = nc.SetDeadline(time.Time{})
	if resp.Command != frame.CONNECTED {
		_ = nc.Close()
		return nil, fmt.Errorf("CONNECT refused: %s %s", resp.Header.Get(frame.Message), strings.TrimSpace(string(resp.Body)))
	}
	p := &windowProducer{
		o: o, nc: nc, w: w, dest: stompDestination(o),
		tokens: make(chan struct{}, o.ReceiptWindow),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	go p.read(r)
	return p, nil
}

func (p *windowProducer) fail(err error) {
	p.once.Do(func() {
		p.err.Store(&err)
		close(p.failed)
	})
}

func (p *windowProducer) read(r *frame.Reader) {
	defer close(p.done)
	for {
		f, err := r.Read()
		if err != nil {
			p.fail(fmt.Errorf("connection: %w", err))
			return
		}
		if f == nil {
			continue
		}
		switch f.Command {
		case frame.RECEIPT:
			select {
			case <-p.tokens:
			default:
				p.fail(fmt.Errorf("unexpected RECEIPT %s", f.Header.Get(frame.ReceiptId)))
				return
			}
		case frame.ERROR:
			p.fail(fmt.Errorf("ERROR from broker: %s %s", f.Header.Get(frame.Message), strings.TrimSpace(string(f.Body))))
			return
		}
	}
}

func (p *windowProducer) Send(ctx context.Context, m Msg, body []byte) error {
	select {
	case p.tokens <- struct{}{}:
	case <-p.failed:
		return *p.err.Load()
	case <-ctx.Done():
		return ctx.Err()
	}
	f := frame.New(frame.SEND, frame.Destination, p.dest, frame.ContentType, "application/octet-stream",
		frame.ContentLength, strconv.Itoa(len(body)))
	f.Body = body
	for _, opt := range sendHeaders(p.o, m, false) {
		_ = opt(f)
	}
	p.next++
	f.Header.Add(frame.Receipt, "r"+strconv.FormatUint(p.next, 10))
	if err := p.w.Write(f); err != nil {
		p.fail(err)
		return err
	}
	return nil
}

func (p *windowProducer) Flush(ctx context.Context) error {
	// Fill the window: once every token is ours, every receipt came.
	n := 0
	defer func() {
		for ; n > 0; n-- {
			<-p.tokens
		}
	}()
	for ; n < cap(p.tokens); n++ {
		select {
		case p.tokens <- struct{}{}:
		case <-p.failed:
			return *p.err.Load()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (p *windowProducer) Close() error {
	p.fail(errors.New("closed"))
	_ = p.w.Write(frame.New(frame.DISCONNECT))
	_ = p.nc.Close()
	<-p.done
	return nil
}

// protocolName is a driver's Protocol: proto, or proto/lean with the lean
// client.
func protocolName(proto, client string) string {
	if client == ClientLean {
		return proto + "/lean"
	}
	return proto
}

// targetName is a driver's Name: the protocol and address, and which client.
func targetName(proto, addr, client string) string {
	if client == ClientLean {
		return proto + " " + addr + " (lean client)"
	}
	return proto + " " + addr
}
