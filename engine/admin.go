package engine

// The engine's management API: what the admin HTTP API, the console, the
// `sluice admin` command and the Prometheus collector read and do. Nothing
// here runs on the messaging path: every call takes a snapshot under the
// same locks the engine uses (Broker.mu for the maps of destinations,
// subscriptions and connections; Connection.mu then Session.mu for a
// connection's sessions) in the order written at the top of queue.go, and
// reads or changes a queue only through its methods (info, waiting, take,
// restore), never two queues at once.
//
// Message management (browse, move, delete, export) works on a Target: a
// queue, or a durable subscription named by its client ID and name. It
// touches only messages that are waiting: ready for delivery or scheduled
// for later (time-to-deliver, redelivery delay). Messages in flight (handed
// to a consumer and not yet acknowledged) are neither shown nor touched;
// they come back to the queue if their consumer fails.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// ErrNotFound is matched (errors.Is) by errors of the management API that
// name a destination, durable subscription or connection that does not
// exist. Those about destinations also match ErrInvalidDestination.
var ErrNotFound = errors.New("not found")

// notFound is an engine error that also matches ErrNotFound.
type notFound struct{ e *Error }

func (n notFound) Error() string        { return n.e.Error() }
func (n notFound) Unwrap() error        { return n.e }
func (n notFound) Is(target error) bool { return target == ErrNotFound }

func notFoundf(code Code, format string, args ...any) error {
	return notFound{errorf(code, format, args...)}
}

// AdminBatch is how many messages move, delete or import in one store
// update: each batch is atomic in the store.
const AdminBatch = 1000

// ---------------------------------------------------------------------------
// Destinations

// DestinationInfo describes a queue or topic. For a topic the message
// counts and counters are the sums over its current subscriptions (a topic
// holds no messages of its own); the counters of subscriptions that have
// ended are gone with them.
type DestinationInfo struct {
	Kind message.DestKind
	Name string
	// Messages is the depth: every message held, whether ready, scheduled
	// or in flight.
	Messages  int64
	Ready     int
	InFlight  int
	Scheduled int
	// Paged is how many of the Ready messages are kept only in the store
	// (the queue's in-memory window is full), and PagedBytes their size.
	Paged      int64
	PagedBytes int64
	// Bytes is the size (message.Message.Size) of the messages held.
	Bytes int64
	// Consumers attached; Subscriptions of a topic (durable or not).
	Consumers     int
	Subscriptions int
	// Counters since the destination was created or the broker started.
	Enqueued    uint64
	Dequeued    uint64
	Expired     uint64
	Redelivered uint64
	Undelivered uint64 // moved to the error destination or dropped as undeliverable
	// Delivered counts deliveries to consumers, redeliveries included
	// (Dequeued counts the acknowledgements).
	Delivered uint64
	// Created is when the destination was created.
	Created time.Time
	// OldestTimestamp is the JMSTimestamp (ms) of the oldest ready message,
	// 0 when none is ready.
	OldestTimestamp int64
	// Owner is the connection that owns a temporary destination, else 0.
	Owner uint64
}

// Destination returns the destination as message.Destination.
func (i DestinationInfo) Destination() message.Destination {
	return message.Destination{Kind: i.Kind, Name: i.Name}
}

func (d *destination) info() DestinationInfo {
	in := DestinationInfo{Kind: d.dest.Kind, Name: d.dest.Name, Created: time.UnixMilli(d.created)}
	if d.owner != nil {
		in.Owner = d.owner.id
	}
	if d.q != nil {
		d.q.info(&in)
		return in
	}
	subs := d.t.all()
	in.Subscriptions = len(subs)
	for _, s := range subs {
		s.q.info(&in)
	}
	return in
}

// Destinations describes every destination, temporary ones included,
// sorted by kind, then name.
func (b *Broker) Destinations() []DestinationInfo {
	b.mu.RLock()
	ds := make([]*destination, 0, len(b.dests))
	for _, d := range b.dests {
		ds = append(ds, d)
	}
	b.mu.RUnlock()
	out := make([]DestinationInfo, len(ds))
	for i, d := range ds {
		out[i] = d.info()
	}
	slices.SortFunc(out, func(a, b DestinationInfo) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	return out
}

// DestinationInfo describes one destination; the error matches ErrNotFound
// when it does not exist.
func (b *Broker) DestinationInfo(dest message.Destination) (DestinationInfo, error) {
	b.mu.RLock()
	d := b.dests[dest]
	b.mu.RUnlock()
	if d == nil {
		return DestinationInfo{}, notFoundf(CodeInvalidDestination, "destination %s does not exist", dest)
	}
	return d.info(), nil
}

// ---------------------------------------------------------------------------
// Connections

// ConnectionInfo describes a client connection.
type ConnectionInfo struct {
	ID       uint64
	ClientID string
	// User is the authenticated user; "" when anonymous or security is off.
	User       string
	RemoteAddr string
	Protocol   string
	Started    bool
	Created    time.Time
	// Consumers is the total over Sessions.
	Consumers int
	Sessions  []SessionInfo
}

// SessionInfo describes one session of a connection.
type SessionInfo struct {
	ID   uint64
	Mode AckMode
	// Unacknowledged counts messages delivered and not yet settled.
	Unacknowledged int
	Browsers       int
	Consumers      []ConsumerInfo
}

// ConsumerInfo describes one consumer.
type ConsumerInfo struct {
	Destination message.Destination
	Selector    string
	// Subscription names the durable or shared subscription a topic
	// consumer reads, or is "".
	Subscription string
	Durable      bool
}

func (c *Connection) info() ConnectionInfo {
	in := ConnectionInfo{ID: c.id, User: c.opts.User, RemoteAddr: c.opts.RemoteAddr, Protocol: c.opts.Protocol,
		Started: c.started.Load(), Created: c.created}
	c.mu.Lock()
	in.ClientID = c.clientID
	for s := range c.sessions {
		si := SessionInfo{ID: s.id, Mode: s.mode}
		s.mu.Lock()
		si.Unacknowledged = len(s.pending)
		si.Browsers = len(s.browsers)
		for cons := range s.consumers {
			ci := ConsumerInfo{Destination: cons.dest, Selector: cons.Selector()}
			if sub := cons.sub; sub != nil {
				ci.Subscription, ci.Durable, ci.Selector = sub.name, sub.durable, sub.selSrc
			}
			si.Consumers = append(si.Consumers, ci)
		}
		s.mu.Unlock()
		slices.SortFunc(si.Consumers, func(a, b ConsumerInfo) int {
			return cmp.Or(strings.Compare(a.Destination.String(), b.Destination.String()), strings.Compare(a.Subscription, b.Subscription))
		})
		in.Consumers += len(si.Consumers)
		in.Sessions = append(in.Sessions, si)
	}
	c.mu.Unlock()
	slices.SortFunc(in.Sessions, func(a, b SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return in
}

func (b *Broker) connections() []*Connection {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*Connection, 0, len(b.conns))
	for c := range b.conns {
		out = append(out, c)
	}
	return out
}

// Connections describes every open connection, by ID.
func (b *Broker) Connections() []ConnectionInfo {
	conns := b.connections()
	out := make([]ConnectionInfo, len(conns))
	for i, c := range conns {
		out[i] = c.info()
	}
	slices.SortFunc(out, func(a, b ConnectionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ErrClosedByAdministrator is what a connection's exception listener hears
// when CloseConnection closes it; protocol front-ends should then end the
// client's network connection.
var ErrClosedByAdministrator = &Error{Code: CodeIllegalState, Msg: "connection closed by an administrator"}

// CloseConnection closes a connection as Connection.Close does (open
// transactions roll back, unacknowledged messages return to their queues),
// then tells its exception listener ErrClosedByAdministrator. The error
// matches ErrNotFound when no open connection has that ID.
func (b *Broker) CloseConnection(id uint64) error {
	for _, c := range b.connections() {
		if c.id != id {
			continue
		}
		// The "connection closed" line says it: reason "closed by administrator".
		if err := c.CloseWithReason(ClosedByAdministrator, nil); err != nil {
			return err
		}
		c.notify(ErrClosedByAdministrator)
		return nil
	}
	return notFoundf(CodeIllegalState, "connection %d does not exist", id)
}

// ---------------------------------------------------------------------------
// Subscriptions

// SubscriptionInfo describes a topic subscription.
type SubscriptionInfo struct {
	// ClientID and Name identify a durable subscription (a shared one may
	// have no client ID); a non-durable, non-shared one has neither.
	ClientID string
	Name     string
	Topic    message.Destination
	Selector string
	NoLocal  bool
	Durable  bool
	Shared   bool
	// ClientIDPolicy is the policy of the connection that made it.
	ClientIDPolicy ClientIDPolicy
	// Consumers is the number of active consumers; a durable subscription
	// without any is inactive.
	Consumers int
	// Pending counts the messages it holds (ready, scheduled or in flight);
	// InFlight and Scheduled are part of it.
	Pending   int64
	InFlight  int
	Scheduled int
	Bytes     int64
	Enqueued  uint64
	Dequeued  uint64
	Expired   uint64
}

// Subscriptions describes every topic subscription, durable or not, sorted
// by topic, client ID and name.
func (b *Broker) Subscriptions() []SubscriptionInfo {
	b.mu.RLock()
	out := make([]SubscriptionInfo, 0, len(b.subs))
	qs := make([]*queue, 0, len(b.subs))
	for _, s := range b.subs {
		out = append(out, SubscriptionInfo{ClientID: s.clientID, Name: s.name, Topic: s.topic.dest,
			Selector: s.selSrc, NoLocal: s.noLocal, Durable: s.durable, Shared: s.shared,
			ClientIDPolicy: s.policy, Consumers: s.consumers})
		qs = append(qs, s.q)
	}
	b.mu.RUnlock()
	for i, q := range qs {
		var in DestinationInfo
		q.info(&in)
		o := &out[i]
		o.Pending, o.InFlight, o.Scheduled, o.Bytes = in.Messages, in.InFlight, in.Scheduled, in.Bytes
		o.Enqueued, o.Dequeued, o.Expired = in.Enqueued, in.Dequeued, in.Expired
	}
	slices.SortFunc(out, func(a, b SubscriptionInfo) int {
		return cmp.Or(strings.Compare(a.Topic.Name, b.Topic.Name), strings.Compare(a.ClientID, b.ClientID),
			strings.Compare(a.Name, b.Name), cmp.Compare(a.ClientIDPolicy, b.ClientIDPolicy))
	})
	return out
}

// durableSub finds the durable subscription of clientID named name.
func (b *Broker) durableSub(clientID, name string) (*subscription, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var found *subscription
	for _, s := range b.subs {
		if !s.durable || s.clientID != clientID || s.name != name {
			continue
		}
		if found != nil {
			return nil, errorf(CodeIllegalState, "client ID %q has two durable subscriptions named %q (one per client ID policy): management cannot tell them apart", clientID, name)
		}
		found = s
	}
	if found == nil {
		return nil, notFoundf(CodeInvalidDestination, "no durable subscription %q for client ID %q", name, clientID)
	}
	return found, nil
}

// DeleteSubscription deletes a durable subscription and its messages, as
// an unsubscribe by its client would. It fails while the subscription has
// an active consumer or messages in flight.
func (b *Broker) DeleteSubscription(ctx context.Context, clientID, name string) error {
	s, err := b.durableSub(clientID, name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.subs[s.key] != s {
		b.mu.Unlock()
		return notFoundf(CodeInvalidDestination, "no durable subscription %q for client ID %q", name, clientID)
	}
	if s.consumers > 0 {
		b.mu.Unlock()
		return errorf(CodeIllegalState, "durable subscription %q has an active subscriber", name)
	}
	if s.q.inFlight() > 0 {
		b.mu.Unlock()
		return errorf(CodeIllegalState, "durable subscription %q has unacknowledged or transacted messages", name)
	}
	delete(b.subs, s.key)
	b.mu.Unlock()
	if err := b.dropSubscription(ctx, s); err != nil {
		return err
	}
	b.log.Info("durable subscription deleted by an administrator", slog.String("client_id", clientID), slog.String("subscription", name))
	return nil
}

// ---------------------------------------------------------------------------
// Message management

// Target names the messages management works on: a queue (Dest), or a
// durable subscription (ClientID and Subscription; Dest is then ignored).
// Import also takes a topic as Dest: the messages are published to its
// subscriptions.
type Target struct {
	Dest         message.Destination
	ClientID     string
	Subscription string
}

// QueueTarget names a queue.
func QueueTarget(name string) Target {
	return Target{Dest: message.Destination{Kind: message.Queue, Name: name}}
}

// SubscriptionTarget names a durable subscription.
func SubscriptionTarget(clientID, name string) Target {
	return Target{ClientID: clientID, Subscription: name}
}

// IsSubscription reports whether t names a durable subscription.
func (t Target) IsSubscription() bool { return t.Subscription != "" }

// String renders t for messages: "/queue/NAME" or "subscription NAME of
// client ID C".
func (t Target) String() string {
	if t.IsSubscription() {
		return fmt.Sprintf("durable subscription %q of client ID %q", t.Subscription, t.ClientID)
	}
	return t.Dest.String()
}

// resolveQueue finds the queue holding t's messages.
func (b *Broker) resolveQueue(t Target) (*queue, error) {
	if t.IsSubscription() {
		s, err := b.durableSub(t.ClientID, t.Subscription)
		if err != nil {
			return nil, err
		}
		return s.q, nil
	}
	if t.Dest.Kind.IsTopic() {
		return nil, errorf(CodeInvalidDestination, "topic %s holds no messages of its own: name one of its durable subscriptions", t.Dest)
	}
	b.mu.RLock()
	d := b.dests[t.Dest]
	b.mu.RUnlock()
	if d == nil || d.q == nil {
		return nil, notFoundf(CodeInvalidDestination, "queue %s does not exist", t.Dest)
	}
	return d.q, nil
}

// Filter selects messages: those whose JMSMessageID is in IDs, or, without
// IDs, those a Selector matches. The zero Filter selects every message.
type Filter struct {
	Selector string
	IDs      []string
}

// matcher compiles f.
func (f Filter) matcher() (func(*ref) bool, error) {
	if len(f.IDs) > 0 {
		set := make(map[string]struct{}, len(f.IDs))
		for _, id := range f.IDs {
			set[id] = struct{}{}
		}
		return func(r *ref) bool { _, ok := set[r.msg.ID]; return ok }, nil
	}
	sel, err := compileSelector(f.Selector)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return func(*ref) bool { return true }, nil
	}
	return func(r *ref) bool {
		d := message.Delivery{Msg: r.msg, DeliveryCount: r.count + 1, Redelivered: r.count > 0}
		return sel.Matches(message.SelectorView{D: &d})
	}, nil
}

func recsOf(refs []*ref) []*stored {
	out := make([]*stored, len(refs))
	for i, r := range refs {
		out[i] = r.rec
	}
	return out
}

// update applies ops in one store update; nothing to do without a store.
func (b *Broker) update(ctx context.Context, ops []store.Op) error {
	if len(ops) == 0 || b.store == nil {
		return nil
	}
	return b.store.Update(ctx, ops)
}

// MessageEntry is one waiting message as browsing shows it.
type MessageEntry struct {
	message.Delivery
	// Scheduled says the message waits for its delivery time (DeliverAt,
	// ms), from time-to-deliver or a redelivery delay.
	Scheduled bool
	DeliverAt int64
}

// BrowseOptions select, order and page the messages BrowseMessages returns.
type BrowseOptions struct {
	// Selector filters messages (JMS selector syntax); "" takes all.
	Selector string
	// Sort is a header field to order by: JMSMessageID, JMSTimestamp,
	// JMSPriority, JMSCorrelationID, JMSType, JMSExpiration,
	// JMSDeliveryTime, JMSDeliveryMode, JMSRedelivered, JMSXDeliveryCount
	// (case-insensitive, the JMS prefix optional), or "size". A leading "-"
	// sorts descending. "" keeps delivery order. Ties keep delivery order.
	Sort string
	// Offset skips messages; Limit caps how many are returned (0: all).
	Offset, Limit int
}

// MessagePage is a page of BrowseMessages.
type MessagePage struct {
	// Total counts every message the selector matched.
	Total    int
	Messages []MessageEntry
}

// SortFields lists the names BrowseOptions.Sort accepts.
func SortFields() []string {
	return []string{"JMSMessageID", "JMSTimestamp", "JMSPriority", "JMSCorrelationID", "JMSType",
		"JMSExpiration", "JMSDeliveryTime", "JMSDeliveryMode", "JMSRedelivered", "JMSXDeliveryCount", "size"}
}

func sortKey(field string) (func(a, b *MessageEntry) int, error) {
	name := strings.ToLower(field)
	if !strings.HasPrefix(name, "jmsx") {
		name = strings.TrimPrefix(name, "jms")
	}
	switch name {
	case "messageid", "id":
		return func(a, b *MessageEntry) int { return strings.Compare(a.Msg.ID, b.Msg.ID) }, nil
	case "timestamp":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.Timestamp, b.Msg.Timestamp) }, nil
	case "priority":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.Priority, b.Msg.Priority) }, nil
	case "correlationid":
		return func(a, b *MessageEntry) int { return strings.Compare(a.Msg.CorrelationID, b.Msg.CorrelationID) }, nil
	case "type":
		return func(a, b *MessageEntry) int { return strings.Compare(a.Msg.Type, b.Msg.Type) }, nil
	case "expiration":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.Expiration, b.Msg.Expiration) }, nil
	case "deliverytime":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.DeliveryTime, b.Msg.DeliveryTime) }, nil
	case "deliverymode":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.DeliveryMode, b.Msg.DeliveryMode) }, nil
	case "redelivered":
		return func(a, b *MessageEntry) int {
			return cmp.Compare(boolInt(a.Redelivered), boolInt(b.Redelivered))
		}, nil
	case "jmsxdeliverycount", "deliverycount":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.DeliveryCount, b.DeliveryCount) }, nil
	case "size":
		return func(a, b *MessageEntry) int { return cmp.Compare(a.Msg.Size(), b.Msg.Size()) }, nil
	}
	return nil, errorf(CodeJMS, "cannot sort by %q: want one of %s, optionally with a leading - for descending order", field, strings.Join(SortFields(), ", "))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BrowseMessages returns the waiting messages of a queue or durable
// subscription that opts.Selector matches, in delivery order or sorted by
// opts.Sort, paged by opts.Offset and opts.Limit. It changes nothing.
func (b *Broker) BrowseMessages(t Target, opts BrowseOptions) (MessagePage, error) {
	if opts.Offset < 0 || opts.Limit < 0 {
		return MessagePage{}, errorf(CodeJMS, "offset and limit must not be negative")
	}
	var less func(a, b *MessageEntry) int
	desc := false
	if s := opts.Sort; s != "" {
		if s[0] == '-' {
			desc, s = true, s[1:]
		} else if s[0] == '+' {
			s = s[1:]
		}
		var err error
		if less, err = sortKey(s); err != nil {
			return MessagePage{}, err
		}
	}
	match, err := Filter{Selector: opts.Selector}.matcher()
	if err != nil {
		return MessagePage{}, err
	}
	q, err := b.resolveQueue(t)
	if err != nil {
		return MessagePage{}, err
	}
	if less == nil {
		// In delivery order: a walk that keeps only the page, so that a
		// deep queue's paged messages are read, not all held.
		page := MessagePage{Messages: []MessageEntry{}}
		err := q.eachWaiting(match, func(e MessageEntry) error {
			if page.Total >= opts.Offset && (opts.Limit == 0 || len(page.Messages) < opts.Limit) {
				page.Messages = append(page.Messages, e)
			}
			page.Total++
			return nil
		})
		return page, err
	}
	ws := q.waiting(match)
	all := make([]MessageEntry, len(ws))
	for i, w := range ws {
		all[i] = MessageEntry{Delivery: message.Delivery{Msg: w.r.msg, DeliveryCount: w.count + 1, Redelivered: w.count > 0},
			Scheduled: w.scheduled, DeliverAt: w.deliverAt}
		if !w.scheduled {
			all[i].DeliverAt = 0
		}
	}
	if less != nil {
		slices.SortStableFunc(all, func(a, b MessageEntry) int {
			if desc {
				return less(&b, &a)
			}
			return less(&a, &b)
		})
	}
	page := MessagePage{Total: len(all)}
	if opts.Offset >= len(all) {
		page.Messages = []MessageEntry{}
		return page, nil
	}
	all = all[opts.Offset:]
	if opts.Limit > 0 && len(all) > opts.Limit {
		all = all[:opts.Limit]
	}
	page.Messages = all
	return page, nil
}

// MoveMessages moves the waiting messages of a queue or durable
// subscription that f selects to the queue or topic to, which must exist.
// Each moved message keeps its JMSMessageID, headers, properties and body;
// its JMSDestination becomes to, its delivery count starts again from zero
// there, and it no longer counts as sent by its producer's connection (for
// noLocal). The move is atomic in the store per batch of AdminBatch
// messages (the refs are deleted and the copies written in one update): a
// failure leaves the messages not yet moved where they were. It returns how
// many messages moved.
func (b *Broker) MoveMessages(ctx context.Context, from Target, f Filter, to message.Destination) (int, error) {
	match, err := f.matcher()
	if err != nil {
		return 0, err
	}
	q, err := b.resolveQueue(from)
	if err != nil {
		return 0, err
	}
	b.mu.RLock()
	d := b.dests[to]
	b.mu.RUnlock()
	if d == nil {
		return 0, notFoundf(CodeInvalidDestination, "destination %s does not exist", to)
	}
	if d.q == q {
		return 0, errorf(CodeInvalidDestination, "cannot move messages from %s to itself", to)
	}
	// move moves refs, whose removal from q's store records removeOps
	// appends; a failure leaves them where they were for the caller to
	// give back.
	move := func(refs []*ref, removeOps func([]store.Op) []store.Op) error {
		var plan []*ref
		for _, r := range refs {
			m := *r.msg // shallow: a message's slices are never modified
			m.Destination = to
			m.Producer = 0
			rs, _ := b.route(d, &m)
			plan = append(plan, rs...)
		}
		if err := b.reserveRoom(d, plan); err != nil {
			b.undoAdd(plan)
			return fmt.Errorf("move messages from %s to %s: %w", q.dest, to, err)
		}
		ops := removeOps(nil)
		ops = b.storeOpsForAdd(plan, ops)
		if err := b.update(ctx, ops); err != nil {
			if indeterminate(err) {
				return fmt.Errorf("move messages from %s to %s: %w", q.dest, to, outcomeUnknown("the move", err))
			}
			b.undoAdd(plan)
			return fmt.Errorf("move messages from %s to %s: %w", q.dest, to, err)
		}
		b.enqueue(plan)
		return nil
	}
	rest := q.take(match)
	moved := 0
	for rest.len() > 0 {
		var batch taken
		batch, rest = rest.split(min(len(rest.refs), AdminBatch))
		if err := move(batch.refs, func(ops []store.Op) []store.Op { return batch.removeOps(q, ops) }); err != nil {
			if !indeterminate(err) { // fenced: nothing is undone
				q.restore(batch)
				q.restore(rest)
			}
			return moved, err
		}
		moved += batch.len()
	}
	// Then those kept only in the store, read back a chunk at a time.
	n, err := q.takePaged(match, func(refs []*ref) error {
		return move(refs, func(ops []store.Op) []store.Op { return b.storeOpsForRemove(refs, ops) })
	})
	moved += n
	if err != nil {
		return moved, err
	}
	if moved > 0 {
		b.log.Info("messages moved by an administrator", slog.String("from", from.String()), slog.String("to", to.String()), slog.Int("messages", moved))
	}
	return moved, nil
}

// DeleteMessages deletes the waiting messages of a queue or durable
// subscription that f selects, atomically in the store per batch of
// AdminBatch messages. It returns how many it deleted.
func (b *Broker) DeleteMessages(ctx context.Context, t Target, f Filter) (int, error) {
	match, err := f.matcher()
	if err != nil {
		return 0, err
	}
	q, err := b.resolveQueue(t)
	if err != nil {
		return 0, err
	}
	rest := q.take(match)
	deleted := 0
	for rest.len() > 0 {
		var batch taken
		batch, rest = rest.split(min(len(rest.refs), AdminBatch))
		if err := b.update(ctx, batch.removeOps(q, nil)); err != nil {
			if indeterminate(err) {
				return deleted, fmt.Errorf("delete messages of %s: %w", t, outcomeUnknown("the deletion", err))
			}
			q.restore(batch)
			q.restore(rest)
			return deleted, fmt.Errorf("delete messages of %s: %w", t, err)
		}
		deleted += batch.len()
	}
	n, err := q.takePaged(match, func(refs []*ref) error {
		if err := b.update(ctx, b.storeOpsForRemove(refs, nil)); err != nil {
			return fmt.Errorf("delete messages of %s: %w", t, err)
		}
		return nil
	})
	deleted += n
	if err != nil {
		return deleted, err
	}
	if deleted > 0 {
		b.log.Info("messages deleted by an administrator", slog.String("target", t.String()), slog.Int("messages", deleted))
	}
	return deleted, nil
}

// Export writes the waiting messages of a queue or durable subscription
// that selector matches to w, in delivery order, as JSON lines: one
// message.Message JSON form per line (see package message), which keeps
// every header and the type of every property and body value. Delivery
// counts are not part of it. It changes nothing and returns how many
// messages it wrote.
func (b *Broker) Export(t Target, selector string, w io.Writer) (int, error) {
	match, err := Filter{Selector: selector}.matcher()
	if err != nil {
		return 0, err
	}
	q, err := b.resolveQueue(t)
	if err != nil {
		return 0, err
	}
	if q.pagedCount() > 0 {
		// A deep queue: one message at a time, read back from the store
		// as the walk goes.
		bw := bufio.NewWriterSize(w, 64<<10)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		n := 0
		err := q.eachWaiting(match, func(e MessageEntry) error {
			if err := enc.Encode(e.Msg); err != nil {
				return fmt.Errorf("export message %s: %w", e.Msg.ID, err)
			}
			n++
			return nil
		})
		if err == nil {
			err = bw.Flush()
		}
		return n, err
	}
	ws := q.waiting(match)
	bw := bufio.NewWriterSize(w, 64<<10)
	// Encode chunks on every processor, write them in order.
	const chunk = 512
	nchunks := (len(ws) + chunk - 1) / chunk
	window := 2 * runtime.GOMAXPROCS(0)
	bufs := make([]bytes.Buffer, window)
	for first := 0; first < nchunks; first += window {
		last := min(first+window, nchunks)
		err := parallel(last-first, func(i int) error {
			buf := &bufs[i]
			buf.Reset()
			enc := json.NewEncoder(buf)
			enc.SetEscapeHTML(false)
			lo := (first + i) * chunk
			for _, x := range ws[lo:min(lo+chunk, len(ws))] {
				if err := enc.Encode(x.r.msg); err != nil {
					return fmt.Errorf("export message %s: %w", x.r.msg.ID, err)
				}
			}
			return nil
		})
		if err != nil {
			return first * chunk, err
		}
		for i := range last - first {
			if _, err := bw.Write(bufs[i].Bytes()); err != nil {
				return (first + i) * chunk, err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return len(ws), err
	}
	return len(ws), nil
}

// parallel runs fn(0) … fn(n-1) on up to GOMAXPROCS goroutines and returns
// the error of the lowest i that failed.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[i] = fn(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ImportError is a line of an import file that is not a valid message.
type ImportError struct {
	Line int
	Err  error
}

func (e *ImportError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() }

func (e *ImportError) Unwrap() error { return e.Err }

// ReadMessages reads JSON lines of message.Message, as Export writes them.
// Blank lines are skipped. A line that is not a valid message stops it with
// an *ImportError naming the line.
func ReadMessages(r io.Reader) ([]*message.Message, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var lines [][]byte
	var nums []int
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
			nums = append(nums, lineNo)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
	}
	// Decode chunks on every processor.
	const chunk = 512
	out := make([]*message.Message, len(lines))
	err := parallel((len(lines)+chunk-1)/chunk, func(c int) error {
		for i := c * chunk; i < min((c+1)*chunk, len(lines)); i++ {
			m := new(message.Message)
			if err := json.Unmarshal(lines[i], m); err != nil {
				return &ImportError{Line: nums[i], Err: err}
			}
			out[i] = m
			lines[i] = nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ImportResult is what an import did: how many messages it added and how
// many it skipped because their JMSMessageID was already on the target.
type ImportResult struct {
	Imported int
	Skipped  int
}

// Import reads JSON lines as Export writes them and adds every message to
// t: a queue, a topic (published to its subscriptions as a send would be)
// or a durable subscription (only that one gets it). The whole input is
// read and checked first: a bad line (an *ImportError) imports nothing.
//
// Each message keeps what the file says of it: JMSMessageID, JMSTimestamp,
// JMSPriority, JMSExpiration, JMSDeliveryTime, JMSDeliveryMode, JMSReplyTo,
// JMSCorrelationID, JMSType, JMSRedeliveryLimit, the properties with their
// types, and the body. Destination policies (overrides) are not applied;
// quotas are. What changes: JMSDestination becomes the target's
// destination (the topic, for a subscription); a message with no ID gets a
// new one and one with no timestamp gets the current time; messages for a
// temporary destination become non-persistent; the producer (the engine's
// noLocal bookkeeping) is cleared. A message already expired expires as
// usual; one whose delivery time is in the future is scheduled.
//
// Importing is idempotent by JMSMessageID: a message whose ID the target
// already holds (waiting, scheduled, or delivered and not yet
// acknowledged), or that an earlier line of the same input carries, is
// skipped and counted in ImportResult.Skipped, so importing one file twice
// adds its messages once. Into a topic this holds per subscription: a
// subscription that already holds the ID does not get it again, and the
// message counts as skipped when every subscription it would reach holds
// it already.
//
// Messages are added in batches of AdminBatch, each atomic in the store;
// after a store failure the batches before it stay imported.
func (b *Broker) Import(ctx context.Context, t Target, r io.Reader) (ImportResult, error) {
	msgs, err := ReadMessages(r)
	if err != nil {
		return ImportResult{}, err
	}
	return b.ImportMessages(ctx, t, msgs)
}

// ImportMessages is Import with messages already read; it takes ownership
// of them.
func (b *Broker) ImportMessages(ctx context.Context, t Target, msgs []*message.Message) (ImportResult, error) {
	var res ImportResult
	var d *destination
	var sub *subscription
	if t.IsSubscription() {
		s, err := b.durableSub(t.ClientID, t.Subscription)
		if err != nil {
			return res, err
		}
		sub = s
		d = s.topic
	} else {
		b.mu.RLock()
		d = b.dests[t.Dest]
		b.mu.RUnlock()
		if d == nil {
			return res, notFoundf(CodeInvalidDestination, "destination %s does not exist", t.Dest)
		}
	}
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			return res, fmt.Errorf("message %d of %d: %w", i+1, len(msgs), err)
		}
	}
	present := presence{b: b}
	now := b.nowMillis()
	for len(msgs) > 0 {
		n := min(len(msgs), AdminBatch)
		batch := msgs[:n]
		var refs []*ref
		added := 0
		for _, m := range batch {
			m.Destination = d.dest
			m.Producer = 0
			if m.ID == "" {
				m.ID = b.idPrefix + strconv.FormatUint(b.seq.Add(1), 10)
			}
			if m.Timestamp == 0 {
				m.Timestamp = now
			}
			if d.dest.Kind.IsTemporary() {
				m.DeliveryMode = message.NonPersistent
			}
			var rs []*ref
			if sub != nil {
				rs = []*ref{b.queueRef(sub.q, m)}
			} else {
				rs, _ = b.route(d, m)
			}
			kept := present.keepNew(rs)
			if len(rs) > 0 && len(kept) == 0 {
				res.Skipped++
				continue
			}
			added++
			refs = append(refs, kept...)
		}
		// Into a durable subscription, the topic's quota applies: it
		// bounds what the topic's subscriptions hold together.
		if err := b.reserveRoom(d, refs); err != nil {
			b.undoAdd(refs)
			return res, fmt.Errorf("import into %s: %w", t, err)
		}
		if err := b.update(ctx, b.storeOpsForAdd(refs, nil)); err != nil {
			if indeterminate(err) {
				return res, fmt.Errorf("import into %s: %w", t, outcomeUnknown("the imported messages", err))
			}
			b.undoAdd(refs)
			return res, fmt.Errorf("import into %s: %w", t, err)
		}
		b.enqueue(refs)
		present.commit(refs)
		res.Imported += added
		msgs = msgs[n:]
	}
	b.log.Info("messages imported by an administrator", slog.String("target", t.String()),
		slog.Int("messages", res.Imported), slog.Int("skipped", res.Skipped))
	return res, nil
}

// presence is the JMSMessageIDs that queues hold, gathered once per queue
// for an import and then kept up to date with what the import adds.
type presence struct {
	b       *Broker
	byQueue map[*queue]map[string]struct{}
	pending map[*queue]map[string]struct{} // added by the batch being built
}

// ids returns the IDs q holds, gathering them on first use.
func (p *presence) ids(q *queue) map[string]struct{} {
	if set, ok := p.byQueue[q]; ok {
		return set
	}
	if p.byQueue == nil {
		p.byQueue = map[*queue]map[string]struct{}{}
	}
	set := p.b.heldIDs(q)
	p.byQueue[q] = set
	return set
}

// keepNew returns the refs of rs whose queue does not hold their message's
// ID yet (nor got it earlier in this import), releasing the store
// reference of each ref it drops. The refs kept count as held from now on.
func (p *presence) keepNew(rs []*ref) []*ref {
	kept := rs[:0]
	for _, r := range rs {
		id := r.msg.ID
		if _, dup := p.ids(r.q)[id]; dup {
			if r.rec != nil {
				r.rec.refs.Add(-1)
			}
			continue
		}
		if p.pending == nil {
			p.pending = map[*queue]map[string]struct{}{}
		}
		if _, dup := p.pending[r.q][id]; dup {
			if r.rec != nil {
				r.rec.refs.Add(-1)
			}
			continue
		}
		if p.pending[r.q] == nil {
			p.pending[r.q] = map[string]struct{}{}
		}
		p.pending[r.q][id] = struct{}{}
		kept = append(kept, r)
	}
	return kept
}

// commit records that the refs of the batch are now held by their queues.
func (p *presence) commit(refs []*ref) {
	for _, r := range refs {
		p.ids(r.q)[r.msg.ID] = struct{}{}
	}
	clear(p.pending)
}

// heldIDs returns the JMSMessageIDs that q holds: waiting (ready or
// scheduled, as browsing lists them), handed to a consumer, or delivered
// and not yet acknowledged. A ref a receive call has taken from its
// consumer and not yet recorded as delivered is not seen.
func (b *Broker) heldIDs(q *queue) map[string]struct{} {
	set := map[string]struct{}{}
	for _, w := range q.waiting(func(*ref) bool { return true }) {
		set[w.r.msg.ID] = struct{}{}
	}
	for _, c := range q.consumerList() {
		c.bufferedIDs(set)
	}
	// Every session: one whose consumer was closed still holds what it
	// delivered until it acknowledges, recovers or closes.
	for _, conn := range b.connections() {
		for _, s := range conn.sessionList() {
			s.pendingIDs(q, set)
		}
	}
	return set
}

// bufferedIDs adds to set the JMSMessageIDs of the refs dispatched to c
// and not yet taken by a receive.
func (c *Consumer) bufferedIDs(set map[string]struct{}) {
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	for _, r := range c.buf {
		set[r.msg.ID] = struct{}{}
	}
}

// sessionList returns c's sessions.
func (c *Connection) sessionList() []*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Session, 0, len(c.sessions))
	for s := range c.sessions {
		out = append(out, s)
	}
	return out
}

// pendingIDs adds to set the JMSMessageIDs of q's messages that s
// delivered and has not settled.
func (s *Session) pendingIDs(q *queue, set map[string]struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.pending {
		if d.r.q == q {
			set[d.r.msg.ID] = struct{}{}
		}
	}
}
