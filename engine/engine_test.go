package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store/journal"
)

var (
	queueA = message.Destination{Kind: message.Queue, Name: "a"}
	topicT = message.Destination{Kind: message.Topic, Name: "t"}
)

// harness is a broker for one test, closed at cleanup.
type harness struct {
	t   *testing.T
	b   *engine.Broker
	dir string
	st  *journal.Store
	cfg engine.Config
}

func newBroker(t *testing.T, cfg engine.Config) *harness {
	t.Helper()
	cfg.AutoCreate = true
	h := &harness{t: t, cfg: cfg}
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.b = b
	t.Cleanup(func() { _ = h.b.Close() })
	return h
}

// newPersistent opens a broker on a bbolt store in dir (a new one if "").
func newPersistent(t *testing.T, dir string, cfg engine.Config) *harness {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, _ := openDurable(t, dir)
	cfg.Store = st
	cfg.AutoCreate = true
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	h := &harness{t: t, b: b, dir: dir, st: st, cfg: cfg}
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	if h.b != nil {
		_ = h.b.Close()
		h.b = nil
	}
	if h.st != nil {
		_ = h.st.Close()
		h.st = nil
	}
}

// restart closes the broker and store cleanly and opens them again.
func (h *harness) restart() {
	h.t.Helper()
	dir, cfg := h.dir, h.cfg
	h.close()
	n := newPersistent(h.t, dir, cfg)
	*h = *n
}

func (h *harness) conn(opts engine.ConnectionOptions) *engine.Connection {
	h.t.Helper()
	c, err := h.b.Connect(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (h *harness) session(c *engine.Connection, mode engine.AckMode) *engine.Session {
	h.t.Helper()
	s, err := c.CreateSession(mode)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func text(s string) *message.Message {
	return &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(s)}}
}

func send(t *testing.T, s *engine.Session, dest message.Destination, body string, o engine.SendOptions) *message.Message {
	t.Helper()
	p, err := s.CreateProducer(dest)
	if err != nil {
		t.Fatal(err)
	}
	m := text(body)
	if err := p.Send(context.Background(), m, o); err != nil {
		t.Fatal(err)
	}
	return m
}

func consumer(t *testing.T, s *engine.Session, dest message.Destination, o engine.ConsumerOptions) *engine.Consumer {
	t.Helper()
	c, err := s.CreateConsumer(dest, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func recv(t *testing.T, c *engine.Consumer) message.Delivery {
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

func recvNone(t *testing.T, c *engine.Consumer, wait time.Duration) {
	t.Helper()
	d, ok, err := c.ReceiveTimeout(wait)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatalf("unexpected message %q", d.Msg.Body.Data)
	}
}

func body(d message.Delivery) string { return string(d.Msg.Body.Data) }

func TestQueueSendReceiveHeaders(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	m := send(t, s, queueA, "hello", engine.SendOptions{Set: engine.SetPriority | engine.SetTimeToLive, Priority: 7, TimeToLive: time.Hour})
	if m.ID == "" || m.Timestamp == 0 || m.Destination != queueA {
		t.Fatalf("send did not stamp headers: %+v", m)
	}
	if m.Priority != 7 || m.Expiration <= m.Timestamp || m.DeliveryMode != message.Persistent {
		t.Fatalf("headers: priority %d expiration %d mode %v", m.Priority, m.Expiration, m.DeliveryMode)
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d := recv(t, cons)
	if body(d) != "hello" || d.DeliveryCount != 1 || d.Redelivered {
		t.Fatalf("got %q count %d redelivered %v", body(d), d.DeliveryCount, d.Redelivered)
	}
}

func TestStoppedConnectionDeliversNothingButAcceptsSends(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	send(t, s, queueA, "1", engine.SendOptions{})
	recvNone(t, cons, 100*time.Millisecond)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if body(recv(t, cons)) != "1" {
		t.Fatal("wrong message")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	send(t, s, queueA, "2", engine.SendOptions{})
	recvNone(t, cons, 100*time.Millisecond)
	_ = c.Start()
	if body(recv(t, cons)) != "2" {
		t.Fatal("wrong message after restart")
	}
}

func TestStopWaitsForRunningListener(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	inside := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{}, 1)
	if err := cons.SetListener(func(message.Delivery) {
		close(inside)
		<-release
		finished <- struct{}{}
	}); err != nil {
		t.Fatal(err)
	}
	_ = c.Start()
	send(t, h.session(c, engine.AutoAcknowledge), queueA, "x", engine.SendOptions{})
	<-inside
	stopped := make(chan struct{})
	go func() { _ = c.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a listener was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return after the listener finished")
	}
	if len(finished) != 1 {
		t.Fatal("listener did not finish before Stop returned")
	}
}

// Stop does not wait for a listener or a receive that has no message to
// deliver: it returns at once, they deliver nothing while the connection
// is stopped, and they carry on after Start (JMS: "stop ... must not return
// until delivery of messages has paused").
func TestStopWithIdleListenerAndReceive(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	got := make(chan string, 4)
	lc := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	if err := lc.SetListener(func(d message.Delivery) { got <- "listener:" + body(d) }); err != nil {
		t.Fatal(err)
	}
	queueB := message.Destination{Kind: message.Queue, Name: "b"}
	rc := consumer(t, h.session(c, engine.AutoAcknowledge), queueB, engine.ConsumerOptions{})
	received := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := rc.Receive(ctx)
		if err != nil {
			received <- "error: " + err.Error()
			return
		}
		received <- "receive:" + body(d)
	}()
	_ = c.Start()
	time.Sleep(20 * time.Millisecond) // both are waiting for a message
	stopped := make(chan struct{})
	go func() { _ = c.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for an idle listener or receive")
	}
	p := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	send(t, p, queueA, "a", engine.SendOptions{})
	send(t, p, queueB, "b", engine.SendOptions{})
	select {
	case v := <-got:
		t.Fatalf("delivered while stopped: %s", v)
	case v := <-received:
		t.Fatalf("receive returned while stopped: %s", v)
	case <-time.After(100 * time.Millisecond):
	}
	_ = c.Start()
	for _, ch := range []chan string{got, received} {
		select {
		case v := <-ch:
			if v != "listener:a" && v != "receive:b" {
				t.Fatalf("after Start: %s", v)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("nothing delivered after Start")
		}
	}
}

func TestClientID(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c1 := h.conn(engine.ConnectionOptions{})
	if err := c1.SetClientID("app"); err != nil {
		t.Fatal(err)
	}
	if err := c1.SetClientID("again"); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("second SetClientID: %v, want illegal state", err)
	}
	c2 := h.conn(engine.ConnectionOptions{})
	if err := c2.SetClientID("app"); !errors.Is(err, engine.ErrInvalidClientID) {
		t.Fatalf("duplicate client ID: %v, want invalid client ID", err)
	}
	if _, err := h.b.Connect(engine.ConnectionOptions{ClientID: "app"}); !errors.Is(err, engine.ErrInvalidClientID) {
		t.Fatalf("duplicate client ID from options: %v", err)
	}
	// Unrestricted connections may share it.
	u := h.conn(engine.ConnectionOptions{ClientIDPolicy: engine.Unrestricted})
	if err := u.SetClientID("app"); err != nil {
		t.Fatalf("unrestricted: %v", err)
	}
	_ = c1.Close()
	c3 := h.conn(engine.ConnectionOptions{})
	if err := c3.SetClientID("other"); err != nil {
		t.Fatal(err)
	}
}

func TestMetaData(t *testing.T) {
	h := newBroker(t, engine.Config{ProviderVersion: "1.2.3"})
	md := h.conn(engine.ConnectionOptions{}).MetaData()
	if md.JMSVersion != "2.0" || md.JMSMajorVersion != 2 || md.ProviderName != "Sluice" || md.ProviderMajorVersion != 1 || md.ProviderMinorVersion != 2 {
		t.Fatalf("metadata %+v", md)
	}
	found := false
	for _, n := range md.JMSXPropertyNames {
		found = found || n == "JMSXDeliveryCount"
	}
	if !found {
		t.Fatalf("JMSXDeliveryCount missing from %v", md.JMSXPropertyNames)
	}
}

func TestPriorityOrderFIFOWithinPriority(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	for i, p := range []uint8{1, 9, 4, 9, 1, 4} {
		send(t, s, queueA, fmt.Sprintf("%d-%d", p, i), engine.SendOptions{Set: engine.SetPriority, Priority: p})
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	want := []string{"9-1", "9-3", "4-2", "4-5", "1-0", "1-4"}
	for _, w := range want {
		if got := body(recv(t, cons)); got != w {
			t.Fatalf("got %s want %s", got, w)
		}
	}
}

func TestExpiredMessageNeverDelivered(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newBroker(t, engine.Config{Now: clock})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	send(t, s, queueA, "short", engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: 10 * time.Millisecond})
	send(t, s, queueA, "long", engine.SendOptions{})
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	if got := body(recv(t, cons)); got != "long" {
		t.Fatalf("got %q: an expired message was delivered", got)
	}
	recvNone(t, cons, 50*time.Millisecond)
}

func TestCompetingConsumersShareAQueue(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s1 := h.session(c, engine.AutoAcknowledge)
	s2 := h.session(c, engine.AutoAcknowledge)
	c1 := consumer(t, s1, queueA, engine.ConsumerOptions{Prefetch: 1})
	c2 := consumer(t, s2, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	ps := h.session(c, engine.AutoAcknowledge)
	for i := 0; i < 10; i++ {
		send(t, ps, queueA, fmt.Sprint(i), engine.SendOptions{})
	}
	seen := map[string]bool{}
	var n1, n2 int
	for i := 0; i < 10; i++ {
		select {
		default:
		}
		if d, ok, _ := c1.ReceiveTimeout(20 * time.Millisecond); ok {
			seen[body(d)] = true
			n1++
		}
		if d, ok, _ := c2.ReceiveTimeout(20 * time.Millisecond); ok {
			seen[body(d)] = true
			n2++
		}
	}
	if len(seen) != 10 || n1+n2 != 10 || n1 == 0 || n2 == 0 {
		t.Fatalf("seen %d distinct, c1 %d, c2 %d", len(seen), n1, n2)
	}
}

func TestTopicFanOutAndNoLocal(t *testing.T) {
	h := newBroker(t, engine.Config{})
	pub := h.conn(engine.ConnectionOptions{})
	sub := h.conn(engine.ConnectionOptions{})
	ps := h.session(pub, engine.AutoAcknowledge)
	ss := h.session(sub, engine.AutoAcknowledge)
	a := consumer(t, ss, topicT, engine.ConsumerOptions{})
	b := consumer(t, h.session(sub, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{Selector: "color = 'red'"})
	local := consumer(t, h.session(pub, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{NoLocal: true})
	_ = pub.Start()
	_ = sub.Start()
	p, _ := ps.CreateProducer(topicT)
	m := text("red")
	_ = m.Props.Set("color", message.StringValue("red"))
	if err := p.Send(context.Background(), m, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), text("plain"), engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if body(recv(t, a)) != "red" || body(recv(t, a)) != "plain" {
		t.Fatal("plain subscriber missed messages")
	}
	if body(recv(t, b)) != "red" {
		t.Fatal("selector subscriber")
	}
	recvNone(t, b, 50*time.Millisecond)
	recvNone(t, local, 50*time.Millisecond)
}

func TestTopicMessagesBeforeSubscribeAreNotDelivered(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	send(t, s, topicT, "early", engine.SendOptions{})
	cons := consumer(t, s, topicT, engine.ConsumerOptions{})
	_ = c.Start()
	send(t, s, topicT, "late", engine.SendOptions{})
	if body(recv(t, cons)) != "late" {
		t.Fatal("wrong message")
	}
	recvNone(t, cons, 30*time.Millisecond)
}

func TestClientAcknowledgeIsCumulativeAndCloseRedelivers(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	for i := 1; i <= 3; i++ {
		send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{})
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	_ = recv(t, cons)
	d2 := recv(t, cons)
	_ = recv(t, cons)
	if err := s.Acknowledge(context.Background(), d2.Tag); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	c2 := h.conn(engine.ConnectionOptions{})
	s2 := h.session(c2, engine.AutoAcknowledge)
	cons2 := consumer(t, s2, queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	d := recv(t, cons2)
	if body(d) != "3" || !d.Redelivered || d.DeliveryCount != 2 {
		t.Fatalf("after close: %q redelivered %v count %d", body(d), d.Redelivered, d.DeliveryCount)
	}
	recvNone(t, cons2, 30*time.Millisecond)
}

func TestIndividualAcknowledge(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.IndividualAcknowledge)
	for i := 1; i <= 3; i++ {
		send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{})
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	_ = recv(t, cons)
	d2 := recv(t, cons)
	_ = recv(t, cons)
	if err := s.Acknowledge(context.Background(), d2.Tag); err != nil {
		t.Fatal(err)
	}
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 2; i++ {
		got = append(got, body(recv(t, cons)))
	}
	if fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("after recover got %v, want [1 3] in order", got)
	}
}

func TestTransactedSessionCommitAndRollback(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	tx := h.session(c, engine.Transacted)
	plain := h.session(c, engine.AutoAcknowledge)
	send(t, plain, queueA, "in", engine.SendOptions{})
	cons := consumer(t, tx, queueA, engine.ConsumerOptions{})
	out := message.Destination{Kind: message.Queue, Name: "out"}
	outCons := consumer(t, plain, out, engine.ConsumerOptions{})
	_ = c.Start()
	d := recv(t, cons)
	p, _ := tx.CreateProducer(out)
	if err := p.Send(context.Background(), text("reply-"+body(d)), engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	recvNone(t, outCons, 30*time.Millisecond) // not visible before commit
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	recvNone(t, outCons, 30*time.Millisecond) // rolled back send vanished
	d = recv(t, cons)
	if !d.Redelivered || d.DeliveryCount != 2 {
		t.Fatalf("rolled back receive: redelivered %v count %d", d.Redelivered, d.DeliveryCount)
	}
	if err := p.Send(context.Background(), text("reply"), engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if body(recv(t, outCons)) != "reply" {
		t.Fatal("committed send missing")
	}
	recvNone(t, cons, 30*time.Millisecond) // committed receive is gone
}

func TestCloseRollsBackOpenTransaction(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	tx := h.session(c, engine.Transacted)
	p, _ := tx.CreateProducer(queueA)
	_ = p.Send(context.Background(), text("uncommitted"), engine.SendOptions{})
	_ = c.Close()
	c2 := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	recvNone(t, cons, 50*time.Millisecond)
}

func TestQueueSelectorDoesNotStallOtherConsumers(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, _ := s.CreateProducer(queueA)
	for _, color := range []string{"blue", "blue", "red"} {
		m := text(color)
		_ = m.Props.Set("color", message.StringValue(color))
		_ = p.Send(context.Background(), m, engine.SendOptions{})
	}
	red := consumer(t, s, queueA, engine.ConsumerOptions{Selector: "color = 'red'"})
	_ = c.Start()
	if body(recv(t, red)) != "red" {
		t.Fatal("selector consumer stalled behind unselected messages")
	}
	all := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	if body(recv(t, all)) != "blue" || body(recv(t, all)) != "blue" {
		t.Fatal("remaining messages")
	}
}

func TestInvalidSelectorRefused(t *testing.T) {
	h := newBroker(t, engine.Config{})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	_, err := s.CreateConsumer(queueA, engine.ConsumerOptions{Selector: "color = "})
	if !errors.Is(err, engine.ErrInvalidSelector) {
		t.Fatalf("got %v, want invalid selector", err)
	}
}

func TestPrefetchWindowBoundsDispatch(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	for i := 0; i < 5; i++ {
		send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{})
	}
	slow := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	// The slow consumer holds at most one undelivered message; a second
	// consumer gets the rest.
	other := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	got := 0
	for {
		if _, ok, _ := other.ReceiveTimeout(50 * time.Millisecond); !ok {
			break
		}
		got++
	}
	if got < 4 {
		t.Fatalf("second consumer got %d of 5: prefetch window not honoured", got)
	}
	_ = slow
}

func TestBrowserShowsWithoutConsuming(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	p, _ := s.CreateProducer(queueA)
	for i := 0; i < 3; i++ {
		m := text(fmt.Sprint(i))
		_ = m.Props.Set("n", message.IntValue(int32(i)))
		_ = p.Send(context.Background(), m, engine.SendOptions{})
	}
	br, err := s.CreateBrowser(queueA, "n >= 1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := br.Enumeration()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 10 && e.HasMoreElements(); i++ {
		d, err := e.NextElement()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, body(d))
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("browsed %v", got)
	}
	if _, err := s.CreateBrowser(topicT, ""); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("topic browse: %v", err)
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	for i := 0; i < 3; i++ {
		_ = recv(t, cons)
	}
}

func TestClosedObjectsGiveIllegalState(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	p, _ := s.CreateProducer(queueA)
	_ = c.Close()
	if err := p.Send(context.Background(), text("x"), engine.SendOptions{}); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("send on closed: %v", err)
	}
	if _, err := c.CreateSession(engine.AutoAcknowledge); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("session on closed: %v", err)
	}
	if err := s.Acknowledge(context.Background(), 1); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("acknowledge on closed: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestBadPriorityAndDestination(t *testing.T) {
	h := newBroker(t, engine.Config{})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	p, _ := s.CreateProducer(queueA)
	if err := p.Send(context.Background(), text("x"), engine.SendOptions{Set: engine.SetPriority, Priority: 12}); !errors.Is(err, engine.ErrMessageFormat) {
		t.Fatalf("priority 12: %v", err)
	}
	if _, err := s.CreateProducer(message.Destination{Kind: message.Queue}); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("empty name: %v", err)
	}
}

func TestDestinationOverridesWin(t *testing.T) {
	pol := engine.DefaultPolicy()
	pol.PriorityOverride = 2
	pol.DeliveryModeOverride = message.NonPersistent
	pol.TimeToLiveOverride = time.Minute
	h := newBroker(t, engine.Config{Policy: func(message.Destination) engine.Policy { return pol }})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	m := send(t, s, queueA, "x", engine.SendOptions{Set: engine.SetPriority | engine.SetDeliveryMode, Priority: 9, DeliveryMode: message.Persistent})
	if m.Priority != 2 || m.DeliveryMode != message.NonPersistent || m.Expiration != m.Timestamp+60000 {
		t.Fatalf("overrides not applied: %+v", m)
	}
}

func TestDelayedDeliveryInvisibleUntilDue(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	send(t, s, queueA, "later", engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 150 * time.Millisecond})
	send(t, s, queueA, "now", engine.SendOptions{})
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	if body(recv(t, cons)) != "now" {
		t.Fatal("delayed message delivered early")
	}
	start := time.Now()
	if body(recv(t, cons)) != "later" {
		t.Fatal("delayed message missing")
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("delayed message came too soon")
	}
}

func TestPersistentMessagesSurviveRestart(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	for i := 0; i < 5; i++ {
		mode := message.Persistent
		if i == 4 {
			mode = message.NonPersistent
		}
		send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: mode})
	}
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	d0 := recv(t, cons)
	_ = recv(t, cons) // delivered, never acknowledged
	if err := s.Acknowledge(context.Background(), d0.Tag); err != nil {
		t.Fatal(err)
	}
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	want := []struct {
		body  string
		redel bool
		count int32
	}{{"1", true, 2}, {"2", false, 1}, {"3", false, 1}}
	for _, w := range want {
		d := recv(t, cons2)
		if body(d) != w.body || d.Redelivered != w.redel || d.DeliveryCount != w.count {
			t.Fatalf("got %q redelivered %v count %d, want %+v", body(d), d.Redelivered, d.DeliveryCount, w)
		}
	}
	recvNone(t, cons2, 50*time.Millisecond) // the non-persistent one is gone
}

func TestDurableSubscriptionSurvivesRestart(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s := h.session(c, engine.AutoAcknowledge)
	sub := consumer(t, s, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub1", Selector: "n > 1"})
	_ = sub.Close()
	p, _ := s.CreateProducer(topicT)
	for i := 0; i < 4; i++ {
		m := text(fmt.Sprint(i))
		_ = m.Props.Set("n", message.IntValue(int32(i)))
		_ = p.Send(context.Background(), m, engine.SendOptions{})
	}
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s2 := h.session(c2, engine.AutoAcknowledge)
	sub2 := consumer(t, s2, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub1", Selector: "n > 1"})
	_ = c2.Start()
	if body(recv(t, sub2)) != "2" || body(recv(t, sub2)) != "3" {
		t.Fatal("durable subscription lost messages across restart")
	}
	if err := s2.Unsubscribe(context.Background(), "sub1"); !errors.Is(err, engine.ErrIllegalState) {
		t.Fatalf("unsubscribe while active: %v", err)
	}
	_ = sub2.Close()
	if err := s2.Unsubscribe(context.Background(), "sub1"); err != nil {
		t.Fatal(err)
	}
}

func TestNonPersistentNeverTouchesDisk(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	if _, err := h.b.CreateDestination(context.Background(), queueA); err != nil {
		t.Fatal(err)
	}
	before := h.st.Stats()
	for i := 0; i < 20; i++ {
		send(t, s, queueA, "np", engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.NonPersistent})
	}
	if after := h.st.Stats(); after.Ops != before.Ops {
		t.Fatalf("non-persistent sends wrote %d store ops", after.Ops-before.Ops)
	}
}

func TestOpenExplicitTransactionRolledBackOnCloseWithoutDelay(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
	s := h.session(c, engine.ClientAcknowledge)
	send(t, s, queueA, "work", engine.SendOptions{})
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	d := recv(t, cons)
	tx, err := c.BeginTxn()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AcknowledgeIn(tx, d.Tag); err != nil {
		t.Fatal(err)
	}
	_ = c.Close() // the transaction is left open
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	d = recv(t, cons2) // at once: no redelivery delay for work left uncommitted
	if body(d) != "work" || !d.Redelivered {
		t.Fatalf("got %q redelivered %v", body(d), d.Redelivered)
	}
}

// WebLogic JMS "Managing Your Applications", "Setting a Redelivery Delay":
// "When a session is using non-durable topics, the setRedeliveryDelay method
// does not apply."
func TestSessionRedeliveryDelayDoesNotApplyToNonDurableTopics(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	s.SetRedeliveryDelay(time.Hour)
	cons := consumer(t, s, topicT, engine.ConsumerOptions{})
	_ = c.Start()
	send(t, h.session(c, engine.AutoAcknowledge), topicT, "news", engine.SendOptions{})
	_ = recv(t, cons)
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, cons); body(d) != "news" || !d.Redelivered {
		t.Fatalf("got %q redelivered %v", body(d), d.Redelivered)
	}
}

// SetListener racing Close: the listener either starts before the consumer
// closes (and Close waits for it) or is refused; never a WaitGroup misuse
// (the race detector checks) or a listener left running.
func TestSetListenerRacingClose(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	for i := 0; i < 200; i++ {
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		started := make(chan error, 1)
		go func() { started <- cons.SetListener(func(message.Delivery) {}) }()
		if err := cons.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-started; err != nil && !strings.Contains(err.Error(), "closed") {
			t.Fatalf("SetListener: %v", err)
		}
	}
}
