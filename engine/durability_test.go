package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Issue 6 item 6 over the engine API: delays, delivery counts and the
// redelivery limit across restarts, and a redelivery storm.

// A restart in the middle of a delivery delay (time-to-deliver) or of a
// redelivery delay leaves the message delayed until its time, then
// delivers it. The fake clock moves between restarts: the broker reads the
// delay back from the store and compares it with the clock at recovery.
func TestRestartInTheMiddleOfDelays(t *testing.T) {
	cases := []struct {
		name  string
		delay func(t *testing.T, h *harness, clock *fakeClock) // leaves "m" delayed by an hour
		count int32                                            // delivery count when it finally comes
	}{
		{"time-to-deliver", func(t *testing.T, h *harness, _ *fakeClock) {
			s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
			send(t, s, queueA, "m", engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour})
		}, 1},
		{"delivery-time-absolute", func(t *testing.T, h *harness, clock *fakeClock) {
			s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
			at := clock.Now().Add(time.Hour).UnixMilli()
			send(t, s, queueA, "m", engine.SendOptions{Set: engine.SetDeliveryTime, DeliveryTime: at})
		}, 1},
		{"redelivery-delay-rollback", func(t *testing.T, h *harness, _ *fakeClock) {
			c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
			send(t, h.session(c, engine.AutoAcknowledge), queueA, "m", engine.SendOptions{})
			s := h.session(c, engine.Transacted)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()
			_ = recv(t, cons)
			if err := s.Rollback(context.Background()); err != nil {
				t.Fatal(err)
			}
			_ = c.Close()
		}, 2},
		{"redelivery-delay-settle-failed", func(t *testing.T, h *harness, _ *fakeClock) {
			c := h.conn(engine.ConnectionOptions{})
			send(t, h.session(c, engine.AutoAcknowledge), queueA, "m", engine.SendOptions{})
			s := h.session(c, engine.IndividualAcknowledge)
			s.SetRedeliveryDelay(time.Hour)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()
			d := recv(t, cons)
			if err := s.Settle(context.Background(), d.Tag, engine.Failed); err != nil {
				t.Fatal(err)
			}
			_ = c.Close()
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			h := newPersistent(t, "", engine.Config{Now: clock.Now})
			tc.delay(t, h, clock)

			clock.Add(30 * time.Minute)
			h.restart()
			if n := h.depth(queueA); n != 0 {
				t.Fatalf("half way through the delay %d message(s) visible after restart", n)
			}
			c := h.conn(engine.ConnectionOptions{})
			cons := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
			_ = c.Start()
			recvNone(t, cons, 50*time.Millisecond)

			clock.Add(time.Hour)
			h.restart()
			c = h.conn(engine.ConnectionOptions{})
			cons = consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
			_ = c.Start()
			d := recv(t, cons)
			if body(d) != "m" || d.DeliveryCount != tc.count || d.Redelivered != (tc.count > 1) {
				t.Fatalf("got %q count %d redelivered %v, want count %d", body(d), d.DeliveryCount, d.Redelivered, tc.count)
			}
		})
	}
}

// The same with the real clock: after the restart the scheduler, not the
// recovery, makes the message visible when its time comes.
func TestRestartThenScheduledDeliveryFires(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	m := send(t, s, queueA, "m", engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 700 * time.Millisecond})
	h.restart()
	c := h.conn(engine.ConnectionOptions{})
	cons := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
	_ = c.Start()
	d := recv(t, cons)
	if now := time.Now().UnixMilli(); now < m.DeliveryTime {
		t.Fatalf("delivered %dms before its delivery time", m.DeliveryTime-now)
	}
	if d.Msg.ID != m.ID || d.Redelivered {
		t.Fatalf("got %+v", d)
	}
}

// JMSXDeliveryCount and JMSRedelivered survive restarts, and so does the
// redelivery limit's count. With RedeliveryLimit 2 a message is delivered
// at most three times: a failure, a restart, a delivery ended by a
// connection close, a restart, and the third delivery's failure sends it to
// the (persistent) error destination.
func TestDeliveryCountsAndLimitSurviveRestart(t *testing.T) {
	pols := newPolicies().set(queueA, func(p *engine.Policy) {
		p.RedeliveryLimit = 2
		p.ErrorDestination = errQueue
	})
	h := newPersistent(t, "", engine.Config{Policy: pols.get})
	h.create(errQueue)
	c := h.conn(engine.ConnectionOptions{})
	m := send(t, h.session(c, engine.AutoAcknowledge), queueA, "m", engine.SendOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	if d := recv(t, cons); d.DeliveryCount != 1 || d.Redelivered {
		t.Fatalf("first delivery count %d redelivered %v", d.DeliveryCount, d.Redelivered)
	}
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.restart()

	c = h.conn(engine.ConnectionOptions{})
	s = h.session(c, engine.ClientAcknowledge)
	cons = consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	d := recv(t, cons)
	if d.DeliveryCount != 2 || !d.Redelivered {
		t.Fatalf("after restart count %d redelivered %v, want 2 true", d.DeliveryCount, d.Redelivered)
	}
	_ = c.Close() // left unacknowledged
	h.restart()

	c = h.conn(engine.ConnectionOptions{})
	s = h.session(c, engine.ClientAcknowledge)
	cons = consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	d = recv(t, cons)
	if d.DeliveryCount != 3 || !d.Redelivered {
		t.Fatalf("after close and restart count %d, want 3", d.DeliveryCount)
	}
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	recvNone(t, cons, 50*time.Millisecond)
	h.restart()
	if n := h.depth(queueA); n != 0 {
		t.Fatalf("%d left on the queue", n)
	}
	e := mustBrowse(t, h, errQueue)
	if len(e) != 1 || e[0].Msg.ID != m.ID {
		t.Fatalf("error destination after restart holds %v", bodies(e))
	}
	if v, _ := e[0].Msg.Props.GetInt(engine.PropDeliveryCount); v != 3 {
		t.Fatalf("%s = %d, want 3", engine.PropDeliveryCount, v)
	}
}

// A redelivery storm: 2,000 messages NACKed (Settle Failed) by four
// competing consumers until each exceeds its redelivery limit of 3. Every
// message reaches the error destination exactly once, after exactly four
// deliveries, and none is lost.
func TestRedeliveryStorm(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		// Issue 6: 10,000 messages NACKed up to their limit, in memory and
		// persistent (every delivery batch and dead-lettering is a store
		// sync, so -short runs fewer).
		name := "memory"
		n := 10000
		if persistent {
			name = "persistent"
		}
		if testing.Short() {
			n = 500
		}
		t.Run(name, func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) { p.ErrorDestination = errQueue })
			var h *harness
			if persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			h.create(errQueue)
			pc := h.conn(engine.ConnectionOptions{Producer: engine.ProducerDefaults{
				DeliveryMode: message.Persistent, Priority: 4, RedeliveryLimit: 3}})
			ps := h.session(pc, engine.AutoAcknowledge)
			prod, err := ps.CreateProducer(queueA)
			if err != nil {
				t.Fatal(err)
			}
			sent := map[string]bool{}
			for i := 0; i < n; i++ {
				m := text(fmt.Sprint(i))
				if err := prod.Send(context.Background(), m, engine.SendOptions{}); err != nil {
					t.Fatal(err)
				}
				sent[m.ID] = true
			}
			var deliveries atomic.Int64
			var bad atomic.Value
			c := h.conn(engine.ConnectionOptions{})
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				s := h.session(c, engine.IndividualAcknowledge)
				cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 50})
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4*n+100; i++ {
						d, ok, err := cons.ReceiveTimeout(300 * time.Millisecond)
						if err != nil {
							bad.Store(err.Error())
							return
						}
						if !ok {
							return
						}
						deliveries.Add(1)
						if d.DeliveryCount > 4 {
							bad.Store(fmt.Sprintf("%s delivered %d times", d.Msg.ID, d.DeliveryCount))
						}
						if err := s.Settle(context.Background(), d.Tag, engine.Failed); err != nil {
							bad.Store(err.Error())
							return
						}
					}
				}()
			}
			_ = c.Start()
			wg.Wait()
			if v := bad.Load(); v != nil {
				t.Fatal(v)
			}
			if got := deliveries.Load(); got != int64(4*n) {
				t.Fatalf("%d deliveries, want %d (4 each)", got, 4*n)
			}
			if persistent {
				h.restart()
			}
			if d := h.depth(queueA); d != 0 {
				t.Fatalf("%d messages left on the queue", d)
			}
			ec := h.conn(engine.ConnectionOptions{})
			errCons := consumer(t, h.session(ec, engine.AutoAcknowledge), errQueue, engine.ConsumerOptions{})
			_ = ec.Start()
			seen := map[string]bool{}
			for _, d := range recvAll(t, errCons, 200*time.Millisecond) {
				if seen[d.Msg.ID] {
					t.Fatalf("%s twice on the error destination", d.Msg.ID)
				}
				if !sent[d.Msg.ID] {
					t.Fatalf("unknown message %s", d.Msg.ID)
				}
				seen[d.Msg.ID] = true
			}
			if len(seen) != n {
				t.Fatalf("%d of %d messages on the error destination", len(seen), n)
			}
		})
	}
}
