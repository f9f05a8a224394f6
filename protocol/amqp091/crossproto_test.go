package amqp091_test

import (
	"context"
	"net"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	gostomp "github.com/go-stomp/stomp/v3"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	amqp10 "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp091"
	"github.com/sluicemq/sluice/protocol/stomp"
)

// allProtocols runs 0-9-1, STOMP and AMQP 1.0 servers on one engine.
func allProtocols(t *testing.T) (a091, stompAddr, a10 string) {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	a091 = serve(t, eng, func() {}, amqp091.Options{})
	listen := func(serveFn func(net.Listener) error, shutdown func(context.Context) error) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = serveFn(ln) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(ctx)
		})
		return ln.Addr().String()
	}
	ss := stomp.NewServer(eng, stomp.Options{})
	stompAddr = listen(ss.Serve, ss.Shutdown)
	as := amqp10.NewServer(eng, amqp10.Options{})
	a10 = listen(as.Serve, as.Shutdown)
	t.Cleanup(func() { _ = eng.Close() }) // runs after the servers' shutdowns
	return a091, stompAddr, a10
}

func stompDial(t *testing.T, addr string) *gostomp.Conn {
	t.Helper()
	c, err := gostomp.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect() })
	return c
}

func stompNext(t *testing.T, sub *gostomp.Subscription) *gostomp.Message {
	t.Helper()
	select {
	case m := <-sub.C:
		if m == nil || m.Err != nil {
			t.Fatalf("stomp: %v", m)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("stomp: nothing within 5s")
	}
	return nil
}

// amq.topic K is the JMS topic K, both ways.
func TestTopicAcrossProtocols(t *testing.T) {
	a091, sa, _ := allProtocols(t)
	sc := stompDial(t, sa)
	sub, err := sc.Subscribe("/topic/prices.x", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	time.Sleep(50 * time.Millisecond)
	c := dial(t, a091)
	ch := channel(t, c)
	// A queue bound to amq.topic with the topic's name gets what STOMP
	// publishes there.
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "prices.x", "amq.topic", false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 0-9-1 → STOMP (and to the bound queue, once).
	publish(t, ch, "amq.topic", "prices.x", amqp.Publishing{ContentType: "text/plain", Body: []byte("from 091"),
		Headers: amqp.Table{"level": int32(3)}})
	m := stompNext(t, sub)
	if string(m.Body) != "from 091" || m.Header.Get("level") != "3" || m.Header.Get("content-type") != "text/plain" {
		t.Fatalf("STOMP got %q, headers %v", m.Body, m.Header)
	}
	if d := next(t, ds); string(d.Body) != "from 091" {
		t.Fatalf("bound queue got %q", d.Body)
	}
	none(t, ds, 100*time.Millisecond)
	// STOMP → the bound queue.
	if err := sc.Send("/topic/prices.x", "text/plain", []byte("from stomp"), gostomp.SendOpt.Header("n", "1")); err != nil {
		t.Fatal(err)
	}
	d := next(t, ds)
	if string(d.Body) != "from stomp" || d.Headers["n"] != "1" {
		t.Fatalf("bound queue got %q, headers %v", d.Body, d.Headers)
	}
	stompNext(t, sub) // STOMP's own subscriber too
}

// Header fields and typed properties cross from 0-9-1 to AMQP 1.0 and
// STOMP and back.
func TestPropertiesAcrossProtocols(t *testing.T) {
	a091, sa, a10 := allProtocols(t)
	ch := channel(t, dial(t, a091))
	for _, q := range []string{"to10", "tostomp", "from10", "fromstomp"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	pub := amqp.Publishing{
		DeliveryMode: amqp.Persistent, Priority: 7, CorrelationId: "corr-1", ReplyTo: "replies", Type: "order",
		MessageId: "ID:m-1", ContentType: "text/plain", Body: []byte("hello"),
		Headers: amqp.Table{"i": int32(-5), "l": int64(1) << 40, "d": 2.5, "b": true, "s": "text", "by": int8(3)},
	}
	publish(t, ch, "", "to10", pub)
	publish(t, ch, "", "tostomp", pub)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c10, err := goamqp.Dial(ctx, "amqp://"+a10, &goamqp.ConnOptions{SASLType: goamqp.SASLTypeAnonymous()})
	if err != nil {
		t.Fatal(err)
	}
	defer c10.Close()
	s10, err := c10.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := s10.NewReceiver(ctx, "to10", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = rcv.AcceptMessage(ctx, m)
	ap := m.ApplicationProperties
	if ap["i"] != int32(-5) || ap["l"] != int64(1)<<40 || ap["d"] != 2.5 || ap["b"] != true || ap["s"] != "text" || ap["by"] != int8(3) {
		t.Fatalf("AMQP 1.0 properties %#v", ap)
	}
	if m.Header == nil || !m.Header.Durable || m.Header.Priority != 7 || m.Properties == nil ||
		m.Properties.CorrelationID != "corr-1" || *m.Properties.Subject != "order" || m.Properties.MessageID != "ID:m-1" {
		t.Fatalf("AMQP 1.0 header %+v properties %+v", m.Header, m.Properties)
	}
	sc := stompDial(t, sa)
	sub, err := sc.Subscribe("/queue/tostomp", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	sm := stompNext(t, sub)
	if sm.Header.Get("persistent") != "true" || sm.Header.Get("priority") != "7" || sm.Header.Get("correlation-id") != "corr-1" ||
		sm.Header.Get("reply-to") != "/queue/replies" || sm.Header.Get("type") != "order" || sm.Header.Get("i") != "-5" {
		t.Fatalf("STOMP headers %v", sm.Header)
	}
	_ = sub.Unsubscribe()

	// Back: AMQP 1.0 and STOMP senders, a 0-9-1 consumer.
	snd, err := s10.NewSender(ctx, "from10", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := goamqp.NewMessage([]byte("from 1.0"))
	out.ApplicationProperties = map[string]any{"n": int64(42), "f": float32(1.5)}
	out.Properties = &goamqp.MessageProperties{CorrelationID: "c2"}
	if err := snd.Send(ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	d, ok, err := ch.Get("from10", true)
	if err != nil || !ok || d.Headers["n"] != int64(42) || d.Headers["f"] != float32(1.5) || d.CorrelationId != "c2" {
		t.Fatalf("0-9-1 got ok %v err %v headers %#v corr %q", ok, err, d.Headers, d.CorrelationId)
	}
	if err := sc.Send("/queue/fromstomp", "text/plain", []byte("from stomp"),
		gostomp.SendOpt.Header("persistent", "true"), gostomp.SendOpt.Header("priority", "2"),
		gostomp.SendOpt.Header("reply-to", "/queue/back"), gostomp.SendOpt.Header("k", "v")); err != nil {
		t.Fatal(err)
	}
	var sd amqp.Delivery
	for range 200 {
		if sd, ok, err = ch.Get("fromstomp", true); ok || err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || sd.DeliveryMode != 2 || sd.Priority != 2 || sd.ReplyTo != "back" || sd.Headers["k"] != "v" || sd.ContentType != "text/plain" {
		t.Fatalf("0-9-1 got ok %v %+v", ok, sd)
	}
}

// An AMQP 1.0 map message arrives over 0-9-1 as a JSON object.
func TestMapBodyAsJSON(t *testing.T) {
	a091, _, a10 := allProtocols(t)
	ch := channel(t, dial(t, a091))
	if _, err := ch.QueueDeclare("maps", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c10, err := goamqp.Dial(ctx, "amqp://"+a10, &goamqp.ConnOptions{SASLType: goamqp.SASLTypeAnonymous()})
	if err != nil {
		t.Fatal(err)
	}
	defer c10.Close()
	s10, err := c10.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := s10.NewSender(ctx, "maps", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &goamqp.Message{Value: map[string]any{"qty": int32(3), "sku": "A-1"},
		Annotations: goamqp.Annotations{"x-opt-jms-msg-type": int8(2)}}
	if err := snd.Send(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	var d amqp.Delivery
	ok := false
	for range 500 {
		if d, ok, err = ch.Get("maps", true); ok || err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || d.ContentType != "application/json" || string(d.Body) != `{"qty":3,"sku":"A-1"}` {
		t.Fatalf("got ok %v err %v %q %q", ok, err, d.ContentType, d.Body)
	}
}
