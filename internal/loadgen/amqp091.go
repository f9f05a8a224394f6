package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// AMQP091Config is how to reach an AMQP 0-9-1 broker (RabbitMQ, or Sluice
// once it speaks 0-9-1).
type AMQP091Config struct {
	Addr     string // host:port
	User     string // SASL PLAIN; default guest
	Password string // default guest
	// VirtualHost is connection.open's virtual host (default "/").
	VirtualHost string
	// Exchange is the topic exchange the fan-out scenario publishes
	// through (default amq.topic); every subscriber binds a queue of its
	// own to it with the destination name as the binding key.
	Exchange string
	// Client is "amqp091-go" (default: github.com/rabbitmq/amqp091-go) or
	// "lean" (this package's minimal client, see lean_amqp091.go), for
	// when amqp091-go's CPU cost would make the load generator the
	// bottleneck.
	Client string
}

// ClientAMQP091Go is the amqp091-go client (ClientLean is the other).
const ClientAMQP091Go = "amqp091-go"

// AMQP091 is the AMQP 0-9-1 driver, on the amqp091-go client
// (github.com/rabbitmq/amqp091-go), one connection and one channel per
// producer or consumer.
//
// A queue run declares the destination as a queue (durable when the run is
// persistent) from the producers and the consumers, and publishes to it
// through the default exchange; the first consumer deletes it when the run
// ends. A topic run publishes to the Exchange with the destination as the
// routing key; each subscriber declares an exclusive, auto-delete queue of
// its own and binds it. Persistent messages have delivery-mode 2.
//
// With receipts, the producers' channels are in confirm mode
// (confirm.select) and each producer keeps at most Options.ReceiptWindow
// publishes unconfirmed. Without, publishes are not confirmed, and a
// producer's last message (and a probe) is followed by a synchronous
// round trip on the same channel, which the broker answers only after the
// publishes before it. Consumers with ack auto consume with no-ack; with
// client acks they acknowledge every AckEvery-th delivery with multiple
// set (client) or each one (client-individual). Options.Prefetch is
// basic.qos's prefetch-count.
type AMQP091 struct {
	cfg AMQP091Config
}

// NewAMQP091 returns an AMQP 0-9-1 driver.
func NewAMQP091(cfg AMQP091Config) *AMQP091 {
	if cfg.User == "" && cfg.Password == "" {
		cfg.User, cfg.Password = "guest", "guest"
	}
	if cfg.VirtualHost == "" {
		cfg.VirtualHost = "/"
	}
	if cfg.Exchange == "" {
		cfg.Exchange = "amq.topic"
	}
	if cfg.Client == "" {
		cfg.Client = ClientAMQP091Go
	}
	return &AMQP091{cfg: cfg}
}

// Protocol is "amqp091", or "amqp091/lean" with the lean client.
func (a *AMQP091) Protocol() string { return protocolName("amqp091", a.cfg.Client) }

// Name describes the target.
func (a *AMQP091) Name() string { return targetName("amqp091", a.cfg.Addr, a.cfg.Client) }

// dial opens a connection and a channel on it.
func (a *AMQP091) dial(ctx context.Context) (*amqp091.Connection, *amqp091.Channel, error) {
	host, portStr, err := net.SplitHostPort(a.cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("address %q: %w", a.cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("address %q: port: %w", a.cfg.Addr, err)
	}
	uri := amqp091.URI{Scheme: "amqp", Host: host, Port: port, Username: a.cfg.User, Password: a.cfg.Password, Vhost: a.cfg.VirtualHost}
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	c, err := amqp091.DialConfig(uri.String(), amqp091.Config{
		Heartbeat: 10 * time.Second,
		Locale:    "en_US",
		Dial:      amqp091.DefaultDial(timeout),
	})
	if err != nil {
		return nil, nil, err
	}
	ch, err := c.Channel()
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("channel.open: %w", err)
	}
	return c, ch, nil
}

// declareQueue declares o's queue, the same way from every side.
func declareQueue(ch *amqp091.Channel, o *Options) error {
	if _, err := ch.QueueDeclare(o.Destination, o.Persistent, false, false, false, nil); err != nil {
		return fmt.Errorf("queue.declare %s: %w", o.Destination, err)
	}
	return nil
}

// closeAMQP091 closes a connection within a bound.
func closeAMQP091(c *amqp091.Connection) error {
	err := c.CloseDeadline(time.Now().Add(5 * time.Second))
	if errors.Is(err, amqp091.ErrClosed) {
		return nil
	}
	return err
}

// NewProducer opens a producer's connection and channel; for a queue it
// declares the queue, so that a backlog run has somewhere to fill.
func (a *AMQP091) NewProducer(ctx context.Context, o *Options, idx int) (Producer, error) {
	if a.cfg.Client == ClientLean {
		return a.newLeanProducer(ctx, o)
	}
	c, ch, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	p := &amqp091Producer{o: o, c: c, ch: ch, exchange: "", key: o.Destination}
	if o.Topic {
		p.exchange = a.cfg.Exchange
	} else if err := declareQueue(ch, o); err != nil {
		_ = closeAMQP091(c)
		return nil, err
	}
	if o.Receipts {
		if err := ch.Confirm(false); err != nil {
			_ = closeAMQP091(c)
			return nil, fmt.Errorf("confirm.select: %w", err)
		}
		p.tokens = make(chan struct{}, o.ReceiptWindow)
		p.confirms = make(chan *amqp091.DeferredConfirmation, o.ReceiptWindow)
		p.failed = make(chan struct{})
		p.idle = make(chan struct{})
		go p.settle()
	}
	return p, nil
}

type amqp091Producer struct {
	o             *Options
	c             *amqp091.Connection
	ch            *amqp091.Channel
	exchange, key string
	// With receipts (confirm mode):
	tokens   chan struct{}                      // one per unconfirmed publish: the window
	confirms chan *amqp091.DeferredConfirmation // unconfirmed publishes, in order
	err      atomic.Pointer[error]
	failed   chan struct{}
	once     sync.Once
	idle     chan struct{} // settle ended
}

func (p *amqp091Producer) fail(err error) {
	p.once.Do(func() {
		p.err.Store(&err)
		close(p.failed)
	})
}

// settle waits for each publish's confirmation, in order, and frees its
// place in the window.
func (p *amqp091Producer) settle() {
	defer close(p.idle)
	for dc := range p.confirms {
		if !dc.Wait() {
			p.fail(errors.New("publish not confirmed: basic.nack, or the channel closed"))
		}
		select {
		case <-p.tokens:
		default: // a failed Flush took it back already
		}
	}
}

func (p *amqp091Producer) publishing(m Msg, body []byte) amqp091.Publishing {
	h := amqp091.Table{
		hdrRun: m.Run,
		hdrSeq: strconv.Itoa(m.Producer) + "." + strconv.FormatUint(m.Seq, 10),
		hdrTS:  m.Sent,
	}
	if m.Probe {
		h[hdrProbe] = "1"
	}
	mode := amqp091.Transient
	if p.o.Persistent {
		mode = amqp091.Persistent
	}
	return amqp091.Publishing{Headers: h, DeliveryMode: mode, ContentType: "application/octet-stream", Body: body}
}

func (p *amqp091Producer) Send(ctx context.Context, m Msg, body []byte) error {
	msg := p.publishing(m, body)
	if p.tokens == nil {
		if err := p.ch.PublishWithContext(ctx, p.exchange, p.key, false, false, msg); err != nil {
			return err
		}
		if m.Confirm || m.Probe {
			return p.Flush(ctx)
		}
		return nil
	}
	select {
	case p.tokens <- struct{}{}: // waits while the window is full
	case <-p.failed:
		return *p.err.Load()
	case <-ctx.Done():
		return ctx.Err()
	}
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, p.exchange, p.key, false, false, msg)
	if err != nil {
		<-p.tokens
		p.fail(err)
		return err
	}
	p.confirms <- dc // never blocks: the tokens bound it
	if m.Confirm || m.Probe {
		return p.Flush(ctx)
	}
	return nil
}

// Flush waits until the broker has every publish: with receipts, until
// each is confirmed (it owns the whole window then); without, for the
// answer to a synchronous method sent after them on the same channel.
func (p *amqp091Producer) Flush(ctx context.Context) error {
	if p.tokens == nil {
		var err error
		if p.o.Topic {
			err = p.ch.ExchangeDeclarePassive(p.exchange, "topic", true, false, false, false, nil)
		} else {
			_, err = p.ch.QueueDeclarePassive(p.key, p.o.Persistent, false, false, false, nil)
		}
		if err != nil {
			return fmt.Errorf("round trip after the publishes: %w", err)
		}
		return nil
	}
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

func (p *amqp091Producer) Close() error {
	err := closeAMQP091(p.c) // outstanding confirmations end as not confirmed
	if p.confirms != nil {
		close(p.confirms)
		select {
		case <-p.idle:
		case <-time.After(5 * time.Second):
		}
	}
	return err
}

// NewConsumer opens a consumer's connection and channel, declares (and for
// a topic, binds) its queue and starts consuming.
func (a *AMQP091) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	if a.cfg.Client == ClientLean {
		return a.newLeanConsumer(ctx, o, idx, h)
	}
	c, ch, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Consumer, error) {
		_ = closeAMQP091(c)
		return nil, err
	}
	queue := o.Destination
	if o.Topic {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return fail(fmt.Errorf("queue.declare (subscriber %d): %w", idx, err))
		}
		queue = q.Name
		if err := ch.QueueBind(queue, o.Destination, a.cfg.Exchange, false, nil); err != nil {
			return fail(fmt.Errorf("queue.bind %s to %s: %w", queue, a.cfg.Exchange, err))
		}
	} else if err := declareQueue(ch, o); err != nil {
		return fail(err)
	}
	if o.Prefetch > 0 {
		if err := ch.Qos(o.Prefetch, 0, false); err != nil {
			return fail(fmt.Errorf("basic.qos: %w", err))
		}
	}
	deliveries, err := ch.Consume(queue, "", o.AckMode == AckAuto, false, false, false, nil)
	if err != nil {
		return fail(fmt.Errorf("basic.consume %s: %w", queue, err))
	}
	ac := &amqp091Consumer{c: c, ch: ch, done: make(chan struct{})}
	if !o.Topic && idx == 0 {
		ac.deleteQueue = o.Destination
	}
	go ac.run(deliveries, o, h)
	return ac, nil
}

type amqp091Consumer struct {
	c           *amqp091.Connection
	ch          *amqp091.Channel
	deleteQueue string // the run's queue, deleted on Close by consumer 0
	closing     atomic.Bool
	done        chan struct{}
}

// amqp091Header returns a benchmark header of a delivery as a string.
func amqp091Header(t amqp091.Table, name string) string {
	switch v := t[name].(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case []byte:
		return string(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (ac *amqp091Consumer) run(deliveries <-chan amqp091.Delivery, o *Options, h Handler) {
	defer close(ac.done)
	n := 0
	for d := range deliveries {
		if ac.closing.Load() {
			continue // drain until the client closes the channel
		}
		n++
		var err error
		switch o.AckMode {
		case AckClient:
			if n%o.AckEvery == 0 {
				err = d.Ack(true)
			}
		case AckClientIndividual:
			err = d.Ack(false)
		}
		if err != nil {
			h(Msg{}, fmt.Errorf("basic.ack: %w", err))
			return
		}
		m, err := parseMsg(func(name string) string { return amqp091Header(d.Headers, name) })
		if err != nil {
			h(Msg{}, err)
			return
		}
		h(m, nil)
	}
	if !ac.closing.Load() {
		h(Msg{}, errors.New("the broker ended the consumer's deliveries (channel or connection closed)"))
	}
}

func (ac *amqp091Consumer) Close() error {
	ac.closing.Store(true)
	var err error
	if ac.deleteQueue != "" {
		if _, derr := ac.ch.QueueDelete(ac.deleteQueue, false, false, false); derr != nil {
			err = fmt.Errorf("queue.delete %s: %w", ac.deleteQueue, derr)
		}
	}
	err = errors.Join(err, closeAMQP091(ac.c))
	select {
	case <-ac.done:
	case <-time.After(5 * time.Second):
		return errors.Join(err, errors.New("consumer did not stop within 5s"))
	}
	return err
}
