package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/grammar/selector"
)

// topic fans messages out to its subscriptions. Subscriptions whose selector
// has the targeted form "identifier IS NOT NULL" of WebLogic JMS "Managing
// Your Applications", "Indexing Topic Subscriber Message Selectors To Optimize
// Performance", are indexed by that identifier, so a message that names two of
// ten thousand such subscribers costs work for two.
//
// A topic's quota (its policy's MaxMessages and MaxBytes) bounds what its
// subscriptions hold together: every subscription's copy of a message
// counts, as the topic's DestinationInfo reports it (see reserve).
type topic struct {
	d     *destination
	mu    sync.RWMutex
	plain map[*subscription]struct{}
	index map[string]map[*subscription]struct{}

	// quotaMu serializes the quota checks of sends to the topic, so that
	// two cannot take the same room; lock order: quotaMu, then mu, then a
	// subscription's queue.mu (then quota.mu, a leaf).
	quotaMu sync.Mutex
	deleted bool  // guarded by quotaMu
	quota   quota // sends waiting for room; freed by the subscriptions' queues (queue.roomFreed)
}

func newTopic(d *destination) *topic {
	return &topic{d: d, plain: map[*subscription]struct{}{}, index: map[string]map[*subscription]struct{}{}}
}

// held returns what the topic's subscriptions hold, and have reserved for
// sends in progress, together.
func (t *topic) held() (count, bytes int64) {
	for _, s := range t.all() {
		n, b := s.q.held()
		count += n
		bytes += b
	}
	return count, bytes
}

// roomFreed tells sends waiting for room on the topic to look again.
func (t *topic) roomFreed() { t.quota.freed() }

// markDeleted fails the sends waiting for room on a deleted topic.
func (t *topic) markDeleted() {
	t.quotaMu.Lock()
	t.deleted = true
	t.quotaMu.Unlock()
	t.quota.freed()
}

// subscription is one topic subscription: a queue fed by the topic.
type subscription struct {
	key       string
	name      string
	clientID  string
	policy    ClientIDPolicy
	topic     *destination
	q         *queue
	sel       *selector.Selector
	selSrc    string
	target    string // indexed identifier, or ""
	noLocal   bool
	localConn uint64
	durable   bool
	shared    bool
	consumers int // guarded by Broker.mu
}

func (t *topic) add(s *subscription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.target != "" {
		set := t.index[s.target]
		if set == nil {
			set = map[*subscription]struct{}{}
			t.index[s.target] = set
		}
		set[s] = struct{}{}
		return
	}
	t.plain[s] = struct{}{}
}

func (t *topic) remove(s *subscription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.target != "" {
		if set := t.index[s.target]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(t.index, s.target)
			}
		}
		return
	}
	delete(t.plain, s)
}

func (t *topic) all() []*subscription {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*subscription, 0, len(t.plain))
	for s := range t.plain {
		out = append(out, s)
	}
	for _, set := range t.index {
		for s := range set {
			out = append(out, s)
		}
	}
	return out
}

// publish makes a ref for every subscription that takes m.
func (t *topic) publish(b *Broker, m *message.Message, seq uint64) []*ref {
	var rec *stored
	var refs []*ref
	view := message.SelectorView{D: &message.Delivery{Msg: m, DeliveryCount: 1}}
	size := int32(m.Size())
	take := func(s *subscription) {
		if s.noLocal && m.Producer == s.localConn {
			return
		}
		if s.sel != nil && s.target == "" && !s.sel.Matches(view) {
			return
		}
		r := &ref{msg: m, seq: seq, q: s.q, deliverAt: deliverAt(m), size: size}
		if s.q.bucket != "" && m.DeliveryMode == message.Persistent {
			if rec == nil {
				rec = &stored{key: seq}
			}
			rec.refs.Add(1)
			r.rec = rec
		}
		refs = append(refs, r)
	}
	t.mu.RLock()
	for s := range t.plain {
		take(s)
	}
	if len(t.index) > 0 {
		for _, p := range m.Props {
			for s := range t.index[p.Name] {
				take(s)
			}
		}
	}
	t.mu.RUnlock()
	if rec != nil && rec.refs.Load() > 1 {
		rec.shared = true
	}
	return refs
}

// validSubscriptionName refuses the characters WebLogic JMS "Managing Your
// Applications", "Creating Subscribers for a Durable Subscription", forbids.
func validSubscriptionName(name string) error {
	if name == "" {
		return errorf(CodeJMS, "subscription name is empty")
	}
	if i := strings.IndexAny(name, ",=:*%?"); i >= 0 {
		return errorf(CodeJMS, "subscription name %q contains %q: names may not contain , = : * %% ?", name, name[i])
	}
	return nil
}

// subscriptionKey identifies a subscription. Subscriptions made under
// different client ID policies are independent, as WebLogic JMS "Managing Your
// Applications", "Setting the Client ID Policy", requires.
func subscriptionKey(durable bool, policy ClientIDPolicy, clientID, name string) string {
	kind := "n"
	if durable {
		kind = "d"
	}
	return fmt.Sprintf("%s|%d|%s|%s", kind, policy, clientID, name)
}

// subscribe finds or makes the subscription a new topic consumer reads.
func (b *Broker) subscribe(conn *Connection, dest message.Destination, opts ConsumerOptions, sel *selector.Selector, c *Consumer) (*subscription, error) {
	d, err := b.resolve(dest, conn, true)
	if err != nil {
		return nil, err
	}
	named := opts.Durable || opts.Shared
	if !named && conn.SharingPolicy() == Sharable && conn.ClientID() != "" && !opts.NoLocal {
		return b.subscribeSharable(conn, d, opts, sel), nil
	}
	if !named {
		s := &subscription{topic: d, sel: sel, selSrc: opts.Selector, noLocal: opts.NoLocal, localConn: conn.id, consumers: 1}
		s.key = fmt.Sprintf("p|%d|%d", conn.id, b.seq.Add(1))
		s.target = targetOf(sel)
		s.q = newQueue(b, dest, s, "")
		d.t.add(s)
		b.mu.Lock()
		b.subs[s.key] = s
		b.mu.Unlock()
		return s, nil
	}
	if err := validSubscriptionName(opts.SubscriptionName); err != nil {
		return nil, err
	}
	clientID := conn.ClientID()
	if opts.Durable && !opts.Shared && clientID == "" {
		return nil, errorf(CodeIllegalState, "a durable subscription needs a client ID on the connection")
	}
	if opts.Durable && dest.Kind.IsTemporary() {
		return nil, errorf(CodeInvalidDestination, "durable subscriptions cannot be made on temporary topic %s", dest)
	}
	policy := conn.ClientIDPolicy()
	key := subscriptionKey(opts.Durable, policy, clientID, opts.SubscriptionName)
	sharing := opts.Shared || conn.SharingPolicy() == Sharable

	b.mu.Lock()
	s := b.subs[key]
	if s != nil {
		same := s.topic == d && s.selSrc == opts.Selector && s.noLocal == opts.NoLocal
		if s.consumers > 0 {
			if !same {
				b.mu.Unlock()
				return nil, errorf(CodeIllegalState, "subscription %q is active with a different topic, selector or noLocal", opts.SubscriptionName)
			}
			if !sharing || !s.shared {
				b.mu.Unlock()
				return nil, errorf(CodeIllegalState, "subscription %q already has an active subscriber and is not shared", opts.SubscriptionName)
			}
			s.consumers++
			b.mu.Unlock()
			return s, nil
		}
		if same {
			s.consumers++
			s.shared = sharing
			s.localConn = conn.id
			b.mu.Unlock()
			return s, nil
		}
	}
	// From here the named subscription is made, or made anew: that is the
	// durable action (lock order: Broker.mu, then the connection's
	// decisions).
	if err := conn.authorize(ActionDurable, dest); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if s != nil {
		// Re-created with a different topic, selector or noLocal: the old
		// subscription and its messages go.
		delete(b.subs, key)
		b.mu.Unlock()
		if err := b.dropSubscription(context.Background(), s); err != nil {
			return nil, err
		}
		b.mu.Lock()
	}
	s = &subscription{key: key, name: opts.SubscriptionName, clientID: clientID, policy: policy, topic: d,
		sel: sel, selSrc: opts.Selector, noLocal: opts.NoLocal, localConn: conn.id,
		durable: opts.Durable, shared: sharing, consumers: 1}
	s.target = targetOf(sel)
	bucket := ""
	if opts.Durable && b.store != nil {
		bucket = records.SubBucket(key)
	}
	s.q = newQueue(b, dest, s, bucket)
	b.subs[key] = s
	b.mu.Unlock()
	if opts.Durable && b.store != nil {
		if err := b.store.Update(context.Background(), []store.Op{subRecordOp(s)}); err != nil {
			if indeterminate(err) {
				return nil, fmt.Errorf("store subscription %q: %w", s.name, outcomeUnknown("the subscription", err))
			}
			b.mu.Lock()
			delete(b.subs, key)
			b.mu.Unlock()
			return nil, fmt.Errorf("store subscription %q: %w", s.name, err)
		}
	}
	d.t.add(s)
	return s, nil
}

// subscribeSharable finds or makes the non-durable subscription that the
// Sharable subscribers of a topic with the same client ID, client ID policy
// and selector share (WebLogic JMS "Managing Your Applications", "Creating a
// Sharable Subscription Policy": "Consumers can share a non-durable
// subscriptions only if they have the same Client ID and Client ID Policy"):
// each message goes to one of them. It lasts while it has a subscriber, as any
// non-durable subscription. Subscribers with noLocal keep subscriptions of
// their own: whose connection would be local?
func (b *Broker) subscribeSharable(conn *Connection, d *destination, opts ConsumerOptions, sel *selector.Selector) *subscription {
	policy, clientID := conn.ClientIDPolicy(), conn.ClientID()
	key := fmt.Sprintf("w|%d|%q|%q|%q", policy, clientID, d.dest.String(), opts.Selector)
	b.mu.Lock()
	if s := b.subs[key]; s != nil && s.consumers > 0 {
		s.consumers++
		b.mu.Unlock()
		return s
	}
	s := &subscription{key: key, clientID: clientID, policy: policy, topic: d, sel: sel, selSrc: opts.Selector,
		localConn: conn.id, shared: true, consumers: 1}
	s.target = targetOf(sel)
	s.q = newQueue(b, d.dest, s, "")
	b.subs[key] = s
	b.mu.Unlock()
	d.t.add(s)
	return s
}

func targetOf(sel *selector.Selector) string {
	if sel == nil {
		return ""
	}
	if name, ok := sel.Target(); ok {
		return name
	}
	return ""
}

// detachSubscription is told that consumer c of s closed. A non-durable
// subscription without consumers ends, and its messages go.
func (b *Broker) detachSubscription(s *subscription, c *Consumer) {
	b.mu.Lock()
	s.consumers--
	end := s.consumers <= 0 && !s.durable
	if end {
		delete(b.subs, s.key)
	}
	b.mu.Unlock()
	if end {
		s.topic.t.remove(s)
		s.q.drainAll(true)
		s.topic.t.roomFreed()
	}
}

// unsubscribe deletes a durable subscription of conn's client ID.
func (b *Broker) unsubscribe(ctx context.Context, conn *Connection, name string) error {
	key := subscriptionKey(true, conn.ClientIDPolicy(), conn.ClientID(), name)
	b.mu.Lock()
	s := b.subs[key]
	if s == nil {
		b.mu.Unlock()
		return errorf(CodeInvalidDestination, "no durable subscription %q for client ID %q", name, conn.ClientID())
	}
	if err := conn.authorize(ActionDurable, s.topic.dest); err != nil {
		b.mu.Unlock()
		return err
	}
	if s.consumers > 0 {
		b.mu.Unlock()
		return errorf(CodeIllegalState, "durable subscription %q has an active subscriber", name)
	}
	if s.q.inFlight() > 0 {
		b.mu.Unlock()
		return errorf(CodeIllegalState, "durable subscription %q has unacknowledged or transacted messages", name)
	}
	delete(b.subs, key)
	b.mu.Unlock()
	return b.dropSubscription(ctx, s)
}

// dropSubscription removes a subscription, its messages and its record.
func (b *Broker) dropSubscription(ctx context.Context, s *subscription) error {
	s.topic.t.remove(s)
	refs, paged := s.q.drainAllIO()
	s.topic.t.roomFreed()
	b.deletePagedMessages(ctx, s.q.bucket, paged)
	ops := b.storeOpsForRemove(refs, nil)
	if s.q.bucket != "" {
		ops = append(ops, store.Op{Kind: store.DeleteBucket, Bucket: s.q.bucket},
			store.Op{Kind: store.DeleteBucket, Bucket: records.SchedBucket(s.q.bucket)},
			store.Op{Kind: store.Delete, Bucket: records.Subscriptions, Key: []byte(s.key)})
	}
	if len(ops) > 0 && b.store != nil {
		if err := b.store.Update(ctx, ops); err != nil {
			return fmt.Errorf("delete subscription %q: %w", s.name, err)
		}
	}
	return nil
}
