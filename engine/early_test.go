package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
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
