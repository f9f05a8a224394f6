package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// The AMQP 0-9-1 driver speaks RabbitMQ's dialect of 0-9-1, as Sluice's
// 0-9-1 front-end accepts it (docs/amqp091.md), through
// github.com/rabbitmq/amqp091-go:
//
//   - a queue NAME is the queue of that name (queue.declare, then the
//     default exchange with routing key NAME); a topic K is amq.topic with
//     routing key K; a subscriber of a topic is a server-named exclusive
//     queue bound to amq.topic with key K, deleted when the consumer
//     closes;
//   - a temporary queue is a server-named exclusive queue (amq.gen-…),
//     which any connection can publish to;
//   - every publish is on a channel in confirm mode, and mandatory but to
//     amq.topic (a topic without subscribers is no error): a send returns
//     once the broker confirmed it, and a basic.return (312 NO_ROUTE), a
//     basic.nack or a channel.close is a refusal;
//   - basic properties: delivery-mode 2 = PERSISTENT, priority,
//     expiration (relative ms; on delivery the time left), correlation-id,
//     type (JMSType), reply-to (a queue name, amq.gen-…, or the STOMP form
//     /topic/…, /temp-queue/…), timestamp (seconds);
//   - headers: the properties, typed (int stays int, long stays long, …);
//     x-delay (delivery delay, relative ms), JMSDeliveryTime (absolute ms),
//     JMSRedeliveryLimit; delivered, JMSXDeliveryCount and x-delivery-count;
//   - a text body goes with content-type text/plain, an XML one (for
//     JMS_BEA_SELECT) with text/xml;
//   - a consumer has its own channel, with basic.qos for the prefetch
//     window; the consumer arguments x-selector (the JMS selector) and
//     x-redelivery-delay (the session's redelivery delay, ms); no-local on
//     basic.consume;
//   - acknowledgements: basic.ack (multiple for CLIENT_ACKNOWLEDGE),
//     basic.nack requeue=true is a failed delivery (and recover nacks every
//     unacknowledged message so, oldest first), basic.reject requeue=false
//     undeliverable; auto-acknowledge acknowledges each message as it is
//     received;
//   - a shared durable subscription is a named queue (jms.shared.NAME)
//     bound to amq.topic, which its consumers share and which outlives them
//     (Sluice keeps the binding as a durable subscription); a shared
//     non-durable one is an auto-delete queue (jms.shared-nd.NAME), which
//     ends with its last consumer;
//   - transactions: a transacted connection (ConnOptions.Transacted) has a
//     channel in tx mode that carries its consumers (but auto-acknowledge
//     ones) and its transactional publishes; commit and rollback are
//     tx.commit and tx.rollback.
//
// What 0-9-1 cannot say: a JMS client ID, and so an unshared durable
// subscription (client ID + name); a temporary topic; browsing; releasing
// a message uncounted. What amqp091-go cannot say: priority 0 (it leaves a
// zero priority out of the basic properties).
type amqp091Driver struct {
	addr string
	o    AMQP091Options
	seq  atomic.Uint64
}

// AMQP091Options configure the AMQP 0-9-1 driver.
type AMQP091Options struct {
	// Login and Passcode are the PLAIN credentials (guest/guest when
	// empty, amqp091-go's default).
	Login, Passcode string
}

// NewAMQP091 returns the AMQP 0-9-1 driver for a broker at addr
// (host:port).
func NewAMQP091(addr string, o AMQP091Options) Driver { return &amqp091Driver{addr: addr, o: o} }

func (d *amqp091Driver) Protocol() string { return "amqp091" }
func (d *amqp091Driver) Addr() string     { return d.addr }

// Conventions of docs/amqp091.md.
const (
	x9TopicExchange   = "amq.topic"
	x9Selector        = "x-selector"
	x9RedeliveryDelay = "x-redelivery-delay"
	x9Delay           = "x-delay"
	x9DeliveryTime    = "JMSDeliveryTime"
	x9RedeliveryLimit = "JMSRedeliveryLimit"
	x9DeliveryCount   = "JMSXDeliveryCount"
	x9XDeliveryCount  = "x-delivery-count"
	// sharedQueuePrefix names the queue of a shared durable subscription.
	sharedQueuePrefix   = "jms.shared."
	sharedNDQueuePrefix = "jms.shared-nd."
)

// amqp091Reserved are delivered headers that are not properties.
var amqp091Reserved = map[string]bool{
	x9DeliveryTime: true, x9RedeliveryLimit: true, x9DeliveryCount: true, x9XDeliveryCount: true,
}

var (
	errNoClientID091  = NotExpressible("AMQP 0-9-1 has no JMS client ID or subscription name: a durable subscription is a named queue bound to amq.topic, which Sluice holds as a subscription of its own bridge client ID (docs/amqp091.md, Topics), so no 0-9-1 client can make, resume or unsubscribe the durable subscription of a client ID")
	errClientID091    = NotExpressible("AMQP 0-9-1 has no JMS client ID: connection.start-ok's client-properties carry none that a broker reads as one (Sluice reads none)")
	errPriority0091   = NotExpressible("JMSPriority 0 cannot be sent: amqp091-go, the independent client of this column, leaves a zero priority out of the basic properties, so the broker's default 4 applies")
	errNoTempTopic091 = NotExpressible("AMQP 0-9-1 has no temporary topic: amq.topic routing keys are the named JMS topics, and a server-named queue is a temporary queue")
	errNoBrowse091    = NotExpressible("AMQP 0-9-1 has no browser: basic.get and basic.consume take messages off the queue")
	errNoRelease091   = NotExpressible("AMQP 0-9-1 has no release: basic.nack and basic.reject with requeue=true are a failed delivery (counted), requeue=false undeliverable")
)

type amqp091Conn struct {
	d          *amqp091Driver
	conn       *amqp091.Connection
	clientID   string
	transacted bool

	// pubMu serialises publishes, so that a basic.return is the one of
	// the publish waiting; it guards pub and declared.
	pubMu    sync.Mutex
	pub      *amqp091.Channel
	returns  chan amqp091.Return
	closes   chan *amqp091.Error
	declared map[string]bool

	// txMu guards txch, the transacted connection's channel.
	txMu sync.Mutex
	txch *amqp091.Channel
}

func (d *amqp091Driver) Dial(ctx context.Context, o ConnOptions) (Conn, error) {
	if o.ClientID != "" {
		return nil, errClientID091
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	user, pass := d.o.Login, d.o.Passcode
	if user == "" {
		user, pass = "guest", "guest"
	}
	cfg := amqp091.Config{
		SASL:       []amqp091.Authentication{&amqp091.PlainAuth{Username: user, Password: pass}},
		Vhost:      "/",
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Dial:       amqp091.DefaultDial(timeout),
		Properties: amqp091.Table{"connection_name": "sluice-conformance-" + strconv.FormatUint(d.seq.Add(1), 10)},
	}
	var conn *amqp091.Connection
	err := bounded(ctx, "connect", func() error {
		var err error
		conn, err = amqp091.DialConfig("amqp://"+d.addr+"/", cfg)
		return err
	})
	if err != nil {
		return nil, amqp091Err("connect", err)
	}
	c := &amqp091Conn{d: d, conn: conn, clientID: o.ClientID, transacted: o.Transacted, declared: map[string]bool{}}
	if o.Transacted {
		err := bounded(ctx, "tx.select", func() error {
			ch, err := conn.Channel()
			if err != nil {
				return err
			}
			if err := ch.Tx(); err != nil {
				return err
			}
			c.txch = ch
			return nil
		})
		if err != nil {
			_ = c.Close()
			return nil, amqp091Err("tx.select", err)
		}
	}
	return c, nil
}

// bounded runs fn, a call of amqp091-go that takes no context, and stops
// waiting for it when ctx ends.
func bounded(ctx context.Context, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: no answer: %w", what, ctx.Err())
	}
}

// amqp091Err turns a server's channel.close or connection.close into a
// RefusedError.
func amqp091Err(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae *amqp091.Error
	if errors.As(err, &ae) && ae.Server {
		return &RefusedError{Op: op, Reason: strconv.Itoa(ae.Code) + " " + ae.Reason}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// channel opens a channel for one operation; the caller closes it.
func (c *amqp091Conn) channel() (*amqp091.Channel, error) { return c.conn.Channel() }

// declareQueue declares the named queue (creating it when missing).
func (c *amqp091Conn) declareQueue(ctx context.Context, name string) error {
	return bounded(ctx, "queue.declare "+name, func() error {
		ch, err := c.channel()
		if err != nil {
			return err
		}
		defer func() { _ = ch.Close() }()
		_, err = ch.QueueDeclare(name, true, false, false, false, nil)
		return err
	})
}

// amqp091Target is the exchange and routing key of a destination.
func amqp091Target(d Dest) (exchange, key string, err error) {
	switch d.Kind {
	case Queue:
		return "", d.Name, nil
	case Topic:
		return x9TopicExchange, d.Name, nil
	case TempQueue:
		if d.Proto == "amqp091" || strings.HasPrefix(d.Addr, "amq.gen-") {
			return "", d.Addr, nil
		}
		return "", "", fmt.Errorf("temporary queue %s was made over %s: a 0-9-1 client reaches one by the amq.gen- name a delivery's reply-to gives", d, d.Proto)
	}
	return "", "", errNoTempTopic091
}

// amqp091ReplyTo renders a reply destination: a queue by its name, a
// server-named queue by its amq.gen- name, others in the STOMP form the
// server parses.
func amqp091ReplyTo(d Dest) string {
	switch {
	case d.Proto == "amqp091" && d.Addr != "":
		return d.Addr
	case d.Kind == Queue && d.Addr == "":
		return d.Name
	case d.Kind == Topic && d.Addr == "":
		return "/topic/" + d.Name
	}
	return stompDest(d)
}

func (c *amqp091Conn) publishing(m *Message) (amqp091.Publishing, error) {
	p := amqp091.Publishing{Headers: amqp091.Table{}, ContentType: "text/plain", Body: []byte(m.Body),
		DeliveryMode: amqp091.Persistent, Priority: 4}
	if m.XML {
		p.ContentType = "text/xml"
	}
	if m.Persistent != nil && !*m.Persistent {
		p.DeliveryMode = amqp091.Transient
	}
	if m.Priority != nil {
		if *m.Priority == 0 {
			return p, errPriority0091
		}
		p.Priority = uint8(*m.Priority)
	}
	switch {
	case !m.Expiration.IsZero():
		// 0-9-1's expiration is relative.
		p.Expiration = strconv.FormatInt(max(time.Until(m.Expiration).Milliseconds(), 0), 10)
	case m.TTL > 0:
		p.Expiration = strconv.FormatInt(m.TTL.Milliseconds(), 10)
	}
	if m.DeliveryDelay > 0 {
		p.Headers[x9Delay] = m.DeliveryDelay.Milliseconds()
	}
	if !m.DeliveryTime.IsZero() {
		p.Headers[x9DeliveryTime] = m.DeliveryTime.UnixMilli()
	}
	if m.RedeliveryLimit != nil {
		p.Headers[x9RedeliveryLimit] = int32(*m.RedeliveryLimit)
	}
	p.CorrelationId = m.CorrelationID
	p.Type = m.Type
	if m.ReplyTo != nil {
		if m.ReplyTo.Kind == TempTopic && m.ReplyTo.Addr == "" {
			return p, errNoTempTopic091
		}
		p.ReplyTo = amqp091ReplyTo(*m.ReplyTo)
	}
	for _, pr := range m.Props {
		p.Headers[pr.Name] = pr.Value
	}
	return p, nil
}

func (c *amqp091Conn) Send(ctx context.Context, d Dest, m *Message, tx Tx) error {
	exchange, key, err := amqp091Target(d)
	if err != nil {
		return err
	}
	p, err := c.publishing(m)
	if err != nil {
		return err
	}
	if tx != nil {
		t, ok := tx.(*amqp091Tx)
		if !ok || t.c != c {
			return errors.New("transaction of another connection")
		}
		if d.Kind == Queue {
			if err := c.declareOnce(ctx, key); err != nil {
				return err
			}
		}
		// In tx mode the broker confirms nothing: tx.commit does.
		c.txMu.Lock()
		defer c.txMu.Unlock()
		return amqp091Err("publish in a transaction", bounded(ctx, "publish", func() error {
			return c.txch.PublishWithContext(ctx, exchange, key, false, false, p)
		}))
	}
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	if d.Kind == Queue && !c.declared[key] {
		if err := c.declareQueue(ctx, key); err != nil {
			return amqp091Err("queue.declare "+key, err)
		}
		c.declared[key] = true
	}
	if c.pub == nil || c.pub.IsClosed() {
		if err := bounded(ctx, "open the publishing channel", c.openPublisher); err != nil {
			return amqp091Err("confirm.select", err)
		}
	}
	for drained := false; !drained; { // returns a timed-out publish left
		select {
		case <-c.returns:
		default:
			drained = true
		}
	}
	// Mandatory to a queue, whose absence is then a refusal; not to a
	// topic, which a publish reaches with or without subscribers.
	mandatory := exchange != x9TopicExchange
	dc, err := c.pub.PublishWithDeferredConfirmWithContext(ctx, exchange, key, mandatory, false, p)
	if err != nil {
		return c.publishErr(err)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		return fmt.Errorf("publish to %s: no confirmation: %w", d, err)
	}
	// amqp091-go hands a basic.return to its channel before it reads the
	// confirmation that follows it.
	select {
	case r := <-c.returns:
		return &RefusedError{Op: "publish to " + d.String(), Reason: strconv.Itoa(int(r.ReplyCode)) + " " + r.ReplyText}
	default:
	}
	if !acked {
		select {
		case e, ok := <-c.closes:
			if ok && e != nil {
				return amqp091Err("publish to "+d.String(), e)
			}
		case <-time.After(200 * time.Millisecond):
		}
		return &RefusedError{Op: "publish to " + d.String(), Reason: "basic.nack"}
	}
	return nil
}

// declareOnce declares a queue the first time the connection sends to it.
func (c *amqp091Conn) declareOnce(ctx context.Context, name string) error {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	if c.declared[name] {
		return nil
	}
	if err := c.declareQueue(ctx, name); err != nil {
		return amqp091Err("queue.declare "+name, err)
	}
	c.declared[name] = true
	return nil
}

// openPublisher opens the publishing channel in confirm mode, with its
// return and close notifications (both buffered, and read by Send).
func (c *amqp091Conn) openPublisher() error {
	ch, err := c.conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return err
	}
	c.returns = ch.NotifyReturn(make(chan amqp091.Return, 16))
	c.closes = ch.NotifyClose(make(chan *amqp091.Error, 1))
	c.pub = ch
	return nil
}

func (c *amqp091Conn) publishErr(err error) error {
	select {
	case e, ok := <-c.closes:
		if ok && e != nil {
			return amqp091Err("publish", e)
		}
	default:
	}
	return amqp091Err("publish", err)
}

type amqp091Sub struct {
	c      *amqp091Conn
	ch     *amqp091.Channel
	shared bool // ch is the transacted connection's channel
	tag    string
	queue  string
	temp   bool // the queue is the subscriber's own: delete it on close
	ack    AckMode
	dels   <-chan amqp091.Delivery

	mu      sync.Mutex
	unacked []*Received
}

func (c *amqp091Conn) Subscribe(ctx context.Context, d Dest, o SubOptions) (Sub, error) {
	args := amqp091.Table{}
	if o.Selector != "" {
		args[x9Selector] = o.Selector
	}
	if o.RedeliveryDelay > 0 {
		args[x9RedeliveryDelay] = o.RedeliveryDelay.Milliseconds()
	}
	var queue string
	temp := false
	switch {
	case o.Name != "" && !o.Shared:
		if o.Durable {
			return nil, errNoClientID091
		}
		return nil, NotExpressible("a named subscription is durable or shared")
	}
	switch d.Kind {
	case Queue, TempQueue:
		_, key, err := amqp091Target(d)
		if err != nil {
			return nil, err
		}
		queue = key
		if d.Kind == Queue {
			if err := c.declareQueue(ctx, queue); err != nil {
				return nil, amqp091Err("queue.declare "+queue, err)
			}
		}
	case Topic:
		if o.Shared {
			// Durable: a named queue that outlives its consumers.
			// Non-durable: an auto-delete one, which ends with its last
			// consumer.
			queue = sharedQueuePrefix + o.Name
			if !o.Durable {
				queue = sharedNDQueuePrefix + o.Name
			}
			err := bounded(ctx, "queue.declare "+queue, func() error {
				ch, err := c.channel()
				if err != nil {
					return err
				}
				defer func() { _ = ch.Close() }()
				_, err = ch.QueueDeclare(queue, o.Durable, !o.Durable, false, false, nil)
				return err
			})
			if err != nil {
				return nil, amqp091Err("queue.declare "+queue, err)
			}
		}
		err := bounded(ctx, "bind to amq.topic", func() error {
			ch, err := c.channel()
			if err != nil {
				return err
			}
			defer func() { _ = ch.Close() }()
			if queue == "" {
				q, err := ch.QueueDeclare("", false, true, true, false, nil)
				if err != nil {
					return err
				}
				queue, temp = q.Name, true
			}
			return ch.QueueBind(queue, d.Name, x9TopicExchange, false, nil)
		})
		if err != nil {
			return nil, amqp091Err("bind a queue to amq.topic "+d.Name, err)
		}
	default:
		return nil, errNoTempTopic091
	}
	s, err := c.consume(ctx, queue, o, args)
	if err != nil {
		return nil, err
	}
	s.temp = temp
	return s, nil
}

// consume starts a consumer on queue, on a channel of its own (or on the
// transacted connection's channel).
func (c *amqp091Conn) consume(ctx context.Context, queue string, o SubOptions, args amqp091.Table) (*amqp091Sub, error) {
	s := &amqp091Sub{c: c, queue: queue, ack: o.Ack, tag: "ctag-" + strconv.FormatUint(c.d.seq.Add(1), 10)}
	err := bounded(ctx, "basic.consume "+queue, func() error {
		if c.transacted && o.Ack != AckAuto {
			c.txMu.Lock()
			defer c.txMu.Unlock()
			s.ch, s.shared = c.txch, true
		} else {
			ch, err := c.channel()
			if err != nil {
				return err
			}
			s.ch = ch
			if o.Prefetch > 0 {
				if err := ch.Qos(o.Prefetch, 0, false); err != nil {
					return err
				}
			}
		}
		dels, err := s.ch.Consume(queue, s.tag, false, false, o.NoLocal, false, args)
		if err != nil {
			return err
		}
		s.dels = dels
		return nil
	})
	if err != nil {
		if s.ch != nil && !s.shared {
			_ = s.ch.Close()
		}
		return nil, amqp091Err("basic.consume "+queue, err)
	}
	return s, nil
}

func (c *amqp091Conn) Temporary(ctx context.Context, kind Kind) (Sub, Dest, error) {
	if kind != TempQueue {
		return nil, Dest{}, errNoTempTopic091
	}
	var name string
	err := bounded(ctx, "queue.declare (server-named)", func() error {
		ch, err := c.channel()
		if err != nil {
			return err
		}
		defer func() { _ = ch.Close() }()
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		name = q.Name
		return err
	})
	if err != nil {
		return nil, Dest{}, amqp091Err("declare a server-named queue", err)
	}
	s, err := c.consume(ctx, name, SubOptions{}, nil)
	if err != nil {
		return nil, Dest{}, err
	}
	return s, Dest{Kind: TempQueue, Name: name, Addr: name, Proto: "amqp091"}, nil
}

func (c *amqp091Conn) Browse(context.Context, Dest, string) ([]*Received, error) {
	return nil, errNoBrowse091
}

type amqp091Tx struct{ c *amqp091Conn }

// errNoTx091 is a transaction asked of a connection not dialled
// transacted.
var errNoTx091 = errors.New("a transaction over AMQP 0-9-1 needs a transacted connection (ConnOptions.Transacted): a channel is in tx mode or not")

func (c *amqp091Conn) Begin(context.Context) (Tx, error) {
	if !c.transacted {
		return nil, errNoTx091
	}
	// tx.select opened the first transaction; each commit or rollback
	// opens the next.
	return &amqp091Tx{c: c}, nil
}

func (tx *amqp091Tx) Commit(ctx context.Context) error {
	tx.c.txMu.Lock()
	defer tx.c.txMu.Unlock()
	return amqp091Err("tx.commit", bounded(ctx, "tx.commit", tx.c.txch.TxCommit))
}

func (tx *amqp091Tx) Rollback(ctx context.Context) error {
	tx.c.txMu.Lock()
	defer tx.c.txMu.Unlock()
	return amqp091Err("tx.rollback", bounded(ctx, "tx.rollback", tx.c.txch.TxRollback))
}

func (c *amqp091Conn) Unsubscribe(context.Context, Dest, string, string) error {
	return errNoClientID091
}

func (c *amqp091Conn) Close() error {
	err := bounded(context.Background(), "close", func() error {
		done := make(chan error, 1)
		go func() { done <- c.conn.Close() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return errors.New("AMQP 0-9-1 close: no close-ok within 5s")
		}
	})
	if errors.Is(err, amqp091.ErrClosed) {
		return nil
	}
	return err
}

func (s *amqp091Sub) Receive(ctx context.Context, timeout time.Duration) (*Received, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var d amqp091.Delivery
	select {
	case dd, ok := <-s.dels:
		if !ok {
			return nil, fmt.Errorf("consumer on %s ended (channel or connection closed, or the consumer cancelled)", s.queue)
		}
		d = dd
	case <-timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := amqp091Received(d)
	if s.ack == AckAuto {
		if err := s.lockedDo(func() error { return d.Ack(false) }); err != nil {
			return r, amqp091Err("basic.ack", err)
		}
		return r, nil
	}
	s.mu.Lock()
	s.unacked = append(s.unacked, r)
	s.mu.Unlock()
	return r, nil
}

// lockedDo runs fn, holding the transacted connection's lock when the
// consumer is on its channel.
func (s *amqp091Sub) lockedDo(fn func() error) error {
	if s.shared {
		s.c.txMu.Lock()
		defer s.c.txMu.Unlock()
	}
	return fn()
}

func (s *amqp091Sub) take(m *Received, cumulative bool) []*Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Received
	out, s.unacked = takeUnacked(s.unacked, m, cumulative)
	return out
}

func (s *amqp091Sub) Ack(ctx context.Context, m *Received, tx Tx) error {
	if s.ack == AckAuto {
		if tx != nil {
			return NotExpressible("a message of an auto-acknowledge consumer cannot be acknowledged in a transaction")
		}
		return nil
	}
	if tx != nil && !s.shared {
		return errors.New("acknowledgement in a transaction of a consumer outside the transacted channel")
	}
	if tx == nil && s.shared {
		return errors.New("acknowledgement outside a transaction on a transacted connection")
	}
	taken := s.take(m, s.ack == AckClient)
	tag := taken[len(taken)-1].handle.(amqp091.Delivery).DeliveryTag
	return amqp091Err("basic.ack", bounded(ctx, "basic.ack", func() error {
		return s.lockedDo(func() error { return s.ch.Ack(tag, len(taken) > 1) })
	}))
}

func (s *amqp091Sub) settle(ctx context.Context, d amqp091.Delivery, o Outcome) error {
	return bounded(ctx, "settle", func() error {
		return s.lockedDo(func() error {
			if o == Rejected {
				return amqp091Err("basic.reject requeue=false", s.ch.Reject(d.DeliveryTag, false))
			}
			return amqp091Err("basic.nack requeue=true", s.ch.Nack(d.DeliveryTag, false, true))
		})
	})
}

func (s *amqp091Sub) Settle(ctx context.Context, m *Received, o Outcome) error {
	if s.ack == AckAuto {
		return errors.New("settle on an auto-acknowledge consumer")
	}
	if o == Released {
		return errNoRelease091
	}
	s.take(m, false)
	return s.settle(ctx, m.handle.(amqp091.Delivery), o)
}

// Recover nacks (requeue=true) every unacknowledged message, oldest
// first: basic.recover would also resend the deliveries amqp091-go holds
// that the consumer has not read, whose old tags it could then ack.
func (s *amqp091Sub) Recover(ctx context.Context) error {
	if s.ack == AckAuto {
		return errors.New("recover on an auto-acknowledge consumer")
	}
	s.mu.Lock()
	ms := s.unacked
	s.unacked = nil
	s.mu.Unlock()
	for _, m := range ms {
		if err := s.settle(ctx, m.handle.(amqp091.Delivery), Failed); err != nil {
			return err
		}
	}
	return nil
}

// Close cancels the consumer and closes its channel (a shared durable
// subscription's queue stays); a topic subscriber's own queue is deleted.
func (s *amqp091Sub) Close(ctx context.Context) error {
	err := bounded(ctx, "basic.cancel", func() error {
		if s.shared {
			s.c.txMu.Lock()
			defer s.c.txMu.Unlock()
			return s.ch.Cancel(s.tag, false)
		}
		return s.ch.Close()
	})
	if err != nil && !errors.Is(err, amqp091.ErrClosed) {
		return amqp091Err("close consumer", err)
	}
	if s.temp {
		err := bounded(ctx, "queue.delete", func() error {
			ch, err := s.c.channel()
			if err != nil {
				return err
			}
			defer func() { _ = ch.Close() }()
			_, err = ch.QueueDelete(s.queue, false, false, false)
			return err
		})
		if err != nil && !errors.Is(err, amqp091.ErrClosed) {
			return amqp091Err("queue.delete "+s.queue, err)
		}
	}
	return nil
}

func amqp091Received(d amqp091.Delivery) *Received {
	r := &Received{Proto: "amqp091", ID: d.MessageId, Body: string(d.Body), Props: map[string]any{}, At: time.Now(),
		handle: d, Priority: int(d.Priority), Persistent: d.DeliveryMode == amqp091.Persistent,
		Redelivered: d.Redelivered, CorrelationID: d.CorrelationId, Type: d.Type}
	r.Destination = d.RoutingKey
	if d.Exchange == x9TopicExchange {
		r.Destination = "/topic/" + d.RoutingKey
	}
	if !d.Timestamp.IsZero() {
		r.Timestamp = d.Timestamp.UnixMilli()
	}
	if d.Expiration != "" {
		if left, err := strconv.ParseInt(d.Expiration, 10, 64); err == nil {
			r.Expiration = r.At.UnixMilli() + left
		}
	}
	if d.ReplyTo != "" {
		r.ReplyTo = parseAMQP091ReplyTo(d.ReplyTo)
	}
	if n := toInt(d.Headers[x9DeliveryCount]); n > 0 {
		r.DeliveryCount = int(n)
	}
	if n := toInt(d.Headers[x9DeliveryTime]); n > 0 {
		r.DeliveryTime = n
	}
	for k, v := range d.Headers {
		if !amqp091Reserved[k] {
			r.Props[k] = v
		}
	}
	return r
}

// parseAMQP091ReplyTo reads a delivered reply-to: a server-named queue, the
// STOMP form of a topic or another connection's temporary destination, or
// a queue name.
func parseAMQP091ReplyTo(s string) *Dest {
	if strings.HasPrefix(s, "amq.gen-") {
		return &Dest{Kind: TempQueue, Name: s, Addr: s, Proto: "amqp091"}
	}
	if strings.HasPrefix(s, "/") {
		d := parseStompDest(s)
		if d.Kind == Queue || d.Kind == Topic {
			return &Dest{Kind: d.Kind, Name: d.Name}
		}
		return d
	}
	return &Dest{Kind: Queue, Name: s}
}
