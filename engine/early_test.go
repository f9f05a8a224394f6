package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// With ConsumeBeforeStore, persistent messages that a waiting consumer
// acknowledges at once are confirmed without being written; those nobody
// consumed in time are written, and survive a restart.
func TestConsumeBeforeStore(t *testing.T) {
	h := newPersistent(t, "", engine.Config{ConsumeBeforeStore: true})
	c := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c.Start()
	const n = 300
	got := make(chan string, n)
	go func() {
		for i := 0; i < n; i++ {
			d, ok, err := cons.ReceiveTimeout(10 * time.Second)
			if err != nil || !ok {
				close(got)
				return
			}
			got <- body(d)
		}
	}()
	ps := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	p, _ := ps.CreateProducer(queueA)
	before := h.st.Stats()
	for i := 0; i < n; i++ {
		if err := p.Send(context.Background(), text(fmt.Sprint(i)), engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		b, ok := <-got
		if !ok || b != fmt.Sprint(i) {
			t.Fatalf("message %d: got %q (ok %v)", i, b, ok)
		}
	}
	written := h.st.Stats().Ops - before.Ops
	t.Logf("%d persistent messages sent and consumed with %d store writes", n, written)
	if written >= 2*n {
		t.Fatalf("%d store writes for %d consumed messages: nothing was taken back", written, n)
	}
	// With the consumer gone, sends are written and survive a restart.
	_ = cons.Close()
	for i := 0; i < 5; i++ {
		if err := p.Send(context.Background(), text(fmt.Sprint("kept", i)), engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	for i := 0; i < 5; i++ {
		if d := recv(t, cons2); body(d) != fmt.Sprint("kept", i) {
			t.Fatalf("after restart got %q", body(d))
		}
	}
	recvNone(t, cons2, 100*time.Millisecond)
}

// A message sent consume-before-store and delivered, but never
// acknowledged, is written with its delivery mark (the mark replaces the
// pending write, reusing the message's encoding): after a restart it comes
// back whole, flagged as redelivered.
func TestEarlyDeliveredUnacknowledgedSurvivesRestart(t *testing.T) {
	h := newPersistent(t, "", engine.Config{ConsumeBeforeStore: true})
	c := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c, engine.ClientAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c.Start()
	const n = 20
	got := make(chan message.Delivery, n)
	go func() {
		for i := 0; i < n; i++ {
			d, ok, err := cons.ReceiveTimeout(10 * time.Second)
			if err != nil || !ok {
				close(got)
				return
			}
			got <- d
		}
	}()
	ps := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	p, _ := ps.CreateProducer(queueA)
	before := h.st.Stats()
	for i := 0; i < n; i++ {
		m := text(fmt.Sprint("early", i))
		if err := m.Props.Set("seq", message.IntValue(int32(i))); err != nil {
			t.Fatal(err)
		}
		// Send returns once the message is durable or consumed; nobody
		// acknowledges it, so it is durable.
		if err := p.Send(context.Background(), m, engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if d, ok := <-got; !ok || body(d) != fmt.Sprint("early", i) || d.Redelivered {
			t.Fatalf("message %d: got %q (ok %v, redelivered %v)", i, body(d), ok, d.Redelivered)
		}
	}
	t.Logf("%d messages delivered, unacknowledged, with %d store ops", n, h.st.Stats().Ops-before.Ops)
	h.restart()
	c2 := h.conn(engine.ConnectionOptions{})
	cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c2.Start()
	for i := 0; i < n; i++ {
		d := recv(t, cons2)
		seq, err := d.Msg.Props.GetInt("seq")
		if body(d) != fmt.Sprint("early", i) || err != nil || seq != int32(i) || !d.Redelivered || d.DeliveryCount != 2 {
			t.Fatalf("after restart, message %d: body %q, seq %d (%v), redelivered %v, delivery count %d",
				i, body(d), seq, err, d.Redelivered, d.DeliveryCount)
		}
	}
	recvNone(t, cons2, 100*time.Millisecond)
}
