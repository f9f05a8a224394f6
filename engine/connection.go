package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// ClientIDPolicy says whether other connections may use the same client ID
// (WebLogic JMS "Managing Your Applications", "Setting the Client ID Policy").
type ClientIDPolicy uint8

// Client ID policies; Restricted is the default.
const (
	Restricted ClientIDPolicy = iota
	Unrestricted
)

// String returns the policy's WebLogic name.
func (p ClientIDPolicy) String() string {
	if p == Unrestricted {
		return "UNRESTRICTED"
	}
	return "RESTRICTED"
}

// SharingPolicy says whether subscribers of this connection may share
// subscriptions (WebLogic JMS "Managing Your Applications", "Creating a
// Sharable Subscription Policy").
type SharingPolicy uint8

// Subscription sharing policies; Exclusive is the default.
const (
	Exclusive SharingPolicy = iota
	Sharable
)

// String returns the policy's WebLogic name.
func (p SharingPolicy) String() string {
	if p == Sharable {
		return "Sharable"
	}
	return "Exclusive"
}

// ConnectionOptions are a connection factory's settings.
type ConnectionOptions struct {
	// ClientID, when set, is the connection's client ID from the start.
	ClientID string
	// ClientIDPolicy and SharingPolicy: see their types.
	ClientIDPolicy ClientIDPolicy
	SharingPolicy  SharingPolicy
	// RedeliveryDelay is inherited by every session the connection makes.
	RedeliveryDelay time.Duration
	// Producer defaults inherited by every producer the connection makes.
	Producer ProducerDefaults
	// RemoteAddr and Protocol describe the client, for the admin API.
	RemoteAddr string
	Protocol   string
	// User is the user the front-end authenticated; "" is anonymous. It is
	// shown by the admin API, logged, and stamped as JMSXUserID when the
	// broker's Config.StampUserID asks for it.
	User string
	// Permissions decide what the connection may do (see Action); nil
	// allows everything.
	Permissions Permissions
	// MaxTransactions bounds the explicit transactions open at once on
	// the connection (STOMP BEGIN, AMQP declare): BeginTxn refuses one
	// more with CodeResourceAllocation. 0 is no limit.
	MaxTransactions int
}

// MetaData is the connection metadata of JMS (Table 6-2 of WebLogic JMS
// "Managing Your Applications", "Accessing Connection Metadata").
type MetaData struct {
	JMSVersion           string
	JMSMajorVersion      int
	JMSMinorVersion      int
	ProviderName         string
	ProviderVersion      string
	ProviderMajorVersion int
	ProviderMinorVersion int
	JMSXPropertyNames    []string
}

// Connection is a client's connection to the broker (JMS Connection). A new
// connection is stopped: it delivers nothing until Start.
type Connection struct {
	b    *Broker
	id   uint64
	opts ConnectionOptions

	started atomic.Bool

	// mu guards the connection's sessions, client ID and delivery gate.
	// Lock order (see queue.go for the whole): mu is outermost: under it
	// a connection may take Broker.mu (claiming its client ID) or one of
	// its sessions' mu (management's snapshot); no queue lock.
	mu       sync.Mutex
	gateCond *sync.Cond
	active   int // deliveries in progress (listeners, receives)
	// stopping is closed when the connection stops or closes, and made
	// anew when it starts: a listener or receive waiting for a message
	// watches it, so that Stop does not wait for messages that never come.
	stopping chan struct{}
	clientID string
	sessions map[*Session]struct{}
	temps    map[message.Destination]*destination
	txns     map[*Txn]struct{} // explicit transactions still open
	closed   bool
	// endLogged is set by the close that logs and counts the end.
	endLogged bool
	onErr     func(error)
	created   time.Time
	nextSess  uint64

	decisions decisions // authorization answers; its own lock, a leaf
}

// ID returns the broker-unique connection number.
func (c *Connection) ID() uint64 { return c.id }

// ClientID returns the client ID, or "" when none is set.
func (c *Connection) ClientID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientID
}

// SetClientID sets the client ID once. A second set is an illegal-state
// error; a client ID in use by another Restricted connection is an
// invalid-client-ID error.
func (c *Connection) SetClientID(id string) error {
	if id == "" {
		return errorf(CodeInvalidClientID, "client ID must not be empty")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errorf(CodeIllegalState, "connection is closed")
	}
	if c.clientID != "" {
		return errorf(CodeIllegalState, "client ID is already set to %q", c.clientID)
	}
	if err := c.b.claimClientID(id, c); err != nil {
		return err
	}
	c.clientID = id
	return nil
}

// ClientIDPolicy returns the connection's client ID policy.
func (c *Connection) ClientIDPolicy() ClientIDPolicy { return c.opts.ClientIDPolicy }

// SetSharingPolicy overrides the connection factory's subscription sharing policy.
func (c *Connection) SetSharingPolicy(p SharingPolicy) {
	c.mu.Lock()
	c.opts.SharingPolicy = p
	c.mu.Unlock()
}

// SharingPolicy returns the subscription sharing policy.
func (c *Connection) SharingPolicy() SharingPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts.SharingPolicy
}

// SetExceptionListener sets the function told of problems no call would
// otherwise report (WebLogic JMS "Managing Your Applications", "Defining a
// Connection Exception Listener").
func (c *Connection) SetExceptionListener(fn func(error)) {
	c.mu.Lock()
	c.onErr = fn
	c.mu.Unlock()
}

func (c *Connection) notify(err error) {
	c.mu.Lock()
	fn := c.onErr
	c.mu.Unlock()
	if fn != nil {
		fn(err)
	}
}

// MetaData returns the connection metadata.
func (c *Connection) MetaData() MetaData {
	major, minor := 0, 0
	fmt.Sscanf(c.b.cfg.ProviderVersion, "%d.%d", &major, &minor)
	return MetaData{
		JMSVersion: "2.0", JMSMajorVersion: 2, JMSMinorVersion: 0,
		ProviderName:         "Sluice",
		ProviderVersion:      c.b.cfg.ProviderVersion,
		ProviderMajorVersion: major,
		ProviderMinorVersion: minor,
		JMSXPropertyNames:    message.JMSXPropertyNames(),
	}
}

// Start starts (or restarts) delivery.
func (c *Connection) Start() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errorf(CodeIllegalState, "connection is closed")
	}
	if !c.started.Load() {
		c.stopping = make(chan struct{})
	}
	c.started.Store(true)
	c.gateCond.Broadcast()
	var qs []*queue
	for s := range c.sessions {
		s.mu.Lock()
		for cons := range s.consumers {
			qs = append(qs, cons.q)
		}
		s.mu.Unlock()
	}
	c.mu.Unlock()
	for _, q := range qs {
		q.kick()
	}
	return nil
}

// Stop pauses delivery and waits until running listeners and receives have
// returned. Sends are unaffected.
func (c *Connection) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errorf(CodeIllegalState, "connection is closed")
	}
	c.pauseLocked()
	for c.active > 0 {
		c.gateCond.Wait()
	}
	return nil
}

// pauseLocked marks the connection stopped and wakes what waits for a
// message under the started connection. c.mu is held.
func (c *Connection) pauseLocked() {
	if c.started.Load() {
		close(c.stopping)
	}
	c.started.Store(false)
}

// errStopped ends a wait for a message because the connection stopped: the
// listener or receive goes back to waiting for Start.
var errStopped = errors.New("connection stopped")

// beginDelivery waits until the connection is started, then counts a
// delivery in progress and returns a channel that closes when the
// connection stops. It fails when ctx ends, done closes or the connection
// closes.
func (c *Connection) beginDelivery(ctx context.Context, done <-chan struct{}) (<-chan struct{}, error) {
	if c.started.Load() {
		c.mu.Lock()
		if c.started.Load() {
			c.active++
			st := c.stopping
			c.mu.Unlock()
			return st, nil
		}
		c.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.gateCond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	waker := make(chan struct{})
	defer close(waker)
	go func() {
		select {
		case <-done:
			c.mu.Lock()
			c.gateCond.Broadcast()
			c.mu.Unlock()
		case <-waker:
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.started.Load() {
		if c.closed {
			return nil, errorf(CodeIllegalState, "connection is closed")
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-done:
			return nil, errorf(CodeConsumerClosed, "consumer closed")
		default:
		}
		c.gateCond.Wait()
	}
	c.active++
	return c.stopping, nil
}

func (c *Connection) endDelivery() {
	c.mu.Lock()
	c.active--
	if c.active == 0 {
		c.gateCond.Broadcast()
	}
	c.mu.Unlock()
}

func (c *Connection) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errorf(CodeIllegalState, "connection is closed")
	}
	return nil
}

// CreateSession makes a session with the given acknowledgement mode.
func (c *Connection) CreateSession(mode AckMode) (*Session, error) {
	if mode < AutoAcknowledge || mode > Transacted {
		return nil, errorf(CodeJMS, "unknown acknowledge mode %d", mode)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(CodeIllegalState, "connection is closed")
	}
	c.nextSess++
	s := &Session{conn: c, id: c.nextSess, mode: mode,
		consumers: map[*Consumer]struct{}{}, browsers: map[*Browser]struct{}{}}
	s.delay.Store(int64(c.opts.RedeliveryDelay))
	if mode == Transacted {
		s.txn = c.newTxn()
	}
	c.sessions[s] = struct{}{}
	return s, nil
}

func (c *Connection) removeSession(s *Session) {
	c.mu.Lock()
	delete(c.sessions, s)
	c.mu.Unlock()
}

func (c *Connection) producerDefaults() ProducerDefaults { return c.opts.Producer }

// BeginTxn starts an explicit transaction spanning this connection's
// sessions (STOMP BEGIN, AMQP declare). It fails with
// CodeResourceAllocation when ConnectionOptions.MaxTransactions are open.
func (c *Connection) BeginTxn() (*Txn, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(CodeIllegalState, "connection is closed")
	}
	if n := c.opts.MaxTransactions; n > 0 && len(c.txns) >= n {
		return nil, errorf(CodeResourceAllocation, "too many open transactions (limit %d); commit or roll back one first", n)
	}
	t := c.newTxn()
	c.txns[t] = struct{}{}
	return t, nil
}

func (c *Connection) newTxn() *Txn { return &Txn{b: c.b, conn: c} }

// forgetTxn is told that an explicit transaction ended.
func (c *Connection) forgetTxn(t *Txn) {
	c.mu.Lock()
	delete(c.txns, t)
	c.mu.Unlock()
}

// createTemporary makes a temporary queue or topic owned by c.
func (c *Connection) createTemporary(kind message.DestKind) (message.Destination, error) {
	name := fmt.Sprintf("%d.%d", c.id, c.b.seq.Add(1))
	dest := message.Destination{Kind: kind, Name: name}
	d := c.b.newDestination(dest, c, time.Now().UnixMilli())
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return message.Destination{}, errorf(CodeIllegalState, "connection is closed")
	}
	c.temps[dest] = d
	c.mu.Unlock()
	c.b.addDestination(d)
	return dest, nil
}

// DeleteTemporary deletes one of this connection's temporary destinations.
// It fails while the destination has consumers.
func (c *Connection) DeleteTemporary(dest message.Destination) error {
	c.mu.Lock()
	d, ok := c.temps[dest]
	c.mu.Unlock()
	if !ok {
		return errorf(CodeInvalidDestination, "%s is not a temporary destination of this connection", dest)
	}
	if d.consumerCount() > 0 {
		return errorf(CodeIllegalState, "temporary destination %s has active consumers", dest)
	}
	c.mu.Lock()
	delete(c.temps, dest)
	c.mu.Unlock()
	return c.b.deleteDestination(context.Background(), dest, false)
}

// Close closes the connection and everything it made: open transactions roll
// back, unacknowledged messages return to their destinations without being
// acknowledged, temporary destinations are deleted. Closing twice is a no-op.
// It is CloseWithReason(ClosedByClient, nil).
func (c *Connection) Close() error {
	return c.CloseWithReason(ClosedByClient, nil)
}

// CloseWithReason is Close, saying why the connection ends: the
// "connection closed" log line carries the reason (and cause, when not
// nil, as err), and Totals counts it. Only the first close counts: a
// protocol front-end closing a connection that an administrator closed
// already changes nothing.
func (c *Connection) CloseWithReason(reason CloseReason, cause error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.pauseLocked()
	ss := make([]*Session, 0, len(c.sessions))
	for s := range c.sessions {
		ss = append(ss, s)
	}
	c.mu.Unlock()
	c.mu.Lock()
	txns := make([]*Txn, 0, len(c.txns))
	for t := range c.txns {
		txns = append(txns, t)
	}
	c.mu.Unlock()
	for _, t := range txns {
		t.abandon()
	}
	for _, s := range ss {
		_ = s.Close()
	}
	c.mu.Lock()
	c.closed = true
	c.gateCond.Broadcast()
	temps := c.temps
	c.temps = map[message.Destination]*destination{}
	c.mu.Unlock()
	for dest := range temps {
		_ = c.b.deleteDestination(context.Background(), dest, true)
	}
	c.b.releaseConnection(c)
	c.mu.Lock()
	first := !c.endLogged // two closes may overlap: one of them tells
	c.endLogged = true
	c.mu.Unlock()
	if !first {
		return nil
	}
	c.b.totals.closed(c.opts.Protocol, reason)
	attrs := append(c.logAttrs(), slog.String("reason", reason.String()))
	if cause != nil {
		attrs = append(attrs, slog.Any("err", cause))
	}
	c.b.log.Info("connection closed", attrs...)
	return nil
}

// logAttrs describe the connection in log lines: its number, protocol,
// remote address, user and client ID (never a credential).
func (c *Connection) logAttrs() []any {
	user := c.opts.User
	if user == "" {
		user = "anonymous"
	}
	c.mu.Lock()
	clientID := c.clientID
	c.mu.Unlock()
	return []any{slog.Uint64("connection", c.id), slog.String("protocol", c.opts.Protocol),
		slog.String("remote", c.opts.RemoteAddr), slog.String("user", user), slog.String("client_id", clientID)}
}
