package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/grammar/schedule"
)

// Tests of WebLogic JMS "Managing Your Applications", sections "Managing
// Rolled Back, Recovered, Redelivered, or Expired Messages" and "Setting
// Message Delivery Times" (issue 6, items 1-5) over the engine API.

// failOp is one way a session fails a delivery: the three ways that apply
// the redelivery delay and count against the redelivery limit.
type failOp struct {
	name string
	mode engine.AckMode
	fail func(t *testing.T, s *engine.Session, d message.Delivery)
	// done ends a successful delivery (acknowledge or commit).
	done func(t *testing.T, s *engine.Session, d message.Delivery)
}

var failOps = []failOp{
	{
		name: "rollback",
		mode: engine.Transacted,
		fail: func(t *testing.T, s *engine.Session, _ message.Delivery) {
			t.Helper()
			if err := s.Rollback(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
		done: func(t *testing.T, s *engine.Session, _ message.Delivery) {
			t.Helper()
			if err := s.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name: "recover",
		mode: engine.ClientAcknowledge,
		fail: func(t *testing.T, s *engine.Session, _ message.Delivery) {
			t.Helper()
			if err := s.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
		done: func(t *testing.T, s *engine.Session, d message.Delivery) {
			t.Helper()
			if err := s.Acknowledge(context.Background(), d.Tag); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name: "settle-failed",
		mode: engine.IndividualAcknowledge,
		fail: func(t *testing.T, s *engine.Session, d message.Delivery) {
			t.Helper()
			if err := s.Settle(context.Background(), d.Tag, engine.Failed); err != nil {
				t.Fatal(err)
			}
		},
		done: func(t *testing.T, s *engine.Session, d message.Delivery) {
			t.Helper()
			if err := s.Acknowledge(context.Background(), d.Tag); err != nil {
				t.Fatal(err)
			}
		},
	},
}

// WebLogic JMS "Managing Your Applications", "Setting a Redelivery Delay" and
// "Ordered Redelivery of Messages": "A session inherits the redelivery delay
// from its connection factory ... The session attribute is dynamic and can be
// changed at any time"; "when it rolls back or recovers a message, the message
// is set aside until the redelivery delay has passed"; "During that period,
// other messages can be delivered before the delayed message".
func TestRedeliveryDelayInheritedChangeableAndInvisible(t *testing.T) {
	for _, op := range failOps {
		t.Run(op.name, func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
			s := h.session(c, op.mode)
			if got := s.RedeliveryDelay(); got != time.Hour {
				t.Fatalf("session delay %v, want the connection's 1h", got)
			}
			ps := h.session(c, engine.AutoAcknowledge)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()

			send(t, ps, queueA, "poison", engine.SendOptions{})
			d := recv(t, cons)
			op.fail(t, s, d)
			if n := h.depth(queueA); n != 0 {
				t.Fatalf("a delayed message is visible to browsers (%d)", n)
			}
			send(t, ps, queueA, "next", engine.SendOptions{})
			d = recv(t, cons)
			if body(d) != "next" {
				t.Fatalf("got %q: the delayed message was not set aside", body(d))
			}
			op.done(t, s, d)

			// Changed at any time: affects the next rollback or recover.
			s.SetRedeliveryDelay(200 * time.Millisecond)
			if s.RedeliveryDelay() != 200*time.Millisecond {
				t.Fatal("SetRedeliveryDelay not kept")
			}
			send(t, ps, queueA, "retry", engine.SendOptions{})
			d = recv(t, cons)
			start := time.Now()
			op.fail(t, s, d)
			d = recv(t, cons)
			if body(d) != "retry" || !d.Redelivered || d.DeliveryCount != 2 {
				t.Fatalf("got %q redelivered %v count %d", body(d), d.Redelivered, d.DeliveryCount)
			}
			if el := time.Since(start); el < 195*time.Millisecond {
				t.Fatalf("redelivered after %v, before the 200ms delay", el)
			}
			op.done(t, s, d)
			// The poison message is still set aside for its hour.
			recvNone(t, cons, 30*time.Millisecond)
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Setting a Redelivery Delay for
// Messages": "Messages that are left unacknowledged or uncommitted by a
// client, either intentionally or as a result of a failure, are not assigned a
// redelivery delay."
func TestRedeliveryDelayNotAppliedOnClose(t *testing.T) {
	t.Run("connection-close", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c1 := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
		for _, mode := range []engine.AckMode{engine.ClientAcknowledge, engine.Transacted} {
			s := h.session(c1, mode)
			send(t, h.session(c1, engine.AutoAcknowledge), queueA, mode.String(), engine.SendOptions{})
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c1.Start()
			_ = recv(t, cons)
			_ = cons.Close()
		}
		_ = c1.Close()
		c2 := h.conn(engine.ConnectionOptions{})
		cons := consumer(t, h.session(c2, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
		_ = c2.Start()
		got := map[string]bool{}
		for i := 0; i < 2; i++ {
			d := recv(t, cons)
			if !d.Redelivered || d.DeliveryCount != 2 {
				t.Fatalf("%q: redelivered %v count %d", body(d), d.Redelivered, d.DeliveryCount)
			}
			got[body(d)] = true
		}
		if len(got) != 2 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("session-close", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
		s := h.session(c, engine.ClientAcknowledge)
		send(t, s, queueA, "x", engine.SendOptions{})
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		_ = c.Start()
		_ = recv(t, cons)
		_ = s.Close()
		other := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
		if d := recv(t, other); !d.Redelivered {
			t.Fatal("not flagged redelivered")
		}
	})
	t.Run("consumer-close", func(t *testing.T) {
		// Messages prefetched by a consumer and never given to the
		// application go back at once when it closes.
		h := newBroker(t, engine.Config{})
		c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
		s := h.session(c, engine.ClientAcknowledge)
		for i := 1; i <= 3; i++ {
			send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{})
		}
		cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 10})
		_ = c.Start()
		if body(recv(t, cons)) != "1" {
			t.Fatal("order")
		}
		_ = cons.Close()
		other := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{})
		if got := bodies(recvAll(t, other, 50*time.Millisecond)); fmt.Sprint(got) != "[2 3]" {
			t.Fatalf("after consumer close got %v, want [2 3] at once", got)
		}
	})
}

// WebLogic JMS "Managing Your Applications", "Overriding the Redelivery Delay
// on a Destination": "Regardless of what redelivery delay is set on the
// session, the destination ... can override the setting. The redelivery delay
// override applied to the redelivery of a message is the one in effect at the
// time a message is rolled back or recovered."
func TestRedeliveryDelayOverrideInEffectAtRollback(t *testing.T) {
	for _, op := range failOps {
		t.Run(op.name, func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) { p.RedeliveryDelayOverride = 0 })
			h := newBroker(t, engine.Config{Policy: pols.get})
			c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
			s := h.session(c, op.mode)
			ps := h.session(c, engine.AutoAcknowledge)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()

			// Override 0 wins over the session's hour.
			send(t, ps, queueA, "m", engine.SendOptions{})
			d := recv(t, cons)
			op.fail(t, s, d)
			d = recv(t, cons)
			if body(d) != "m" || d.DeliveryCount != 2 {
				t.Fatalf("override 0: got %q count %d", body(d), d.DeliveryCount)
			}

			// Override an hour at rollback time, then back to 0: the
			// message keeps the hour it was given.
			pols.set(queueA, func(p *engine.Policy) { p.RedeliveryDelayOverride = time.Hour })
			s.SetRedeliveryDelay(0)
			op.fail(t, s, d)
			pols.set(queueA, func(p *engine.Policy) { p.RedeliveryDelayOverride = 0 })
			send(t, ps, queueA, "other", engine.SendOptions{})
			d = recv(t, cons)
			if body(d) != "other" {
				t.Fatalf("got %q: override changed after rollback applied retroactively", body(d))
			}
			op.done(t, s, d)
			recvNone(t, cons, 30*time.Millisecond)

			// Unset override: the session's delay applies again.
			pols.set(queueA, func(p *engine.Policy) { p.RedeliveryDelayOverride = -1 })
			s.SetRedeliveryDelay(time.Hour)
			send(t, ps, queueA, "third", engine.SendOptions{})
			d = recv(t, cons)
			op.fail(t, s, d)
			recvNone(t, cons, 30*time.Millisecond)
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Setting a Redelivery Limit for
// Messages", "Configuring a Message Redelivery Limit On a Destination"
// (overrides the producer's), and "Configuring an Error Destination for
// Undelivered Messages" (a queue or a topic).
func TestRedeliveryLimitToErrorDestination(t *testing.T) {
	type limits struct {
		conn    int32 // ConnectionOptions.Producer.RedeliveryLimit; -2 = defaults
		prod    int32 // Producer.Defaults.RedeliveryLimit after creation; -2 = keep
		perSend int32 // SendOptions SetRedeliveryLimit; -2 = not set
		dest    int32 // Policy.RedeliveryLimit (-1 = not set)
	}
	cases := []struct {
		name       string
		lim        limits
		op         failOp
		errDest    message.Destination
		deliveries int32
	}{
		{"connection-default", limits{2, -2, -2, -1}, failOps[2], errQueue, 3},
		{"producer-attribute", limits{-2, 1, -2, -1}, failOps[1], errQueue, 2},
		{"per-message", limits{-2, 5, 0, -1}, failOps[0], errQueue, 1},
		{"destination-overrides-lower", limits{-2, 5, -2, 1}, failOps[2], errQueue, 2},
		{"destination-overrides-higher", limits{-2, 0, -2, 2}, failOps[1], errQueue, 3},
		{"error-topic", limits{-2, 1, -2, -1}, failOps[2], errTopic, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) {
				p.RedeliveryLimit = tc.lim.dest
				p.ErrorDestination = tc.errDest
			})
			h := newBroker(t, engine.Config{Policy: pols.get})
			opts := engine.ConnectionOptions{}
			if tc.lim.conn != -2 {
				opts.Producer = engine.DefaultProducerDefaults()
				opts.Producer.RedeliveryLimit = tc.lim.conn
			}
			c := h.conn(opts)
			ps := h.session(c, engine.AutoAcknowledge)
			errCons := consumer(t, h.session(c, engine.AutoAcknowledge), tc.errDest, engine.ConsumerOptions{})
			p, err := ps.CreateProducer(queueA)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lim.prod != -2 {
				p.Defaults.RedeliveryLimit = tc.lim.prod
			}
			o := engine.SendOptions{Set: engine.SetPriority, Priority: 7}
			if tc.lim.perSend != -2 {
				o.Set |= engine.SetRedeliveryLimit
				o.RedeliveryLimit = tc.lim.perSend
			}
			m := withProp("poison", "app", message.StringValue("v"))
			m.CorrelationID = "corr-1"
			m.Type = "kind"
			m.ReplyTo = queueB
			if err := p.Send(context.Background(), m, o); err != nil {
				t.Fatal(err)
			}
			s := h.session(c, tc.op.mode)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()
			var n int32
			for i := 0; i < 20; i++ {
				d, ok, err := cons.ReceiveTimeout(100 * time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				n++
				if d.DeliveryCount != n || d.Redelivered != (n > 1) {
					t.Fatalf("delivery %d: count %d redelivered %v", n, d.DeliveryCount, d.Redelivered)
				}
				tc.op.fail(t, s, d)
			}
			if n != tc.deliveries {
				t.Fatalf("delivered %d times, want %d", n, tc.deliveries)
			}
			e := recv(t, errCons)
			em := e.Msg
			if em.ID != m.ID || body(e) != "poison" || em.Priority != 7 || em.CorrelationID != "corr-1" ||
				em.Type != "kind" || em.ReplyTo != queueB || em.Timestamp != m.Timestamp || em.DeliveryMode != m.DeliveryMode {
				t.Fatalf("headers not intact: %+v", em)
			}
			if v, _ := em.Props.GetString("app"); v != "v" {
				t.Fatalf("property lost: %v", em.Props)
			}
			if v, _ := em.Props.GetString(engine.PropErrorReason); v == "" {
				t.Fatal("no error reason")
			}
			if v, _ := em.Props.GetString(engine.PropOriginalDestination); v != queueA.String() {
				t.Fatalf("original destination %q", v)
			}
			if e.DeliveryCount != 1 || e.Redelivered {
				t.Fatalf("error destination delivery count %d redelivered %v", e.DeliveryCount, e.Redelivered)
			}
			recvNone(t, errCons, 30*time.Millisecond)
			recvNone(t, cons, 30*time.Millisecond)
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Setting a Redelivery Limit for
// Messages": "If the redelivery limit is configured, but no error destination
// is configured, then persistent or non-persistent messages are simply deleted
// when they reach their redelivery limit."
func TestRedeliveryLimitWithoutErrorDestinationDeletes(t *testing.T) {
	for _, mode := range []message.DeliveryMode{message.Persistent, message.NonPersistent} {
		t.Run(mode.String(), func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) { p.RedeliveryLimit = 1 })
			h := newPersistent(t, "", engine.Config{Policy: pols.get})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.IndividualAcknowledge)
			send(t, s, queueA, "doomed", engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: mode})
			send(t, s, queueA, "kept", engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.Persistent})
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()
			for i := 0; i < 2; i++ {
				d := recv(t, cons)
				if body(d) == "kept" {
					// Put it back untouched so it survives as a control.
					if err := s.Settle(context.Background(), d.Tag, engine.Released); err != nil {
						t.Fatal(err)
					}
					d = recv(t, cons)
				}
				if body(d) != "doomed" {
					t.Fatalf("got %q", body(d))
				}
				if err := s.Settle(context.Background(), d.Tag, engine.Failed); err != nil {
					t.Fatal(err)
				}
			}
			_ = cons.Close()
			if got := bodies(mustBrowse(t, h, queueA)); fmt.Sprint(got) != "[kept]" {
				t.Fatalf("queue holds %v after the limit, want [kept]", got)
			}
			h.restart()
			if got := bodies(mustBrowse(t, h, queueA)); fmt.Sprint(got) != "[kept]" {
				t.Fatalf("after restart queue holds %v, want [kept]", got)
			}
		})
	}
}

func mustBrowse(t *testing.T, h *harness, d message.Destination) []message.Delivery {
	t.Helper()
	ds, err := h.b.Browse(d, "")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A delivery that ends with its session or connection closing, message
// unacknowledged, is an attempt too: it gets no redelivery delay, but it
// counts against the redelivery limit, so a message that makes every
// consumer crash still ends on the error destination.
func TestRedeliveryLimitCountsDeliveriesEndedByClose(t *testing.T) {
	pols := newPolicies().set(queueA, func(p *engine.Policy) {
		p.RedeliveryLimit = 1
		p.ErrorDestination = errQueue
	})
	h := newBroker(t, engine.Config{Policy: pols.get})
	h.create(errQueue)
	send(t, h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge), queueA, "crashy", engine.SendOptions{})
	for want := int32(1); want <= 2; want++ {
		c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
		s := h.session(c, engine.ClientAcknowledge)
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		_ = c.Start()
		d := recv(t, cons)
		if d.DeliveryCount != want {
			t.Fatalf("count %d, want %d", d.DeliveryCount, want)
		}
		if want == 1 {
			_ = s.Close()
		} else {
			_ = c.Close()
		}
	}
	if n := h.depth(queueA); n != 0 {
		t.Fatalf("%d still on the queue", n)
	}
	if e := mustBrowse(t, h, errQueue); len(e) != 1 || body(e[0]) != "crashy" {
		t.Fatalf("error destination holds %v", bodies(e))
	}
}

// Settle(Rejected) (AMQP rejected, STOMP NACK without requeue) makes a
// message undeliverable at once, without waiting for the limit; with no
// error destination it is deleted. Settle(Released) (AMQP released) puts it
// back as if never delivered: it does not count against the limit.
func TestSettleRejectedAndReleased(t *testing.T) {
	t.Run("rejected-to-error-destination", func(t *testing.T) {
		pols := newPolicies().set(queueA, func(p *engine.Policy) { p.ErrorDestination = errQueue })
		h := newBroker(t, engine.Config{Policy: pols.get})
		c := h.conn(engine.ConnectionOptions{})
		s := h.session(c, engine.IndividualAcknowledge)
		m := send(t, s, queueA, "bad", engine.SendOptions{})
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		_ = c.Start()
		d := recv(t, cons)
		if err := s.Settle(context.Background(), d.Tag, engine.Rejected); err != nil {
			t.Fatal(err)
		}
		errCons := consumer(t, h.session(c, engine.AutoAcknowledge), errQueue, engine.ConsumerOptions{})
		e := recv(t, errCons)
		if e.Msg.ID != m.ID {
			t.Fatal("wrong message on the error destination")
		}
		if v, _ := e.Msg.Props.GetString(engine.PropOriginalDestination); v != queueA.String() {
			t.Fatalf("original destination %q", v)
		}
		recvNone(t, cons, 30*time.Millisecond)
	})
	t.Run("rejected-without-error-destination", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c := h.conn(engine.ConnectionOptions{})
		s := h.session(c, engine.ClientAcknowledge)
		send(t, s, queueA, "bad", engine.SendOptions{})
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		_ = c.Start()
		d := recv(t, cons)
		if err := s.Settle(context.Background(), d.Tag, engine.Rejected); err != nil {
			t.Fatal(err)
		}
		if err := s.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		recvNone(t, cons, 50*time.Millisecond)
	})
	t.Run("released-does-not-count", func(t *testing.T) {
		pols := newPolicies().set(queueA, func(p *engine.Policy) {
			p.RedeliveryLimit = 0
			p.ErrorDestination = errQueue
		})
		h := newBroker(t, engine.Config{Policy: pols.get})
		c := h.conn(engine.ConnectionOptions{RedeliveryDelay: time.Hour})
		s := h.session(c, engine.IndividualAcknowledge)
		send(t, s, queueA, "m", engine.SendOptions{})
		cons := consumer(t, s, queueA, engine.ConsumerOptions{})
		_ = c.Start()
		for i := 0; i < 5; i++ {
			d := recv(t, cons)
			if d.DeliveryCount != 1 || d.Redelivered {
				t.Fatalf("after %d releases: count %d redelivered %v", i, d.DeliveryCount, d.Redelivered)
			}
			// Released ignores the session's hour of redelivery delay too.
			if err := s.Settle(context.Background(), d.Tag, engine.Released); err != nil {
				t.Fatal(err)
			}
		}
		d := recv(t, cons)
		if err := s.Settle(context.Background(), d.Tag, engine.Failed); err != nil {
			t.Fatal(err)
		}
		errCons := consumer(t, h.session(c, engine.AutoAcknowledge), errQueue, engine.ConsumerOptions{})
		if body(recv(t, errCons)) != "m" {
			t.Fatal("one failure over a limit of 0 did not reach the error destination")
		}
	})
}

// WebLogic JMS "Managing Your Applications", "Ordered Redelivery of Messages":
// with a single consumer and a pipeline of 1, redelivered messages come back
// in their original order; with a selector, order holds among the messages it
// selects.
func TestOrderedRedelivery(t *testing.T) {
	cases := []struct {
		name     string
		op       failOp
		selector string
		sent     int
		take     int
		want     string
	}{
		{"recover", failOps[1], "", 5, 3, "[1 2 3 4 5]"},
		{"rollback", failOps[0], "", 5, 3, "[1 2 3 4 5]"},
		{"recover-individual", engineRecoverIndividual, "", 5, 3, "[1 2 3 4 5]"},
		{"selector", failOps[1], "odd = TRUE", 9, 3, "[1 3 5 7 9]"},
		{"rollback-selector", failOps[0], "odd = TRUE", 9, 2, "[1 3 5 7 9]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			c := h.conn(engine.ConnectionOptions{})
			ps := h.session(c, engine.AutoAcknowledge)
			for i := 1; i <= tc.sent; i++ {
				sendMsg(t, ps, queueA, withProp(fmt.Sprint(i), "odd", message.BoolValue(i%2 == 1)), engine.SendOptions{})
			}
			s := h.session(c, tc.op.mode)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1, Selector: tc.selector})
			_ = c.Start()
			var last message.Delivery
			for i := 0; i < tc.take; i++ {
				last = recv(t, cons)
			}
			tc.op.fail(t, s, last)
			got := recvAll(t, cons, 100*time.Millisecond)
			if fmt.Sprint(bodies(got)) != tc.want {
				t.Fatalf("after %s got %v, want %s", tc.name, bodies(got), tc.want)
			}
			for i, d := range got {
				if want := i < tc.take; d.Redelivered != want {
					t.Fatalf("%q redelivered %v", body(d), d.Redelivered)
				}
			}
		})
	}
}

var engineRecoverIndividual = failOp{
	name: "recover-individual",
	mode: engine.IndividualAcknowledge,
	fail: func(t *testing.T, s *engine.Session, _ message.Delivery) {
		t.Helper()
		if err := s.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
	},
}

// WebLogic JMS "Managing Your Applications", "Handling Expired Messages": the
// expiration policy Discard, Log or Redirect applies to a message found
// expired.
func TestExpirationPolicies(t *testing.T) {
	for _, pol := range []engine.ExpirationPolicy{engine.ExpireDiscard, engine.ExpireLog, engine.ExpireRedirect} {
		t.Run(pol.String(), func(t *testing.T) {
			clock := newClock()
			var sink logSink
			pols := newPolicies().set(queueA, func(p *engine.Policy) {
				p.Expiration = pol
				p.ErrorDestination = errQueue
			})
			h := newBroker(t, engine.Config{Policy: pols.get, Now: clock.Now, Logger: sink.logger(), ExpiryScanInterval: time.Hour})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			m := send(t, s, queueA, "stale", engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: time.Second})
			send(t, s, queueA, "fresh", engine.SendOptions{})
			clock.Add(2 * time.Second)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			errCons := consumer(t, s, errQueue, engine.ConsumerOptions{})
			_ = c.Start()
			if body(recv(t, cons)) != "fresh" {
				t.Fatal("expired message delivered")
			}
			line, logged := sink.lineWith("message expired", m.ID)
			switch pol {
			case engine.ExpireDiscard:
				recvNone(t, errCons, 50*time.Millisecond)
				if logged {
					t.Fatalf("discard logged: %s", line)
				}
			case engine.ExpireLog:
				if !logged {
					t.Fatalf("no log line naming %s in:\n%s", m.ID, sink.String())
				}
				if !strings.Contains(line, queueA.String()) {
					t.Fatalf("log line does not name the destination: %s", line)
				}
				recvNone(t, errCons, 50*time.Millisecond)
			case engine.ExpireRedirect:
				e := recv(t, errCons)
				if e.Msg.ID != m.ID {
					t.Fatal("wrong message redirected")
				}
				if v, _ := e.Msg.Props.GetString(engine.PropErrorReason); v != "expired" {
					t.Fatalf("reason %q", v)
				}
				if v, _ := e.Msg.Props.GetString(engine.PropOriginalDestination); v != queueA.String() {
					t.Fatalf("original destination %q", v)
				}
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Handling Expired Messages":
// "This feature ensures that expired messages are cleaned up immediately": the
// active scan finds expired messages with no consumer attached, so they stop
// counting against quotas and are logged or redirected without waiting for a
// receive.
func TestActiveExpiryScanWithoutConsumer(t *testing.T) {
	clock := newClock()
	var sink logSink
	pols := newPolicies().
		set(queueA, func(p *engine.Policy) {
			p.Expiration = engine.ExpireLog
			p.MaxMessages = 2
		}).
		set(queueB, func(p *engine.Policy) {
			p.Expiration = engine.ExpireRedirect
			p.ErrorDestination = errQueue
		})
	h := newBroker(t, engine.Config{Policy: pols.get, Now: clock.Now, Logger: sink.logger(), ExpiryScanInterval: 5 * time.Millisecond})
	h.create(errQueue)
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	ttl := engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: time.Second}
	a1 := send(t, s, queueA, "a1", ttl)
	a2 := send(t, s, queueA, "a2", ttl)
	send(t, s, queueB, "b1", ttl)
	p, _ := s.CreateProducer(queueA)
	if err := p.Send(context.Background(), text("over"), engine.SendOptions{}); codeOrNil(err) != engine.CodeResourceAllocation {
		t.Fatalf("third send over a quota of 2: %v", err)
	}
	clock.Add(2 * time.Second)
	eventually(t, "both expiries logged", func() bool {
		_, ok1 := sink.lineWith("message expired", a1.ID)
		_, ok2 := sink.lineWith("message expired", a2.ID)
		return ok1 && ok2
	})
	eventually(t, "redirect by the scan", func() bool { return h.depth(errQueue) == 1 })
	if n := h.depth(queueB); n != 0 {
		t.Fatalf("queue b still shows %d", n)
	}
	// The quota is free again: the scan removed them from the count.
	if err := p.Send(context.Background(), text("room"), engine.SendOptions{}); err != nil {
		t.Fatalf("send after the scan: %v", err)
	}
}

// codeOrNil returns the engine code of err, or 0 for nil.
func codeOrNil(err error) engine.Code {
	if err == nil {
		return 0
	}
	return engine.CodeOf(err)
}

// WebLogic JMS "Managing Your Applications", "Interaction With the
// Time-to-Live Value": "If the specified time-to-live value (JMSExpiration) is
// less than or equal to the specified time-to-deliver value, then the message
// delivery succeeds. However, the message is then silently expired."
func TestTimeToLiveNotAfterTimeToDeliverExpiresSilently(t *testing.T) {
	var sink logSink
	pols := newPolicies().set(queueA, func(p *engine.Policy) { p.Expiration = engine.ExpireLog })
	h := newBroker(t, engine.Config{Policy: pols.get, Logger: sink.logger(), ExpiryScanInterval: 10 * time.Millisecond})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	_ = c.Start()
	var ids []string
	for i, ttl := range []time.Duration{100 * time.Millisecond, 50 * time.Millisecond} {
		m := send(t, s, queueA, fmt.Sprint("ttl", i), engine.SendOptions{
			Set:        engine.SetTimeToLive | engine.SetTimeToDeliver,
			TimeToLive: ttl, TimeToDeliver: 100 * time.Millisecond,
		})
		if m.Expiration > m.DeliveryTime {
			t.Fatalf("expiration %d after delivery time %d", m.Expiration, m.DeliveryTime)
		}
		ids = append(ids, m.ID)
	}
	send(t, s, queueA, "control", engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 150 * time.Millisecond})
	if body(recv(t, cons)) != "control" {
		t.Fatal("an expired scheduled message was delivered")
	}
	eventually(t, "expiry of both", func() bool {
		_, a := sink.lineWith("message expired", ids[0])
		_, b := sink.lineWith("message expired", ids[1])
		return a && b
	})
	recvNone(t, cons, 30*time.Millisecond)
}

// WebLogic JMS "Managing Your Applications", "Setting Message Delivery Times":
// the producer's time-to-deliver, a message's delivery time (relative or
// absolute), and the destination's TimeToDeliverOverride, relative or
// scheduled, which wins. A message is invisible until its delivery time.
func TestTimeToDeliverSources(t *testing.T) {
	sched := schedule.MustParse("0 0 0 3 * * *") // 03:00:00.000 every day
	cases := []struct {
		name  string
		conn  time.Duration // ConnectionOptions.Producer.TimeToDeliver
		prod  time.Duration // Producer.Defaults.TimeToDeliver
		opts  engine.SendOptions
		pol   func(*engine.Policy)
		delay func(now time.Time) time.Duration // expected DeliveryTime - now
	}{
		{name: "none", delay: func(time.Time) time.Duration { return 0 }},
		{name: "connection-factory", conn: time.Minute, delay: func(time.Time) time.Duration { return time.Minute }},
		{name: "producer", prod: 2 * time.Minute, delay: func(time.Time) time.Duration { return 2 * time.Minute }},
		{name: "per-message-relative", prod: time.Minute,
			opts:  engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: 3 * time.Minute},
			delay: func(time.Time) time.Duration { return 3 * time.Minute }},
		{name: "per-message-absolute", prod: time.Minute,
			opts:  engine.SendOptions{Set: engine.SetDeliveryTime | engine.SetTimeToDeliver, TimeToDeliver: time.Hour, DeliveryTime: newClock().Now().Add(4 * time.Minute).UnixMilli()},
			delay: func(time.Time) time.Duration { return 4 * time.Minute }},
		{name: "override-relative", prod: time.Minute,
			opts:  engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour},
			pol:   func(p *engine.Policy) { p.TimeToDeliverOverride = 5 * time.Minute },
			delay: func(time.Time) time.Duration { return 5 * time.Minute }},
		{name: "override-relative-zero-delivers-now", prod: time.Minute,
			pol:   func(p *engine.Policy) { p.TimeToDeliverOverride = 0 },
			delay: func(time.Time) time.Duration { return 0 }},
		{name: "override-schedule", prod: time.Minute,
			opts: engine.SendOptions{Set: engine.SetDeliveryTime, DeliveryTime: newClock().Now().Add(time.Minute).UnixMilli()},
			pol: func(p *engine.Policy) {
				p.TimeToDeliverOverride = 5 * time.Minute
				p.TimeToDeliverSchedule = sched.Next
			},
			delay: func(now time.Time) time.Duration { return sched.Next(now).Sub(now) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			pols := newPolicies()
			if tc.pol != nil {
				pols.set(queueA, tc.pol)
			}
			h := newBroker(t, engine.Config{Policy: pols.get, Now: clock.Now})
			opts := engine.ConnectionOptions{}
			if tc.conn != 0 {
				opts.Producer = engine.DefaultProducerDefaults()
				opts.Producer.TimeToDeliver = tc.conn
			}
			c := h.conn(opts)
			s := h.session(c, engine.AutoAcknowledge)
			p, err := s.CreateProducer(queueA)
			if err != nil {
				t.Fatal(err)
			}
			if p.Defaults.TimeToDeliver != tc.conn {
				t.Fatalf("producer did not inherit the connection factory's time-to-deliver: %v", p.Defaults.TimeToDeliver)
			}
			if tc.prod != 0 {
				p.Defaults.TimeToDeliver = tc.prod
			}
			m := text("m")
			if err := p.Send(context.Background(), m, tc.opts); err != nil {
				t.Fatal(err)
			}
			now := clock.Now()
			want := tc.delay(now)
			if got := time.Duration(m.DeliveryTime-now.UnixMilli()) * time.Millisecond; got != want {
				t.Fatalf("JMSDeliveryTime is now+%v, want now+%v", got, want)
			}
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			_ = c.Start()
			if want == 0 {
				if d := recv(t, cons); d.Msg.DeliveryTime != m.DeliveryTime {
					t.Fatal("delivery time changed")
				}
				return
			}
			if n := h.depth(queueA); n != 0 {
				t.Fatal("scheduled message visible to browsers")
			}
			recvNone(t, cons, 30*time.Millisecond)
		})
	}
}

// Scheduled messages are invisible until due, then delivered in priority
// order, arrival order within a priority, even to a consumer that was
// waiting all along.
func TestScheduledMessagesDueTogetherKeepPriorityAndArrivalOrder(t *testing.T) {
	for _, via := range []string{"absolute", "schedule"} {
		t.Run(via, func(t *testing.T) {
			pols := newPolicies()
			sched := schedule.MustParse("0 * * * * * *") // every whole second
			if via == "schedule" {
				pols.set(queueA, func(p *engine.Policy) { p.TimeToDeliverSchedule = sched.Next })
				// Keep every send within one second.
				for time.Until(sched.Next(time.Now())) < 600*time.Millisecond {
					time.Sleep(10 * time.Millisecond)
				}
			}
			h := newBroker(t, engine.Config{Policy: pols.get})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			_ = c.Start()
			due := time.Now().Add(500 * time.Millisecond).UnixMilli()
			prios := []uint8{1, 5, 9, 5, 1, 9, 0, 5}
			var ms []*message.Message
			for i, p := range prios {
				o := engine.SendOptions{Set: engine.SetPriority | engine.SetDeliveryTime, Priority: p, DeliveryTime: due}
				ms = append(ms, send(t, s, queueA, fmt.Sprintf("%d-%d", p, i), o))
			}
			for _, m := range ms[1:] {
				if m.DeliveryTime != ms[0].DeliveryTime {
					t.Fatalf("delivery times differ: %d %d", m.DeliveryTime, ms[0].DeliveryTime)
				}
			}
			if n := h.depth(queueA); n != 0 {
				t.Fatal("scheduled messages visible before due")
			}
			var got []string
			for range prios {
				d := recv(t, cons)
				if now := time.Now().UnixMilli(); now < d.Msg.DeliveryTime {
					t.Fatalf("delivered at %d, before its time %d", now, d.Msg.DeliveryTime)
				}
				got = append(got, body(d))
			}
			want := "[9-2 9-5 5-1 5-3 5-7 1-0 1-4 0-6]"
			if fmt.Sprint(got) != want {
				t.Fatalf("got %v, want %s", got, want)
			}
		})
	}
}
