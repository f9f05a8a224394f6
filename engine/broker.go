package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/grammar/selector"
)

// Broker is one Sluice engine instance: its destinations, subscriptions and
// connections, and its store.
type Broker struct {
	cfg Config
	// store is cfg.Store behind the fence (fence.go); nil without one.
	store *guardStore
	fence *fence // the fenced state; only its methods touch it (fence.go)
	log   *slog.Logger
	now   func() time.Time
	sched *scheduler
	pager *pager
	coll  *collector // deletes shared messages no ref record names (collect.go)
	flow  *Flow      // the flow gate (flow.go)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	seq      atomic.Uint64 // message and ref order; store keys
	connSeq  atomic.Uint64
	idPrefix string

	// mu guards the maps of destinations, subscriptions, client IDs and
	// connections. Lock order (see queue.go for the whole): Connection.mu,
	// then mu, then a topic's quotaMu and mu, then one queue.mu; mu is
	// never taken under a queue's, a topic's or a session's lock.
	mu        sync.RWMutex
	dests     map[message.Destination]*destination
	subs      map[string]*subscription
	clientIDs map[string]*clientIDUse
	conns     map[*Connection]struct{}
	closed    bool

	async asyncWriter
	acks  ackWatch // acknowledgement writes not yet durable (ack.go)

	totals totals // broker-wide counters (stats.go)
}

type clientIDUse struct {
	restricted *Connection
	n          int
}

// destination is a queue or a topic known to the broker.
type destination struct {
	dest    message.Destination
	q       *queue // for queues
	t       *topic // for topics
	owner   *Connection
	created int64
}

func (d *destination) consumerCount() int {
	if d.q != nil {
		return d.q.consumerCount()
	}
	n := 0
	for _, s := range d.t.all() {
		n += s.q.consumerCount()
	}
	return n
}

// New starts a broker. With a store, it first recovers every destination,
// durable subscription and persistent message the store holds.
func New(ctx context.Context, cfg Config) (*Broker, error) {
	b := &Broker{
		cfg:       cfg,
		fence:     newFence(),
		log:       cfg.Logger,
		now:       cfg.Now,
		dests:     map[message.Destination]*destination{},
		subs:      map[string]*subscription{},
		clientIDs: map[string]*clientIDUse{},
		conns:     map[*Connection]struct{}{},
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if cfg.Store != nil {
		b.store = newGuardStore(cfg.Store, b.fence, b.log)
	}
	if b.cfg.ExpiryScanInterval <= 0 {
		b.cfg.ExpiryScanInterval = time.Second
	}
	switch {
	case b.cfg.WindowMessages == 0:
		b.cfg.WindowMessages = DefaultWindowMessages
	case b.cfg.WindowMessages < 0:
		b.cfg.WindowMessages = math.MaxInt
	}
	switch {
	case b.cfg.WindowBytes == 0:
		b.cfg.WindowBytes = DefaultWindowBytes
	case b.cfg.WindowBytes < 0:
		b.cfg.WindowBytes = math.MaxInt64
	}
	b.idPrefix = "ID:sluice-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	b.sched = newScheduler(b.nowMillis)
	b.pager = newPager(b, cfg.PageScheduledAfter, cfg.PageLookahead)
	b.coll = newCollector(b)
	b.flow = newFlow(cfg, b.log, b.now)
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.async.b = b
	b.async.wake = make(chan struct{}, 1)
	if b.store != nil {
		if err := b.recover(ctx); err != nil {
			b.cancel()
			return nil, fmt.Errorf("recover store: %w", err)
		}
	} else if _, _, err := b.configure(); err != nil {
		b.cancel()
		return nil, err
	}
	b.wg.Add(3)
	go func() { defer b.wg.Done(); b.sched.run(b.ctx) }()
	if b.store != nil {
		b.wg.Add(2)
		go func() { defer b.wg.Done(); b.pager.run(b.ctx) }()
		go func() { defer b.wg.Done(); b.coll.run(b.ctx) }()
	} else {
		b.pager.after = -1 // nothing is stored: nothing can be paged
	}
	go func() { defer b.wg.Done(); b.expiryLoop() }()
	go func() { defer b.wg.Done(); b.async.run(b.ctx) }()
	if b.flow.limit > 0 {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.flow.run(b.ctx, cfg.MemoryCheckInterval) }()
	}
	return b, nil
}

// Close closes every connection, then stops the broker's goroutines and
// flushes pending store writes. It does not close the store.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	conns := make([]*Connection, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseWithReason(ClosedShutdown, nil)
	}
	b.cancel()
	b.wg.Wait()
	b.async.flush(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.acks.wait(ctx); err != nil {
		b.log.Warn("close", slog.Any("err", err))
	}
	return nil
}

func (b *Broker) nowMillis() int64 { return b.now().UnixMilli() }

func (b *Broker) policyFor(d message.Destination) Policy {
	if b.cfg.Policy == nil {
		return DefaultPolicy()
	}
	return b.cfg.Policy(d)
}

// Connect opens a connection. A client ID in opts is claimed at once.
func (b *Broker) Connect(opts ConnectionOptions) (*Connection, error) {
	c := &Connection{
		b:        b,
		id:       b.connSeq.Add(1),
		opts:     opts,
		sessions: map[*Session]struct{}{},
		temps:    map[message.Destination]*destination{},
		txns:     map[*Txn]struct{}{},
		created:  b.now(),
	}
	c.gateCond = sync.NewCond(&c.mu)
	if c.opts.Producer == (ProducerDefaults{}) {
		c.opts.Producer = DefaultProducerDefaults()
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errorf(CodeIllegalState, "broker is shutting down")
	}
	b.conns[c] = struct{}{}
	b.mu.Unlock()
	if opts.ClientID != "" {
		c.opts.ClientID = ""
		if err := c.SetClientID(opts.ClientID); err != nil {
			b.releaseConnection(c)
			return nil, err
		}
	}
	b.totals.opened(opts.Protocol)
	b.log.Info("connection opened", c.logAttrs()...)
	return c, nil
}

func (b *Broker) claimClientID(id string, c *Connection) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	use := b.clientIDs[id]
	if c.opts.ClientIDPolicy == Restricted && use != nil && use.n > 0 {
		return errorf(CodeInvalidClientID, "client ID %q is already in use by another connection", id)
	}
	if use == nil {
		use = &clientIDUse{}
		b.clientIDs[id] = use
	}
	use.n++
	if c.opts.ClientIDPolicy == Restricted {
		use.restricted = c
	}
	return nil
}

func (b *Broker) releaseConnection(c *Connection) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c)
	id := c.clientID
	if id == "" {
		return
	}
	if use := b.clientIDs[id]; use != nil {
		use.n--
		if use.restricted == c {
			use.restricted = nil
		}
		if use.n <= 0 {
			delete(b.clientIDs, id)
		}
	}
}

// configure creates the configured destinations that do not exist yet and
// compares those recovered from the store with their configured creation
// time. It returns the destinations whose stored messages and durable
// subscriptions belong to an older incarnation (to be discarded; for a
// destination new to the store, anything left under its name is), and
// the store writes that record the configured creation times.
func (b *Broker) configure() (older map[message.Destination]bool, ops []store.Op, err error) {
	older = map[message.Destination]bool{}
	seen := map[message.Destination]bool{}
	for _, cd := range b.cfg.Destinations {
		dest := cd.Destination
		if dest.Kind != message.Queue && dest.Kind != message.Topic {
			return nil, nil, fmt.Errorf("configured destination %s: only queues and topics can be configured", dest)
		}
		if err := validateDestName(dest.Name); err != nil {
			return nil, nil, fmt.Errorf("configured destination %s: %w", dest, err)
		}
		if seen[dest] {
			return nil, nil, fmt.Errorf("destination %s is configured twice", dest)
		}
		seen[dest] = true
		var want int64
		if !cd.Created.IsZero() {
			want = cd.Created.UnixMilli()
		}
		d := b.dests[dest]
		switch {
		case d == nil:
			created := want
			if created == 0 {
				created = b.nowMillis()
			}
			d = b.newDestination(dest, nil, created)
			b.dests[dest] = d
			older[dest] = true
			ops = append(ops, destRecordOp(d))
		case want == 0 || d.created == want:
		case d.created < want:
			b.log.Warn("destination re-created: messages of its older incarnation discarded",
				slog.String("destination", dest.String()),
				slog.String("stored_creation_time", time.UnixMilli(d.created).UTC().Format(time.RFC3339Nano)),
				slog.String("configured_creation_time", time.UnixMilli(want).UTC().Format(time.RFC3339Nano)))
			older[dest] = true
			d.created = want
			ops = append(ops, destRecordOp(d))
		default:
			return nil, nil, fmt.Errorf("destination %s: the store holds messages of an incarnation created at %s (%d ms), "+
				"after the configured creation time %s (%d ms): either the system clock was set back when the destination "+
				"was deleted and re-created, or a different configuration is in use. To keep those messages set the "+
				"destination's creation time to %d; to discard them set it later than that",
				dest, time.UnixMilli(d.created).UTC().Format(time.RFC3339Nano), d.created,
				time.UnixMilli(want).UTC().Format(time.RFC3339Nano), want, d.created)
		}
	}
	return older, ops, nil
}

// compileSelector compiles a selector, mapping errors to CodeInvalidSelector.
func compileSelector(src string) (*selector.Selector, error) {
	if selector.IsEmpty(src) {
		return nil, nil
	}
	sel, err := selector.Compile(src)
	if err != nil {
		return nil, &Error{Code: CodeInvalidSelector, Msg: "invalid selector", Err: err}
	}
	return sel, nil
}

// newDestination builds (but does not register) a destination.
func (b *Broker) newDestination(dest message.Destination, owner *Connection, created int64) *destination {
	d := &destination{dest: dest, owner: owner, created: created}
	if dest.Kind.IsTopic() {
		d.t = newTopic(d)
	} else {
		bucket := ""
		if dest.Kind == message.Queue && b.store != nil {
			bucket = records.QueueBucket(dest.Name)
		}
		d.q = newQueue(b, dest, nil, bucket)
	}
	return d
}

func (b *Broker) addDestination(d *destination) {
	b.mu.Lock()
	b.dests[d.dest] = d
	b.mu.Unlock()
}

// resolve finds a destination, creating it when AutoCreate allows.
// consuming says the caller will consume from it (temporary destinations
// allow only their own connection to).
func (b *Broker) resolve(dest message.Destination, conn *Connection, consuming bool) (*destination, error) {
	if dest.Kind == message.NoDest || dest.Name == "" {
		return nil, errorf(CodeInvalidDestination, "destination has no name")
	}
	b.mu.RLock()
	d := b.dests[dest]
	b.mu.RUnlock()
	if d != nil {
		if consuming && d.owner != nil && d.owner != conn {
			return nil, errorf(CodeInvalidDestination, "%s belongs to another connection: only the connection that created a temporary destination may consume from it", dest)
		}
		return d, nil
	}
	if dest.Kind.IsTemporary() {
		return nil, errorf(CodeInvalidDestination, "temporary destination %s does not exist", dest)
	}
	if !b.cfg.AutoCreate {
		return nil, errorf(CodeInvalidDestination, "destination %s does not exist", dest)
	}
	if conn != nil {
		if err := conn.authorize(ActionCreate, dest); err != nil {
			return nil, err
		}
	}
	d, _, err := b.createDestination(context.Background(), dest)
	return d, err
}

// CreateDestination creates a queue or topic at run time; it is no error if
// it exists already (created reports whether it was new).
func (b *Broker) CreateDestination(ctx context.Context, dest message.Destination) (created bool, err error) {
	if dest.Kind != message.Queue && dest.Kind != message.Topic {
		return false, errorf(CodeInvalidDestination, "only queues and topics can be created, not %s", dest.Kind)
	}
	if err := validateDestName(dest.Name); err != nil {
		return false, err
	}
	_, created, err = b.createDestination(ctx, dest)
	return created, err
}

// ValidateDestinationName reports whether name can name a queue or topic:
// not empty, at most 255 bytes, no control characters. Creating a
// destination (by a client, an administrator or the configuration) checks
// it; configuration checks call it to refuse a name before the broker
// starts.
func ValidateDestinationName(name string) error { return validateDestName(name) }

func validateDestName(name string) error {
	if name == "" {
		return errorf(CodeInvalidDestination, "destination name is empty")
	}
	if len(name) > 255 {
		return errorf(CodeInvalidDestination, "destination name is longer than 255 bytes")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errorf(CodeInvalidDestination, "destination name %q contains a control character", name)
		}
	}
	return nil
}

func (b *Broker) createDestination(ctx context.Context, dest message.Destination) (*destination, bool, error) {
	if err := validateDestName(dest.Name); err != nil {
		return nil, false, err
	}
	b.mu.Lock()
	if d := b.dests[dest]; d != nil {
		b.mu.Unlock()
		return d, false, nil
	}
	d := b.newDestination(dest, nil, b.nowMillis())
	b.dests[dest] = d
	b.mu.Unlock()
	if b.store != nil {
		if err := b.store.Update(ctx, []store.Op{destRecordOp(d)}); err != nil {
			if indeterminate(err) {
				// Fenced: the record may be stored; nothing is undone.
				return nil, false, fmt.Errorf("create %s: %w", dest, outcomeUnknown("the destination", err))
			}
			b.mu.Lock()
			delete(b.dests, dest)
			b.mu.Unlock()
			return nil, false, fmt.Errorf("create %s: %w", dest, err)
		}
	}
	b.log.Info("destination created", slog.String("destination", dest.String()))
	return d, true, nil
}

// stamp sets the header fields a send assigns, applying producer defaults,
// per-send options and destination overrides (the destination wins).
func (b *Broker) stamp(d *destination, conn *Connection, m *message.Message, def ProducerDefaults, o SendOptions) error {
	now := b.nowMillis()
	pol := b.policyFor(d.dest)
	m.Destination = d.dest
	m.Timestamp = now
	m.Producer = conn.id
	conn.stampUserID(m)
	if m.ID == "" {
		var buf [64]byte
		m.ID = string(strconv.AppendUint(append(buf[:0], b.idPrefix...), b.seq.Add(1), 10))
	}
	m.DeliveryMode = def.DeliveryMode
	if o.Set&SetDeliveryMode != 0 {
		m.DeliveryMode = o.DeliveryMode
	}
	if pol.DeliveryModeOverride != 0 {
		m.DeliveryMode = pol.DeliveryModeOverride
	}
	if m.DeliveryMode != message.Persistent {
		m.DeliveryMode = message.NonPersistent
	}
	if d.dest.Kind.IsTemporary() {
		m.DeliveryMode = message.NonPersistent
	}
	prio := int(def.Priority)
	if o.Set&SetPriority != 0 {
		prio = int(o.Priority)
	}
	if pol.PriorityOverride >= 0 {
		prio = pol.PriorityOverride
	}
	if prio < 0 || prio > 9 {
		return errorf(CodeMessageFormat, "priority %d is out of range 0-9", prio)
	}
	m.Priority = uint8(prio)
	ttl := def.TimeToLive
	if o.Set&SetTimeToLive != 0 {
		ttl = o.TimeToLive
	}
	m.Expiration = 0
	if ttl > 0 {
		m.Expiration = now + ttl.Milliseconds()
	}
	if o.Set&SetExpiration != 0 {
		m.Expiration = o.Expiration
	}
	if pol.TimeToLiveOverride >= 0 {
		m.Expiration = 0
		if pol.TimeToLiveOverride > 0 {
			m.Expiration = now + pol.TimeToLiveOverride.Milliseconds()
		}
	}
	ttd := def.TimeToDeliver
	if o.Set&SetTimeToDeliver != 0 {
		ttd = o.TimeToDeliver
	}
	m.DeliveryTime = now + ttd.Milliseconds()
	if o.Set&SetDeliveryTime != 0 && o.DeliveryTime > 0 {
		m.DeliveryTime = o.DeliveryTime
	}
	if pol.TimeToDeliverSchedule != nil {
		m.DeliveryTime = pol.TimeToDeliverSchedule(b.now()).UnixMilli()
	} else if pol.TimeToDeliverOverride >= 0 {
		m.DeliveryTime = now + pol.TimeToDeliverOverride.Milliseconds()
	}
	m.RedeliveryLimit = def.RedeliveryLimit
	if o.Set&SetRedeliveryLimit != 0 {
		m.RedeliveryLimit = o.RedeliveryLimit
	}
	return nil
}

// send stamps, routes, stores and enqueues one message.
func (b *Broker) send(ctx context.Context, conn *Connection, dest message.Destination, m *message.Message, def ProducerDefaults, o SendOptions) error {
	d, err := b.prepareSend(conn, dest, m, def, o)
	if err != nil {
		return err
	}
	return b.sendPrepared(ctx, d, m)
}

// prepareSend resolves a send's destination, stamps the message and takes
// its place in the destination's quota.
func (b *Broker) prepareSend(conn *Connection, dest message.Destination, m *message.Message, def ProducerDefaults, o SendOptions) (*destination, error) {
	d, err := b.resolve(dest, conn, false)
	if err != nil {
		return nil, err
	}
	if err := b.stamp(d, conn, m, def, o); err != nil {
		return nil, err
	}
	if b.flow.limit > 0 {
		b.flow.noteSent(m.Size())
	}
	if d.q != nil {
		if pol := b.policyFor(d.dest); pol.MaxMessages > 0 || pol.MaxBytes > 0 {
			if err := d.q.reserve(m, pol); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// sendPrepared routes, stores and enqueues a prepared message, and returns
// once it is durable (or consumed, see early.go).
func (b *Broker) sendPrepared(ctx context.Context, d *destination, m *message.Message) error {
	var refs []*ref
	if d.q != nil && (d.q.bucket == "" || m.DeliveryMode != message.Persistent) {
		// The common non-persistent case: one ref, nothing to store,
		// unless it goes behind a backlog (queueRef).
		r := b.queueRef(d.q, m)
		if r.rec == nil {
			d.q.add(r)
			return nil
		}
		refs = []*ref{r}
	}
	refs, err := b.routeUnless(d, m, refs)
	if err != nil {
		return err
	}
	if d.t != nil {
		// A topic's quota is on what its subscriptions hold, known once
		// the message is routed.
		if err := d.t.reserve(m, refs, b.policyFor(d.dest)); err != nil {
			b.undoAdd(refs)
			return err
		}
	}
	if d.q != nil {
		if ok, err := b.sendEarly(ctx, refs[0]); ok {
			return err
		}
	}
	if ops := b.storeOpsForAdd(refs, nil); len(ops) > 0 {
		if err := b.store.Update(ctx, ops); err != nil {
			if indeterminate(err) {
				// Fenced: the message may be stored. It is neither
				// forgotten nor delivered from this engine; the one
				// rebuilt from the store has it if it was applied.
				return outcomeUnknown("the message to "+d.dest.String(), err)
			}
			b.undoAdd(refs)
			return fmt.Errorf("store message for %s: %w", d.dest, err)
		}
	}
	b.enqueue(refs)
	return nil
}

// route makes the refs a message needs: one for a queue, one per matching
// subscription for a topic. Persistent messages get a shared store identity
// for the refs that live in the store.
func (b *Broker) route(d *destination, m *message.Message) ([]*ref, error) {
	if d.q != nil {
		return []*ref{b.queueRef(d.q, m)}, nil
	}
	return d.t.publish(b, m, b.seq.Add(1)), nil
}

// routeUnless is route, unless refs were made already.
func (b *Broker) routeUnless(d *destination, m *message.Message, refs []*ref) ([]*ref, error) {
	if refs != nil {
		return refs, nil
	}
	return b.route(d, m)
}

// queueRef makes the ref of a message sent to queue q. A persistent
// message gets a store identity; so does a non-persistent one that goes
// behind a backlog filling q's window, so that it can wait in the store
// rather than in memory (paging): it is written like a persistent one,
// marked transient, and recovery discards it.
func (b *Broker) queueRef(q *queue, m *message.Message) *ref {
	seq := b.seq.Add(1)
	r := &ref{msg: m, seq: seq, q: q, deliverAt: deliverAt(m), size: int32(m.Size())}
	if q.bucket == "" || b.store == nil {
		return r
	}
	switch {
	case m.DeliveryMode == message.Persistent:
		r.rec = &stored{key: seq}
	case r.deliverAt == 0 && q.backlogged():
		r.rec = &stored{key: seq, transient: true}
	default:
		return r
	}
	r.rec.refs.Store(1)
	return r
}

// deliverAt is when a new message becomes visible; 0 means at once.
func deliverAt(m *message.Message) int64 {
	if m.DeliveryTime > m.Timestamp {
		return m.DeliveryTime
	}
	return 0
}

// enqueue hands routed refs to their queues.
func (b *Broker) enqueue(refs []*ref) {
	byQueue(refs, func(q *queue, rs []*ref) { q.add(rs...) })
}

// undoAdd forgets refs that were routed but could not be stored, and
// gives back the room their send reserved under the quota.
func (b *Broker) undoAdd(refs []*ref) {
	for _, r := range refs {
		r.state = refGone
		r.q.unreserve(r.msg)
	}
}

// dropRefs deletes refs of a deleted or purged queue from the store.
func (b *Broker) dropRefs(refs []*ref) {
	if ops := b.storeOpsForRemove(refs, nil); len(ops) > 0 {
		b.async.add(ops)
	}
}

// settle acknowledges refs: removes them from the store (waiting for
// durability when sync) and from their queues.
func (b *Broker) settle(ctx context.Context, refs []*ref, sync bool) error {
	if len(refs) == 0 {
		return nil
	}
	var recs []*stored
	if sync {
		recs = recsOf(refs)
	}
	if ops := b.storeOpsForRemove(refs, nil); len(ops) > 0 {
		if !sync {
			b.async.add(ops)
		} else if err := b.store.Update(ctx, ops); err != nil {
			if indeterminate(err) {
				// Fenced: the refs stay as they are, neither settled nor
				// given back.
				return outcomeUnknown("the acknowledgement", err)
			}
			return b.settleFailed(refs, recs, fmt.Errorf("store acknowledgement: %w", err))
		}
	}
	byQueue(refs, func(q *queue, rs []*ref) { q.settle(rs) })
	return nil
}

// settleFailed handles an acknowledgement of refs the store refused: each
// ref gets its store record back and stays in flight, except one whose
// early write was withdrawn (consumed before it was ever stored: nothing
// to undo), which is settled. It returns an *ackError wrapping err that
// names the refs settled; the others are the caller's to give back.
func (b *Broker) settleFailed(refs []*ref, recs []*stored, err error) error {
	var done []*ref
	for i, r := range refs {
		if rec := recs[i]; rec != nil && r.rec == nil {
			if rec.early != nil && isClosed(rec.early.consumed) {
				done = append(done, r)
				continue
			}
			rec.refs.Add(1)
			r.rec = rec
		}
	}
	byQueue(done, func(q *queue, rs []*ref) { q.settle(rs) })
	return &ackError{err: err, settled: done}
}

// ackError is an acknowledgement the store refused; settled are the refs
// it settled all the same (see settleFailed).
type ackError struct {
	err     error
	settled []*ref
}

func (e *ackError) Error() string { return e.err.Error() }

func (e *ackError) Unwrap() error { return e.err }

// requeue returns refs to their queues; failed deliveries count against the
// redelivery limit, and those over it go to the error destination.
func (b *Broker) requeue(ctx context.Context, refs []*ref, failed bool, delay time.Duration) {
	_ = b.requeueConfirm(ctx, refs, failed, delay)
}

// requeueConfirm is requeue without waiting for the store. The records
// that keep the refs true across a restart (a redelivery delay, an attempt
// counted but never made) are submitted to be committed with other writes,
// so that many consumers' NACKs, releases and recovers share a sync; the
// refs they concern stay held, out of every consumer's reach, until their
// records are durable (then released, in submission order, by b.acks).
// The Confirmation says when they are durable: nil when nothing was
// written or the store wrote it at once. Dead-lettering refs past their
// redelivery limit is not deferred.
//
// A crash before the records are durable leaves the earlier ones: the
// message comes back flagged redelivered with the delivery count recorded
// at its delivery, without the delay.
func (b *Broker) requeueConfirm(ctx context.Context, refs []*ref, failed bool, delay time.Duration) *Confirmation {
	var conf *Confirmation
	sub, canSubmit := b.submitter()
	byQueue(refs, func(q *queue, rs []*ref) {
		// q.requeue computes the record updates under its lock: once it
		// unlocks, the refs may already be in flight to another consumer.
		dead, held, ops := q.requeue(rs, failed, delay)
		if len(ops) > 0 {
			if canSubmit {
				p := sub.Submit(ops, markLinger)
				// The journal commits submitted writes in order: the last
				// one done means every earlier one is, and b.acks releases
				// in that order too. A ref due now goes back at once, in
				// its place (ordered redelivery: a release must not let
				// the next message overtake it): whatever its next
				// delivery writes (a delivery mark) is submitted after
				// this record, so it is committed after it too. A delayed
				// ref waits for its record, which carries its delay.
				rp := &releasedPending{Pending: p, done: make(chan struct{})}
				conf = &Confirmation{ack: rp, dest: q.dest, record: true}
				var hold, now []*ref
				at := b.nowMillis()
				for _, r := range held {
					if r.deliverAt > at {
						hold = append(hold, r)
					} else {
						now = append(now, r)
					}
				}
				if len(now) > 0 {
					q.release(now)
				}
				b.acks.watchThen(b, p, 0, func(err error) {
					if err != nil {
						b.log.Error("record redelivery", slog.String("destination", q.dest.String()), slog.Any("err", err))
					}
					if len(hold) > 0 {
						q.release(hold)
					}
					close(rp.done)
				})
				held = nil
			} else if err := b.store.Update(context.WithoutCancel(ctx), ops); err != nil {
				b.log.Error("record redelivery", slog.String("destination", q.dest.String()), slog.Any("err", err))
			}
		}
		if len(held) > 0 {
			q.release(held)
		}
		if len(dead) > 0 {
			b.deadLetter(ctx, q, dead, reasonRedeliveryLimit)
		}
	})
	return conf
}

// releasedPending is the write of redelivery records, done once the refs
// it held are released as well: whoever waits for it finds them back on
// their queue.
type releasedPending struct {
	store.Pending
	done chan struct{}
}

func (p *releasedPending) Done() <-chan struct{} { return p.done }

// reject settles in-flight refs as undeliverable: to the error destination,
// or deleted when there is none.
func (b *Broker) reject(ctx context.Context, refs []*ref, reason string) {
	byQueue(refs, func(q *queue, rs []*ref) {
		b.deadLetter(ctx, q, q.reject(rs), reason)
	})
}

// Properties the engine adds to a message it moves to an error destination.
const (
	PropErrorReason         = "JMS_SluiceErrorReason"
	PropOriginalDestination = "JMS_SluiceOriginalDestination"
	PropDeliveryCount       = "JMS_SluiceDeliveryCount"
)

// Reasons for moving a message to its error destination, as
// PropErrorReason gives them (a consumer's rejection gives its own).
const (
	reasonRedeliveryLimit = "redelivery limit exceeded"
	reasonExpired         = "expired"
)

// deadLetter moves refs (already out of q's accounting) to q's error
// destination, or deletes them when it has none. When the store refuses
// the move, the messages stay on q, where the store still has them, out of
// reach of consumers, and the move is tried again later (see
// queue.keepUndeliverable); each such message is logged at error level.
func (b *Broker) deadLetter(ctx context.Context, q *queue, refs []*ref, reason string) {
	b.moveUndeliverable(ctx, q, refs, reason, 0)
}

// moveUndeliverable is deadLetter after tries failed attempts.
func (b *Broker) moveUndeliverable(ctx context.Context, q *queue, refs []*ref, reason string, tries int) {
	if len(refs) == 0 {
		return
	}
	pol := q.policy()
	recs := recsOf(refs)
	ops := b.storeOpsForUndoableRemove(refs, nil)
	var plan []*ref
	var errDest message.Destination
	if !pol.ErrorDestination.IsZero() && pol.ErrorDestination != q.dest {
		ed, err := b.resolve(pol.ErrorDestination, nil, false)
		if err != nil {
			b.log.Error("error destination unavailable; messages deleted", slog.String("destination", q.dest.String()),
				slog.String("error_destination", pol.ErrorDestination.String()), slog.Any("err", err), slog.Int("messages", len(refs)))
		} else {
			errDest = ed.dest
			for _, r := range refs {
				m := r.msg.Clone()
				m.Destination = ed.dest
				m.Expiration = 0
				m.DeliveryTime = 0
				m.Props.SetUnchecked(PropErrorReason, message.StringValue(reason))
				m.Props.SetUnchecked(PropOriginalDestination, message.StringValue(q.dest.String()))
				m.Props.SetUnchecked(PropDeliveryCount, message.IntValue(r.count))
				rs, _ := b.route(ed, m)
				plan = append(plan, rs...)
			}
			ops = b.storeOpsForAdd(plan, ops)
		}
	} else {
		b.log.Debug("undeliverable messages deleted", slog.String("destination", q.dest.String()), slog.String("reason", reason), slog.Int("messages", len(refs)))
	}
	if len(ops) > 0 {
		if err := b.store.Update(context.WithoutCancel(ctx), ops); err != nil {
			if indeterminate(err) {
				// Fenced: the move may be stored; nothing is undone and
				// nothing retried.
				b.log.Error("undeliverable messages: the outcome of their move to the error destination (or deletion) is unknown; the engine is fenced",
					slog.String("destination", q.dest.String()), slog.String("error_destination", errDest.String()),
					slog.Int("messages", len(refs)), slog.Any("err", err))
				return
			}
			b.undoAdd(plan)
			for i, r := range refs {
				if recs[i] != nil && r.rec == nil {
					recs[i].refs.Add(1)
					r.rec = recs[i]
				}
			}
			retry, kept := q.keepUndeliverable(refs, reason, tries+1)
			if !kept {
				b.log.Error("undeliverable messages of a deleted destination dropped: the store refused their move to the error destination",
					slog.String("destination", q.dest.String()), slog.String("error_destination", errDest.String()),
					slog.Int("messages", len(refs)), slog.Any("err", err))
				return
			}
			if tries > 0 {
				// Each message was logged at its first failure.
				b.log.Error("undeliverable messages still kept on their destination: the store refused their move again; will retry",
					slog.String("destination", q.dest.String()), slog.String("error_destination", errDest.String()),
					slog.Int("messages", len(refs)), slog.Int("attempt", tries+1), slog.Duration("retry_in", retry), slog.Any("err", err))
				return
			}
			for _, r := range refs {
				b.log.Error("undeliverable message kept on its destination: the store refused its move to the error destination (or its deletion); will retry",
					slog.String("destination", q.dest.String()), slog.String("error_destination", errDest.String()),
					slog.String("message_id", r.msg.ID), slog.String("reason", reason),
					slog.Duration("retry_in", retry), slog.Any("err", err))
			}
			return
		}
	}
	if tries > 0 {
		b.log.Warn("undeliverable messages kept after a store failure are now moved to the error destination (or deleted)",
			slog.String("destination", q.dest.String()), slog.String("error_destination", errDest.String()),
			slog.Int("messages", len(refs)), slog.Int("attempts", tries+1))
	}
	b.enqueue(plan)
}

// expireRefs applies the expiration policy to refs found expired in q
// (already removed from its lists).
func (b *Broker) expireRefs(q *queue, refs []*ref) {
	if len(refs) == 0 {
		return
	}
	var bytes int64
	for _, r := range refs {
		bytes += int64(r.size)
	}
	q.forgetExpired(len(refs), bytes)
	pol := q.policy()
	switch pol.Expiration {
	case ExpireRedirect:
		b.deadLetter(context.Background(), q, refs, reasonExpired)
		return
	case ExpireLog:
		for _, r := range refs {
			b.log.Info("message expired", slog.String("destination", q.dest.String()),
				slog.String("message_id", r.msg.ID), slog.Int64("expiration", r.msg.Expiration))
		}
	}
	b.dropRefs(refs)
}

func (b *Broker) expiryLoop() {
	t := time.NewTicker(b.cfg.ExpiryScanInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		now := b.nowMillis()
		for _, q := range b.allQueues() {
			q.expireScan(now)
		}
	}
}

// allQueues lists every queue, subscription queues included.
func (b *Broker) allQueues() []*queue {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var qs []*queue
	for _, d := range b.dests {
		if d.q != nil {
			qs = append(qs, d.q)
		} else {
			for _, s := range d.t.all() {
				qs = append(qs, s.q)
			}
		}
	}
	return qs
}

// DeleteDestination deletes a queue or topic at run time, as WebLogic JMS
// "Managing Your Applications", "What Happens when a Destination is Deleted"
// describes: its durable subscriptions and messages go; its consumers and
// browsers close with "Destination was deleted"; sends waiting for quota fail.
func (b *Broker) DeleteDestination(ctx context.Context, dest message.Destination) error {
	return b.deleteDestination(ctx, dest, false)
}

func (b *Broker) deleteDestination(ctx context.Context, dest message.Destination, force bool) error {
	b.mu.Lock()
	d := b.dests[dest]
	if d == nil {
		b.mu.Unlock()
		return errorf(CodeInvalidDestination, "destination %s does not exist", dest)
	}
	delete(b.dests, dest)
	var subs []*subscription
	if d.t != nil {
		subs = d.t.all()
		for _, s := range subs {
			delete(b.subs, s.key)
		}
	}
	b.mu.Unlock()
	if d.t != nil {
		d.t.markDeleted() // sends waiting for its quota fail
	}
	reason := errorf(CodeConsumerClosed, "Destination was deleted")
	var qs []*queue
	if d.q != nil {
		qs = append(qs, d.q)
	}
	for _, s := range subs {
		qs = append(qs, s.q)
	}
	var ops []store.Op
	for _, q := range qs {
		refs, paged := q.drainAllIO()
		// Messages kept only in the store (paged, or scheduled and paged
		// out) go now, before the bucket that names them.
		b.deletePagedMessages(ctx, q.bucket, paged)
		ops = b.storeOpsForRemove(refs, ops)
		for _, c := range q.consumerList() {
			_ = c.close(reason)
		}
		if q.bucket != "" {
			ops = append(ops, store.Op{Kind: store.DeleteBucket, Bucket: q.bucket},
				store.Op{Kind: store.DeleteBucket, Bucket: records.SchedBucket(q.bucket)})
		}
	}
	for _, s := range subs {
		if s.durable {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Subscriptions, Key: []byte(s.key)})
		}
	}
	if b.store != nil && !dest.Kind.IsTemporary() {
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Destinations, Key: records.DestinationKey(dest)})
	}
	b.closeBrowsers(dest)
	if len(ops) > 0 && b.store != nil {
		if err := b.store.Update(ctx, ops); err != nil {
			return fmt.Errorf("delete %s: %w", dest, err)
		}
	}
	b.log.Info("destination deleted", slog.String("destination", dest.String()))
	return nil
}

// Purge removes every message waiting on a queue, ready or scheduled
// (whether kept in memory or paged out to the store), and returns how many
// it removed; messages in flight stay. The messages leave the queue's
// count and size, and so its quota, at once, and the store in the same
// update; when the store refuses it nothing is purged. Messages kept only
// in the store (paging) then go a batch of AdminBatch at a time: a refused
// batch, and those after it, stay, and the count says how many went.
func (b *Broker) Purge(ctx context.Context, dest message.Destination) (int, error) {
	b.mu.RLock()
	d := b.dests[dest]
	b.mu.RUnlock()
	if d == nil || d.q == nil {
		return 0, errorf(CodeInvalidDestination, "queue %s does not exist", dest)
	}
	q := d.q
	t := q.take(nil)
	// Undoable: a refused update puts everything back, so no message's
	// pending first write may be taken back before the purge is durable.
	if err := b.update(ctx, t.removeOps(q, nil)); err != nil {
		if indeterminate(err) {
			return 0, fmt.Errorf("purge %s: %w", dest, outcomeUnknown("the purge", err))
		}
		q.restore(t)
		return 0, fmt.Errorf("purge %s: %w", dest, err)
	}
	// Messages kept only in the store go a batch at a time: a failure
	// leaves the batches not yet removed.
	n, err := q.takePaged(nil, func(refs []*ref) error {
		return b.update(ctx, b.storeOpsForRemove(refs, nil))
	})
	if err != nil {
		return t.len() + n, fmt.Errorf("purge %s: %w", dest, err)
	}
	return t.len() + n, nil
}
