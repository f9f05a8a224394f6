package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicemq/sluice/internal/amqp1client"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// rawConn is a transacted AMQP 1.0 connection: a small client on
// internal/amqp1client (frames through Sluice's own codec), for what
// go-amqp v1.7.0 cannot say — local transactions. It opens one session
// (channel 0) and attaches a coordinator link (target coordinator,
// capability amqp:local-transactions) on the first Begin; a transaction
// is declared with an amqp-value Declare (the Declared disposition
// carries the txn-id), transfers and
// acknowledgements in it carry transactional-state with the txn-id, and a
// Discharge (fail=false commits, fail=true rolls back) ends it. Messages
// map as the go-amqp driver maps them (amqpDriver).
//
// Operations are serialised by mu; a reader goroutine hands the frames it
// reads to in, and whichever operation waits takes them from there and
// records their effect (link state, delivered messages, outcomes of this
// side's transfers). Every wait is bounded by its context.
type rawConn struct {
	d       *amqpDriver
	conn    *amqp1client.Conn
	in      chan frames.Frame
	done    chan struct{}
	readErr error // set by the reader before it closes in

	mu           sync.Mutex
	err          error // the connection failed or the broker closed it
	nextOut      uint32
	nextIncoming uint32
	handles      uint32
	links        map[string]*rawLink // by link name
	byRemote     map[uint32]*rawLink // by the broker's handle
	senders      map[string]*rawLink // by destination key
	outcomes     map[uint32]types.DeliveryState
	coordinator  *rawLink
	closeOnce    sync.Once
}

// rawLink is one link of the session.
type rawLink struct {
	name     string
	handle   uint32
	remote   uint32
	role     types.Role
	attached bool
	detached bool
	err      *types.Error
	reply    *types.Attach
	// A sender's credit is what this side may still send; count is its
	// delivery-count.
	credit, count uint32
	recv          amqp1client.Credit    // a receiver's credit
	asm           amqp1client.Assembler // a receiver's multi-frame deliveries
	queue         []rawDelivery
}

type rawDelivery struct {
	id      uint32
	payload []byte
}

// rawIdle bounds the reader's wait for a frame: a broker silent this long
// is taken for dead.
const rawIdle = 2 * time.Minute

// dialRaw opens a transacted connection with the given container-id (the
// JMS client ID when there is one).
func (d *amqpDriver) dialRaw(ctx context.Context, container string) (*rawConn, error) {
	conn, err := amqp1client.Dial(ctx, amqp1client.Config{Addr: d.addr, ContainerID: container,
		Hostname: "localhost", Window: rawWindow, ReadIdle: rawIdle})
	if err != nil {
		return nil, fmt.Errorf("open: %w", rawRefused(err))
	}
	c := &rawConn{d: d, conn: conn, in: make(chan frames.Frame, 256), done: make(chan struct{}),
		links: map[string]*rawLink{}, byRemote: map[uint32]*rawLink{},
		senders: map[string]*rawLink{}, outcomes: map[uint32]types.DeliveryState{}}
	go c.read()
	return c, nil
}

// rawRefused turns the client's refusal into the suite's RefusedError.
func rawRefused(err error) error {
	var r *amqp1client.RefusedError
	if errors.As(err, &r) {
		return &RefusedError{Op: r.Op, Reason: r.Reason}
	}
	return err
}

// rawWindow is the session window this side announces, again with every
// flow.
const rawWindow = 5000

// read hands frames to in until the connection ends.
func (c *rawConn) read() {
	defer close(c.in)
	for {
		f, err := c.conn.ReadFrame()
		if err != nil {
			c.readErr = err
			return
		}
		select {
		case c.in <- f:
		case <-c.done:
			return
		}
	}
}

func (c *rawConn) write(p types.Performative, payload []byte) error {
	return c.conn.Queue(p, payload)
}

// await takes frames until cond holds. mu is held.
func (c *rawConn) await(ctx context.Context, cond func() bool) error {
	for !cond() {
		if c.err != nil {
			return c.err
		}
		select {
		case f, ok := <-c.in:
			if !ok {
				c.err = fmt.Errorf("AMQP connection lost: %v", c.readErr)
				return c.err
			}
			c.handle(f)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// handle records the effect of a frame from the broker. mu is held.
func (c *rawConn) handle(f frames.Frame) {
	switch b := f.Body.(type) {
	case *types.Transfer:
		c.nextIncoming++
		l := c.byRemote[uint32(b.Handle)]
		if l == nil {
			return
		}
		d, ended, err := l.asm.Add(b, f.Payload)
		if err != nil {
			c.err = fmt.Errorf("receive: %w", err)
			return
		}
		if !ended {
			return
		}
		if !d.Aborted {
			l.queue = append(l.queue, rawDelivery{id: d.ID, payload: append([]byte(nil), d.Payload...)})
		}
		if l.recv.Delivered() {
			_ = c.flow(l)
		}
	case *types.Disposition:
		if b.Role != types.RoleReceiver {
			return
		}
		first, last := amqp1client.Span(b)
		for id := first; ; id++ {
			c.outcomes[id] = b.State
			if id == last {
				break
			}
		}
	case *types.Flow:
		h, ok := b.Handle.Get()
		if !ok {
			return
		}
		if l := c.byRemote[uint32(h)]; l != nil && l.role == types.RoleSender {
			l.credit = amqp1client.SenderCredit(b, l.count)
		}
	case *types.Attach:
		if l := c.links[b.Name]; l != nil {
			l.remote, l.attached, l.reply = uint32(b.Handle), true, b
			c.byRemote[l.remote] = l
		}
	case *types.Detach:
		for _, l := range c.links {
			if l.attached && l.remote == uint32(b.Handle) {
				l.detached, l.err = true, b.Error
				delete(c.byRemote, l.remote)
				delete(c.links, l.name)
			}
		}
	case *types.End, *types.Close:
		c.err = rawRefused(amqp1client.FrameErr(f))
	}
}

// flow grants a receiver link its window of credit again (and announces
// the session window).
func (c *rawConn) flow(l *rawLink) error {
	fl := types.NewFlow()
	l.recv.Grant(fl, l.handle, c.nextIncoming, c.nextOut, rawWindow)
	return c.write(fl, nil)
}

// attach attaches a link and waits for the broker's attach; a link the
// broker refuses (no terminus in its answer, then a detach) is an error.
// mu is held.
func (c *rawConn) attach(ctx context.Context, a *types.Attach, what string) (*rawLink, error) {
	c.handles++
	a.Name = fmt.Sprintf("conformance-raw-%d", c.handles)
	a.Handle = types.Handle(c.handles)
	l := &rawLink{name: a.Name, handle: c.handles, role: a.Role}
	c.links[l.name] = l
	if err := c.write(a, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := c.await(ctx, func() bool { return l.attached || l.detached }); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if amqp1client.AttachRefused(a, l.reply) {
		if err := c.await(ctx, func() bool { return l.detached }); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if l.detached {
		return nil, &RefusedError{Op: what, Reason: amqp1client.ErrText(l.err)}
	}
	return l, nil
}

// transfer sends one message on a sender link and waits for its outcome.
// mu is held.
func (c *rawConn) transfer(ctx context.Context, l *rawLink, payload []byte, state types.DeliveryState) (types.DeliveryState, error) {
	if err := c.await(ctx, func() bool { return l.credit > 0 || l.detached }); err != nil {
		return nil, err
	}
	if l.detached {
		return nil, &RefusedError{Op: "transfer", Reason: "link detached: " + amqp1client.ErrText(l.err)}
	}
	id := c.nextOut
	c.nextOut++
	t := &types.Transfer{Handle: types.Handle(l.handle), DeliveryID: types.Some(types.DeliveryNumber(id)),
		DeliveryTag: amqp1client.Tag(nil, id), MessageFormat: types.Some(types.MessageFormat(0)), State: state}
	if err := c.write(t, payload); err != nil {
		return nil, err
	}
	l.credit--
	l.count++
	var st types.DeliveryState
	err := c.await(ctx, func() bool {
		var ok bool
		st, ok = c.outcomes[id]
		return ok || l.detached
	})
	delete(c.outcomes, id)
	if err == nil && st == nil && l.detached {
		err = &RefusedError{Op: "transfer", Reason: "link detached: " + amqp1client.ErrText(l.err)}
	}
	return st, err
}

// outcomeErr turns a refused outcome into a RefusedError.
func outcomeErr(op string, st types.DeliveryState) error {
	var o any = st
	if ts, ok := st.(*types.TransactionalState); ok {
		if ts.Outcome == nil {
			return nil // accepted into the transaction, outcome at discharge
		}
		o = ts.Outcome
	}
	switch s := o.(type) {
	case *types.Accepted, nil:
		return nil
	case *types.Rejected:
		return &RefusedError{Op: op, Reason: "rejected: " + amqp1client.ErrText(s.Error)}
	}
	return &RefusedError{Op: op, Reason: fmt.Sprintf("outcome %T", o)}
}

func (c *rawConn) sender(ctx context.Context, d Dest) (*rawLink, error) {
	addr := amqpAddr(d)
	key := d.Kind.String() + "|" + addr
	if l := c.senders[key]; l != nil && !l.detached {
		return l, nil
	}
	tgt := types.NewTarget()
	tgt.Address = addr
	tgt.Capabilities = amqp1client.Symbols(amqpCaps(d.Kind))
	a := types.NewAttach()
	a.Role, a.Source, a.Target = types.RoleSender, types.NewSource(), tgt
	a.SndSettleMode = types.SenderSettleModeUnsettled
	a.InitialDeliveryCount = types.Some(types.SequenceNo(0))
	l, err := c.attach(ctx, a, "attach sender to "+addr)
	if err != nil {
		return nil, err
	}
	c.senders[key] = l
	return l, nil
}

// rawTxn returns the transaction of this connection that tx is.
func (c *rawConn) rawTxn(tx Tx) (*rawTx, error) {
	if tx == nil {
		return nil, nil
	}
	t, ok := tx.(*rawTx)
	if !ok || t.c != c {
		return nil, errors.New("the transaction belongs to another connection")
	}
	if t.ended {
		return nil, errors.New("the transaction has ended")
	}
	return t, nil
}

func (c *rawConn) Send(ctx context.Context, d Dest, m *Message, tx Tx) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.rawTxn(tx)
	if err != nil {
		return err
	}
	payload, err := rawMessage(d, m).AppendAMQP(nil)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	l, err := c.sender(ctx, d)
	if err != nil {
		return err
	}
	var state types.DeliveryState
	if t != nil {
		state = &types.TransactionalState{TxnID: t.id}
	}
	st, err := c.transfer(ctx, l, payload, state)
	if err != nil {
		return fmt.Errorf("send to %s: %w", amqpAddr(d), err)
	}
	return outcomeErr("send to "+amqpAddr(d), st)
}

// rawMessage is the AMQP message for m, mapped as the go-amqp driver maps
// it (amqpConn.Send).
func rawMessage(d Dest, m *Message) *types.Message {
	h := types.NewHeader()
	h.Durable, h.Priority = types.Some(true), types.Some(uint8(4))
	if m.Persistent != nil {
		h.Durable = types.Some(*m.Persistent)
	}
	if m.Priority != nil {
		h.Priority = types.Some(uint8(*m.Priority))
	}
	if m.TTL > 0 {
		h.TTL = types.Some(types.Milliseconds(m.TTL.Milliseconds()))
	}
	ann := types.MessageAnnotations{{Key: types.Symbol(annMsgType), Value: jmsTextMessage},
		{Key: types.Symbol(annDest), Value: jmsDestType(d.Kind)}}
	add := func(k string, v any) { ann = append(ann, types.MapEntry{Key: types.Symbol(k), Value: v}) }
	p := types.NewProperties()
	if !m.Expiration.IsZero() {
		p.AbsoluteExpiryTime = types.Some(types.TimestampOf(m.Expiration))
	}
	if m.XML {
		add(annXML, true)
	}
	if m.RedeliveryLimit != nil {
		add(annRedeliveryLimit, int32(*m.RedeliveryLimit))
	}
	if m.DeliveryDelay > 0 {
		add(annDeliveryDelay, m.DeliveryDelay.Milliseconds())
	}
	if !m.DeliveryTime.IsZero() {
		add(annDeliveryTime, m.DeliveryTime.UnixMilli())
	}
	if m.CorrelationID != "" {
		p.CorrelationID = m.CorrelationID
	}
	p.Subject = m.Type
	if m.ReplyTo != nil {
		p.ReplyTo = amqpAddr(*m.ReplyTo)
		add(annReplyTo, jmsDestType(m.ReplyTo.Kind))
	}
	msg := &types.Message{Header: h, MessageAnnotations: ann, Properties: p, Value: &types.AMQPValue{Value: m.Body}}
	for _, prop := range m.Props {
		msg.ApplicationProperties = append(msg.ApplicationProperties, types.MapEntry{Key: prop.Name, Value: prop.Value})
	}
	return msg
}

// rawReceived reads a delivered message as amqpReceived does.
func rawReceived(payload []byte, id uint32) (*Received, error) {
	m, err := types.DecodeMessage(payload)
	if err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	r := &Received{Proto: "amqp", Props: map[string]any{}, At: time.Now(), handle: id, Priority: 4, DeliveryCount: 1}
	switch {
	case m.Value != nil:
		if s, ok := m.Value.Value.(string); ok {
			r.Body = s
		} else {
			r.Body = fmt.Sprint(m.Value.Value)
		}
	default:
		for _, d := range m.Data {
			r.Body += string(d)
		}
	}
	if h := m.Header; h != nil {
		r.Priority = int(h.Priority.Or(4))
		r.Persistent = h.Durable.Or(false)
		n := h.DeliveryCount.Or(0)
		r.DeliveryCount, r.Redelivered = int(n)+1, n > 0
	}
	if p := m.Properties; p != nil {
		if p.MessageID != nil {
			r.ID = fmt.Sprint(p.MessageID)
		}
		if to, ok := p.To.(string); ok {
			r.Destination = to
		}
		if p.CorrelationID != nil {
			r.CorrelationID = fmt.Sprint(p.CorrelationID)
		}
		r.Type = p.Subject
		if ts, ok := p.CreationTime.Get(); ok {
			r.Timestamp = int64(ts)
		}
		if ts, ok := p.AbsoluteExpiryTime.Get(); ok {
			r.Expiration = int64(ts)
		}
		if rt, ok := p.ReplyTo.(string); ok {
			ann, _ := m.MessageAnnotations.Get(types.Symbol(annReplyTo))
			r.ReplyTo = amqpReplyTo(rt, ann)
		}
	}
	switch v, _ := m.MessageAnnotations.Get(types.Symbol(annDeliveryTime)); v := v.(type) {
	case types.Timestamp:
		r.DeliveryTime = int64(v)
	case nil:
	default:
		r.DeliveryTime = toInt(v)
	}
	for _, e := range m.ApplicationProperties {
		if k, ok := e.Key.(string); ok {
			r.Props[k] = e.Value
		}
	}
	return r, nil
}

func (c *rawConn) Subscribe(ctx context.Context, d Dest, o SubOptions) (Sub, error) {
	if o.RedeliveryDelay > 0 {
		return nil, errNoSessionRedeliveryDelay
	}
	if o.Name != "" || o.NoLocal {
		return nil, errors.New("the transacted AMQP connection has plain consumers only (no named subscriptions, no noLocal)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := amqpAddr(d)
	src := types.NewSource()
	src.Address = addr
	src.Capabilities = amqp1client.Symbols(amqpCaps(d.Kind))
	if o.Selector != "" {
		src.Filter = types.FilterSet{{Key: types.Symbol("jms-selector"),
			Value: types.Described{Descriptor: uint64(selectorFilterCode), Value: o.Selector}}}
	}
	a := types.NewAttach()
	a.Role, a.Source, a.Target = types.RoleReceiver, src, types.NewTarget()
	a.SndSettleMode, a.RcvSettleMode = types.SenderSettleModeUnsettled, types.ReceiverSettleModeFirst
	l, err := c.attach(ctx, a, "attach receiver to "+addr)
	if err != nil {
		return nil, err
	}
	l.recv.Window = uint32(o.Prefetch)
	if o.Prefetch <= 0 {
		l.recv.Window = 100
	}
	if err := c.flow(l); err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	return &rawSub{c: c, l: l, ack: o.Ack}, nil
}

// errRawUnsupported is what the transacted connection cannot do: it
// carries what the transaction scenarios need.
var errRawUnsupported = errors.New("the transacted AMQP connection has no temporary destinations, browsers or unsubscribe")

func (c *rawConn) Temporary(context.Context, Kind) (Sub, Dest, error) {
	return nil, Dest{}, errRawUnsupported
}

func (c *rawConn) Browse(context.Context, Dest, string) ([]*Received, error) {
	return nil, errRawUnsupported
}

func (c *rawConn) Unsubscribe(context.Context, Dest, string, string) error {
	return errRawUnsupported
}

// Begin declares a transaction on the coordinator link, attaching it
// first if needed.
func (c *rawConn) Begin(ctx context.Context) (Tx, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.coordinator == nil || c.coordinator.detached {
		a := types.NewAttach()
		a.Role, a.Source = types.RoleSender, types.NewSource()
		a.Target = &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}}
		a.InitialDeliveryCount = types.Some(types.SequenceNo(0))
		l, err := c.attach(ctx, a, "attach the transaction coordinator")
		if err != nil {
			return nil, err
		}
		c.coordinator = l
	}
	payload, err := (&types.Message{Value: &types.AMQPValue{Value: &types.Declare{}}}).AppendAMQP(nil)
	if err != nil {
		return nil, err
	}
	st, err := c.transfer(ctx, c.coordinator, payload, nil)
	if err != nil {
		return nil, fmt.Errorf("declare: %w", err)
	}
	d, ok := st.(*types.Declared)
	if !ok {
		if err := outcomeErr("declare", st); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("declare answered with %T", st)
	}
	return &rawTx{c: c, id: d.TxnID}, nil
}

func (c *rawConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.closeOnce.Do(func() {
		defer close(c.done)
		defer c.conn.Close()
		if c.err != nil {
			return
		}
		if err = c.write(types.NewClose(), nil); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		werr := c.await(ctx, func() bool { return false })
		var refused *RefusedError
		if !errors.As(werr, &refused) || refused.Op != "connection" {
			err = fmt.Errorf("AMQP close: %w", werr)
		}
	})
	return err
}

// rawTx is a transaction declared on a rawConn's coordinator.
type rawTx struct {
	c     *rawConn
	id    any
	ended bool
}

func (t *rawTx) discharge(ctx context.Context, fail bool, op string) error {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.ended {
		return errors.New(op + ": the transaction has ended")
	}
	t.ended = true
	payload, err := (&types.Message{Value: &types.AMQPValue{Value: &types.Discharge{TxnID: t.id, Fail: types.Some(fail)}}}).AppendAMQP(nil)
	if err != nil {
		return err
	}
	st, err := c.transfer(ctx, c.coordinator, payload, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return outcomeErr(op, st)
}

// Commit discharges the transaction with fail=false.
func (t *rawTx) Commit(ctx context.Context) error { return t.discharge(ctx, false, "commit") }

// Rollback discharges the transaction with fail=true.
func (t *rawTx) Rollback(ctx context.Context) error { return t.discharge(ctx, true, "rollback") }

// rawSub is a consumer on a rawConn.
type rawSub struct {
	c       *rawConn
	l       *rawLink
	ack     AckMode
	unacked []*Received
}

func (s *rawSub) Receive(ctx context.Context, timeout time.Duration) (*Received, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.await(rctx, func() bool { return len(s.l.queue) > 0 || s.l.detached })
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("receive: %w", err)
	}
	if len(s.l.queue) == 0 {
		return nil, &RefusedError{Op: "receive", Reason: "link detached: " + amqp1client.ErrText(s.l.err)}
	}
	d := s.l.queue[0]
	s.l.queue = s.l.queue[1:]
	r, err := rawReceived(d.payload, d.id)
	if err != nil {
		return nil, err
	}
	if s.ack == AckAuto {
		return r, c.dispose(d.id, &types.Accepted{}, "accept")
	}
	s.unacked = append(s.unacked, r)
	return r, nil
}

// dispose settles a delivery with state. mu is held.
func (c *rawConn) dispose(id uint32, state types.DeliveryState, op string) error {
	if c.err != nil {
		return fmt.Errorf("%s: %w", op, c.err)
	}
	err := c.write(&types.Disposition{Role: types.RoleReceiver, First: types.DeliveryNumber(id), Settled: true, State: state}, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (s *rawSub) Ack(ctx context.Context, m *Received, tx Tx) error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.rawTxn(tx)
	if err != nil {
		return err
	}
	if s.ack == AckAuto {
		if t != nil {
			return errors.New("a message of an auto-acknowledge consumer cannot be acknowledged in a transaction")
		}
		return nil
	}
	var taken []*Received
	taken, s.unacked = takeUnacked(s.unacked, m, s.ack == AckClient)
	for _, u := range taken {
		var state types.DeliveryState = &types.Accepted{}
		if t != nil {
			state = &types.TransactionalState{TxnID: t.id, Outcome: &types.Accepted{}}
		}
		if err := c.dispose(u.handle.(uint32), state, "accept"); err != nil {
			return err
		}
	}
	return nil
}

func rawOutcome(o Outcome) (types.DeliveryState, string) {
	switch o {
	case Rejected:
		return &types.Rejected{}, "reject"
	case Released:
		return &types.Released{}, "release"
	}
	return &types.Modified{DeliveryFailed: types.Some(true)}, "modify (delivery-failed)"
}

func (s *rawSub) Settle(ctx context.Context, m *Received, o Outcome) error {
	if s.ack == AckAuto {
		return errors.New("settle on an auto-acknowledge consumer")
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	_, s.unacked = takeUnacked(s.unacked, m, false)
	st, op := rawOutcome(o)
	return c.dispose(m.handle.(uint32), st, op)
}

func (s *rawSub) Recover(ctx context.Context) error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := s.unacked
	s.unacked = nil
	st, op := rawOutcome(Failed)
	for _, m := range ms {
		if err := c.dispose(m.handle.(uint32), st, op); err != nil {
			return err
		}
	}
	return nil
}

// Close detaches the consumer's link (closed: its consumers are plain).
func (s *rawSub) Close(ctx context.Context) error {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.l.detached {
		return nil
	}
	if err := c.write(&types.Detach{Handle: types.Handle(s.l.handle), Closed: true}, nil); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if err := c.await(ctx, func() bool { return s.l.detached }); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	return nil
}
