package conformance

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

	"github.com/go-stomp/stomp/v3/frame"
)

// The STOMP driver speaks STOMP 1.2 through go-stomp's frame codec, with a
// receipt on every frame that changes state, so that each operation returns
// once the broker has done it or refused it. It follows the header
// conventions of /work/shared/CONVENTIONS.md: ActiveMQ's where ActiveMQ has
// one (activemq.subscriptionName, activemq.noLocal, activemq.prefetchSize,
// AMQ_SCHEDULED_DELAY, browser), Sluice's sluice-* extensions for the
// WebLogic features no peer carries on STOMP.
//
// What STOMP cannot say:
//   - typed properties: every header is a string;
//   - releasing a message (AMQP's released outcome): NACK is always a failed
//     delivery;
//   - recover has no frame: the driver NACKs every unacknowledged message of
//     the consumer, oldest first, which is what JMS recover means (each is a
//     failed delivery: redelivered, counted, delayed).
type stompDriver struct {
	addr string
	o    STOMPOptions
}

// STOMPOptions configure the STOMP driver.
type STOMPOptions struct {
	Login, Passcode string
	// Dialect is "" for the conventions as Sluice implements them, or
	// "activemq": ActiveMQ deletes a durable subscription named in an
	// UNSUBSCRIBE only while it has no subscriber, where Sluice wants the
	// UNSUBSCRIBE of the open subscription (the profile says which).
	Dialect string
}

// NewSTOMP returns the STOMP driver for a broker at addr (host:port).
func NewSTOMP(addr string, o STOMPOptions) Driver {
	return &stompDriver{addr: addr, o: o}
}

func (d *stompDriver) Protocol() string { return "stomp" }
func (d *stompDriver) Addr() string     { return d.addr }

// Header names (CONVENTIONS.md, protocol/stomp/mapping.go).
const (
	shClientID        = "client-id"
	shPersistent      = "persistent"
	shPriority        = "priority"
	shExpires         = "expires"
	shCorrelationID   = "correlation-id"
	shReplyTo         = "reply-to"
	shType            = "type"
	shTimestamp       = "timestamp"
	shRedelivered     = "redelivered"
	shSelector        = "selector"
	shAMQNoLocal      = "activemq.noLocal"
	shAMQSubName      = "activemq.subscriptionName"
	shAMQPrefetch     = "activemq.prefetchSize"
	shBrowser         = "browser"
	shRequeue         = "requeue"
	shScheduledDelay  = "AMQ_SCHEDULED_DELAY"
	shScheduledTime   = "AMQ_SCHEDULED_TIME"
	shDeliveryCount   = "JMSXDeliveryCount"
	shXDeliveryCount  = "x-delivery-count"
	shRedeliveryLimit = "sluice-redelivery-limit"
	shDeliveryTime    = "sluice-delivery-time"
	shRedeliveryDelay = "sluice-redelivery-delay"
	shShared          = "sluice-shared"
	shSubName         = "sluice-subscription-name"
	shDurable         = "sluice-durable"
	shMessageType     = "sluice-message-type"
)

// stompReserved are MESSAGE headers that are not application properties.
var stompReserved = map[string]bool{
	"subscription": true, "message-id": true, "destination": true, "ack": true, "content-type": true,
	"content-length": true, shPersistent: true, shPriority: true, shExpires: true, shCorrelationID: true,
	shReplyTo: true, shType: true, shTimestamp: true, shRedelivered: true, shDeliveryCount: true,
	shXDeliveryCount: true, shDeliveryTime: true, shRedeliveryLimit: true, shMessageType: true,
	"receipt": true, shBrowser: true,
}

type stompConn struct {
	d   *stompDriver
	nc  net.Conn
	seq atomic.Uint64

	wmu sync.Mutex
	w   *frame.Writer

	mu       sync.Mutex
	receipts map[string]chan *frame.Frame
	subs     map[string]*stompSub
	err      error
	done     chan struct{}
	closed   bool
}

func (d *stompDriver) Dial(ctx context.Context, o ConnOptions) (Conn, error) {
	var dl net.Dialer
	nc, err := dl.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, err
	}
	c := &stompConn{d: d, nc: nc, w: frame.NewWriter(nc), receipts: map[string]chan *frame.Frame{},
		subs: map[string]*stompSub{}, done: make(chan struct{})}
	f := frame.New(frame.CONNECT, frame.AcceptVersion, "1.2", frame.Host, "localhost", frame.HeartBeat, "0,0")
	if d.o.Login != "" {
		f.Header.Add(frame.Login, d.o.Login)
		f.Header.Add(frame.Passcode, d.o.Passcode)
	}
	if o.ClientID != "" {
		f.Header.Add(shClientID, o.ClientID)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	rd := frame.NewReader(nc)
	if err := c.w.Write(f); err != nil {
		_ = nc.Close()
		return nil, err
	}
	var rf *frame.Frame
	for rf == nil && err == nil {
		rf, err = rd.Read() // nil frames are heart-beats
	}
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("STOMP CONNECT: %w", err)
	}
	if rf.Command == frame.ERROR {
		_ = nc.Close()
		return nil, &RefusedError{Op: "CONNECT", Reason: errorText(rf)}
	}
	if rf.Command != frame.CONNECTED {
		_ = nc.Close()
		return nil, fmt.Errorf("STOMP CONNECT answered by %s", rf.Command)
	}
	_ = nc.SetDeadline(time.Time{})
	go c.readLoop(rd)
	return c, nil
}

func errorText(f *frame.Frame) string {
	msg := f.Header.Get(frame.Message)
	if body := oneLine(string(f.Body), 300); body != "" && body != msg {
		msg += " (" + body + ")"
	}
	return msg
}

func (c *stompConn) readLoop(rd *frame.Reader) {
	for {
		f, err := rd.Read()
		if err != nil {
			c.fail(fmt.Errorf("STOMP connection ended: %w", err))
			return
		}
		if f == nil {
			continue
		}
		switch f.Command {
		case frame.RECEIPT:
			id := f.Header.Get(frame.ReceiptId)
			c.mu.Lock()
			ch := c.receipts[id]
			delete(c.receipts, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case frame.MESSAGE:
			c.mu.Lock()
			s := c.subs[f.Header.Get(frame.Subscription)]
			c.mu.Unlock()
			if s != nil {
				s.push(f)
			}
		case frame.ERROR:
			refused := &RefusedError{Op: "STOMP", Reason: errorText(f)}
			if id, ok := f.Header.Contains(frame.ReceiptId); ok {
				c.mu.Lock()
				ch := c.receipts[id]
				delete(c.receipts, id)
				c.mu.Unlock()
				if ch != nil {
					ch <- f
				}
			}
			c.fail(refused)
			return
		}
	}
}

// fail ends the connection with err: every waiter is told.
func (c *stompConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
	c.mu.Unlock()
	_ = c.nc.Close()
}

func (c *stompConn) lastErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *stompConn) write(f *frame.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(15 * time.Second))
	return c.w.Write(f)
}

// request writes f with a receipt and waits for it (or for the ERROR that
// refuses it).
func (c *stompConn) request(ctx context.Context, f *frame.Frame) error {
	id := "r" + strconv.FormatUint(c.seq.Add(1), 10)
	ch := make(chan *frame.Frame, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.receipts[id] = ch
	c.mu.Unlock()
	f.Header.Set(frame.Receipt, id)
	if err := c.write(f); err != nil {
		return err
	}
	select {
	case rf := <-ch:
		if rf.Command == frame.ERROR {
			return &RefusedError{Op: f.Command, Reason: errorText(rf)}
		}
		return nil
	case <-c.done:
		// The ERROR may have been for this frame without a receipt-id.
		select {
		case rf := <-ch:
			if rf.Command == frame.ERROR {
				return &RefusedError{Op: f.Command, Reason: errorText(rf)}
			}
			return nil
		default:
		}
		return fmt.Errorf("%s: %w", f.Command, c.lastErr())
	case <-ctx.Done():
		return fmt.Errorf("%s: no receipt: %w", f.Command, ctx.Err())
	}
}

// stompDest renders a destination for STOMP.
func stompDest(d Dest) string {
	if d.Addr != "" {
		if d.Proto == "stomp" || d.Proto == "" {
			return d.Addr
		}
		// An address another protocol gave (AMQP): a name, perhaps with a
		// kind:// prefix.
		name := d.Addr
		if i := strings.Index(name, "://"); i >= 0 {
			name = name[i+3:]
		}
		return "/" + d.Kind.String() + "/" + name
	}
	return "/" + d.Kind.String() + "/" + d.Name
}

func parseStompDest(s string) *Dest {
	for _, k := range []Kind{Queue, Topic, TempQueue, TempTopic} {
		if strings.HasPrefix(s, "/"+k.String()+"/") {
			return &Dest{Kind: k, Name: s[len(k.String())+2:], Addr: s, Proto: "stomp"}
		}
	}
	// ActiveMQ names another connection's temporary destinations so.
	for prefix, k := range map[string]Kind{"/remote-temp-queue/": TempQueue, "/remote-temp-topic/": TempTopic} {
		if strings.HasPrefix(s, prefix) {
			return &Dest{Kind: k, Name: s[len(prefix):], Addr: s, Proto: "stomp"}
		}
	}
	return &Dest{Kind: Queue, Name: s, Addr: s, Proto: "stomp"}
}

func (c *stompConn) Send(ctx context.Context, d Dest, m *Message, tx Tx) error {
	f := frame.New(frame.SEND, frame.Destination, stompDest(d))
	if m.Persistent != nil {
		f.Header.Add(shPersistent, strconv.FormatBool(*m.Persistent))
	}
	if m.Priority != nil {
		f.Header.Add(shPriority, strconv.Itoa(*m.Priority))
	}
	switch {
	case !m.Expiration.IsZero():
		f.Header.Add(shExpires, strconv.FormatInt(m.Expiration.UnixMilli(), 10))
	case m.TTL > 0:
		// STOMP's expires is absolute (ActiveMQ's convention).
		f.Header.Add(shExpires, strconv.FormatInt(time.Now().Add(m.TTL).UnixMilli(), 10))
	}
	if m.DeliveryDelay > 0 {
		f.Header.Add(shScheduledDelay, strconv.FormatInt(m.DeliveryDelay.Milliseconds(), 10))
	}
	if !m.DeliveryTime.IsZero() {
		f.Header.Add(shScheduledTime, strconv.FormatInt(m.DeliveryTime.UnixMilli(), 10))
	}
	if m.CorrelationID != "" {
		f.Header.Add(shCorrelationID, m.CorrelationID)
	}
	if m.Type != "" {
		f.Header.Add(shType, m.Type)
	}
	if m.ReplyTo != nil {
		f.Header.Add(shReplyTo, stompDest(*m.ReplyTo))
	}
	if m.RedeliveryLimit != nil {
		f.Header.Add(shRedeliveryLimit, strconv.Itoa(*m.RedeliveryLimit))
	}
	if m.XML {
		f.Header.Add(shMessageType, "xml")
	}
	var typed []string
	for _, p := range m.Props {
		if _, ok := p.Value.(string); !ok {
			typed = append(typed, fmt.Sprintf("%s (%T)", p.Name, p.Value))
		}
	}
	if len(typed) > 0 {
		return NotExpressible("STOMP headers are strings; the message needs typed properties: %s", strings.Join(typed, ", "))
	}
	for _, p := range m.Props {
		f.Header.Add(p.Name, p.Value.(string))
	}
	if tx != nil {
		st, ok := tx.(*stompTx)
		if !ok || st.c != c {
			return errors.New("transaction of another connection")
		}
		f.Header.Add(frame.Transaction, st.id)
	}
	// No content-length: a text message (ActiveMQ's and Sluice's rule).
	f.Body = []byte(m.Body)
	return c.request(ctx, f)
}

type stompSub struct {
	c    *stompConn
	id   string
	ack  AckMode
	dest string

	mu       sync.Mutex
	queue    []*frame.Frame
	signal   chan struct{}
	unacked  []*Received
	browsing bool
}

func (s *stompSub) push(f *frame.Frame) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

func (c *stompConn) newSub(dest string, ack AckMode) *stompSub {
	s := &stompSub{c: c, id: "s" + strconv.FormatUint(c.seq.Add(1), 10), ack: ack, dest: dest, signal: make(chan struct{}, 1)}
	c.mu.Lock()
	c.subs[s.id] = s
	c.mu.Unlock()
	return s
}

func (c *stompConn) dropSub(s *stompSub) {
	c.mu.Lock()
	delete(c.subs, s.id)
	c.mu.Unlock()
}

func stompAck(a AckMode) string {
	switch a {
	case AckClient:
		return "client"
	case AckIndividual:
		return "client-individual"
	}
	return "auto"
}

func (c *stompConn) Subscribe(ctx context.Context, d Dest, o SubOptions) (Sub, error) {
	dest := stompDest(d)
	s := c.newSub(dest, o.Ack)
	f := frame.New(frame.SUBSCRIBE, frame.Id, s.id, frame.Destination, dest, frame.Ack, stompAck(o.Ack))
	if o.Selector != "" {
		f.Header.Add(shSelector, o.Selector)
	}
	if o.NoLocal {
		f.Header.Add(shAMQNoLocal, "true")
	}
	if o.Prefetch > 0 {
		f.Header.Add(shAMQPrefetch, strconv.Itoa(o.Prefetch))
	}
	if o.RedeliveryDelay > 0 {
		f.Header.Add(shRedeliveryDelay, strconv.FormatInt(o.RedeliveryDelay.Milliseconds(), 10))
	}
	switch {
	case o.Name != "" && o.Shared:
		f.Header.Add(shSubName, o.Name)
		f.Header.Add(shShared, "true")
		f.Header.Add(shDurable, strconv.FormatBool(o.Durable))
	case o.Name != "" && o.Durable:
		f.Header.Add(shAMQSubName, o.Name)
	case o.Name != "":
		return nil, NotExpressible("a named subscription is durable or shared")
	}
	if err := c.request(ctx, f); err != nil {
		c.dropSub(s)
		return nil, err
	}
	return s, nil
}

func (c *stompConn) Temporary(ctx context.Context, kind Kind) (Sub, Dest, error) {
	if kind != TempQueue && kind != TempTopic {
		return nil, Dest{}, fmt.Errorf("temporary destination kind %v", kind)
	}
	name := "tmp" + strconv.FormatUint(c.seq.Add(1), 10)
	d := Dest{Kind: kind, Name: name, Addr: "/" + kind.String() + "/" + name, Proto: "stomp"}
	s, err := c.Subscribe(ctx, d, SubOptions{})
	if err != nil {
		return nil, Dest{}, err
	}
	return s, d, nil
}

func (c *stompConn) Browse(ctx context.Context, d Dest, sel string) ([]*Received, error) {
	dest := stompDest(d)
	s := c.newSub(dest, AckAuto)
	s.browsing = true
	defer c.dropSub(s)
	f := frame.New(frame.SUBSCRIBE, frame.Id, s.id, frame.Destination, dest, frame.Ack, "auto", shBrowser, "true")
	if sel != "" {
		f.Header.Add(shSelector, sel)
	}
	if err := c.request(ctx, f); err != nil {
		return nil, err
	}
	var out []*Received
	for {
		m, err := s.next(ctx, time.Until(deadlineOr(ctx, 15*time.Second)))
		if err != nil {
			return out, err
		}
		if m == nil {
			return out, fmt.Errorf("browse of %s: no browser:end after %d messages", dest, len(out))
		}
		if m.Props[shBrowser] == "end" {
			return out, nil
		}
		out = append(out, m)
	}
}

func deadlineOr(ctx context.Context, d time.Duration) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(d)
}

type stompTx struct {
	c  *stompConn
	id string
}

func (c *stompConn) Begin(ctx context.Context) (Tx, error) {
	tx := &stompTx{c: c, id: "tx" + strconv.FormatUint(c.seq.Add(1), 10)}
	if err := c.request(ctx, frame.New(frame.BEGIN, frame.Transaction, tx.id)); err != nil {
		return nil, err
	}
	return tx, nil
}

func (tx *stompTx) Commit(ctx context.Context) error {
	return tx.c.request(ctx, frame.New(frame.COMMIT, frame.Transaction, tx.id))
}

func (tx *stompTx) Rollback(ctx context.Context) error {
	return tx.c.request(ctx, frame.New(frame.ABORT, frame.Transaction, tx.id))
}

// Unsubscribe deletes a durable subscription. Sluice deletes one named in
// the UNSUBSCRIBE of its open subscription, so the driver subscribes to it
// (with its topic and selector) first; ActiveMQ deletes one that has no
// subscriber, whatever the id.
func (c *stompConn) Unsubscribe(ctx context.Context, topic Dest, name, sel string) error {
	if c.d.o.Dialect == "activemq" {
		return c.request(ctx, frame.New(frame.UNSUBSCRIBE, frame.Id, "unsubscribe-"+name, shAMQSubName, name))
	}
	sub, err := c.Subscribe(ctx, topic, SubOptions{Name: name, Durable: true, Selector: sel})
	if err != nil {
		return err
	}
	s := sub.(*stompSub)
	c.dropSub(s)
	return c.request(ctx, frame.New(frame.UNSUBSCRIBE, frame.Id, s.id, shAMQSubName, name))
}

func (c *stompConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	failed := c.err != nil
	c.mu.Unlock()
	if !failed {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = c.request(ctx, frame.New(frame.DISCONNECT))
		cancel()
	}
	c.fail(errors.New("connection closed by the client"))
	return nil
}

// next returns the next MESSAGE, waiting up to timeout.
func (s *stompSub) next(ctx context.Context, timeout time.Duration) (*Received, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			f := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return s.received(f), nil
		}
		s.mu.Unlock()
		select {
		case <-s.signal:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.c.done:
			// Deliver what arrived before the end, then report it.
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n == 0 {
				return nil, s.c.lastErr()
			}
		}
	}
}

func (s *stompSub) received(f *frame.Frame) *Received {
	h := f.Header
	r := &Received{Proto: "stomp", ID: h.Get(frame.MessageId), Destination: h.Get(frame.Destination),
		Body: string(f.Body), Props: map[string]any{}, At: time.Now(), handle: f}
	r.Priority, _ = strconv.Atoi(h.Get(shPriority))
	r.Persistent = h.Get(shPersistent) == "true"
	r.Redelivered = h.Get(shRedelivered) == "true"
	if v, ok := h.Contains(shDeliveryCount); ok {
		r.DeliveryCount, _ = strconv.Atoi(v)
	} else if v, ok := h.Contains(shXDeliveryCount); ok {
		r.DeliveryCount, _ = strconv.Atoi(v)
	}
	r.Timestamp, _ = strconv.ParseInt(h.Get(shTimestamp), 10, 64)
	r.Expiration, _ = strconv.ParseInt(h.Get(shExpires), 10, 64)
	r.DeliveryTime, _ = strconv.ParseInt(h.Get(shDeliveryTime), 10, 64)
	r.CorrelationID = h.Get(shCorrelationID)
	r.Type = h.Get(shType)
	if v := h.Get(shReplyTo); v != "" {
		r.ReplyTo = parseStompDest(v)
	}
	for i := 0; i < h.Len(); i++ {
		k, v := h.GetAt(i)
		if stompReserved[k] && !(k == shBrowser && s.browsing) {
			continue
		}
		if _, dup := r.Props[k]; !dup {
			r.Props[k] = v
		}
	}
	return r
}

func (s *stompSub) Receive(ctx context.Context, timeout time.Duration) (*Received, error) {
	m, err := s.next(ctx, timeout)
	if m != nil && s.ack != AckAuto {
		s.mu.Lock()
		s.unacked = append(s.unacked, m)
		s.mu.Unlock()
	}
	return m, err
}

// forget drops m (and, cumulative, everything before it) from the
// unacknowledged list.
func (s *stompSub) forget(m *Received, cumulative bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range s.unacked {
		if u == m {
			if cumulative {
				s.unacked = append([]*Received(nil), s.unacked[i+1:]...)
			} else {
				s.unacked = append(s.unacked[:i:i], s.unacked[i+1:]...)
			}
			return
		}
	}
}

func (s *stompSub) ackFrame(cmd string, m *Received) (*frame.Frame, error) {
	f, ok := m.handle.(*frame.Frame)
	if !ok {
		return nil, errors.New("message was not received over this STOMP connection")
	}
	id, ok := f.Header.Contains(frame.Ack)
	if !ok {
		return nil, fmt.Errorf("MESSAGE %s has no ack header", m.ID)
	}
	return frame.New(cmd, frame.Id, id), nil
}

func (s *stompSub) Ack(ctx context.Context, m *Received, tx Tx) error {
	if s.ack == AckAuto {
		if tx != nil {
			return NotExpressible("a message of an ack:auto subscription cannot be acknowledged in a transaction")
		}
		return nil
	}
	f, err := s.ackFrame(frame.ACK, m)
	if err != nil {
		return err
	}
	if tx != nil {
		f.Header.Add(frame.Transaction, tx.(*stompTx).id)
	}
	s.forget(m, s.ack == AckClient)
	return s.c.request(ctx, f)
}

func (s *stompSub) Settle(ctx context.Context, m *Received, o Outcome) error {
	if s.ack == AckAuto {
		return errors.New("settle on an ack:auto subscription")
	}
	if o == Released {
		return NotExpressible("STOMP has no release: a NACK is always a failed delivery")
	}
	f, err := s.ackFrame(frame.NACK, m)
	if err != nil {
		return err
	}
	if o == Rejected {
		f.Header.Add(shRequeue, "false")
	}
	s.forget(m, false)
	return s.c.request(ctx, f)
}

func (s *stompSub) Recover(ctx context.Context) error {
	if s.ack == AckAuto {
		return errors.New("recover on an ack:auto subscription")
	}
	s.mu.Lock()
	ms := s.unacked
	s.unacked = nil
	s.mu.Unlock()
	for _, m := range ms {
		f, err := s.ackFrame(frame.NACK, m)
		if err != nil {
			return err
		}
		if err := s.c.request(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *stompSub) Close(ctx context.Context) error {
	s.c.dropSub(s)
	err := s.c.request(ctx, frame.New(frame.UNSUBSCRIBE, frame.Id, s.id))
	if err != nil && s.c.lastErr() != nil && !IsRefused(err) {
		return nil // the connection is gone: so is the consumer
	}
	return err
}
