package amqp091_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// topicQueue declares a server-named exclusive auto-delete queue on ch and
// binds it to amq.topic with key, as a JMS topic subscriber over 0-9-1.
func topicQueue(t *testing.T, ch *amqp.Channel, key string) string {
	t.Helper()
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, key, "amq.topic", false, nil); err != nil {
		t.Fatal(err)
	}
	return q.Name
}

// TestNoLocalTopic: a no-local consumer of a queue bound to amq.topic does
// not get what its own connection published to the topic (JMS noLocal),
// while a plain consumer on the same connection, and messages from another
// connection, are untouched.
func TestNoLocalTopic(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	subCh, plainCh, pubCh := channel(t, c), channel(t, c), channel(t, c)
	noLocal, err := subCh.Consume(topicQueue(t, subCh, "repro.t"), "", true, false, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := plainCh.Consume(topicQueue(t, plainCh, "repro.t"), "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, pubCh, "amq.topic", "repro.t", amqp.Publishing{Body: []byte("own")})
	publish(t, channel(t, dial(t, addr)), "amq.topic", "repro.t", amqp.Publishing{Body: []byte("other")})
	if d := next(t, noLocal); string(d.Body) != "other" {
		t.Fatalf("no-local consumer got %q, want other", d.Body)
	}
	none(t, noLocal, 300*time.Millisecond)
	got := map[string]bool{}
	for range 2 {
		got[string(next(t, plain).Body)] = true
	}
	if !got["own"] || !got["other"] {
		t.Fatalf("plain consumer got %v, want own and other", got)
	}
}

// TestNoLocalExchanges: through the default exchange and the exchanges the
// 0-9-1 server routes itself (direct, fanout, and an amq.topic wildcard
// binding), a no-local consumer skips its own connection's messages, which
// are consumed and not redelivered.
func TestNoLocalExchanges(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	cases := []struct {
		name, exchange, key string
		bind                func(ch *amqp.Channel, queue string) error
	}{
		{"default", "", "nl.default", nil},
		{"direct", "amq.direct", "k", func(ch *amqp.Channel, q string) error { return ch.QueueBind(q, "k", "amq.direct", false, nil) }},
		{"fanout", "amq.fanout", "", func(ch *amqp.Channel, q string) error { return ch.QueueBind(q, "", "amq.fanout", false, nil) }},
		{"topic wildcard", "amq.topic", "nl.w.x", func(ch *amqp.Channel, q string) error { return ch.QueueBind(q, "nl.w.*", "amq.topic", false, nil) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			ch := channel(t, c)
			queue := "nl." + tc.name
			if tc.bind == nil {
				queue = tc.key
			}
			if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
			if tc.bind != nil {
				if err := tc.bind(ch, queue); err != nil {
					t.Fatal(err)
				}
			}
			ds, err := ch.Consume(queue, "", false, false, true, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			publish(t, channel(t, c), tc.exchange, tc.key, amqp.Publishing{Body: []byte("own")})
			publish(t, channel(t, dial(t, addr)), tc.exchange, tc.key, amqp.Publishing{Body: []byte("other")})
			d := next(t, ds)
			if string(d.Body) != "other" {
				t.Fatalf("no-local consumer got %q, want other", d.Body)
			}
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
			none(t, ds, 200*time.Millisecond)
			waitDepth(t, eng, queue, 0)
			if tc.bind != nil {
				_ = ch.Close() // other cases bind to the same exchanges
				_, _ = channel(t, dial(t, addr)).QueueDelete(queue, false, false, false)
			}
		})
	}
}
