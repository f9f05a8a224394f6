package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Transacted sends and quotas: a send in a transaction takes its room
// under the destination's quota when it is made, as any other send does,
// and holds it until the transaction ends.

// TestTransactedSendsHoldQuota: with a quota of 3, a transaction sends 3
// messages and its fourth is refused at once with a resource-allocation
// error, as is a plain send while the transaction holds the room; ending
// the transaction without committing it (rollback, closing the session or
// the connection) gives the room back; a committed transaction leaves the
// destination holding exactly 3.
func TestTransactedSendsHoldQuota(t *testing.T) {
	const quota = 3
	ctx := context.Background()
	ends := []struct {
		name string
		end  func(t *testing.T, c *engine.Connection, s *engine.Session)
	}{
		{"rollback", func(t *testing.T, _ *engine.Connection, s *engine.Session) {
			if err := s.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"session-closed", func(t *testing.T, _ *engine.Connection, s *engine.Session) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"connection-closed", func(t *testing.T, c *engine.Connection, _ *engine.Session) {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	dests := []message.Destination{queueA, topicT}
	for _, dest := range dests {
		for _, persistent := range []bool{false, true} {
			for _, e := range ends {
				t.Run(fmt.Sprintf("%s/persistent=%v/%s", dest.Kind, persistent, e.name), func(t *testing.T) {
					pols := newPolicies().set(dest, func(p *engine.Policy) { p.MaxMessages = quota })
					var h *harness
					if persistent {
						h = newPersistent(t, "", engine.Config{Policy: pols.get})
					} else {
						h = newBroker(t, engine.Config{Policy: pols.get})
					}
					if dest.Kind == message.Topic {
						// A durable subscriber that is not started: the
						// topic's messages stay in its subscription.
						sc := h.conn(engine.ConnectionOptions{ClientID: "sub"})
						consumer(t, h.session(sc, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"})
					}
					plain, err := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge).CreateProducer(dest)
					if err != nil {
						t.Fatal(err)
					}
					fill := func(c *engine.Connection) *engine.Session {
						t.Helper()
						s := h.session(c, engine.Transacted)
						p, err := s.CreateProducer(dest)
						if err != nil {
							t.Fatal(err)
						}
						for i := range quota {
							if err := p.Send(ctx, text(fmt.Sprint("tx", i)), engine.SendOptions{}); err != nil {
								t.Fatalf("transacted send %d within the quota of %d: %v", i+1, quota, err)
							}
						}
						start := time.Now()
						wantCode(t, "transacted send over the quota", p.Send(ctx, text("over"), engine.SendOptions{}), engine.ErrResourceAllocation)
						if el := time.Since(start); el > time.Second {
							t.Fatalf("the send over quota failed after %v, not at once", el)
						}
						wantCode(t, "plain send while a transaction holds the room", plain.Send(ctx, text("plain"), engine.SendOptions{}), engine.ErrResourceAllocation)
						if in := quotaInfo(t, h.b, dest); in.Messages != 0 {
							t.Fatalf("%s reports %d messages before the commit", dest, in.Messages)
						}
						return s
					}

					c := h.conn(engine.ConnectionOptions{})
					e.end(t, c, fill(c))
					if in := quotaInfo(t, h.b, dest); in.Messages != 0 {
						t.Fatalf("%s reports %d messages after the transaction ended uncommitted", dest, in.Messages)
					}

					// The room came back: a new transaction fills it, and
					// its commit holds exactly the quota.
					c2 := h.conn(engine.ConnectionOptions{})
					s := fill(c2)
					if err := s.Commit(ctx); err != nil {
						t.Fatalf("commit: %v", err)
					}
					if in := quotaInfo(t, h.b, dest); in.Messages != quota {
						t.Fatalf("%s reports %d messages after the commit, want %d", dest, in.Messages, quota)
					}
					wantCode(t, "plain send after the commit filled the quota", plain.Send(ctx, text("plain"), engine.SendOptions{}), engine.ErrResourceAllocation)
				})
			}
		}
	}
}

// TestQuotaTransactedAndPlainSendersNeverOvershoot: transacted senders
// (committing every 3 sends) and plain senders race at a queue with room
// for 60 messages: exactly 60 sends are accepted, every other one fails
// with a resource-allocation error, and the queue ends up holding 60.
func TestQuotaTransactedAndPlainSendersNeverOvershoot(t *testing.T) {
	const senders, each, quota, batch = 8, 30, 60, 3
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("persistent=", persistent), func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) { p.MaxMessages = quota })
			var h *harness
			if persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			c := h.conn(engine.ConnectionOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var accepted, refused atomic.Int64
			other := make(chan error, senders*each)
			var wg sync.WaitGroup
			for g := range senders {
				mode := engine.AutoAcknowledge
				if g%2 == 0 {
					mode = engine.Transacted
				}
				s := h.session(c, mode)
				p, err := s.CreateProducer(queueA)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					var pending int64 // accepted sends of the open transaction
					commit := func() {
						if err := s.Commit(ctx); err != nil {
							other <- fmt.Errorf("commit: %w", err)
							return
						}
						accepted.Add(pending)
						pending = 0
					}
					for i := 0; i < each && ctx.Err() == nil; i++ {
						switch err := p.Send(ctx, fixedID(text("x"), g*each+i), engine.SendOptions{}); {
						case err == nil && mode == engine.Transacted:
							pending++
						case err == nil:
							accepted.Add(1)
						case errors.Is(err, engine.ErrResourceAllocation):
							refused.Add(1)
						default:
							other <- err
						}
						if mode == engine.Transacted && (i+1)%batch == 0 {
							commit()
						}
					}
					if mode == engine.Transacted {
						commit()
					}
				}()
			}
			wg.Wait()
			if ctx.Err() != nil {
				t.Fatal("the sends did not finish within a minute")
			}
			close(other)
			for err := range other {
				t.Errorf("send failed other than for quota: %v", err)
			}
			if a, r := accepted.Load(), refused.Load(); a != quota || r != senders*each-quota {
				t.Fatalf("%d sends accepted and %d refused; want %d and %d", a, r, quota, senders*each-quota)
			}
			if in := quotaInfo(t, h.b, queueA); in.Messages != quota {
				t.Fatalf("the queue reports %d messages, want %d", in.Messages, quota)
			}
		})
	}
}

// TestTransactionCommitRefusedByStoreIsAllOrNothing: when the store
// refuses a commit, none of the transaction's sends arrives (on either
// of its queues), their room under the quota comes back, and the message
// the transaction consumed is redelivered; once consumed again and
// committed, it is gone for good, also after a restart.
func TestTransactionCommitRefusedByStoreIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	pols := newPolicies().
		set(queueA, func(p *engine.Policy) { p.MaxMessages = 2 }).
		set(queueB, func(p *engine.Policy) { p.MaxMessages = 1 })
	h, fs := newFaulty(t, "", engine.Config{Policy: pols.get})
	c := h.conn(engine.ConnectionOptions{})
	send(t, h.session(c, engine.AutoAcknowledge), errQueue, "to-consume", engine.SendOptions{})
	s := h.session(c, engine.Transacted)
	cons := consumer(t, s, errQueue, engine.ConsumerOptions{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, cons); body(d) != "to-consume" {
		t.Fatalf("received %q", body(d))
	}
	pa, _ := s.CreateProducer(queueA)
	pb, _ := s.CreateProducer(queueB)
	for _, m := range []struct {
		p    *engine.Producer
		body string
	}{{pa, "a1"}, {pa, "a2"}, {pb, "b1"}} {
		if err := m.p.Send(ctx, text(m.body), engine.SendOptions{}); err != nil {
			t.Fatalf("transacted send %s: %v", m.body, err)
		}
	}
	fs.setRefuse(func([]store.Op) bool { return true })
	if err := s.Commit(ctx); engine.CodeOf(err) != engine.CodeTransactionRolledBack {
		t.Fatalf("commit the store refuses: got %v, want a transaction-rolled-back error", err)
	}
	fs.setRefuse(nil)
	for _, d := range []message.Destination{queueA, queueB} {
		if in := quotaInfo(t, h.b, d); in.Messages != 0 {
			t.Fatalf("%s reports %d messages after the refused commit", d, in.Messages)
		}
	}
	plain := h.session(c, engine.AutoAcknowledge)
	for _, d := range []message.Destination{queueA, queueA, queueB} {
		send(t, plain, d, "plain", engine.SendOptions{})
	}

	d := recv(t, cons)
	if body(d) != "to-consume" || !d.Redelivered {
		t.Fatalf("after the refused commit got %q (redelivered %v), want to-consume redelivered", body(d), d.Redelivered)
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	_ = c.Close()
	dir, cfg := h.dir, h.cfg
	h.close()
	h, _ = newFaulty(t, dir, cfg)
	if in := quotaInfo(t, h.b, errQueue); in.Messages != 0 {
		t.Fatalf("after a restart %s holds %d messages; the committed acknowledgement was lost", errQueue, in.Messages)
	}
	for d, want := range map[message.Destination]int64{queueA: 2, queueB: 1} {
		if in := quotaInfo(t, h.b, d); in.Messages != want {
			t.Fatalf("after a restart %s holds %d messages, want %d", d, in.Messages, want)
		}
	}
}
