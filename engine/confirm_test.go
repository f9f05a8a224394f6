package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
)

// SendToAsync pipelines persistent sends: the messages keep their order,
// every confirmation comes, and what was confirmed survives a restart,
// whether or not a consumer takes the messages meanwhile.
func TestSendToAsyncPipelined(t *testing.T) {
	for _, tc := range []struct{ withConsumer, consumeBeforeStore bool }{
		{false, true}, {true, true}, {false, false}, {true, false},
	} {
		withConsumer := tc.withConsumer
		t.Run(fmt.Sprintf("consumer=%v,consume_before_store=%v", withConsumer, tc.consumeBeforeStore), func(t *testing.T) {
			h := newPersistent(t, "", engine.Config{ConsumeBeforeStore: tc.consumeBeforeStore})
			before := h.st.Stats()
			const n = 500
			got := make(chan string, n)
			var cons *engine.Consumer
			var cs *engine.Session
			if withConsumer {
				c := h.conn(engine.ConnectionOptions{})
				cs = h.session(c, engine.ClientAcknowledge)
				cons = consumer(t, cs, queueA, engine.ConsumerOptions{})
				_ = c.Start()
				go func() {
					defer close(got)
					for i := 0; i < n/2; i++ {
						d, ok, err := cons.ReceiveTimeout(10 * time.Second)
						if err != nil || !ok {
							return
						}
						_ = cs.Acknowledge(context.Background(), d.Tag)
						got <- body(d)
					}
				}()
			}
			ps := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
			p, _ := ps.CreateProducer(message.Destination{})
			confs := make([]*engine.Confirmation, n)
			for i := range n {
				c, err := p.SendToAsync(context.Background(), queueA, text(fmt.Sprint(i)), engine.SendOptions{})
				if err != nil {
					t.Fatal(err)
				}
				confs[i] = c
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, c := range confs {
				if err := c.Wait(ctx); err != nil {
					t.Fatalf("confirmation %d: %v", i, err)
				}
				if !c.Ready() {
					t.Fatalf("confirmation %d: Wait returned, Ready is false", i)
				}
			}
			if written := h.st.Stats().Ops - before.Ops; !tc.consumeBeforeStore && written < n {
				t.Fatalf("consume_before_store off: %d store writes for %d confirmed messages, want every one written", written, n)
			}
			next := 0
			if withConsumer {
				for b := range got {
					if b != fmt.Sprint(next) {
						t.Fatalf("consumer got %q, want %d", b, next)
					}
					next++
				}
				if next != n/2 {
					t.Fatalf("consumer got %d messages, want %d", next, n/2)
				}
				_ = cons.Close()
			}
			h.restart()
			c2 := h.conn(engine.ConnectionOptions{})
			cons2 := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
			_ = c2.Start()
			for ; next < n; next++ {
				if d := recv(t, cons2); body(d) != fmt.Sprint(next) {
					t.Fatalf("after restart got %q, want %d", body(d), next)
				}
			}
			recvNone(t, cons2, 100*time.Millisecond)
		})
	}
}

// A write that fails reaches the producer through its Confirmation, and
// the message does not stay on its queue (with consume before store off it
// never shows there).
func TestSendToAsyncStoreFailure(t *testing.T) {
	for _, cbs := range []bool{true, false} {
		t.Run(fmt.Sprintf("consume_before_store=%v", cbs), func(t *testing.T) {
			b, faults, _ := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true, ConsumeBeforeStore: cbs})
			c, err := b.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.CreateSession(engine.AutoAcknowledge)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := s.CreateProducer(queueA)
			ok, err := p.SendToAsync(context.Background(), queueA, text("stored"), engine.SendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := ok.Wait(ctx); err != nil {
				t.Fatalf("first send: %v", err)
			}
			faults.Fail(true)
			bad, err := p.SendToAsync(context.Background(), queueA, text("lost disk"), engine.SendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := bad.Wait(ctx); !errors.Is(err, enginetest.ErrInjected) {
				t.Fatalf("send whose write failed: Wait = %v, want the store's error", err)
			}
			// Its producer is told the send failed: the message is not
			// delivered as well (no consumer had it yet).
			info, err := b.DestinationInfo(queueA)
			if err != nil {
				t.Fatal(err)
			}
			if info.Messages != 1 {
				t.Fatalf("queue holds %d messages, want only the stored one", info.Messages)
			}
		})
	}
}
