package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/Azure/go-amqp"
)

// AddressStyle is how an AMQP 1.0 broker names queues and topics.
type AddressStyle string

const (
	// AddressPlain: the bare name, with the terminus capability "queue" or
	// "topic" (the JMS mapping of Qpid JMS, ActiveMQ, Artemis, Sluice).
	AddressPlain AddressStyle = "plain"
	// AddressPrefix: "queue://NAME" and "topic://NAME".
	AddressPrefix AddressStyle = "prefix"
	// AddressRabbitMQ: RabbitMQ 3.x's AMQP 1.0 plugin, "/queue/NAME" (a
	// durable queue it declares) and "/topic/NAME" (amq.topic).
	AddressRabbitMQ AddressStyle = "rabbitmq"
)

// AMQPConfig is how to reach an AMQP 1.0 broker.
type AMQPConfig struct {
	Addr     string // host:port
	User     string // SASL PLAIN when set, else ANONYMOUS
	Password string
	// VirtualHost is the open frame's hostname (RabbitMQ: "vhost:/", or
	// empty for the default).
	VirtualHost string
	Addresses   AddressStyle // default plain
	// SendWindow is how many unsettled sends a producer keeps outstanding
	// when the run asks for no receipts (default 1000); with receipts,
	// Options.ReceiptWindow applies.
	SendWindow int
	// DefaultCredit is the receiver's link credit when Options.Prefetch is
	// 0 (default 100).
	DefaultCredit int
	// Client is "go-amqp" (default: github.com/Azure/go-amqp) or "lean"
	// (this package's minimal client, see lean_amqp.go), for when go-amqp's
	// CPU cost would make the load generator the bottleneck.
	Client string
}

// ClientGoAMQP is the go-amqp AMQP 1.0 client (ClientLean is the other).
const ClientGoAMQP = "go-amqp"

// AMQP is the AMQP 1.0 driver. Producers send unsettled (the broker
// settles each transfer; with Options.Persistent the messages are durable,
// and a broker settles them once stored). Consumers with ack auto ask the
// broker to send pre-settled; with client acks they accept each message.
type AMQP struct {
	cfg AMQPConfig
}

// NewAMQP returns an AMQP 1.0 driver.
func NewAMQP(cfg AMQPConfig) *AMQP {
	if cfg.Addresses == "" {
		cfg.Addresses = AddressPlain
	}
	if cfg.SendWindow <= 0 {
		cfg.SendWindow = 1000
	}
	if cfg.DefaultCredit <= 0 {
		cfg.DefaultCredit = 100
	}
	if cfg.Client == "" {
		cfg.Client = ClientGoAMQP
	}
	return &AMQP{cfg: cfg}
}

// Protocol is "amqp", or "amqp/lean" with the lean client.
func (a *AMQP) Protocol() string { return protocolName("amqp", a.cfg.Client) }

// Name describes the target.
func (a *AMQP) Name() string { return targetName("amqp", a.cfg.Addr, a.cfg.Client) }

// address returns the address and the terminus capabilities of o's
// destination.
func (a *AMQP) address(o *Options) (string, []string) {
	kind := "queue"
	if o.Topic {
		kind = "topic"
	}
	switch a.cfg.Addresses {
	case AddressPrefix:
		return kind + "://" + o.Destination, nil
	case AddressRabbitMQ:
		return "/" + kind + "/" + o.Destination, nil
	}
	return o.Destination, []string{kind}
}

func (a *AMQP) dial(ctx context.Context) (*amqp.Conn, *amqp.Session, error) {
	opts := &amqp.ConnOptions{HostName: a.cfg.VirtualHost, IdleTimeout: -1, SASLType: amqp.SASLTypeAnonymous()}
	if a.cfg.User != "" {
		opts.SASLType = amqp.SASLTypePlain(a.cfg.User, a.cfg.Password)
	}
	c, err := amqp.Dial(ctx, "amqp://"+a.cfg.Addr, opts)
	if err != nil {
		return nil, nil, err
	}
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, s, nil
}

// NewProducer attaches a sender on a connection of its own.
func (a *AMQP) NewProducer(ctx context.Context, o *Options, idx int) (Producer, error) {
	if a.cfg.Client == ClientLean {
		return a.newLeanProducer(ctx, o)
	}
	c, s, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	unsettled := amqp.SenderSettleModeUnsettled
	snd, err := s.NewSender(ctx, addr, &amqp.SenderOptions{TargetCapabilities: caps, SettlementMode: &unsettled})
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("attach sender to %s: %w", addr, err)
	}
	window := a.cfg.SendWindow
	if o.Receipts {
		window = o.ReceiptWindow
	}
	p := &amqpProducer{o: o, c: c, snd: snd,
		tokens:   make(chan struct{}, window),
		receipts: make(chan amqp.SendReceipt, window),
		failed:   make(chan struct{}),
		idle:     make(chan struct{}),
	}
	go p.settle()
	return p, nil
}

type amqpProducer struct {
	o        *Options
	c        *amqp.Conn
	snd      *amqp.Sender
	tokens   chan struct{}         // one per unsettled send: the window
	receipts chan amqp.SendReceipt // unsettled sends, in order
	err      atomic.Pointer[error]
	failed   chan struct{}
	once     sync.Once
	idle     chan struct{} // settle ended
}

func (p *amqpProducer) fail(err error) {
	p.once.Do(func() {
		p.err.Store(&err)
		close(p.failed)
	})
}

// settle waits for each send's settlement, in order, and frees its place
// in the window.
func (p *amqpProducer) settle() {
	defer close(p.idle)
	for r := range p.receipts {
		st, err := r.Wait(context.Background())
		if err == nil {
			switch s := st.(type) {
			case *amqp.StateAccepted:
			case *amqp.StateRejected:
				err = fmt.Errorf("message rejected: %v", s.Error)
			default:
				err = fmt.Errorf("message settled as %T", st)
			}
		}
		if err != nil {
			p.fail(err)
		}
		select {
		case <-p.tokens:
		default: // a failed Flush took it back already
		}
	}
}

func (p *amqpProducer) Send(ctx context.Context, m Msg, body []byte) error {
	select {
	case p.tokens <- struct{}{}: // waits while the window is full
	case <-p.failed:
		return *p.err.Load()
	case <-ctx.Done():
		return ctx.Err()
	}
	msg := &amqp.Message{
		Header: &amqp.MessageHeader{Durable: p.o.Persistent},
		ApplicationProperties: map[string]any{
			hdrRun: m.Run,
			hdrSeq: strconv.Itoa(m.Producer) + "." + strconv.FormatUint(m.Seq, 10),
			hdrTS:  m.Sent,
		},
		Data: [][]byte{body},
	}
	if m.Probe {
		msg.ApplicationProperties[hdrProbe] = "1"
	}
	r, err := p.snd.SendWithReceipt(ctx, msg, nil)
	if err != nil {
		<-p.tokens
		p.fail(err)
		return err
	}
	p.receipts <- r // never blocks: the tokens bound it
	if m.Confirm || m.Probe {
		return p.Flush(ctx)
	}
	return nil
}

// Flush waits until every send is settled: it owns the whole window then.
func (p *amqpProducer) Flush(ctx context.Context) error {
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
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// closeConn closes an AMQP connection (its links and sessions with it:
// RabbitMQ's plugin can take seconds to answer a detach), within a bound.
func closeAMQP(c *amqp.Conn) error {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("connection close not answered within 5s")
	}
}

func (p *amqpProducer) Close() error {
	close(p.receipts)
	err := closeAMQP(p.c)
	select {
	case <-p.idle:
	case <-time.After(5 * time.Second):
	}
	return err
}

// NewConsumer attaches a receiver on a connection of its own.
func (a *AMQP) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	if a.cfg.Client == ClientLean {
		return a.newLeanConsumer(ctx, o, h)
	}
	c, s, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	addr, caps := a.address(o)
	credit := o.Prefetch
	if credit <= 0 {
		credit = a.cfg.DefaultCredit
	}
	ro := &amqp.ReceiverOptions{Credit: int32(credit), SourceCapabilities: caps}
	if o.AckMode == AckAuto {
		settled := amqp.SenderSettleModeSettled
		ro.RequestedSenderSettleMode = &settled
	}
	rcv, err := s.NewReceiver(ctx, addr, ro)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("attach receiver to %s: %w", addr, err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	ac := &amqpConsumer{c: c, rcv: rcv, cancel: cancel, done: make(chan struct{})}
	go ac.run(cctx, o, h)
	return ac, nil
}

type amqpConsumer struct {
	c       *amqp.Conn
	rcv     *amqp.Receiver
	cancel  context.CancelFunc
	closing atomic.Bool
	done    chan struct{}
}

func (ac *amqpConsumer) run(ctx context.Context, o *Options, h Handler) {
	defer close(ac.done)
	for {
		msg, err := ac.rcv.Receive(ctx, nil)
		if err != nil {
			if !ac.closing.Load() {
				h(Msg{}, err)
			}
			return
		}
		if o.AckMode != AckAuto {
			if err := ac.rcv.AcceptMessage(ctx, msg); err != nil {
				if !ac.closing.Load() {
					h(Msg{}, fmt.Errorf("accept: %w", err))
				}
				return
			}
		}
		m, err := parseMsg(func(name string) string {
			switch v := msg.ApplicationProperties[name].(type) {
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
	}
}

func (ac *amqpConsumer) Close() error {
	ac.closing.Store(true)
	ac.cancel()
	err := closeAMQP(ac.c)
	select {
	case <-ac.done:
	case <-time.After(5 * time.Second):
		return errors.Join(err, errors.New("consumer did not stop within 5s"))
	}
	return err
}
