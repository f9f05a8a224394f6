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

	amqp "github.com/Azure/go-amqp"
)

// The AMQP 1.0 driver speaks the JMS mapping that Qpid JMS, ActiveMQ and
// Artemis use (CONVENTIONS.md), through github.com/Azure/go-amqp:
//
//   - addresses are plain names with the terminus capability queue, topic,
//     temporary-queue or temporary-topic;
//   - a selector is the source filter jms-selector with descriptor
//     apache.org:selector-filter:string; noLocal the filter no-local,
//     apache.org:no-local-filter:list;
//   - a durable subscription is a receiver whose link name is the
//     subscription name, on a connection whose container-id is the client
//     ID, with source durable = unsettled-state and expiry-policy never;
//     closing the link (detach closed=true) deletes it, ending the session
//     keeps it; shared subscriptions add the shared (and, without a client
//     ID, global) source capabilities;
//   - header durable/priority/ttl, properties correlation-id, subject
//     (JMSType), reply-to, absolute-expiry-time, creation-time; message
//     annotations x-opt-jms-msg-type, x-opt-jms-dest, x-opt-jms-reply-to,
//     x-opt-delivery-delay (relative ms) and x-opt-delivery-time (absolute
//     ms); application properties keep their types;
//   - outcomes: accepted = acknowledged, modified delivery-failed = failed
//     delivery (NACK, recover), rejected = undeliverable, released = back
//     uncounted;
//   - browsing: a source with distribution-mode copy, drained.
//
// Sluice's own extensions (docs/amqp.md) carry what no peer does:
// x-opt-sluice-redelivery-limit (JMSRedeliveryLimit) and x-opt-sluice-xml
// (an XML text body, for JMS_BEA_SELECT).
//
// go-amqp v1.7.0 has no transaction coordinator, so a transacted
// connection (ConnOptions.Transacted) is a small client on Sluice's own
// codec instead (rawConn, amqp_raw.go): coordinator link, declare and
// discharge, transactional-state on transfers and dispositions.
//
// What it cannot say: a session's redelivery delay (no AMQP convention
// carries it).
type amqpDriver struct {
	addr string
	seq  atomic.Uint64
}

// NewAMQP returns the AMQP 1.0 driver for a broker at addr (host:port).
func NewAMQP(addr string) Driver { return &amqpDriver{addr: addr} }

func (d *amqpDriver) Protocol() string { return "amqp" }
func (d *amqpDriver) Addr() string     { return d.addr }

// JMS mapping constants.
const (
	selectorFilterCode = 0x0000468C00000004
	noLocalFilterCode  = 0x0000468C00000003
	annMsgType         = "x-opt-jms-msg-type"
	annDest            = "x-opt-jms-dest"
	annReplyTo         = "x-opt-jms-reply-to"
	annDeliveryDelay   = "x-opt-delivery-delay"
	annDeliveryTime    = "x-opt-delivery-time"
	jmsTextMessage     = int8(5)
	// Sluice's extensions (docs/amqp.md): WebLogic features no peer
	// carries on AMQP.
	annRedeliveryLimit = "x-opt-sluice-redelivery-limit"
	annXML             = "x-opt-sluice-xml"
)

func amqpCaps(k Kind) []string {
	switch k {
	case Topic:
		return []string{"topic"}
	case TempQueue:
		return []string{"temporary-queue"}
	case TempTopic:
		return []string{"temporary-topic"}
	}
	return []string{"queue"}
}

func jmsDestType(k Kind) int8 {
	switch k {
	case Topic:
		return 1
	case TempQueue:
		return 2
	case TempTopic:
		return 3
	}
	return 0
}

// amqpAddr is the AMQP address of a destination.
func amqpAddr(d Dest) string {
	if d.Addr != "" {
		if d.Proto == "amqp" || d.Proto == "" {
			return d.Addr
		}
		// A STOMP address: the name after the /kind/ prefix, and
		// temporary destinations as Sluice's AMQP front-end names them.
		a := d.Addr
		for _, k := range []Kind{Queue, Topic, TempQueue, TempTopic} {
			a = strings.TrimPrefix(a, "/"+k.String()+"/")
		}
		if d.Kind.IsTemp() {
			return d.Kind.String() + "://" + a
		}
		return a
	}
	return d.Name
}

type amqpConn struct {
	d        *amqpDriver
	conn     *amqp.Conn
	clientID string

	mu      sync.Mutex
	sess    *amqp.Session
	senders map[string]*amqp.Sender
	subs    map[*amqp.Session]bool // sessions of open subscriptions, ended by Close
}

func (d *amqpDriver) Dial(ctx context.Context, o ConnOptions) (Conn, error) {
	container := o.ClientID
	if container == "" {
		container = "conformance-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(d.seq.Add(1), 10)
	}
	if o.Transacted {
		return d.dialRaw(ctx, container)
	}
	opts := &amqp.ConnOptions{ContainerID: container, SASLType: amqp.SASLTypeAnonymous(), HostName: "localhost"}
	conn, err := amqp.Dial(ctx, "amqp://"+d.addr, opts)
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "refused") {
		// A broker that offers no SASL layer: try the plain AMQP header.
		opts.SASLType = nil
		if c2, err2 := amqp.Dial(ctx, "amqp://"+d.addr, opts); err2 == nil {
			conn, err = c2, nil
		}
	}
	if err != nil {
		if strings.Contains(err.Error(), "PerformClose") {
			// go-amqp reads a close in answer to open as a protocol error
			// and drops its error condition.
			return nil, &RefusedError{Op: "open", Reason: "the broker answered open with close: " + err.Error()}
		}
		return nil, amqpErr("open", err)
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		_ = conn.Close()
		return nil, amqpErr("begin session", err)
	}
	return &amqpConn{d: d, conn: conn, clientID: o.ClientID, sess: sess, senders: map[string]*amqp.Sender{}, subs: map[*amqp.Session]bool{}}, nil
}

// amqpErr turns a remote error into a RefusedError.
func amqpErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae *amqp.Error
	var le *amqp.LinkError
	var se *amqp.SessionError
	var ce *amqp.ConnError
	switch {
	case errors.As(err, &ae):
		return &RefusedError{Op: op, Reason: string(ae.Condition) + ": " + ae.Description}
	case errors.As(err, &le) && le.RemoteErr != nil:
		return &RefusedError{Op: op, Reason: string(le.RemoteErr.Condition) + ": " + le.RemoteErr.Description}
	case errors.As(err, &se) && se.RemoteErr != nil:
		return &RefusedError{Op: op, Reason: string(se.RemoteErr.Condition) + ": " + se.RemoteErr.Description}
	case errors.As(err, &ce) && ce.RemoteErr != nil:
		return &RefusedError{Op: op, Reason: string(ce.RemoteErr.Condition) + ": " + ce.RemoteErr.Description}
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (c *amqpConn) sender(ctx context.Context, d Dest) (*amqp.Sender, string, error) {
	addr := amqpAddr(d)
	key := d.Kind.String() + "|" + addr
	c.mu.Lock()
	s := c.senders[key]
	c.mu.Unlock()
	if s != nil {
		return s, key, nil
	}
	s, err := c.sess.NewSender(ctx, addr, &amqp.SenderOptions{TargetCapabilities: amqpCaps(d.Kind)})
	if err != nil {
		return nil, key, amqpErr("attach sender to "+addr, err)
	}
	c.mu.Lock()
	c.senders[key] = s
	c.mu.Unlock()
	return s, key, nil
}

func (c *amqpConn) Send(ctx context.Context, d Dest, m *Message, tx Tx) error {
	if tx != nil {
		return errNoAMQPTx
	}
	msg := &amqp.Message{Value: m.Body, Header: &amqp.MessageHeader{Durable: true, Priority: 4},
		Properties: &amqp.MessageProperties{}, Annotations: amqp.Annotations{}}
	msg.Annotations[amqp.Symbol(annMsgType)] = jmsTextMessage
	msg.Annotations[amqp.Symbol(annDest)] = jmsDestType(d.Kind)
	if m.Persistent != nil {
		msg.Header.Durable = *m.Persistent
	}
	if m.Priority != nil {
		msg.Header.Priority = uint8(*m.Priority)
	}
	if m.TTL > 0 {
		msg.Header.TTL = m.TTL
	}
	if !m.Expiration.IsZero() {
		t := m.Expiration
		msg.Properties.AbsoluteExpiryTime = &t
	}
	if m.XML {
		msg.Annotations[amqp.Symbol(annXML)] = true
	}
	if m.RedeliveryLimit != nil {
		msg.Annotations[amqp.Symbol(annRedeliveryLimit)] = int32(*m.RedeliveryLimit)
	}
	if m.DeliveryDelay > 0 {
		msg.Annotations[amqp.Symbol(annDeliveryDelay)] = m.DeliveryDelay.Milliseconds()
	}
	if !m.DeliveryTime.IsZero() {
		msg.Annotations[amqp.Symbol(annDeliveryTime)] = m.DeliveryTime.UnixMilli()
	}
	if m.CorrelationID != "" {
		msg.Properties.CorrelationID = m.CorrelationID
	}
	if m.Type != "" {
		t := m.Type
		msg.Properties.Subject = &t
	}
	if m.ReplyTo != nil {
		r := amqpAddr(*m.ReplyTo)
		msg.Properties.ReplyTo = &r
		msg.Annotations[amqp.Symbol(annReplyTo)] = jmsDestType(m.ReplyTo.Kind)
	}
	if len(m.Props) > 0 {
		msg.ApplicationProperties = map[string]any{}
		for _, p := range m.Props {
			msg.ApplicationProperties[p.Name] = p.Value
		}
	}
	s, key, err := c.sender(ctx, d)
	if err != nil {
		return err
	}
	if err := s.Send(ctx, msg, nil); err != nil {
		var le *amqp.LinkError
		if errors.As(err, &le) {
			c.mu.Lock()
			delete(c.senders, key)
			c.mu.Unlock()
		}
		return amqpErr("send to "+amqpAddr(d), err)
	}
	return nil
}

// errNoAMQPTx is a transaction asked of a connection not dialled
// transacted: go-amqp v1.7.0 has no transaction coordinator.
var errNoAMQPTx = errors.New("a transaction over AMQP needs a transacted connection (ConnOptions.Transacted): go-amqp v1.7.0 has no transaction coordinator")

var errNoSessionRedeliveryDelay = NotExpressible("no AMQP convention carries a session's redelivery delay (CONVENTIONS.md)")

func (c *amqpConn) receiverOptions(d Dest, o SubOptions) (*amqp.ReceiverOptions, error) {
	if o.RedeliveryDelay > 0 {
		return nil, errNoSessionRedeliveryDelay
	}
	credit := int32(o.Prefetch)
	if credit <= 0 {
		credit = 100
	}
	settled := amqp.SenderSettleModeUnsettled
	ro := &amqp.ReceiverOptions{Credit: credit, SourceCapabilities: amqpCaps(d.Kind), RequestedSenderSettleMode: &settled}
	if o.Selector != "" {
		ro.Filters = append(ro.Filters, amqp.NewLinkFilter("jms-selector", selectorFilterCode, o.Selector))
	}
	if o.NoLocal {
		ro.Filters = append(ro.Filters, amqp.NewLinkFilter("no-local", noLocalFilterCode, "NoLocalFilter{}"))
	}
	if o.Name != "" {
		if o.Durable && !o.Shared && c.clientID == "" {
			return nil, NotExpressible("an AMQP connection always has a container-id (the driver makes one up), so a durable subscription without a JMS client ID cannot be asked for")
		}
		if !o.Durable && !o.Shared {
			return nil, NotExpressible("a named subscription is durable or shared")
		}
		ro.Name = o.Name
		if o.Shared {
			ro.SourceCapabilities = append(ro.SourceCapabilities, "shared")
			if c.clientID == "" {
				ro.SourceCapabilities = append(ro.SourceCapabilities, "global")
			}
		}
		if o.Durable {
			ro.SourceDurability = amqp.DurabilityUnsettledState
			ro.SourceExpiryPolicy = amqp.ExpiryPolicyNever
		}
	}
	return ro, nil
}

type amqpSub struct {
	c    *amqpConn
	sess *amqp.Session
	r    *amqp.Receiver
	ack  AckMode
	kind Kind

	mu      sync.Mutex
	unacked []*Received
}

func (c *amqpConn) Subscribe(ctx context.Context, d Dest, o SubOptions) (Sub, error) {
	ro, err := c.receiverOptions(d, o)
	if err != nil {
		return nil, err
	}
	return c.attach(ctx, amqpAddr(d), d.Kind, ro, o.Ack)
}

func (c *amqpConn) attach(ctx context.Context, addr string, kind Kind, ro *amqp.ReceiverOptions, ack AckMode) (*amqpSub, error) {
	sess, err := c.conn.NewSession(ctx, nil)
	if err != nil {
		return nil, amqpErr("begin session", err)
	}
	r, err := sess.NewReceiver(ctx, addr, ro)
	if err != nil {
		_ = sess.Close(ctx)
		return nil, amqpErr("attach receiver to "+addr, err)
	}
	c.mu.Lock()
	c.subs[sess] = true
	c.mu.Unlock()
	return &amqpSub{c: c, sess: sess, r: r, ack: ack, kind: kind}, nil
}

func (c *amqpConn) Temporary(ctx context.Context, kind Kind) (Sub, Dest, error) {
	settled := amqp.SenderSettleModeUnsettled
	ro := &amqp.ReceiverOptions{Credit: 100, DynamicAddress: true, SourceCapabilities: amqpCaps(kind), RequestedSenderSettleMode: &settled}
	s, err := c.attach(ctx, "", kind, ro, AckAuto)
	if err != nil {
		return nil, Dest{}, err
	}
	addr := s.r.Address()
	if addr == "" {
		return nil, Dest{}, errors.New("the broker gave the dynamic source no address")
	}
	return s, Dest{Kind: kind, Name: addr, Addr: addr, Proto: "amqp"}, nil
}

func (c *amqpConn) Browse(ctx context.Context, d Dest, sel string) ([]*Received, error) {
	settled := amqp.SenderSettleModeSettled
	ro := &amqp.ReceiverOptions{Credit: -1, SourceCapabilities: amqpCaps(d.Kind),
		SourceDistributionMode: amqp.SourceDistributionModeCopy, RequestedSenderSettleMode: &settled}
	if sel != "" {
		ro.Filters = append(ro.Filters, amqp.NewLinkFilter("jms-selector", selectorFilterCode, sel))
	}
	s, err := c.attach(ctx, amqpAddr(d), d.Kind, ro, AckAuto)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close(context.Background()) }()
	var out []*Received
	for {
		if err := s.r.IssueCredit(browseCredit); err != nil {
			return out, amqpErr("flow", err)
		}
		// go-amqp drops credit issued but not yet sent when a drain is
		// asked for, so wait until the credit has brought a message (or
		// surely reached the broker) before draining.
		n := 0
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		m, err := s.r.Receive(wctx, nil)
		cancel()
		if err == nil {
			out = append(out, amqpReceived(m))
			n++
		} else if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if err := s.r.DrainCredit(ctx, nil); err != nil {
			return out, amqpErr("drain", err)
		}
		for m := s.r.Prefetched(); m != nil; m = s.r.Prefetched() {
			out = append(out, amqpReceived(m))
			n++
		}
		if n < browseCredit {
			return out, nil
		}
	}
}

const browseCredit = 500

func (c *amqpConn) Begin(context.Context) (Tx, error) { return nil, errNoAMQPTx }

// Unsubscribe attaches to the durable subscription and closes the link for
// good (detach closed=true), which deletes it.
func (c *amqpConn) Unsubscribe(ctx context.Context, topic Dest, name, sel string) error {
	ro, err := c.receiverOptions(topic, SubOptions{Name: name, Durable: true, Selector: sel})
	if err != nil {
		return err
	}
	ro.Credit = -1
	s, err := c.attach(ctx, amqpAddr(topic), topic.Kind, ro, AckAuto)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close(context.Background()) }()
	return amqpErr("detach (closed) "+name, s.r.Close(ctx))
}

// Close ends the subscriptions' sessions, then the connection. go-amqp's
// Conn.Close writes the close frame and drops the socket without waiting
// for the broker's answer, so a scenario that acts right after Close (a
// send that must not reach the closed consumers) would race the broker
// reading that frame. Session.Close waits for the broker's end, which
// comes after the broker has closed the session's links.
func (c *amqpConn) Close() error {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[*amqp.Session]bool{}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for sess := range subs {
		var se *amqp.SessionError
		if err := sess.Close(ctx); err != nil && !(errors.As(err, &se) && se.RemoteErr == nil) {
			if ctx.Err() != nil {
				return errors.New("AMQP close: a session's end had no answer within 5s")
			}
			break // the connection is going anyway; close it
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.conn.Close() }()
	select {
	case err := <-done:
		var ce *amqp.ConnError
		if errors.As(err, &ce) && ce.RemoteErr == nil {
			return nil
		}
		return err
	case <-time.After(5 * time.Second):
		return errors.New("AMQP close: no answer within 5s")
	}
}

func (s *amqpSub) Receive(ctx context.Context, timeout time.Duration) (*Received, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := s.r.Receive(rctx, nil)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, nil
		}
		return nil, amqpErr("receive", err)
	}
	r := amqpReceived(m)
	if s.ack == AckAuto {
		if err := s.r.AcceptMessage(ctx, m); err != nil {
			return r, amqpErr("accept", err)
		}
		return r, nil
	}
	s.mu.Lock()
	s.unacked = append(s.unacked, r)
	s.mu.Unlock()
	return r, nil
}

func (s *amqpSub) take(m *Received, cumulative bool) []*Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Received
	out, s.unacked = takeUnacked(s.unacked, m, cumulative)
	return out
}

// takeUnacked takes m (and, cumulative, every message before it) out of
// unacked: it returns what to settle and what stays unacknowledged.
func takeUnacked(unacked []*Received, m *Received, cumulative bool) (taken, rest []*Received) {
	for i, u := range unacked {
		if u == m {
			if cumulative {
				return unacked[: i+1 : i+1], append([]*Received(nil), unacked[i+1:]...)
			}
			return []*Received{m}, append(unacked[:i:i], unacked[i+1:]...)
		}
	}
	return []*Received{m}, unacked
}

func (s *amqpSub) Ack(ctx context.Context, m *Received, tx Tx) error {
	if tx != nil {
		return errNoAMQPTx
	}
	if s.ack == AckAuto {
		return nil
	}
	for _, u := range s.take(m, s.ack == AckClient) {
		if err := s.r.AcceptMessage(ctx, u.handle.(*amqp.Message)); err != nil {
			return amqpErr("accept", err)
		}
	}
	return nil
}

func (s *amqpSub) settle(ctx context.Context, msg *amqp.Message, o Outcome) error {
	switch o {
	case Rejected:
		return amqpErr("reject", s.r.RejectMessage(ctx, msg, nil))
	case Released:
		return amqpErr("release", s.r.ReleaseMessage(ctx, msg))
	}
	return amqpErr("modify (delivery-failed)", s.r.ModifyMessage(ctx, msg, &amqp.ModifyMessageOptions{DeliveryFailed: true}))
}

func (s *amqpSub) Settle(ctx context.Context, m *Received, o Outcome) error {
	if s.ack == AckAuto {
		return errors.New("settle on an auto-acknowledge consumer")
	}
	s.take(m, false)
	return s.settle(ctx, m.handle.(*amqp.Message), o)
}

func (s *amqpSub) Recover(ctx context.Context) error {
	s.mu.Lock()
	ms := s.unacked
	s.unacked = nil
	s.mu.Unlock()
	for _, m := range ms {
		if err := s.settle(ctx, m.handle.(*amqp.Message), Failed); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the consumer's session: the link detaches without closing, so
// a durable subscription stays.
func (s *amqpSub) Close(ctx context.Context) error {
	s.c.mu.Lock()
	delete(s.c.subs, s.sess)
	s.c.mu.Unlock()
	err := s.sess.Close(ctx)
	var se *amqp.SessionError
	if errors.As(err, &se) && se.RemoteErr == nil {
		return nil
	}
	return amqpErr("end session", err)
}

func amqpReceived(m *amqp.Message) *Received {
	r := &Received{Proto: "amqp", Props: map[string]any{}, At: time.Now(), handle: m, Priority: 4, DeliveryCount: 1}
	switch v := m.Value.(type) {
	case string:
		r.Body = v
	case nil:
		for _, d := range m.Data {
			r.Body += string(d)
		}
	default:
		r.Body = fmt.Sprint(v)
	}
	if h := m.Header; h != nil {
		r.Priority = int(h.Priority)
		r.Persistent = h.Durable
		r.DeliveryCount = int(h.DeliveryCount) + 1
		r.Redelivered = h.DeliveryCount > 0
	}
	if p := m.Properties; p != nil {
		if p.MessageID != nil {
			r.ID = fmt.Sprint(p.MessageID)
		}
		if p.To != nil {
			r.Destination = *p.To
		}
		if p.CorrelationID != nil {
			r.CorrelationID = fmt.Sprint(p.CorrelationID)
		}
		if p.Subject != nil {
			r.Type = *p.Subject
		}
		if p.CreationTime != nil {
			r.Timestamp = p.CreationTime.UnixMilli()
		}
		if p.AbsoluteExpiryTime != nil {
			r.Expiration = p.AbsoluteExpiryTime.UnixMilli()
		}
		if p.ReplyTo != nil {
			r.ReplyTo = amqpReplyTo(*p.ReplyTo, annotation(m, annReplyTo))
		}
	}
	switch v := annotation(m, annDeliveryTime).(type) {
	case time.Time:
		r.DeliveryTime = v.UnixMilli()
	case nil:
	default:
		r.DeliveryTime = int64(toInt(v))
	}
	for k, v := range m.ApplicationProperties {
		r.Props[k] = v
	}
	return r
}

// annotation returns a message annotation; go-amqp decodes symbol keys as
// plain strings.
func annotation(m *amqp.Message, key string) any {
	if v, ok := m.Annotations[key]; ok {
		return v
	}
	return m.Annotations[amqp.Symbol(key)]
}

// amqpReplyTo reads a reply-to address: its kind from x-opt-jms-reply-to
// when present, else from a queue://, topic://, temp-queue:// or
// temp-topic:// prefix.
func amqpReplyTo(addr string, ann any) *Dest {
	kind := Kind(0)
	switch toInt(ann) {
	case 0:
		kind = Queue
	case 1:
		kind = Topic
	case 2:
		kind = TempQueue
	case 3:
		kind = TempTopic
	}
	name := addr
	for prefix, k := range map[string]Kind{"queue://": Queue, "topic://": Topic, "temp-queue://": TempQueue, "temp-topic://": TempTopic} {
		if strings.HasPrefix(addr, prefix) {
			if kind == 0 {
				kind = k
			}
			if !k.IsTemp() {
				name = addr[len(prefix):]
			}
		}
	}
	if kind == 0 {
		kind = Queue
	}
	return &Dest{Kind: kind, Name: name, Addr: addr, Proto: "amqp"}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return int64(n)
	case int:
		return int64(n)
	}
	return -1
}
