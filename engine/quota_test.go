package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Quotas and the accounting behind them: a destination's reported
// Messages and Bytes (DestinationInfo) are what its quota is checked
// against, so they must come back to zero however its messages leave.

// sizeProbe has a name as long as queueA's, so that a message stamped for
// it has the size of one stamped for queueA.
var sizeProbe = message.Destination{Kind: message.Queue, Name: "z"}

// quotaInfo returns d's DestinationInfo.
func quotaInfo(t *testing.T, b *engine.Broker, d message.Destination) engine.DestinationInfo {
	t.Helper()
	in, err := b.DestinationInfo(d)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// wantHolds waits until d reports holding n messages of n*size bytes at
// most (sizes differ by a byte or two with the message IDs) and at least
// n*(size-4), nothing in flight or scheduled, and fails the test when it
// does not within eventually's bound.
func wantHolds(t *testing.T, b *engine.Broker, d message.Destination, n int64, size int64) {
	t.Helper()
	var in engine.DestinationInfo
	ok := func() bool {
		in = quotaInfo(t, b, d)
		return in.Messages == n && in.Bytes <= n*(size+4) && in.Bytes >= n*(size-4) &&
			in.InFlight == 0 && in.Scheduled == 0 && int64(in.Ready) == n
	}
	for i := 0; i < 400 && !ok(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if !ok() {
		t.Fatalf("%s reports %d messages, %d bytes (ready %d, in flight %d, scheduled %d); want %d messages of about %d bytes, all ready",
			d, in.Messages, in.Bytes, in.Ready, in.InFlight, in.Scheduled, n, n*size)
	}
}

// stampedSize returns the size of a message as the broker stamps it.
func stampedSize(t *testing.T, s *engine.Session, o engine.SendOptions) int64 {
	t.Helper()
	return int64(send(t, s, sizeProbe, "x", o).Size())
}

// TestQuotaAccountingEveryExit fills a queue's quota (3 messages, 3.5
// messages' bytes) with messages that then leave it in one of the ways a
// message can leave a queue; afterwards the queue must report 0 messages
// and 0 bytes, before and after a restart, and admit three new sends and
// refuse a fourth.
func TestQuotaAccountingEveryExit(t *testing.T) {
	type exitFunc func(t *testing.T, h *harness, c *engine.Connection)
	ctx := context.Background()
	receiveAll := func(mode engine.AckMode, after func(t *testing.T, s *engine.Session, ds []message.Delivery)) exitFunc {
		return func(t *testing.T, h *harness, c *engine.Connection) {
			s := h.session(c, mode)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			var ds []message.Delivery
			for range 3 {
				ds = append(ds, recv(t, cons))
			}
			if after != nil {
				after(t, s, ds)
			}
			_ = cons.Close()
		}
	}
	purge := func(want int) exitFunc {
		return func(t *testing.T, h *harness, _ *engine.Connection) {
			n, err := h.b.Purge(ctx, queueA)
			if err != nil || n != want {
				t.Fatalf("purge: %d, %v; want %d", n, err, want)
			}
		}
	}
	scheduled := engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour}
	soon := engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 100 * time.Millisecond}
	cases := []struct {
		name       string
		persistent bool
		paging     bool // persistent messages due more than 300 ms ahead are paged out
		opts       engine.SendOptions
		exit       exitFunc
	}{
		{name: "consume", exit: receiveAll(engine.AutoAcknowledge, nil)},
		{name: "consume-persistent", persistent: true, exit: receiveAll(engine.AutoAcknowledge, nil)},
		{name: "consume-scheduled", opts: soon, exit: receiveAll(engine.AutoAcknowledge, nil)},
		{name: "consume-paged", persistent: true, paging: true,
			opts: engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 800 * time.Millisecond},
			exit: receiveAll(engine.AutoAcknowledge, nil)},
		{name: "consume-transacted", persistent: true, exit: receiveAll(engine.Transacted, func(t *testing.T, s *engine.Session, _ []message.Delivery) {
			if err := s.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		})},
		{name: "expire", opts: engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: 30 * time.Millisecond},
			exit: func(*testing.T, *harness, *engine.Connection) {}},
		{name: "expire-persistent", persistent: true, opts: engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: 30 * time.Millisecond},
			exit: func(*testing.T, *harness, *engine.Connection) {}},
		{name: "purge-ready", exit: purge(3)},
		{name: "purge-ready-persistent", persistent: true, exit: purge(3)},
		{name: "purge-scheduled", opts: scheduled, exit: purge(3)},
		{name: "purge-scheduled-persistent", persistent: true, opts: scheduled, exit: purge(3)},
		{name: "purge-paged", persistent: true, paging: true, opts: scheduled, exit: purge(3)},
		{name: "delete-messages", persistent: true, paging: true, opts: scheduled, exit: func(t *testing.T, h *harness, _ *engine.Connection) {
			if n, err := h.b.DeleteMessages(ctx, engine.QueueTarget(queueA.Name), engine.Filter{}); err != nil || n != 3 {
				t.Fatalf("delete: %d, %v", n, err)
			}
		}},
		{name: "move", persistent: true, exit: func(t *testing.T, h *harness, _ *engine.Connection) {
			h.create(queueB)
			if n, err := h.b.MoveMessages(ctx, engine.QueueTarget(queueA.Name), engine.Filter{}, queueB); err != nil || n != 3 {
				t.Fatalf("move: %d, %v", n, err)
			}
		}},
		{name: "redelivery-limit", persistent: true, exit: receiveAll(engine.ClientAcknowledge, func(t *testing.T, s *engine.Session, _ []message.Delivery) {
			if err := s.Recover(ctx); err != nil {
				t.Fatal(err)
			}
		})},
		{name: "redelivery-limit-memory", exit: receiveAll(engine.ClientAcknowledge, func(t *testing.T, s *engine.Session, _ []message.Delivery) {
			if err := s.Recover(ctx); err != nil {
				t.Fatal(err)
			}
		})},
		{name: "rejected", persistent: true, exit: receiveAll(engine.ClientAcknowledge, func(t *testing.T, s *engine.Session, ds []message.Delivery) {
			for _, d := range ds {
				if err := s.Settle(ctx, d.Tag, engine.Rejected); err != nil {
					t.Fatal(err)
				}
			}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) {
				p.RedeliveryLimit = 0
				p.ErrorDestination = errQueue
			})
			cfg := engine.Config{Policy: pols.get, ExpiryScanInterval: 10 * time.Millisecond, PageScheduledAfter: -1}
			if tc.paging {
				cfg.PageScheduledAfter, cfg.PageLookahead = 300*time.Millisecond, 100*time.Millisecond
			}
			var h *harness
			if tc.persistent {
				h = newPersistent(t, "", cfg)
			} else {
				h = newBroker(t, cfg)
			}
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			size := stampedSize(t, s, tc.opts)
			plain := stampedSize(t, s, engine.SendOptions{})
			pols.set(queueA, func(p *engine.Policy) {
				p.MaxMessages = 3
				p.MaxBytes = 3*size + size/2
			})
			for i := range 3 {
				send(t, s, queueA, "x", tc.opts)
				if in := quotaInfo(t, h.b, queueA); in.Messages != int64(i+1) {
					t.Fatalf("after %d sends the queue reports %d messages", i+1, in.Messages)
				}
			}
			p, _ := s.CreateProducer(queueA)
			wantCode(t, "fourth send", p.Send(ctx, text("x"), tc.opts), engine.ErrResourceAllocation)

			tc.exit(t, h, c)
			wantHolds(t, h.b, queueA, 0, size)
			if tc.persistent {
				_ = c.Close()
				h.restart()
				wantHolds(t, h.b, queueA, 0, size)
				c = h.conn(engine.ConnectionOptions{})
				s = h.session(c, engine.AutoAcknowledge)
				p, _ = s.CreateProducer(queueA)
			}
			pols.set(queueA, func(p *engine.Policy) { p.MaxBytes = 3*plain + plain/2 })
			for i := range 3 {
				if err := p.Send(ctx, text("x"), engine.SendOptions{}); err != nil {
					t.Fatalf("send %d after the messages left: %v", i, err)
				}
			}
			wantHolds(t, h.b, queueA, 3, plain)
			wantCode(t, "fourth send after the messages left", p.Send(ctx, text("x"), engine.SendOptions{}), engine.ErrResourceAllocation)
		})
	}
}

// TestPurgeFreesQuotaOfScheduledMessages: a queue whose byte quota is
// taken by messages scheduled far ahead, in memory or paged out to the
// store, admits sends again once it is purged.
func TestPurgeFreesQuotaOfScheduledMessages(t *testing.T) {
	for _, paging := range []bool{false, true} {
		t.Run(fmt.Sprint("paging=", paging), func(t *testing.T) {
			pols := newPolicies()
			cfg := engine.Config{Policy: pols.get, PageScheduledAfter: -1}
			if paging {
				cfg.PageScheduledAfter, cfg.PageLookahead = 300*time.Millisecond, 100*time.Millisecond
			}
			h := newPersistent(t, "", cfg)
			s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
			later := engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 24 * time.Hour}
			size := stampedSize(t, s, later)
			pols.set(queueA, func(p *engine.Policy) { p.MaxBytes = 10*size + size/2 })
			p, _ := s.CreateProducer(queueA)
			for i := range 10 {
				if err := p.Send(context.Background(), text("x"), later); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			wantCode(t, "send to the full queue", p.Send(context.Background(), text("x"), engine.SendOptions{}), engine.ErrResourceAllocation)
			if n, err := h.b.Purge(context.Background(), queueA); err != nil || n != 10 {
				t.Fatalf("purge: %d, %v", n, err)
			}
			for i := range 10 {
				if err := p.Send(context.Background(), text("x"), engine.SendOptions{}); err != nil {
					t.Fatalf("send %d after the purge: %v", i, err)
				}
			}
		})
	}
}

// quotaFaultStore is a store whose updates fail while refuse says so. It
// offers only store.Store, so the engine writes everything through Update.
type quotaFaultStore struct {
	store.Store
	mu      sync.Mutex
	refuse  func(ops []store.Op) bool
	refused int
}

var errQuotaStoreDown = errors.New("store refuses writes (test)")

// Update fails with errQuotaStoreDown when refuse selects ops.
func (s *quotaFaultStore) Update(ctx context.Context, ops []store.Op) error {
	s.mu.Lock()
	refuse := s.refuse != nil && s.refuse(ops)
	if refuse {
		s.refused++
	}
	s.mu.Unlock()
	if refuse {
		return errQuotaStoreDown
	}
	return s.Store.Update(ctx, ops)
}

// setRefuse makes the store refuse the updates f selects (nil: none).
func (s *quotaFaultStore) setRefuse(f func(ops []store.Op) bool) {
	s.mu.Lock()
	s.refuse = f
	s.mu.Unlock()
}

// refusedUpdates returns how many updates the store refused.
func (s *quotaFaultStore) refusedUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// newFaulty opens a broker (AutoCreate) on a quotaFaultStore over the
// journaled bbolt store in dir (a new one if ""). Restart it by closing the
// harness and calling newFaulty on h.dir again.
func newFaulty(t *testing.T, dir string, cfg engine.Config) (*harness, *quotaFaultStore) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	js, _ := openDurable(t, dir)
	fs := &quotaFaultStore{Store: js}
	cfg.Store = fs
	cfg.AutoCreate = true
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		_ = js.Close()
		t.Fatal(err)
	}
	h := &harness{t: t, b: b, dir: dir, st: js, cfg: cfg}
	t.Cleanup(h.close)
	return h, fs
}

// fixedID gives m an ID of a fixed width, so that every message of a test
// has the same size.
func fixedID(m *message.Message, n int) *message.Message {
	m.ID = fmt.Sprintf("ID:quota-%06d", n)
	return m
}

// TestQuotaConcurrentSendersNeverOvershoot: 16 producers race 50 sends
// each at a queue with room for 100 messages (by count, or by bytes):
// exactly 100 are accepted, every other send fails with a
// resource-allocation error, and the queue reports 100 messages.
func TestQuotaConcurrentSendersNeverOvershoot(t *testing.T) {
	const senders, each, quota = 16, 50, 100
	cases := []struct {
		name       string
		persistent bool
		bytes      bool
	}{
		{"messages/memory", false, false},
		{"messages/persistent", true, false},
		{"bytes/memory", false, true},
		{"bytes/persistent", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pols := newPolicies()
			var h *harness
			if tc.persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			c := h.conn(engine.ConnectionOptions{})
			probe := h.session(c, engine.AutoAcknowledge)
			size := int64(sendMsg(t, probe, sizeProbe, fixedID(text("x"), 999999), engine.SendOptions{}).Size())
			pols.set(queueA, func(p *engine.Policy) {
				if tc.bytes {
					p.MaxBytes = quota*size + size/2
				} else {
					p.MaxMessages = quota
				}
			})
			a, r := sendConcurrently(t, h, c, queueA, senders, each)
			if a != quota || r != senders*each-quota {
				t.Fatalf("%d sends accepted and %d refused; want %d and %d", a, r, quota, senders*each-quota)
			}
			wantHolds(t, h.b, queueA, quota, size)
		})
	}
}

// TestQuotaRoomOfFailedSendComesBack: a send whose store write fails
// takes no room: the queue still admits as many messages as its quota.
func TestQuotaRoomOfFailedSendComesBack(t *testing.T) {
	pols := newPolicies().set(queueA, func(p *engine.Policy) { p.MaxMessages = 2 })
	h, fs := newFaulty(t, "", engine.Config{Policy: pols.get})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	p, _ := s.CreateProducer(queueA)
	ctx := context.Background()
	if err := p.Send(ctx, text("1"), engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	fs.setRefuse(func([]store.Op) bool { return true })
	if err := p.Send(ctx, text("lost"), engine.SendOptions{}); !errors.Is(err, errQuotaStoreDown) {
		t.Fatalf("send while the store fails: %v", err)
	}
	fs.setRefuse(nil)
	if err := p.Send(ctx, text("2"), engine.SendOptions{}); err != nil {
		t.Fatalf("second message within the quota of 2: %v", err)
	}
	wantCode(t, "third message", p.Send(ctx, text("3"), engine.SendOptions{}), engine.ErrResourceAllocation)
	if in := quotaInfo(t, h.b, queueA); in.Messages != 2 {
		t.Fatalf("the queue reports %d messages, want 2", in.Messages)
	}
}

// topicMsg is a message for the topic quota tests: a and b say which of
// the subscriptions (selectors "a = TRUE", "b = TRUE") take it; every such
// message has the same size.
func topicMsg(n int, a, b bool) *message.Message {
	m := fixedID(text("x"), n)
	if err := m.Props.Set("a", message.BoolValue(a)); err != nil {
		panic(err)
	}
	if err := m.Props.Set("b", message.BoolValue(b)); err != nil {
		panic(err)
	}
	return m
}

// wantTopicHolds waits until topicT's subscriptions hold n messages
// together, as DestinationInfo reports them.
func wantTopicHolds(t *testing.T, b *engine.Broker, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("topic holding %d messages", n), func() bool { return quotaInfo(t, b, topicT).Messages == n })
}

// TestTopicQuota: a topic's quota bounds what its subscriptions hold
// together, every subscription's copy counting: a message two
// subscriptions take needs room for two, one none takes needs none, and
// room comes back as subscribers consume.
func TestTopicQuota(t *testing.T) {
	cases := []struct {
		name       string
		persistent bool
		bytes      bool
	}{
		{"messages/memory", false, false},
		{"messages/persistent", true, false},
		{"bytes/memory", false, true},
		{"bytes/persistent", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pols := newPolicies()
			var h *harness
			if tc.persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			subConn := h.conn(engine.ConnectionOptions{ClientID: "quota"})
			ss := h.session(subConn, engine.AutoAcknowledge)
			durable := consumer(t, ss, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "a", Selector: "a = TRUE"})
			plain := consumer(t, ss, topicT, engine.ConsumerOptions{Selector: "b = TRUE"})
			p, err := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge).CreateProducer(topicT)
			if err != nil {
				t.Fatal(err)
			}
			publish := func(n int, a, b bool) error { return p.Send(ctx, topicMsg(n, a, b), engine.SendOptions{}) }

			first := topicMsg(1, true, true)
			if err := p.Send(ctx, first, engine.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			size := int64(first.Size())
			pols.set(topicT, func(p *engine.Policy) {
				if tc.bytes {
					p.MaxBytes = 4*size + size/2
				} else {
					p.MaxMessages = 4
				}
			})
			wantTopicHolds(t, h.b, 2)
			if err := publish(2, true, true); err != nil {
				t.Fatalf("second message, two copies within a quota of 4: %v", err)
			}
			wantTopicHolds(t, h.b, 4)
			wantCode(t, "a message for both subscriptions on a full topic", publish(3, true, true), engine.ErrResourceAllocation)
			wantCode(t, "a message for one subscription on a full topic", publish(4, true, false), engine.ErrResourceAllocation)
			if err := publish(5, false, false); err != nil {
				t.Fatalf("a message no subscription takes on a full topic: %v", err)
			}
			wantTopicHolds(t, h.b, 4)
			if in := quotaInfo(t, h.b, topicT); in.Bytes > 4*size+size/2 {
				t.Fatalf("the topic holds %d bytes, over its quota", in.Bytes)
			}

			if err := subConn.Start(); err != nil {
				t.Fatal(err)
			}
			if got := body(recv(t, durable)); got != "x" {
				t.Fatalf("received %q", got)
			}
			wantTopicHolds(t, h.b, 3)
			wantCode(t, "two copies with room for one", publish(6, true, true), engine.ErrResourceAllocation)
			if err := publish(7, false, true); err != nil {
				t.Fatalf("one copy with room for one: %v", err)
			}
			wantTopicHolds(t, h.b, 4)
			for range 3 {
				recv(t, plain)
			}
			recv(t, durable)
			wantTopicHolds(t, h.b, 0)
			if err := publish(8, true, true); err != nil {
				t.Fatalf("publish once the subscribers consumed everything: %v", err)
			}
		})
	}
}

// TestTopicQuotaConcurrentPublishers: 16 producers race 50 publishes each
// at a topic with two subscriptions and room for 100 messages: exactly 50
// publishes (100 copies) get in, every other fails with a
// resource-allocation error.
func TestTopicQuotaConcurrentPublishers(t *testing.T) {
	const senders, each, quota = 16, 50, 100
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("persistent=", persistent), func(t *testing.T) {
			pols := newPolicies().set(topicT, func(p *engine.Policy) { p.MaxMessages = quota })
			var h *harness
			if persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			ss := h.session(h.conn(engine.ConnectionOptions{ClientID: "quota"}), engine.AutoAcknowledge)
			consumer(t, ss, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"})
			consumer(t, ss, topicT, engine.ConsumerOptions{})
			c := h.conn(engine.ConnectionOptions{})
			a, r := sendConcurrently(t, h, c, topicT, senders, each)
			if a != quota/2 || r != senders*each-quota/2 {
				t.Fatalf("%d publishes accepted and %d refused; want %d and %d", a, r, quota/2, senders*each-quota/2)
			}
			if in := quotaInfo(t, h.b, topicT); in.Messages != quota {
				t.Fatalf("the topic reports %d messages, want %d", in.Messages, quota)
			}
		})
	}
}

// TestTopicQuotaBlockingSend: a publish to a full topic waits up to the
// blocking-send timeout; it goes through when a subscriber makes room in time,
// fails with a resource-allocation error when none does, and fails at once
// when the topic is deleted while it waits (WebLogic JMS "Managing Your
// Applications", "What Happens when a Destination is Deleted": "Send
// operations waiting for quota will receive a ResourceAllocationException").
func TestTopicQuotaBlockingSend(t *testing.T) {
	ctx := context.Background()
	pols := newPolicies().set(topicT, func(p *engine.Policy) {
		p.MaxMessages = 2
		p.BlockingSendTimeout = 150 * time.Millisecond
	})
	h := newBroker(t, engine.Config{Policy: pols.get})
	subConn := h.conn(engine.ConnectionOptions{})
	sub := consumer(t, h.session(subConn, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{})
	p, _ := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge).CreateProducer(topicT)
	for i := range 2 {
		if err := p.Send(ctx, text("fill"), engine.SendOptions{}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	start := time.Now()
	wantCode(t, "publish to a full topic", p.Send(ctx, text("over"), engine.SendOptions{}), engine.ErrResourceAllocation)
	if el := time.Since(start); el < 140*time.Millisecond {
		t.Fatalf("failed after %v, before the blocking-send timeout", el)
	}

	pols.set(topicT, func(p *engine.Policy) { p.BlockingSendTimeout = time.Minute })
	waitSend := func() chan error {
		done := make(chan error, 1)
		go func() { done <- p.Send(ctx, text("waits"), engine.SendOptions{}) }()
		select {
		case err := <-done:
			t.Fatalf("publish to a full topic returned before room was made: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		return done
	}
	done := waitSend()
	if err := subConn.Start(); err != nil {
		t.Fatal(err)
	}
	recv(t, sub)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish after the subscriber made room: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting publish did not go through when room was made")
	}
	if err := subConn.Stop(); err != nil {
		t.Fatal(err)
	}
	wantTopicHolds(t, h.b, 2)

	done = waitSend()
	if err := h.b.DeleteDestination(ctx, topicT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantCode(t, "publish waiting when the topic was deleted", err, engine.ErrResourceAllocation)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting publish was not cancelled by the deletion")
	}
}

// hasOp returns a quotaFaultStore predicate selecting the updates with an
// op of kind in a bucket whose name contains bucket.
func hasOp(kind store.OpKind, bucket string) func([]store.Op) bool {
	return func(ops []store.Op) bool {
		for _, op := range ops {
			if op.Kind == kind && strings.Contains(op.Bucket, bucket) {
				return true
			}
		}
		return false
	}
}

// TestUndeliverableKeptWhenStoreRefusesMove: when the store refuses to
// move an undeliverable message to the error destination (or to delete
// it, without one), the message is not lost: it stays on its queue,
// counted, never given to a consumer again, and logged with its ID; the
// move is tried again and succeeds once the store accepts it, durably.
func TestUndeliverableKeptWhenStoreRefusesMove(t *testing.T) {
	ctx := context.Background()
	recoverAll := func(t *testing.T, s *engine.Session, _ message.Delivery) {
		if err := s.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		pol    func(p *engine.Policy)
		opts   engine.SendOptions
		fail   func(t *testing.T, s *engine.Session, d message.Delivery) // nil: the message expires unreceived
		refuse func([]store.Op) bool
		reason string // of the moved message; "" when it is deleted
	}{
		{name: "redelivery-limit", pol: func(p *engine.Policy) { p.RedeliveryLimit, p.ErrorDestination = 0, errQueue },
			fail: recoverAll, refuse: hasOp(store.Put, errQueue.Name), reason: "redelivery limit exceeded"},
		{name: "rejected", pol: func(p *engine.Policy) { p.ErrorDestination = errQueue },
			fail: func(t *testing.T, s *engine.Session, d message.Delivery) {
				if err := s.Settle(ctx, d.Tag, engine.Rejected); err != nil {
					t.Fatal(err)
				}
			},
			refuse: hasOp(store.Put, errQueue.Name), reason: "rejected by the consumer"},
		{name: "expired-redirect", pol: func(p *engine.Policy) { p.Expiration, p.ErrorDestination = engine.ExpireRedirect, errQueue },
			opts:   engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: 50 * time.Millisecond},
			refuse: hasOp(store.Put, errQueue.Name), reason: "expired"},
		{name: "redelivery-limit-no-error-destination", pol: func(p *engine.Policy) { p.RedeliveryLimit = 0 },
			fail: recoverAll, refuse: hasOp(store.Delete, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink logSink
			pols := newPolicies().set(queueA, tc.pol)
			h, fs := newFaulty(t, "", engine.Config{Policy: pols.get, Logger: sink.logger(), ExpiryScanInterval: 10 * time.Millisecond})
			h.create(errQueue)
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.ClientAcknowledge)
			m := send(t, s, queueA, "poison", tc.opts)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			if tc.fail != nil {
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				d := recv(t, cons)
				fs.setRefuse(tc.refuse)
				tc.fail(t, s, d)
			} else {
				fs.setRefuse(tc.refuse) // and the expiry scan finds it
			}
			eventually(t, "the move refused", func() bool { return fs.refusedUpdates() >= 1 })
			eventually(t, "the message kept on queue a, counted", func() bool {
				in := quotaInfo(t, h.b, queueA)
				return in.Messages == 1 && in.Bytes > 0
			})
			eventually(t, "the move tried again", func() bool { return fs.refusedUpdates() >= 2 })
			if in := quotaInfo(t, h.b, queueA); in.Messages != 1 || in.Bytes == 0 {
				t.Fatalf("while the store refuses the move, queue a reports %d messages, %d bytes; want the message kept", in.Messages, in.Bytes)
			}
			if in := quotaInfo(t, h.b, errQueue); in.Messages != 0 {
				t.Fatalf("the error destination reports %d messages before the store accepted the move", in.Messages)
			}
			if _, ok := sink.lineWith("level=ERROR", "message_id="+m.ID, "destination="+queueA.String()); !ok {
				t.Fatalf("no error logged with the message ID and destination; log:\n%s", sink.String())
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			recvNone(t, cons, 300*time.Millisecond)

			want := int64(0)
			if tc.reason != "" {
				want = 1
			}
			fs.setRefuse(nil)
			eventually(t, "the move made once the store accepts it", func() bool {
				in := quotaInfo(t, h.b, queueA)
				return in.Messages == 0 && in.Bytes == 0 && quotaInfo(t, h.b, errQueue).Messages == want
			})
			check := func(b *engine.Broker) {
				t.Helper()
				if in := quotaInfo(t, b, errQueue); in.Messages != want {
					t.Fatalf("the error destination reports %d messages, want %d", in.Messages, want)
				}
				if in := quotaInfo(t, b, queueA); in.Messages != 0 {
					t.Fatalf("queue a reports %d messages after the move", in.Messages)
				}
			}
			check(h.b)
			_ = c.Close()
			dir, cfg := h.dir, h.cfg
			h.close()
			h, _ = newFaulty(t, dir, cfg)
			check(h.b)
			if tc.reason == "" {
				return
			}
			ec := h.conn(engine.ConnectionOptions{})
			es := h.session(ec, engine.AutoAcknowledge)
			errCons := consumer(t, es, errQueue, engine.ConsumerOptions{})
			if err := ec.Start(); err != nil {
				t.Fatal(err)
			}
			d := recv(t, errCons)
			if v, _ := d.Msg.Props.GetString(engine.PropErrorReason); d.Msg.ID != m.ID || v != tc.reason {
				t.Fatalf("error destination got %s with reason %q; want %s with %q", d.Msg.ID, v, m.ID, tc.reason)
			}
		})
	}
}

// sendConcurrently sends each messages from each of senders producers of
// connection c to dest at once, within a minute, and returns how many sends
// were accepted and how many refused for lack of room; any other failure
// fails the test.
func sendConcurrently(t *testing.T, h *harness, c *engine.Connection, dest message.Destination, senders, each int) (accepted, refused int64) {
	t.Helper()
	producers := make([]*engine.Producer, senders)
	for g := range producers {
		p, err := h.session(c, engine.AutoAcknowledge).CreateProducer(dest)
		if err != nil {
			t.Fatal(err)
		}
		producers[g] = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ok, full atomic.Int64
	other := make(chan error, senders*each)
	var wg sync.WaitGroup
	for g, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each && ctx.Err() == nil; i++ {
				switch err := p.Send(ctx, fixedID(text("x"), g*each+i), engine.SendOptions{}); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, engine.ErrResourceAllocation):
					full.Add(1)
				default:
					other <- err
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the sends to %s did not finish within a minute", dest)
	}
	close(other)
	for err := range other {
		t.Errorf("send to %s failed other than for quota: %v", dest, err)
	}
	return ok.Load(), full.Load()
}
