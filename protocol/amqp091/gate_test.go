package amqp091_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// collect gathers what arrives on any of dss within wait.
func collect(dss []<-chan amqp.Delivery, wait time.Duration) []amqp.Delivery {
	var out []amqp.Delivery
	deadline := time.After(wait)
	for {
		select {
		case d, ok := <-dss[0]:
			if !ok {
				return append(out, amqp.Delivery{Body: []byte("closed")})
			}
			out = append(out, d)
		case d, ok := <-dss[1]:
			if !ok {
				return append(out, amqp.Delivery{Body: []byte("closed")})
			}
			out = append(out, d)
		case <-deadline:
			return out
		}
	}
}

// TestQosGlobal: basic.qos global=true is one window for all the
// channel's consumers (RabbitMQ's semantics): two consumers of two full
// queues hold at most 3 unacknowledged deliveries between them, and each
// ack lets one more come; basic.recover and acks drain both queues.
func TestQosGlobal(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	defer func() {
		select {
		case e := <-closed:
			if e != nil {
				t.Errorf("channel closed: %v", e)
			}
		default:
		}
	}()
	for _, q := range []string{"gq.a", "gq.b"} {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			publish(t, ch, "", q, amqp.Publishing{Body: []byte(fmt.Sprint(q, i))})
		}
	}
	if err := ch.Qos(3, 0, true); err != nil {
		t.Fatal(err)
	}
	var dss []<-chan amqp.Delivery
	for _, q := range []string{"gq.a", "gq.b"} {
		ds, err := ch.Consume(q, "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		dss = append(dss, ds)
	}
	got := collect(dss, 400*time.Millisecond)
	if len(got) != 3 {
		t.Fatalf("%d unacknowledged deliveries on the channel, want 3 (global qos)", len(got))
	}
	if err := got[0].Ack(false); err != nil {
		t.Fatal(err)
	}
	more := collect(dss, 400*time.Millisecond)
	if len(more) != 1 {
		t.Fatalf("one ack let %d more deliveries come, want 1", len(more))
	}
	// Recover: the 3 unacknowledged come again (redelivered), no more.
	if err := ch.Recover(true); err != nil {
		t.Fatal(err)
	}
	again := collect(dss, 400*time.Millisecond)
	if len(again) != 3 {
		t.Fatalf("after basic.recover %d deliveries, want 3", len(again))
	}
	// Acking everything drains both queues, 3 at a time.
	acked := 1
	pending := again
	for range 100 {
		if acked == 20 {
			break
		}
		for _, d := range pending {
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
			acked++
		}
		pending = collect(dss, 100*time.Millisecond)
		if len(pending) > 3 {
			t.Fatalf("%d deliveries at once, want at most 3", len(pending))
		}
	}
	if acked != 20 {
		t.Fatalf("acked %d of 20", acked)
	}
	waitDepth(t, eng, "gq.a", 0)
	waitDepth(t, eng, "gq.b", 0)
}

// TestQosGlobalAndPerConsumer: a per-consumer window under a larger
// channel window still holds each consumer.
func TestQosGlobalAndPerConsumer(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("gq.pc", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		publish(t, ch, "", "gq.pc", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	if err := ch.Qos(5, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(2, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("gq.pc", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, ds)
	next(t, ds)
	none(t, ds, 300*time.Millisecond)
}

// TestChannelFlow: channel.flow active=false stops the channel's
// deliveries (answered with flow-ok, the connection stays open) until
// active=true; another channel's consumer is not held.
func TestChannelFlow(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch, other := channel(t, c), channel(t, c)
	for _, q := range []string{"flow", "flow.other"} {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := ch.Consume("flow", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := ch.Consume("flow", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ods, err := other.Consume("flow.other", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Flow(false); err != nil {
		t.Fatalf("channel.flow active=false: %v", err)
	}
	pub := channel(t, c)
	for i := range 4 {
		publish(t, pub, "", "flow", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	publish(t, pub, "", "flow.other", amqp.Publishing{Body: []byte("other")})
	if d := next(t, ods); string(d.Body) != "other" {
		t.Fatalf("other channel got %q", d.Body)
	}
	if got := collect([]<-chan amqp.Delivery{ds, auto}, 400*time.Millisecond); len(got) != 0 {
		t.Fatalf("%d deliveries on a paused channel", len(got))
	}
	if c.IsClosed() {
		t.Fatal("channel.flow active=false closed the connection")
	}
	if err := ch.Flow(true); err != nil {
		t.Fatalf("channel.flow active=true: %v", err)
	}
	seen := map[string]bool{}
	for range 4 {
		select {
		case d := <-ds:
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
			seen[string(d.Body)] = true
		case d := <-auto:
			seen[string(d.Body)] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("after active=true only %d of 4 deliveries", len(seen))
		}
	}
	if len(seen) != 4 {
		t.Fatalf("deliveries %v, want 4 distinct", seen)
	}
}

// TestGateHeldDeliveriesDoNotBlock: deliveries the gate holds (a paused
// channel, a full channel window) do not hold up the engine: deleting the
// queue from another connection completes and cancels the consumer, and
// closing the channel returns the held messages to their queue.
func TestGateHeldDeliveriesDoNotBlock(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	admin := channel(t, dial(t, addr))
	for _, q := range []string{"held.del", "held.keep"} {
		if _, err := admin.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			publish(t, admin, "", q, amqp.Publishing{Body: []byte(fmt.Sprint(i))})
		}
	}

	// A paused channel whose queue is deleted.
	paused := channel(t, c)
	cancels := paused.NotifyCancel(make(chan string, 1))
	if err := paused.Flow(false); err != nil {
		t.Fatal(err)
	}
	ds, err := paused.Consume("held.del", "paused", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	none(t, ds, 200*time.Millisecond)
	deleted := make(chan error, 1)
	go func() { _, err := admin.QueueDelete("held.del", false, false, false); deleted <- err }()
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("queue.delete blocked by a paused consumer")
	}
	select {
	case tag := <-cancels:
		if tag != "paused" {
			t.Fatalf("cancelled %q", tag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.cancel for the deleted queue's consumer")
	}

	// A full channel window, then the channel closes: what it held goes
	// back to the queue.
	full := channel(t, c)
	if err := full.Qos(2, 0, true); err != nil {
		t.Fatal(err)
	}
	fds, err := full.Consume("held.keep", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	next(t, fds)
	next(t, fds)
	none(t, fds, 200*time.Millisecond)
	if err := full.Close(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, eng, "held.keep", 5)
	if got := drain(t, admin, "held.keep"); len(got) != 5 {
		t.Fatalf("after the close the queue gave %d messages, want 5", len(got))
	}
}
