package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// AckMode is a session's acknowledgement mode.
type AckMode uint8

// Acknowledgement modes (JMS, plus INDIVIDUAL as ActiveMQ and STOMP's
// client-individual have it).
const (
	AutoAcknowledge AckMode = iota + 1
	ClientAcknowledge
	DupsOKAcknowledge
	IndividualAcknowledge
	Transacted
)

// String returns the mode's JMS name.
func (m AckMode) String() string {
	switch m {
	case AutoAcknowledge:
		return "AUTO_ACKNOWLEDGE"
	case ClientAcknowledge:
		return "CLIENT_ACKNOWLEDGE"
	case DupsOKAcknowledge:
		return "DUPS_OK_ACKNOWLEDGE"
	case IndividualAcknowledge:
		return "INDIVIDUAL_ACKNOWLEDGE"
	case Transacted:
		return "SESSION_TRANSACTED"
	}
	return "unknown"
}

// delivery is a message delivered to the application and not yet settled.
type delivery struct {
	tag uint64
	r   *ref
	c   *Consumer
}

// Session is a single-threaded context for producing and consuming (JMS
// Session). Its methods may be called from one goroutine at a time, except
// Close, which any goroutine may call.
type Session struct {
	conn *Connection
	id   uint64
	mode AckMode

	// mu guards the session's pending deliveries, consumers, browsers and
	// transaction. Lock order (see queue.go for the whole): mu may be
	// taken under its Connection.mu; nothing is locked under it.
	mu        sync.Mutex
	pending   []delivery // delivered, unsettled, in tag order
	nextTag   uint64
	consumers map[*Consumer]struct{}
	browsers  map[*Browser]struct{}
	txn       *Txn         // the current transaction of a Transacted session
	closed    atomic.Bool  // written under mu; checkOpen reads it without
	delay     atomic.Int64 // redelivery delay, ns
	listenMu  sync.Mutex   // one listener at a time per session
	onErr     atomic.Pointer[func(error)]
	writes    orderedWrites // asynchronous store-first sends, see confirm.go
}

// Mode returns the session's acknowledgement mode.
func (s *Session) Mode() AckMode { return s.mode }

// SetRedeliveryDelay changes the delay applied to messages this session rolls
// back or recovers from now on (WebLogic JMS "Managing Your Applications",
// "Setting a Redelivery Delay").
func (s *Session) SetRedeliveryDelay(d time.Duration) { s.delay.Store(int64(d)) }

// RedeliveryDelay returns the session's redelivery delay.
func (s *Session) RedeliveryDelay() time.Duration { return time.Duration(s.delay.Load()) }

// SetExceptionListener sets the function told of problems that no call
// would otherwise report, such as a consumer closed because its destination
// was deleted.
func (s *Session) SetExceptionListener(fn func(error)) {
	if fn == nil {
		s.onErr.Store(nil)
		return
	}
	s.onErr.Store(&fn)
}

func (s *Session) notify(err error) {
	if fn := s.onErr.Load(); fn != nil {
		(*fn)(err)
		return
	}
	s.conn.notify(err)
}

func (s *Session) checkOpen() error {
	if s.closed.Load() {
		return errorf(CodeIllegalState, "session is closed")
	}
	return s.conn.checkOpen()
}

// delivered records that r is being delivered to the application through c
// and returns the Delivery. byReceive says a synchronous receive took it.
func (s *Session) delivered(c *Consumer, r *ref, byReceive bool) message.Delivery {
	r.count++
	r.q.delivered.Add(1)
	s.conn.b.totals.delivered.Add(1)
	if obs := s.conn.b.cfg.ObserveDelivery; obs != nil {
		since := max(r.msg.Timestamp, r.msg.DeliveryTime)
		obs(r.msg.Destination, time.Duration(s.conn.b.nowMillis()-since)*time.Millisecond)
	}
	d := message.Delivery{Msg: r.msg, DeliveryCount: r.count, Redelivered: r.count > 1}
	s.mu.Lock()
	s.nextTag++
	d.Tag = s.nextTag
	autoNow := byReceive && (s.mode == AutoAcknowledge || s.mode == DupsOKAcknowledge)
	if !autoNow {
		s.pending = append(s.pending, delivery{tag: d.Tag, r: r, c: c})
	}
	s.mu.Unlock()
	if autoNow {
		if r.rec == nil {
			r.q.settleOne(r)
		} else {
			s.conn.b.settle(context.Background(), []*ref{r}, false)
		}
	}
	return d
}

// afterListener acknowledges a listener's message in auto modes.
func (s *Session) afterListener(d message.Delivery) {
	if s.mode == AutoAcknowledge || s.mode == DupsOKAcknowledge {
		_ = s.settleTags(context.Background(), d.Tag, false, false)
	}
}

// takePending removes and returns pending deliveries: up to and including
// tag when cumulative, else only tag. tag 0 takes everything.
func (s *Session) takePending(tag uint64, cumulative bool) ([]delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tag == 0 {
		out := s.pending
		s.pending = nil
		return out, nil
	}
	for i, d := range s.pending {
		if d.tag != tag {
			continue
		}
		if cumulative {
			out := append([]delivery(nil), s.pending[:i+1]...)
			s.pending = append(s.pending[:0], s.pending[i+1:]...)
			return out, nil
		}
		if i == 0 {
			// The usual case, acknowledgements in delivery order: no copy.
			s.pending[0] = delivery{}
			s.pending = s.pending[1:]
		} else {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
		}
		return []delivery{d}, nil
	}
	return nil, errorf(CodeIllegalState, "no unacknowledged delivery %d in this session", tag)
}

func refsOf(ds []delivery) []*ref {
	out := make([]*ref, len(ds))
	for i, d := range ds {
		out[i] = d.r
	}
	return out
}

func (s *Session) settleTags(ctx context.Context, tag uint64, cumulative, sync bool) error {
	ds, err := s.takePending(tag, cumulative)
	if err != nil {
		return err
	}
	if err := s.conn.b.settle(ctx, refsOf(ds), sync); err != nil {
		if indeterminate(err) {
			return err // fenced: nothing is given back
		}
		// The store refused it: the deliveries are still unacknowledged,
		// except those settled all the same.
		var ae *ackError
		if errors.As(err, &ae) && len(ae.settled) > 0 {
			ds = slices.DeleteFunc(ds, func(d delivery) bool { return slices.Contains(ae.settled, d.r) })
		}
		s.restorePending(ctx, ds)
		return err
	}
	return nil
}

// restorePending gives back to the session deliveries taken for an
// acknowledgement that failed, in tag order, so that they can be
// acknowledged again, settled otherwise, or recovered; if the session
// closed meanwhile they go back to their queues, as its close would have
// sent them.
func (s *Session) restorePending(ctx context.Context, ds []delivery) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		s.conn.b.requeue(ctx, refsOf(ds), false, 0)
		return
	}
	s.pending = append(s.pending, ds...)
	slices.SortFunc(s.pending, func(a, b delivery) int { return cmp.Compare(a.tag, b.tag) })
	s.mu.Unlock()
}

// Acknowledge acknowledges the delivery with the given tag. In a
// CLIENT_ACKNOWLEDGE session it acknowledges every message the session
// delivered up to and including it; otherwise only that one. It returns once
// the acknowledgement is durable. In a transacted session it is an error:
// Commit acknowledges.
//
// When the store refuses the acknowledgement it returns the store's error
// and the deliveries stay unacknowledged: acknowledge them again, settle
// them otherwise (Settle), or let recovery or a close return them.
func (s *Session) Acknowledge(ctx context.Context, tag uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if s.mode == Transacted {
		return errorf(CodeIllegalState, "acknowledge in a transacted session: commit instead")
	}
	return s.settleTags(ctx, tag, s.mode == ClientAcknowledge, true)
}

// Outcome says what to do with a delivery that was not acknowledged.
type Outcome uint8

// Outcomes of Settle, after AMQP's and STOMP's.
const (
	// Failed is a failed delivery (STOMP NACK, AMQP modified
	// delivery-failed): the count stands, the redelivery delay and limit apply.
	Failed Outcome = iota + 1
	// Released puts the message back as if never delivered (AMQP released).
	Released
	// Rejected makes the message undeliverable now: to the error destination,
	// or deleted when there is none (AMQP rejected, NACK requeue:false).
	Rejected
)

// Settle ends one delivery other than by acknowledging it (never
// cumulatively, whatever the session's mode). It returns once what the
// outcome writes to the store (a redelivery delay, a released attempt
// taken back) is done, or ctx ends. A store that fails that write is
// logged; the message is back on its queue all the same.
func (s *Session) Settle(ctx context.Context, tag uint64, outcome Outcome) error {
	conf, err := s.SettleConfirm(tag, outcome)
	if err != nil {
		return err
	}
	return waitRecords(ctx, conf)
}

// waitRecords waits for the redelivery records conf confirms; only ctx
// ending is an error (a failed write is logged where it fails).
func waitRecords(ctx context.Context, conf *Confirmation) error {
	if err := conf.Wait(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

// SettleConfirm is Settle without waiting for the store: the outcome
// takes effect at once (the message is back on its queue, or moved to the
// error destination), and the records it writes are committed with other
// writes, after every write submitted before them. The Confirmation tells
// when they are durable (nil: nothing to wait for). A message whose
// record is not durable yet is not delivered again until it is. A crash
// before then brings the message back as its delivery left it: flagged
// redelivered, with that delivery's count. Rejected, which moves the
// message to its error destination, is written before SettleConfirm
// returns.
func (s *Session) SettleConfirm(tag uint64, outcome Outcome) (*Confirmation, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ds, err := s.takePending(tag, false)
	if err != nil {
		return nil, err
	}
	refs := refsOf(ds)
	ctx := context.Background()
	switch outcome {
	case Released:
		for _, r := range refs {
			r.count--
		}
		return s.conn.b.requeueConfirm(ctx, refs, false, 0), nil
	case Rejected:
		s.conn.b.reject(ctx, refs, "rejected by the consumer")
		return nil, nil
	default:
		return s.conn.b.requeueConfirm(ctx, refs, true, s.RedeliveryDelay()), nil
	}
}

// Recover redelivers every message the session delivered and has not
// acknowledged, after the session's redelivery delay (JMS recover). In a
// transacted session it is Rollback. The records it writes (the delay)
// share a sync with other writes; it returns once they are done.
func (s *Session) Recover(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if s.mode == Transacted {
		return s.Rollback(ctx)
	}
	ds, _ := s.takePending(0, false)
	conf := s.conn.b.requeueConfirm(ctx, refsOf(ds), true, s.RedeliveryDelay())
	s.reclaimPipelines()
	return waitRecords(ctx, conf)
}

// reclaimPipelines returns the messages prefetched by the session's
// consumers and not yet delivered to the queue, after the recovered or
// rolled back ones, so that redelivery keeps the original order.
func (s *Session) reclaimPipelines() {
	s.mu.Lock()
	cs := make([]*Consumer, 0, len(s.consumers))
	for c := range s.consumers {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.reclaim()
	}
}

// Commit commits the session's transaction: its sends become visible and
// its deliveries are acknowledged, all at once and durably, or none of them.
func (s *Session) Commit(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if s.mode != Transacted {
		return errorf(CodeIllegalState, "commit in a session that is not transacted")
	}
	ds, _ := s.takePending(0, false)
	tx := s.txn
	s.txn = s.conn.newTxn()
	for _, d := range ds {
		tx.acks = append(tx.acks, d.r)
	}
	return tx.Commit(ctx)
}

// Rollback discards the session's sends and redelivers its deliveries
// after the session's redelivery delay, returning once the records that
// delay writes are done.
func (s *Session) Rollback(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if s.mode != Transacted {
		return errorf(CodeIllegalState, "rollback in a session that is not transacted")
	}
	ds, _ := s.takePending(0, false)
	tx := s.txn
	s.txn = s.conn.newTxn()
	tx.Rollback(ctx)
	conf := s.conn.b.requeueConfirm(ctx, refsOf(ds), true, s.RedeliveryDelay())
	s.reclaimPipelines()
	return waitRecords(ctx, conf)
}

// AcknowledgeIn moves a delivery into an explicit transaction (STOMP ACK
// with a transaction header, AMQP transactional disposition): it is
// acknowledged when tx commits and redelivered when tx rolls back.
func (s *Session) AcknowledgeIn(tx *Txn, tag uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	ds, err := s.takePending(tag, s.mode == ClientAcknowledge)
	if err != nil {
		return err
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.done {
		s.conn.b.requeue(context.Background(), refsOf(ds), false, 0)
		return errorf(CodeIllegalState, "transaction already ended")
	}
	for _, d := range ds {
		tx.acks = append(tx.acks, d.r)
		tx.ackDelay = s.RedeliveryDelay()
	}
	return nil
}

// Close closes the session: its consumers and browsers close, an open
// transaction rolls back, and unacknowledged messages go back to their queues
// without counting as failed deliveries (WebLogic JMS "Managing Your
// Applications", "Closing a Session").
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	cs := make([]*Consumer, 0, len(s.consumers))
	for c := range s.consumers {
		cs = append(cs, c)
	}
	bs := make([]*Browser, 0, len(s.browsers))
	for br := range s.browsers {
		bs = append(bs, br)
	}
	s.mu.Unlock()
	for _, c := range cs {
		_ = c.close(nil)
	}
	for _, br := range bs {
		br.Close()
	}
	if s.txn != nil {
		s.txn.abandon()
	}
	ds, _ := s.takePending(0, false)
	s.conn.b.requeue(context.Background(), refsOf(ds), false, 0)
	s.conn.removeSession(s)
	return nil
}

func (s *Session) removeConsumer(c *Consumer) {
	s.mu.Lock()
	delete(s.consumers, c)
	s.mu.Unlock()
}

// CreateProducer makes a producer for dest; a zero dest makes an anonymous
// producer that names the destination on each send.
func (s *Session) CreateProducer(dest message.Destination) (*Producer, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if !dest.IsZero() {
		if err := s.conn.authorize(ActionSend, dest); err != nil {
			return nil, err
		}
		if _, err := s.conn.b.resolve(dest, s.conn, false); err != nil {
			return nil, err
		}
	}
	return &Producer{sess: s, dest: dest, Defaults: s.conn.producerDefaults()}, nil
}

// CreateConsumer makes a consumer on a queue, or a subscription on a topic
// (durable and/or shared per opts).
func (s *Session) CreateConsumer(dest message.Destination, opts ConsumerOptions) (*Consumer, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	b := s.conn.b
	action := ActionConsume
	if dest.Kind.IsTopic() {
		action = ActionSubscribe
	}
	if err := s.conn.authorize(action, dest); err != nil {
		return nil, err
	}
	sel, err := compileSelector(opts.Selector)
	if err != nil {
		return nil, err
	}
	window := opts.Prefetch
	if window <= 0 {
		window = DefaultPrefetch
	}
	c := &Consumer{
		sess:   s,
		dest:   dest,
		sel:    sel,
		mode:   opts.CreditMode,
		window: window,
		signal: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	if c.mode != CreditManual {
		c.credit = window
	}
	if dest.Kind.IsTopic() {
		sub, err := b.subscribe(s.conn, dest, opts, sel, c)
		if err != nil {
			return nil, err
		}
		c.sub = sub
		c.q = sub.q
		c.sel = nil // the subscription filters at publish time
	} else {
		if opts.Durable || opts.Shared {
			return nil, errorf(CodeInvalidDestination, "durable and shared subscriptions need a topic, not %s", dest)
		}
		d, err := b.resolve(dest, s.conn, true)
		if err != nil {
			return nil, err
		}
		c.q = d.q
	}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil, errorf(CodeIllegalState, "session is closed")
	}
	s.consumers[c] = struct{}{}
	s.mu.Unlock()
	if err := c.q.addConsumer(c); err != nil {
		s.removeConsumer(c)
		if c.sub != nil {
			b.detachSubscription(c.sub, c)
		}
		return nil, err
	}
	return c, nil
}

// Unsubscribe deletes the durable subscription name of this connection's
// client ID. It fails while a consumer is active on it or while one of its
// messages is unacknowledged or in a transaction (WebLogic JMS "Managing Your
// Applications", "Deleting Durable Subscriptions").
func (s *Session) Unsubscribe(ctx context.Context, name string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.conn.b.unsubscribe(ctx, s.conn, name)
}

// CreateTemporaryQueue makes a queue that lives as long as the connection.
func (s *Session) CreateTemporaryQueue() (message.Destination, error) {
	if err := s.checkOpen(); err != nil {
		return message.Destination{}, err
	}
	return s.conn.createTemporary(message.TempQueue)
}

// CreateTemporaryTopic makes a topic that lives as long as the connection.
func (s *Session) CreateTemporaryTopic() (message.Destination, error) {
	if err := s.checkOpen(); err != nil {
		return message.Destination{}, err
	}
	return s.conn.createTemporary(message.TempTopic)
}

// isClosedErr reports whether err says an object was closed.
func isClosedErr(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Code == CodeIllegalState || e.Code == CodeConsumerClosed)
}
