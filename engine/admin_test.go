package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/grammar/selector"
)

// Tests of the management API (engine/admin.go). Helpers are prefixed adm
// so that they cannot collide with other test files of the package.

var (
	admQ1 = message.Destination{Kind: message.Queue, Name: "adm.q1"}
	admQ2 = message.Destination{Kind: message.Queue, Name: "adm.q2"}
	admT  = message.Destination{Kind: message.Topic, Name: "adm.t"}
)

// admH is a broker for one test, in memory or on a bbolt store (the store
// internal/broker uses), closed at cleanup.
type admH struct {
	t   *testing.T
	b   *engine.Broker
	dir string
	st  *boltstore.Store
	cfg engine.Config
}

func admNew(t *testing.T, persistent bool, cfg engine.Config) *admH {
	t.Helper()
	h := &admH{t: t, cfg: cfg}
	if persistent {
		h.dir = t.TempDir()
	}
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *admH) open() {
	h.t.Helper()
	cfg := h.cfg
	cfg.AutoCreate = true
	if h.dir != "" {
		st, err := boltstore.Open(filepath.Join(h.dir, "sluice.db"), boltstore.Options{})
		if err != nil {
			h.t.Fatal(err)
		}
		h.st, cfg.Store = st, st
	}
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.b = b
}

func (h *admH) close() {
	if h.b != nil {
		_ = h.b.Close()
		h.b = nil
	}
	if h.st != nil {
		_ = h.st.Close()
		h.st = nil
	}
}

// restart closes the broker and its store cleanly and opens them again.
func (h *admH) restart() {
	h.t.Helper()
	h.close()
	h.open()
}

func (h *admH) conn(opts engine.ConnectionOptions) *engine.Connection {
	h.t.Helper()
	c, err := h.b.Connect(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (h *admH) session(c *engine.Connection, mode engine.AckMode) *engine.Session {
	h.t.Helper()
	s, err := c.CreateSession(mode)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func admConsumer(t *testing.T, s *engine.Session, dest message.Destination, o engine.ConsumerOptions) *engine.Consumer {
	t.Helper()
	c, err := s.CreateConsumer(dest, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func admRecv(t *testing.T, c *engine.Consumer) message.Delivery {
	t.Helper()
	d, ok, err := c.ReceiveTimeout(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("no message within 5s")
	}
	return d
}

func admBody(d message.Delivery) string { return string(d.Msg.Body.Data) }

// admSend sends m to dest.
func admSend(t *testing.T, s *engine.Session, dest message.Destination, m *message.Message, o engine.SendOptions) *message.Message {
	t.Helper()
	p, err := s.CreateProducer(dest)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), m, o); err != nil {
		t.Fatal(err)
	}
	return m
}

func admText(body string, props ...any) *message.Message {
	m := &message.Message{Body: message.TextBody(body)}
	for i := 0; i < len(props); i += 2 {
		if err := m.Props.Set(props[i].(string), props[i+1].(message.Value)); err != nil {
			panic(err)
		}
	}
	return m
}

func admInfo(t *testing.T, b *engine.Broker, d message.Destination) engine.DestinationInfo {
	t.Helper()
	in, err := b.DestinationInfo(d)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func admBodies(t *testing.T, b *engine.Broker, tg engine.Target) []string {
	t.Helper()
	p, err := b.BrowseMessages(tg, engine.BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(p.Messages))
	for i, e := range p.Messages {
		out[i] = string(e.Msg.Body.Data)
	}
	return out
}

func admCreate(t *testing.T, b *engine.Broker, ds ...message.Destination) {
	t.Helper()
	for _, d := range ds {
		if _, err := b.CreateDestination(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdminDestinationInfo(t *testing.T) {
	h := admNew(t, false, engine.Config{})
	before := time.Now().Add(-time.Second)
	admCreate(t, h.b, admQ1, admT)
	c := h.conn(engine.ConnectionOptions{ClientID: "c1"})
	s := h.session(c, engine.ClientAcknowledge)
	for i := range 5 {
		admSend(t, s, admQ1, admText(fmt.Sprint("m", i)), engine.SendOptions{})
	}
	admSend(t, s, admQ1, admText("later"), engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour})
	cons := admConsumer(t, s, admQ1, engine.ConsumerOptions{Prefetch: 2, CreditMode: engine.CreditOnAck})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d := admRecv(t, cons)
	in := admInfo(t, h.b, admQ1)
	if in.Kind != message.Queue || in.Name != "adm.q1" || in.Messages != 6 || in.Scheduled != 1 || in.InFlight != 2 || in.Ready != 3 ||
		in.Consumers != 1 || in.Enqueued != 6 || in.Dequeued != 0 || in.Bytes <= 0 || in.Created.Before(before) || in.OldestTimestamp == 0 {
		t.Fatalf("queue info = %+v", in)
	}
	if err := s.Acknowledge(context.Background(), d.Tag); err != nil {
		t.Fatal(err)
	}
	if in := admInfo(t, h.b, admQ1); in.Dequeued != 1 || in.Messages != 5 {
		t.Fatalf("after ack: %+v", in)
	}

	// A topic sums its subscriptions.
	c2 := h.conn(engine.ConnectionOptions{ClientID: "c2"})
	s2 := h.session(c2, engine.AutoAcknowledge)
	sub := admConsumer(t, s2, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d1"})
	admConsumer(t, s2, admT, engine.ConsumerOptions{})
	_ = sub.Close()
	admSend(t, s, admT, admText("t1"), engine.SendOptions{})
	tin := admInfo(t, h.b, admT)
	if tin.Subscriptions != 2 || tin.Messages != 2 || tin.Consumers != 1 || tin.Enqueued != 2 {
		t.Fatalf("topic info = %+v", tin)
	}

	all := h.b.Destinations()
	var names []string
	for _, x := range all {
		names = append(names, x.Destination().String())
	}
	if strings.Join(names, " ") != "/queue/adm.q1 /topic/adm.t" {
		t.Fatalf("Destinations() = %v", names)
	}
	_, err := h.b.DestinationInfo(admQ2)
	if !errors.Is(err, engine.ErrNotFound) || !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("unknown destination: %v", err)
	}
}

func TestAdminConnectionsAndClose(t *testing.T) {
	h := admNew(t, false, engine.Config{})
	c, err := h.b.Connect(engine.ConnectionOptions{ClientID: "app", RemoteAddr: "10.0.0.1:5000", Protocol: "stomp/1.2"})
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan error, 1)
	c.SetExceptionListener(func(err error) { heard <- err })
	s := h.session(c, engine.ClientAcknowledge)
	admConsumer(t, s, admQ1, engine.ConsumerOptions{Selector: "x > 1"})
	admConsumer(t, s, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"})
	h.session(c, engine.Transacted)
	other := h.conn(engine.ConnectionOptions{})

	cs := h.b.Connections()
	if len(cs) != 2 || cs[0].ID != c.ID() || cs[1].ID != other.ID() {
		t.Fatalf("Connections() = %+v", cs)
	}
	ci := cs[0]
	if ci.ClientID != "app" || ci.RemoteAddr != "10.0.0.1:5000" || ci.Protocol != "stomp/1.2" || ci.Started ||
		ci.Consumers != 2 || len(ci.Sessions) != 2 || ci.Sessions[0].Mode != engine.ClientAcknowledge ||
		ci.Sessions[1].Mode != engine.Transacted || ci.Created.IsZero() {
		t.Fatalf("connection info = %+v", ci)
	}
	cons := ci.Sessions[0].Consumers
	if cons[0].Destination != admQ1 || cons[0].Selector != "x > 1" || cons[1].Destination != admT || cons[1].Subscription != "sub" || !cons[1].Durable {
		t.Fatalf("consumers = %+v", cons)
	}

	if err := h.b.CloseConnection(c.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-heard:
		if !errors.Is(err, engine.ErrClosedByAdministrator) {
			t.Fatalf("exception listener heard %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exception listener not told")
	}
	if _, err := s.CreateConsumer(admQ1, engine.ConsumerOptions{}); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("session of a closed connection: %v", err)
	}
	if cs := h.b.Connections(); len(cs) != 1 || cs[0].ID != other.ID() {
		t.Fatalf("after close: %+v", cs)
	}
	if err := h.b.CloseConnection(c.ID()); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("closing again: %v", err)
	}
}

func TestAdminSubscriptionsAndDelete(t *testing.T) {
	h := admNew(t, true, engine.Config{})
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s := h.session(c, engine.AutoAcknowledge)
	active := admConsumer(t, s, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: "active", Selector: "n > 0", NoLocal: true})
	idle := admConsumer(t, s, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: "idle"})
	_ = idle.Close()
	admConsumer(t, s, admT, engine.ConsumerOptions{})
	p := h.conn(engine.ConnectionOptions{})
	ps := h.session(p, engine.AutoAcknowledge)
	for i := range 3 {
		admSend(t, ps, admT, admText("x", "n", message.IntValue(int32(i))), engine.SendOptions{})
	}
	subs := h.b.Subscriptions()
	if len(subs) != 3 {
		t.Fatalf("Subscriptions() = %+v", subs)
	}
	byName := map[string]engine.SubscriptionInfo{}
	for _, x := range subs {
		byName[x.Name] = x
	}
	a, i, n := byName["active"], byName["idle"], byName[""]
	if a.ClientID != "cid" || a.Topic != admT || a.Selector != "n > 0" || !a.NoLocal || !a.Durable || a.Consumers != 1 || a.Pending != 2 {
		t.Fatalf("active = %+v", a)
	}
	if !i.Durable || i.Consumers != 0 || i.Pending != 3 || i.Enqueued != 3 {
		t.Fatalf("idle = %+v", i)
	}
	if n.Durable || n.Consumers != 1 {
		t.Fatalf("non-durable = %+v", n)
	}

	if err := h.b.DeleteSubscription(context.Background(), "cid", "active"); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("deleting an active subscription: %v", err)
	}
	if err := h.b.DeleteSubscription(context.Background(), "cid", "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("deleting an unknown subscription: %v", err)
	}
	if err := h.b.DeleteSubscription(context.Background(), "cid", "idle"); err != nil {
		t.Fatal(err)
	}
	_ = active
	h.restart()
	for _, x := range h.b.Subscriptions() {
		if x.Name == "idle" {
			t.Fatal("deleted subscription came back after a restart")
		}
	}
}

func TestAdminBrowseSelectSortPage(t *testing.T) {
	h := admNew(t, false, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	prios := []uint8{4, 9, 1, 4, 7}
	for i, p := range prios {
		m := admText(fmt.Sprint("m", i), "i", message.IntValue(int32(i)), "color", message.StringValue([]string{"red", "blue"}[i%2]))
		m.CorrelationID = fmt.Sprint("corr-", 9-i)
		admSend(t, s, admQ1, m, engine.SendOptions{Set: engine.SetPriority, Priority: p})
	}
	admSend(t, s, admQ1, admText("sched"), engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour})

	tg := engine.Target{Dest: admQ1}
	// Delivery order: priority, then arrival, then the scheduled one.
	if got := strings.Join(admBodies(t, h.b, tg), " "); got != "m1 m4 m0 m3 m2 sched" {
		t.Fatalf("delivery order = %s", got)
	}
	page := func(o engine.BrowseOptions) (int, string) {
		t.Helper()
		p, err := h.b.BrowseMessages(tg, o)
		if err != nil {
			t.Fatal(err)
		}
		var bs []string
		for _, e := range p.Messages {
			bs = append(bs, string(e.Msg.Body.Data))
		}
		return p.Total, strings.Join(bs, " ")
	}
	for _, tt := range []struct {
		o     engine.BrowseOptions
		total int
		want  string
	}{
		{engine.BrowseOptions{Selector: "color = 'red'"}, 3, "m4 m0 m2"},
		{engine.BrowseOptions{Sort: "JMSCorrelationID", Selector: "i IS NOT NULL"}, 5, "m4 m3 m2 m1 m0"},
		{engine.BrowseOptions{Sort: "-priority", Limit: 2}, 6, "m1 m4"},
		{engine.BrowseOptions{Sort: "jmspriority", Offset: 1, Limit: 2}, 6, "m0 m3"},
		{engine.BrowseOptions{Offset: 4}, 6, "m2 sched"},
		{engine.BrowseOptions{Offset: 40}, 6, ""},
		{engine.BrowseOptions{Sort: "-JMSDeliveryTime", Limit: 1}, 6, "sched"},
	} {
		if total, got := page(tt.o); total != tt.total || got != tt.want {
			t.Errorf("%+v: total %d %q, want %d %q", tt.o, total, got, tt.total, tt.want)
		}
	}
	p, _ := h.b.BrowseMessages(tg, engine.BrowseOptions{Offset: 5})
	if e := p.Messages[0]; !e.Scheduled || e.DeliverAt < time.Now().Add(50*time.Minute).UnixMilli() || e.DeliveryCount != 1 {
		t.Fatalf("scheduled entry = %+v", e)
	}

	_, err := h.b.BrowseMessages(tg, engine.BrowseOptions{Selector: "color = = 'red'"})
	var se *selector.Error
	if !errors.Is(err, engine.ErrInvalidSelector) || !errors.As(err, &se) || se.Pos.Column != 9 {
		t.Fatalf("bad selector: %v (%+v)", err, se)
	}
	if _, err := h.b.BrowseMessages(tg, engine.BrowseOptions{Sort: "color"}); err == nil || !strings.Contains(err.Error(), "JMSPriority") {
		t.Fatalf("bad sort: %v", err)
	}
	if _, err := h.b.BrowseMessages(engine.QueueTarget("nope"), engine.BrowseOptions{}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}
	if _, err := h.b.BrowseMessages(engine.Target{Dest: admT}, engine.BrowseOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("topic: %v", err)
	}
	if _, err := h.b.BrowseMessages(engine.SubscriptionTarget("x", "y"), engine.BrowseOptions{}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown subscription: %v", err)
	}
}

func TestAdminMoveAndDeleteLeaveInFlightAlone(t *testing.T) {
	h := admNew(t, true, engine.Config{})
	admCreate(t, h.b, admQ1, admQ2)
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	var sent []*message.Message
	for i := range 10 {
		sent = append(sent, admSend(t, s, admQ1, admText(fmt.Sprint("m", i), "i", message.IntValue(int32(i))), engine.SendOptions{}))
	}
	admSend(t, s, admQ1, admText("sched", "i", message.IntValue(100)), engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour})
	cons := admConsumer(t, s, admQ1, engine.ConsumerOptions{Prefetch: 1})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	inflight := admRecv(t, cons) // m0, unacknowledged
	if admBody(inflight) != "m0" {
		t.Fatalf("received %s", admBody(inflight))
	}
	// Closing the consumer returns its prefetched messages; m0, delivered
	// and unacknowledged, stays in flight with the session.
	_ = cons.Close()

	ctx := context.Background()
	// By IDs: m0 is in flight, so only m2 moves.
	n, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{IDs: []string{sent[0].ID, sent[2].ID}}, admQ2)
	if err != nil || n != 1 {
		t.Fatalf("move by IDs: %d, %v", n, err)
	}
	// By selector, the scheduled one included.
	n, err = h.b.MoveMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{Selector: "i >= 8"}, admQ2)
	if err != nil || n != 3 {
		t.Fatalf("move by selector: %d, %v", n, err)
	}
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ2}), " "); got != "m2 m8 m9 sched" {
		t.Fatalf("q2 = %s", got)
	}
	moved, _ := h.b.BrowseMessages(engine.Target{Dest: admQ2}, engine.BrowseOptions{})
	if m := moved.Messages[0].Msg; m.ID != sent[2].ID || m.Destination != admQ2 || m.Timestamp != sent[2].Timestamp {
		t.Fatalf("moved message = %+v", m)
	}
	if !moved.Messages[3].Scheduled {
		t.Fatal("a moved scheduled message is no longer scheduled")
	}
	in1 := admInfo(t, h.b, admQ1)
	if in1.Messages != 7 || in1.InFlight != 1 || in1.Scheduled != 0 {
		t.Fatalf("q1 after moves = %+v", in1)
	}

	n, err = h.b.DeleteMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{Selector: "i = 0 OR i = 3 OR i = 4"})
	if err != nil || n != 2 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ1}), " "); got != "m1 m5 m6 m7" {
		t.Fatalf("q1 = %s", got)
	}
	// The in-flight message is still there and can be acknowledged.
	if err := s.Acknowledge(ctx, inflight.Tag); err != nil {
		t.Fatal(err)
	}

	// Errors change nothing.
	if _, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{}, message.Destination{Kind: message.Queue, Name: "nope"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("move to an unknown queue: %v", err)
	}
	if _, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{}, admQ1); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("move to itself: %v", err)
	}
	if _, err := h.b.DeleteMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{Selector: "i >"}); !errors.Is(err, engine.ErrInvalidSelector) {
		t.Fatalf("bad selector: %v", err)
	}
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ1}), " "); got != "m1 m5 m6 m7" {
		t.Fatalf("q1 after errors = %s", got)
	}

	// Everything is as the store says after a restart.
	_ = c.Close()
	h.restart()
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ1}), " "); got != "m1 m5 m6 m7" {
		t.Fatalf("q1 after restart = %s", got)
	}
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ2}), " "); got != "m2 m8 m9 sched" {
		t.Fatalf("q2 after restart = %s", got)
	}
}

func TestAdminQuotaStopsMove(t *testing.T) {
	pol := func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d == admQ2 {
			p.MaxMessages = 2
		}
		return p
	}
	h := admNew(t, false, engine.Config{Policy: pol})
	admCreate(t, h.b, admQ1, admQ2)
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	for i := range 3 {
		admSend(t, s, admQ1, admText(fmt.Sprint("m", i)), engine.SendOptions{})
	}
	if _, err := h.b.MoveMessages(context.Background(), engine.Target{Dest: admQ1}, engine.Filter{}, admQ2); !errors.Is(err, engine.ErrResourceAllocation) {
		t.Fatalf("move over quota: %v", err)
	}
	if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ1}), " "); got != "m0 m1 m2" {
		t.Fatalf("q1 = %s", got)
	}
	if in := admInfo(t, h.b, admQ2); in.Messages != 0 {
		t.Fatalf("q2 = %+v", in)
	}
}

func TestAdminDurableSubscriptionMessages(t *testing.T) {
	h := admNew(t, true, engine.Config{})
	admCreate(t, h.b, admT, admQ1)
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s := h.session(c, engine.AutoAcknowledge)
	for _, name := range []string{"s1", "s2"} {
		_ = admConsumer(t, s, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: name}).Close()
	}
	for i := range 4 {
		admSend(t, s, admT, admText(fmt.Sprint("m", i), "i", message.IntValue(int32(i))), engine.SendOptions{})
	}
	s1, s2 := engine.SubscriptionTarget("cid", "s1"), engine.SubscriptionTarget("cid", "s2")
	ctx := context.Background()
	if n, err := h.b.MoveMessages(ctx, s1, engine.Filter{Selector: "i < 2"}, admQ1); err != nil || n != 2 {
		t.Fatalf("move: %d %v", n, err)
	}
	if n, err := h.b.DeleteMessages(ctx, s1, engine.Filter{Selector: "i = 3"}); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	var buf bytes.Buffer
	if n, err := h.b.Export(s2, "", &buf); err != nil || n != 4 {
		t.Fatalf("export: %d %v", n, err)
	}
	// m2 is still on s1 (the same message as s2's): it is skipped.
	if res, err := h.b.Import(ctx, s1, bytes.NewReader(buf.Bytes())); err != nil || res != (engine.ImportResult{Imported: 3, Skipped: 1}) {
		t.Fatalf("import into s1: %+v %v", res, err)
	}
	check := func(when string) {
		t.Helper()
		if got := strings.Join(admBodies(t, h.b, s1), " "); got != "m2 m0 m1 m3" {
			t.Fatalf("%s: s1 = %s", when, got)
		}
		if got := strings.Join(admBodies(t, h.b, s2), " "); got != "m0 m1 m2 m3" {
			t.Fatalf("%s: s2 = %s", when, got)
		}
		if got := strings.Join(admBodies(t, h.b, engine.Target{Dest: admQ1}), " "); got != "m0 m1" {
			t.Fatalf("%s: q1 = %s", when, got)
		}
	}
	check("before restart")
	_ = c.Close()
	h.restart()
	check("after restart")

	// Importing into the topic publishes to both subscriptions.
	if n, err := h.b.Import(ctx, engine.Target{Dest: admT}, strings.NewReader(`{"id":"ID:x","body":{"kind":"text","text":"new"}}`)); err != nil || n.Imported != 1 {
		t.Fatalf("import into topic: %+v %v", n, err)
	}
	if in := admInfo(t, h.b, admT); in.Messages != 10 {
		t.Fatalf("topic after import = %+v", in)
	}
}

// admRich is a message with every header field set, properties of every
// property type and the given body.
func admRich(i int, b message.Body) *message.Message {
	m := &message.Message{
		ID:              fmt.Sprintf("ID:orig-%d", i),
		ReplyTo:         message.Destination{Kind: message.Queue, Name: "replies"},
		CorrelationID:   fmt.Sprint("corr-", i),
		Type:            "order",
		DeliveryMode:    message.Persistent,
		Priority:        uint8(i % 10),
		Timestamp:       1_700_000_000_000 + int64(i),
		Expiration:      4_000_000_000_000 + int64(i),
		DeliveryTime:    1_700_000_000_000 + int64(i),
		RedeliveryLimit: int32(i % 5),
		Body:            b,
	}
	for _, p := range []message.Field{
		{Name: "b", Value: message.BoolValue(i%2 == 0)},
		{Name: "y", Value: message.ByteValue(-8)},
		{Name: "s", Value: message.ShortValue(-300)},
		{Name: "n", Value: message.IntValue(int32(i))},
		{Name: "l", Value: message.LongValue(math.MaxInt64 - int64(i))},
		{Name: "f", Value: message.FloatValue(1.5)},
		{Name: "d", Value: message.DoubleValue(math.Inf(-1))},
		{Name: "str", Value: message.StringValue("héllo \"quoted\"\n")},
	} {
		if err := m.Props.Set(p.Name, p.Value); err != nil {
			panic(err)
		}
	}
	return m
}

func admBodiesOfEveryKind() []message.Body {
	mb, err := message.MapBody(
		message.Field{Name: "k", Value: message.StringValue("v")},
		message.Field{Name: "raw", Value: message.BytesValue([]byte{0, 1, 255})},
		message.Field{Name: "c", Value: message.CharValue('é')},
		message.Field{Name: "nan", Value: message.DoubleValue(math.NaN())},
	)
	if err != nil {
		panic(err)
	}
	return []message.Body{
		{},
		message.TextBody("plain text"),
		message.XMLBody("<a b='1'>x</a>"),
		message.BytesBody([]byte{0xff, 0, 0x80}),
		{Kind: message.BodyText, Data: []byte{0xff, 'x'}}, // not UTF-8
		mb,
		message.StreamBody(message.IntValue(1), message.NullValue(), message.BytesValue([]byte("s")), message.CharValue(0xd800)),
	}
}

// The round trip: export, delete, import restores every message
// with its headers and typed properties, in order, durably.
func TestAdminExportDeleteImportRoundTrip(t *testing.T) {
	h := admNew(t, true, engine.Config{})
	admCreate(t, h.b, admQ1)
	var want []*message.Message
	tg := engine.Target{Dest: admQ1}
	for i, b := range admBodiesOfEveryKind() {
		m := admRich(i, b)
		want = append(want, m.Clone())
		// Send with ImportMessages: a send would restamp the ID and times.
		m.Destination = admQ1
		if _, err := h.b.ImportMessages(context.Background(), tg, []*message.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	// Messages come back in delivery order: sort what we expect the same way.
	orig, err := h.b.BrowseMessages(tg, engine.BrowseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := h.b.Export(tg, "", &buf)
	if err != nil || n != len(want) {
		t.Fatalf("export: %d %v", n, err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != n {
		t.Fatalf("export wrote %d lines for %d messages", lines, n)
	}
	if n, err := h.b.DeleteMessages(context.Background(), tg, engine.Filter{}); err != nil || n != len(want) {
		t.Fatalf("delete: %d %v", n, err)
	}
	if in := admInfo(t, h.b, admQ1); in.Messages != 0 {
		t.Fatalf("after delete: %+v", in)
	}
	if n, err := h.b.Import(context.Background(), tg, bytes.NewReader(buf.Bytes())); err != nil || n.Imported != len(want) {
		t.Fatalf("import: %+v %v", n, err)
	}
	compare := func(when string) {
		t.Helper()
		got, err := h.b.BrowseMessages(tg, engine.BrowseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) != len(orig.Messages) {
			t.Fatalf("%s: %d messages, want %d", when, len(got.Messages), len(orig.Messages))
		}
		for i, e := range got.Messages {
			w := orig.Messages[i].Msg
			if !e.Msg.Equal(w) {
				t.Errorf("%s: message %d\n got %+v\nwant %+v", when, i, e.Msg, w)
			}
		}
		for _, w := range want {
			found := false
			for _, e := range got.Messages {
				c := w.Clone()
				c.Destination = admQ1
				if e.Msg.Equal(c) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: message %s not restored as sent: %+v", when, w.ID, w)
			}
		}
	}
	compare("after import")
	h.restart()
	compare("after restart")
}

func TestAdminImportBadInputChangesNothing(t *testing.T) {
	h := admNew(t, false, engine.Config{})
	admCreate(t, h.b, admQ1)
	in := `{"id":"ID:1","body":{"kind":"text","text":"a"}}

{"id":"ID:2","priority":12}
`
	_, err := h.b.Import(context.Background(), engine.Target{Dest: admQ1}, strings.NewReader(in))
	var ie *engine.ImportError
	if !errors.As(err, &ie) || ie.Line != 3 || !strings.Contains(err.Error(), "priority 12") {
		t.Fatalf("bad line: %v", err)
	}
	for _, bad := range []string{`{"id":"ID:1","unknown":1}`, `{"properties":[{"name":"x","type":"int","value":"abc"}]}`, `not json`} {
		if _, err := h.b.Import(context.Background(), engine.Target{Dest: admQ1}, strings.NewReader(bad)); !errors.As(err, &ie) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if in := admInfo(t, h.b, admQ1); in.Messages != 0 || in.Enqueued != 0 {
		t.Fatalf("bad import changed the queue: %+v", in)
	}
	if _, err := h.b.Import(context.Background(), engine.QueueTarget("nope"), strings.NewReader(`{}`)); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}
}

// A 100,000-message export, delete, import round trip on the bbolt store:
// lossless, and timed (go test -run RoundTrip100k -v ./engine). Skipped with
// -short.
func TestAdminRoundTrip100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 messages: skipped with -short")
	}
	const total = 100_000
	h := admNew(t, true, engine.Config{})
	admCreate(t, h.b, admQ1)
	tg := engine.Target{Dest: admQ1}
	ctx := context.Background()
	var msgs []*message.Message
	for i := range total {
		m := admRich(i, message.TextBody(fmt.Sprintf("message %d of the round trip", i)))
		m.Priority = 4
		msgs = append(msgs, m)
	}
	start := time.Now()
	if n, err := h.b.ImportMessages(ctx, tg, msgs); err != nil || n.Imported != total {
		t.Fatalf("load: %+v %v", n, err)
	}
	loaded := time.Since(start)
	before, err := h.b.BrowseMessages(tg, engine.BrowseOptions{})
	if err != nil || before.Total != total {
		t.Fatalf("browse: %d %v", before.Total, err)
	}

	start = time.Now()
	var buf bytes.Buffer
	if n, err := h.b.Export(tg, "", &buf); err != nil || n != total {
		t.Fatalf("export: %d %v", n, err)
	}
	exported := time.Since(start)
	size := buf.Len()
	start = time.Now()
	if n, err := h.b.DeleteMessages(ctx, tg, engine.Filter{}); err != nil || n != total {
		t.Fatalf("delete: %d %v", n, err)
	}
	deleted := time.Since(start)
	start = time.Now()
	if n, err := h.b.Import(ctx, tg, &buf); err != nil || n.Imported != total {
		t.Fatalf("import: %+v %v", n, err)
	}
	imported := time.Since(start)
	t.Logf("%d messages: export %v (%.1f MB), delete %v, import %v (first load %v)",
		total, exported.Round(time.Millisecond), float64(size)/1e6, deleted.Round(time.Millisecond), imported.Round(time.Millisecond), loaded.Round(time.Millisecond))

	check := func(when string) {
		t.Helper()
		after, err := h.b.BrowseMessages(tg, engine.BrowseOptions{})
		if err != nil || after.Total != total {
			t.Fatalf("%s: %d messages, %v", when, after.Total, err)
		}
		for i := range after.Messages {
			if !after.Messages[i].Msg.Equal(before.Messages[i].Msg) {
				t.Fatalf("%s: message %d differs:\n got %+v\nwant %+v", when, i, after.Messages[i].Msg, before.Messages[i].Msg)
			}
		}
	}
	check("after import")
	h.restart()
	check("after restart")
}

// Moves and deletes while producers and consumers run: every message is
// received once or still waiting or deleted, never lost or duplicated, and
// the counters add up.
func TestAdminMoveDuringTraffic(t *testing.T) {
	h := admNew(t, true, engine.Config{})
	admCreate(t, h.b, admQ1, admQ2)
	const total = 2000
	ctx := context.Background()
	prodConn := h.conn(engine.ConnectionOptions{})
	ps := h.session(prodConn, engine.AutoAcknowledge)
	consConn := h.conn(engine.ConnectionOptions{})
	cs := h.session(consConn, engine.ClientAcknowledge)
	cons := admConsumer(t, cs, admQ1, engine.ConsumerOptions{Prefetch: 10})
	if err := consConn.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	received := map[string]int{}
	go func() {
		defer close(done)
		for {
			d, ok, err := cons.ReceiveTimeout(300 * time.Millisecond)
			if err != nil || !ok {
				return
			}
			received[d.Msg.ID]++
			if err := cs.Acknowledge(ctx, d.Tag); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	sent := map[string]bool{}
	deleted := 0
	for i := range total {
		m := admSend(t, ps, admQ1, admText(fmt.Sprint("m", i), "i", message.IntValue(int32(i))), engine.SendOptions{})
		sent[m.ID] = true
		switch i % 100 {
		case 50:
			if _, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{Selector: "i > " + fmt.Sprint(i-30)}, admQ2); err != nil {
				t.Fatal(err)
			}
		case 75:
			if _, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ2}, engine.Filter{}, admQ1); err != nil {
				t.Fatal(err)
			}
		case 99:
			n, err := h.b.DeleteMessages(ctx, engine.Target{Dest: admQ1}, engine.Filter{Selector: "i = " + fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			deleted += n
		}
	}
	// Bring back anything left on q2, then let the consumer drain q1.
	if _, err := h.b.MoveMessages(ctx, engine.Target{Dest: admQ2}, engine.Filter{}, admQ1); err != nil {
		t.Fatal(err)
	}
	<-done
	waiting := 0
	for _, tg := range []engine.Target{{Dest: admQ1}, {Dest: admQ2}} {
		p, err := h.b.BrowseMessages(tg, engine.BrowseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Messages {
			received[e.Msg.ID]++
			waiting++
		}
	}
	for id, n := range received {
		if !sent[id] || n != 1 {
			t.Fatalf("message %s seen %d times (sent: %v)", id, n, sent[id])
		}
	}
	if len(received)+deleted != total {
		t.Fatalf("received or waiting %d + deleted %d != sent %d", len(received), deleted, total)
	}
	in1, in2 := admInfo(t, h.b, admQ1), admInfo(t, h.b, admQ2)
	if in1.Messages+in2.Messages != int64(waiting) || in1.InFlight != 0 {
		t.Fatalf("counters: q1 %+v q2 %+v, %d waiting", in1, in2, waiting)
	}
}
