package amqp091_test

import (
	"context"
	"net"
	"sort"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// drain gets every message waiting on queue, bodies sorted.
func drain(t testing.TB, ch *amqp.Channel, queue string) []string {
	t.Helper()
	var out []string
	for range 1000 {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		out = append(out, string(d.Body))
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExchangeRouting(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	for _, q := range []string{"qa", "qb", "qc"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ch.ExchangeDeclare("logs", "topic", true, false, false, false, nil))
	must(ch.ExchangeDeclare("hdrs", "headers", false, false, false, false, nil))
	must(ch.ExchangeDeclare("front", "fanout", false, false, false, false, nil))
	must(ch.QueueBind("qa", "red", "amq.direct", false, nil))
	must(ch.QueueBind("qb", "", "amq.fanout", false, nil))
	must(ch.QueueBind("qc", "", "amq.fanout", false, nil))
	must(ch.QueueBind("qa", "*.error", "logs", false, nil))
	must(ch.QueueBind("qb", "app.#", "logs", false, nil))
	must(ch.QueueBind("qc", "", "hdrs", false, amqp.Table{"x-match": "all", "kind": "invoice", "region": "EU"}))
	must(ch.ExchangeBind("logs", "", "front", false, nil)) // front → logs
	publish(t, ch, "amq.direct", "red", amqp.Publishing{Body: []byte("direct-red")})
	publish(t, ch, "amq.direct", "blue", amqp.Publishing{Body: []byte("direct-blue")})
	publish(t, ch, "amq.fanout", "any", amqp.Publishing{Body: []byte("fan")})
	publish(t, ch, "logs", "app.error", amqp.Publishing{Body: []byte("app.error")})
	publish(t, ch, "logs", "db.error", amqp.Publishing{Body: []byte("db.error")})
	publish(t, ch, "logs", "app.x.y", amqp.Publishing{Body: []byte("app.x.y")})
	publish(t, ch, "hdrs", "", amqp.Publishing{Body: []byte("hdr-match"), Headers: amqp.Table{"kind": "invoice", "region": "EU"}})
	publish(t, ch, "hdrs", "", amqp.Publishing{Body: []byte("hdr-miss"), Headers: amqp.Table{"kind": "invoice"}})
	// front fans out to logs, whose topic bindings route by the key.
	publish(t, ch, "front", "z.error", amqp.Publishing{Body: []byte("via-front")})
	time.Sleep(50 * time.Millisecond)
	if got, want := drain(t, ch, "qa"), []string{"app.error", "db.error", "direct-red", "via-front"}; !equal(got, want) {
		t.Errorf("qa %v, want %v", got, want)
	}
	if got, want := drain(t, ch, "qb"), []string{"app.error", "app.x.y", "fan"}; !equal(got, want) {
		t.Errorf("qb %v, want %v", got, want)
	}
	if got, want := drain(t, ch, "qc"), []string{"fan", "hdr-match"}; !equal(got, want) {
		t.Errorf("qc %v, want %v", got, want)
	}
	// Unbinding stops the routing.
	must(ch.QueueUnbind("qa", "red", "amq.direct", nil))
	publish(t, ch, "amq.direct", "red", amqp.Publishing{Body: []byte("after unbind")})
	time.Sleep(20 * time.Millisecond)
	if got := drain(t, ch, "qa"); len(got) != 0 {
		t.Errorf("qa after unbind: %v", got)
	}
	// A redeclare with another type is refused; so are amq.* names.
	if err := ch.ExchangeDeclare("logs", "direct", true, false, false, false, nil); amqpCode(err) != 406 {
		t.Fatalf("inequivalent redeclare: %v, want 406", err)
	}
	ch = channel(t, c)
	if err := ch.ExchangeDeclare("amq.mine", "direct", true, false, false, false, nil); amqpCode(err) != 403 {
		t.Fatalf("amq.* declare: %v, want 403", err)
	}
	ch = channel(t, c)
	if err := ch.ExchangeDeclarePassive("nope", "direct", true, false, false, false, nil); amqpCode(err) != 404 {
		t.Fatalf("passive declare of a missing exchange: %v, want 404", err)
	}
	ch = channel(t, c)
	must(ch.ExchangeDelete("logs", false, false))
	if err := ch.PublishWithContext(context.Background(), "logs", "app.error", false, false, amqp.Publishing{}); err != nil {
		t.Fatal(err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	select {
	case e := <-closed:
		if e == nil || e.Code != 404 {
			t.Fatalf("publish to a deleted exchange: %v, want 404", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("publish to a deleted exchange accepted")
	}
}

// Durable exchanges and bindings survive a restart, and so does a queue's
// binding to amq.topic: what a STOMP-less JMS publisher (the engine API)
// sends to the topic while no 0-9-1 client is connected waits in the queue.
func TestDefinitionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	run := func(fn func(addr string, eng *engine.Broker)) {
		eng, closeEng := enginetest.Durable(t, dir, engine.Config{AutoCreate: true})
		srv := amqp091.NewServer(eng, amqp091.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		fn(ln.Addr().String(), eng)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		closeEng()
	}
	run(func(addr string, _ *engine.Broker) {
		c, err := amqp.Dial(url(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ch, err := c.Channel()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"audit", "prices"} {
			if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := ch.ExchangeDeclare("events", "direct", true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.ExchangeDeclare("scratch", "direct", false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind("audit", "login", "events", false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind("prices", "prices.eu", "amq.topic", false, nil); err != nil {
			t.Fatal(err)
		}
		publish(t, ch, "events", "login", amqp.Publishing{Body: []byte("kept"), DeliveryMode: amqp.Persistent})
	})
	// The broker runs without the 0-9-1 client: a JMS publisher on the
	// topic.
	run(func(_ string, eng *engine.Broker) {
		conn, err := eng.Connect(engine.ConnectionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		sess, err := conn.CreateSession(engine.AutoAcknowledge)
		if err != nil {
			t.Fatal(err)
		}
		prod, err := sess.CreateProducer(message.Destination{Kind: message.Topic, Name: "prices.eu"})
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.Send(context.Background(), &message.Message{Body: message.TextBody("while away")}, engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDepth(t, eng, "prices", 1)
	})
	run(func(addr string, _ *engine.Broker) {
		c, err := amqp.Dial(url(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ch, err := c.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.ExchangeDeclarePassive("events", "direct", true, false, false, false, nil); err != nil {
			t.Fatalf("durable exchange gone: %v", err)
		}
		if err := ch.ExchangeDeclarePassive("scratch", "direct", false, false, false, false, nil); amqpCode(err) != 404 {
			t.Fatalf("transient exchange after restart: %v, want 404", err)
		}
		ch, _ = c.Channel()
		publish(t, ch, "events", "login", amqp.Publishing{Body: []byte("routed")})
		time.Sleep(50 * time.Millisecond)
		if got, want := drain(t, ch, "audit"), []string{"kept", "routed"}; !equal(got, want) {
			t.Fatalf("audit %v, want %v", got, want)
		}
		if got, want := drain(t, ch, "prices"), []string{"while away"}; !equal(got, want) {
			t.Fatalf("prices %v, want %v", got, want)
		}
		// Unbinding deletes the bridge's durable subscription.
		if err := ch.QueueUnbind("prices", "prices.eu", "amq.topic", nil); err != nil {
			t.Fatal(err)
		}
	})
	run(func(_ string, eng *engine.Broker) {
		for _, s := range eng.Subscriptions() {
			if s.Durable {
				t.Fatalf("durable subscription %q left after unbind", s.Name)
			}
		}
	})
}
