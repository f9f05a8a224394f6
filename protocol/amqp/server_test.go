package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
)

// testServer is an AMQP server on 127.0.0.1:0 over an in-memory engine.
type testServer struct {
	eng  *engine.Broker
	srv  *sluiceamqp.Server
	addr string
}

func startServer(t *testing.T, opts sluiceamqp.Options, cfg engine.Config) *testServer {
	t.Helper()
	cfg.AutoCreate = true
	eng, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluiceamqp.NewServer(eng, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})
	return &testServer{eng: eng, srv: srv, addr: ln.Addr().String()}
}

func (ts *testServer) dial(t *testing.T, opts *amqp.ConnOptions) *amqp.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := amqp.Dial(ctx, "amqp://"+ts.addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func session(t *testing.T, c *amqp.Conn) *amqp.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sender(t *testing.T, s *amqp.Session, addr string, opts *amqp.SenderOptions) *amqp.Sender {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snd, err := s.NewSender(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return snd
}

func receiver(t *testing.T, s *amqp.Session, addr string, opts *amqp.ReceiverOptions) *amqp.Receiver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := s.NewReceiver(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func send(t *testing.T, snd *amqp.Sender, m *amqp.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := snd.Send(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, r *amqp.Receiver) *amqp.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := r.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// recvNone checks that nothing arrives within d.
func recvNone(t *testing.T, r *amqp.Receiver, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	m, err := r.Receive(ctx, nil)
	if err == nil {
		t.Fatalf("unexpected message %v", m.Value)
	}
}

func accept(t *testing.T, r *amqp.Receiver, m *amqp.Message) {
	t.Helper()
	if err := r.AcceptMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func text(s string) *amqp.Message { return &amqp.Message{Value: s} }

func queueCaps() *amqp.ReceiverOptions {
	return &amqp.ReceiverOptions{SourceCapabilities: []string{"queue"}}
}

func TestSendReceiveQueue(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "orders", nil)
	for i := range 5 {
		send(t, snd, text(fmt.Sprintf("m%d", i)))
	}
	r := receiver(t, s, "orders", queueCaps())
	for i := range 5 {
		m := recv(t, r)
		if m.Value != fmt.Sprintf("m%d", i) {
			t.Fatalf("message %d: got %v", i, m.Value)
		}
		accept(t, r, m)
	}
	recvNone(t, r, 200*time.Millisecond)
	// Accepted messages are gone from the queue.
	info, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, _ = ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "orders"})
		return info.Messages == 0
	}, "queue empty after accepts: %+v", info)
}

func waitFor(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOpenProperties(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{Version: "9.9.9"}, engine.Config{})
	c := ts.dial(t, nil)
	props := c.Properties()
	if props["product"] != "Sluice" || props["version"] != "9.9.9" {
		t.Fatalf("open properties %v", props)
	}
}

func TestTopicFanOut(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	topicCaps := &amqp.ReceiverOptions{SourceCapabilities: []string{"topic"}}
	r1 := receiver(t, s, "news", topicCaps)
	r2 := receiver(t, s, "topic://news", nil)
	snd := sender(t, s, "topic://news", nil)
	send(t, snd, text("hello"))
	for _, r := range []*amqp.Receiver{r1, r2} {
		m := recv(t, r)
		if m.Value != "hello" {
			t.Fatalf("got %v", m.Value)
		}
		if got := m.Annotations["x-opt-jms-dest"]; got != int8(1) {
			t.Fatalf("x-opt-jms-dest = %v (%T)", got, got)
		}
		accept(t, r, m)
	}
	// A queue of the same name is a different destination.
	rq := receiver(t, s, "news", queueCaps())
	recvNone(t, rq, 200*time.Millisecond)
}

func TestSelector(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	r := receiver(t, s, "sel", &amqp.ReceiverOptions{SourceCapabilities: []string{"queue"},
		Filters: []amqp.LinkFilter{amqp.NewSelectorFilter("color = 'red' AND size > 2")}})
	snd := sender(t, s, "sel", nil)
	send(t, snd, &amqp.Message{Value: "blue", ApplicationProperties: map[string]any{"color": "blue", "size": int32(5)}})
	send(t, snd, &amqp.Message{Value: "small", ApplicationProperties: map[string]any{"color": "red", "size": int32(1)}})
	send(t, snd, &amqp.Message{Value: "red", ApplicationProperties: map[string]any{"color": "red", "size": int64(3)}})
	m := recv(t, r)
	if m.Value != "red" {
		t.Fatalf("selector let through %v", m.Value)
	}
	accept(t, r, m)
	recvNone(t, r, 200*time.Millisecond)
}

func TestInvalidSelectorRefusesAttach(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.NewReceiver(ctx, "sel", &amqp.ReceiverOptions{
		Filters: []amqp.LinkFilter{amqp.NewSelectorFilter("color = = 'red'")}})
	re := remoteErr(err)
	if re == nil || re.Condition != amqp.ErrCondInvalidField {
		t.Fatalf("attach with an invalid selector: %v", err)
	}
	if !strings.Contains(re.Description, "selector") {
		t.Fatalf("description does not give the parse error: %q", re.Description)
	}
	// The session and connection carry on.
	snd := sender(t, s, "sel", nil)
	send(t, snd, text("still here"))
}

func TestTypedApplicationProperties(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "typed", nil)
	props := map[string]any{
		"b":   true,
		"i8":  int8(-3),
		"i16": int16(-300),
		"i32": int32(70000),
		"i64": int64(1) << 40,
		"f32": float32(1.5),
		"f64": 2.25,
		"s":   "str",
	}
	send(t, snd, &amqp.Message{Value: "x", ApplicationProperties: props})
	// The engine keeps the JMS types.
	r := receiver(t, s, "typed", nil)
	m := recv(t, r)
	for k, want := range props {
		if got := m.ApplicationProperties[k]; got != want {
			t.Errorf("property %s = %v (%T), want %v (%T)", k, got, got, want, want)
		}
	}
	accept(t, r, m)
}

// TestProducerMessageIDKept: the producer's message-id is the JMSMessageID
// (Qpid JMS correlates replies on it); a non-string id keeps its string form.
func TestProducerMessageIDKept(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "ids", nil)
	send(t, snd, &amqp.Message{Properties: &amqp.MessageProperties{MessageID: "ID:app-1"}, Value: "a"})
	send(t, snd, &amqp.Message{Properties: &amqp.MessageProperties{MessageID: uint64(42)}, Value: "b"})
	send(t, snd, &amqp.Message{Value: "c"})
	r := receiver(t, s, "ids", nil)
	for _, want := range []string{"ID:app-1", "42", ""} {
		m := recv(t, r)
		id, _ := m.Properties.MessageID.(string)
		if want == "" && !strings.HasPrefix(id, "ID:sluice") || want != "" && id != want {
			t.Errorf("%v: message-id %#v, want %q (or the broker's when empty)", m.Value, m.Properties.MessageID, want)
		}
		accept(t, r, m)
	}
}

func TestHeaderAndPropertiesMapping(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "mapped", nil)
	ttl := 10 * time.Minute
	send(t, snd, &amqp.Message{
		Header: &amqp.MessageHeader{Durable: true, Priority: 7, TTL: ttl},
		Properties: &amqp.MessageProperties{
			CorrelationID: "corr-1",
			ReplyTo:       ptr("replies"),
			Subject:       ptr("OrderType"),
			GroupID:       ptr("g1"),
		},
		Annotations:           amqp.Annotations{"x-opt-jms-reply-to": int8(0)},
		ApplicationProperties: map[string]any{"k": "v"},
		Value:                 "body",
	})
	r := receiver(t, s, "mapped", nil)
	m := recv(t, r)
	if !m.Header.Durable || m.Header.Priority != 7 || m.Header.TTL <= 0 || m.Header.TTL > ttl {
		t.Fatalf("header %+v", m.Header)
	}
	p := m.Properties
	if id, _ := p.MessageID.(string); !strings.HasPrefix(id, "ID:") {
		t.Fatalf("message-id %v", p.MessageID)
	}
	if p.CorrelationID != "corr-1" || *p.ReplyTo != "replies" || *p.Subject != "OrderType" || *p.GroupID != "g1" {
		t.Fatalf("properties %+v", p)
	}
	if p.CreationTime == nil || time.Since(*p.CreationTime) > time.Minute || p.AbsoluteExpiryTime == nil {
		t.Fatalf("times %+v", p)
	}
	if m.Annotations["x-opt-jms-msg-type"] != int8(5) || m.Annotations["x-opt-jms-dest"] != int8(0) || m.Annotations["x-opt-jms-reply-to"] != int8(0) {
		t.Fatalf("annotations %v", m.Annotations)
	}
	if _, ok := m.ApplicationProperties["JMSXGroupID"]; ok {
		t.Fatal("JMSXGroupID travels as group-id, not as a property")
	}
	accept(t, r, m)

	// Bodies: data → bytes, amqp-value map → map, amqp-sequence → stream.
	send(t, snd, &amqp.Message{Data: [][]byte{[]byte("raw")}})
	send(t, snd, &amqp.Message{Value: map[string]any{"a": int32(1)}})
	send(t, snd, &amqp.Message{Sequence: [][]any{{int32(1), "two"}}})
	m = recv(t, r)
	if string(m.GetData()) != "raw" || m.Annotations["x-opt-jms-msg-type"] != int8(3) {
		t.Fatalf("bytes body %v %v", m.Data, m.Annotations)
	}
	accept(t, r, m)
	m = recv(t, r)
	if mv, ok := m.Value.(map[string]any); !ok || mv["a"] != int32(1) || m.Annotations["x-opt-jms-msg-type"] != int8(2) {
		t.Fatalf("map body %#v %v", m.Value, m.Annotations)
	}
	accept(t, r, m)
	m = recv(t, r)
	if len(m.Sequence) != 1 || len(m.Sequence[0]) != 2 || m.Sequence[0][1] != "two" || m.Annotations["x-opt-jms-msg-type"] != int8(4) {
		t.Fatalf("stream body %#v %v", m.Sequence, m.Annotations)
	}
	accept(t, r, m)
}

func ptr[T any](v T) *T { return &v }

func TestDeliveryDelay(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "delayed", nil)
	start := time.Now()
	send(t, snd, &amqp.Message{Value: "later", Annotations: amqp.Annotations{"x-opt-delivery-delay": int64(300)}})
	send(t, snd, &amqp.Message{Value: "at", Annotations: amqp.Annotations{"x-opt-delivery-time": time.Now().Add(500 * time.Millisecond)}})
	r := receiver(t, s, "delayed", nil)
	m := recv(t, r)
	if m.Value != "later" || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("delayed message %v after %s", m.Value, time.Since(start))
	}
	if _, ok := m.Annotations["x-opt-delivery-time"]; !ok {
		t.Fatalf("no x-opt-delivery-time on a delayed message: %v", m.Annotations)
	}
	accept(t, r, m)
	m = recv(t, r)
	if m.Value != "at" || time.Since(start) < 450*time.Millisecond {
		t.Fatalf("scheduled message %v after %s", m.Value, time.Since(start))
	}
	accept(t, r, m)
}

// remoteErr returns the error condition the server sent, however go-amqp
// wraps it.
func remoteErr(err error) *amqp.Error {
	var e *amqp.Error
	if errors.As(err, &e) {
		return e
	}
	var le *amqp.LinkError
	if errors.As(err, &le) && le.RemoteErr != nil {
		return le.RemoteErr
	}
	var ce *amqp.ConnError
	if errors.As(err, &ce) && ce.RemoteErr != nil {
		return ce.RemoteErr
	}
	var se *amqp.SessionError
	if errors.As(err, &se) && se.RemoteErr != nil {
		return se.RemoteErr
	}
	return nil
}

// TestEveryAddressFormNamesTheSameQueue: the prefixed forms, the STOMP
// forms and a bare address with the queue capability reach one queue, as
// they do over STOMP.
func TestEveryAddressFormNamesTheSameQueue(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	s := session(t, ts.dial(t, nil))
	r := receiver(t, s, "forms", queueCaps())
	for _, addr := range []string{"forms", "queue://forms", "/queue/forms"} {
		send(t, sender(t, s, addr, nil), text(addr))
		m := recv(t, r)
		if m.Value != addr {
			t.Fatalf("sent to %q, received %v", addr, m.Value)
		}
		accept(t, r, m)
	}
	// A prefix wins over the capabilities.
	snd := sender(t, s, "queue://forms", &amqp.SenderOptions{TargetCapabilities: []string{"topic"}})
	send(t, snd, text("prefix"))
	if m := recv(t, r); m.Value != "prefix" {
		t.Fatalf("received %v", m.Value)
	}
}
