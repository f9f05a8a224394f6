package conformance

import (
	"fmt"
	"time"
)

// Browsing, transactions, quotas, destination deletion and restarts.

func init() {
	register(
		&Scenario{
			ID:     "browse/does-not-consume",
			Title:  "browsing a queue shows its messages in order without consuming them",
			Checks: "WebLogic JMS \"Managing Your Applications\": Browsing Header and Property Fields (QueueBrowser); JMS 2.0, QueueBrowser",
			Expect: "the browser sees a, b, c with their properties; a consumer then still receives all three",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				for _, b := range []string{"a", "b", "c"} {
					t.Send(c, q, &Message{Body: b, Props: Props{{"letter", b}}})
				}
				ms := t.Browse(c, q, "")
				t.Expect(fmt.Sprint(bodies(ms)) == "[a b c]", "browsed %v, want [a b c]", bodies(ms))
				t.Expect(ms[1].Prop("letter") == "b", "browsed property letter %q", ms[1].Prop("letter"))
				t.ReceiveBodies(t.Subscribe(c, q, SubOptions{}), "a", "b", "c")
			},
		},
		&Scenario{
			ID:     "browse/selector",
			Title:  "a browser with a selector sees only the matching messages",
			Checks: "WebLogic JMS \"Managing Your Applications\": Browsing Header and Property Fields (createBrowser(queue, messageSelector))",
			Expect: "browsing with \"color = 'red'\" shows the two red messages only",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				for i, color := range []string{"red", "blue", "red"} {
					t.Send(c, q, &Message{Body: fmt.Sprintf("%s%d", color, i), Props: Props{{"color", color}}})
				}
				ms := t.Browse(c, q, "color = 'red'")
				t.Expect(fmt.Sprint(bodies(ms)) == "[red0 red2]", "browsed %v, want [red0 red2]", bodies(ms))
			},
		},
		&Scenario{
			ID:     "browse/empty-queue",
			Title:  "browsing an empty queue ends at once with nothing",
			Checks: "WebLogic JMS \"Managing Your Applications\": Browsing Header and Property Fields (\"There are no messages on this queue\")",
			Expect: "the browse returns no message",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Subscribe(c, q, SubOptions{}) // make sure the queue exists
				ms := t.Browse(c, q, "")
				t.Expect(len(ms) == 0, "browsed %v", bodies(ms))
			},
		},
		&Scenario{
			ID:     "browse/topic-refused",
			Title:  "a topic cannot be browsed",
			Checks: "WebLogic JMS \"Managing Your Applications\": Browsing Header and Property Fields (\"Only queue message header and property fields can be browsed\")",
			Expect: "browsing a topic is refused",
			Run: func(t *T) {
				_, err := t.TryBrowse(t.Dial(), t.Topic(), "")
				t.ExpectRefused(err, "browsing a topic")
			},
		},
		&Scenario{
			ID:     "transaction/send-commit",
			Title:  "messages sent in a transaction are invisible until it commits",
			Checks: "JMS 2.0 transacted sessions (Session.commit); CONVENTIONS.md (STOMP BEGIN/COMMIT, AMQP coordinator)",
			Expect: "no message arrives before the commit; both arrive, in order, after it",
			Run: func(t *T) {
				c := t.DialTransacted()
				q := t.Queue()
				sub := t.Subscribe(t.Dial(), q, SubOptions{})
				tx := t.Begin(c)
				t.SendIn(c, tx, q, &Message{Body: "one"})
				t.SendIn(c, tx, q, &Message{Body: "two"})
				t.NoMessage(sub)
				t.Commit(tx)
				t.ReceiveBodies(sub, "one", "two")
			},
		},
		&Scenario{
			ID:     "transaction/send-rollback",
			Title:  "messages sent in a transaction that rolls back are never delivered",
			Checks: "JMS 2.0 transacted sessions (Session.rollback)",
			Expect: "after the rollback nothing arrives; a message sent after it does",
			Run: func(t *T) {
				c := t.DialTransacted()
				q := t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				tx := t.Begin(c)
				t.SendIn(c, tx, q, &Message{Body: "discarded"})
				t.Rollback(tx)
				t.Text(c, q, "after")
				t.ReceiveBody(sub, "after")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "transaction/ack-commit",
			Title:  "an acknowledgement in a committed transaction consumes the message",
			Checks: "JMS 2.0 transacted sessions (commit acknowledges consumed messages)",
			Expect: "after the commit, a new consumer gets nothing",
			Run: func(t *T) {
				c := t.DialTransacted()
				q := t.Queue()
				t.Text(c, q, "m")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "m")
				tx := t.Begin(c)
				t.AckIn(sub, m, tx)
				t.Commit(tx)
				t.Close(c)
				t.NoMessage(t.Subscribe(t.Dial(), q, SubOptions{}))
			},
		},
		&Scenario{
			ID:     "transaction/ack-rollback",
			Title:  "an acknowledgement in a rolled-back transaction redelivers the message",
			Checks: "JMS 2.0 transacted sessions (rollback redelivers consumed messages); §3.4.7 (JMSRedelivered)",
			Expect: "after the rollback the message comes again, marked redelivered",
			Run: func(t *T) {
				c := t.DialTransacted()
				q := t.Queue()
				t.Text(c, q, "m")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "m")
				tx := t.Begin(c)
				t.AckIn(sub, m, tx)
				t.Rollback(tx)
				m = t.ReceiveBody(sub, "m")
				t.Expect(m.Redelivered, "not marked redelivered")
			},
		},
		&Scenario{
			ID:     "transaction/consume-and-produce",
			Title:  "a transaction that consumes from one queue and sends to another is atomic",
			Checks: "JMS 2.0 transacted sessions (a transaction groups sends and receives); WebLogic JMS \"Managing Your Applications\": Setting Message Delivery Times (receive and send in one transaction for exactly-once)",
			Expect: "rolled back: the input is redelivered and the output never appears; committed: the input is consumed and the output delivered",
			Run: func(t *T) {
				c := t.DialTransacted()
				in, out := t.Queue(), t.Queue()
				t.Text(c, in, "order")
				outSub := t.Subscribe(t.Dial(), out, SubOptions{})
				sub := t.Subscribe(c, in, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "order")
				tx := t.Begin(c)
				t.AckIn(sub, m, tx)
				t.SendIn(c, tx, out, &Message{Body: "invoice"})
				t.Rollback(tx)
				t.NoMessage(outSub)
				m = t.ReceiveBody(sub, "order")
				tx = t.Begin(c)
				t.AckIn(sub, m, tx)
				t.SendIn(c, tx, out, &Message{Body: "invoice"})
				t.Commit(tx)
				t.ReceiveBody(outSub, "invoice")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "quota/max-messages",
			Title:  "a send over a destination's message quota fails; one within it succeeds",
			Checks: "JMS 2.0, ResourceAllocationException; WebLogic JMS \"Managing Your Applications\": What Happens when a Destination is Deleted (sends waiting for quota); WebLogic destination quotas (Messages Maximum)",
			Expect: "with a quota of 3, the fourth send is refused; after one message is consumed, a send succeeds again",
			Needs:  []Need{NeedQuota},
			Run: func(t *T) {
				q := t.Queue(NeedQuota)
				c := t.Dial()
				t.Text(c, q, "1", "2", "3")
				err := t.TrySend(c, q, &Message{Body: "4"}, nil)
				t.ExpectRefused(err, "a fourth message")
				c = t.Dial()
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				t.Ack(sub, t.ReceiveBody(sub, "1"))
				t.Text(t.Dial(), q, "5")
			},
		},
		&Scenario{
			ID:     "quota/blocking-send",
			Title:  "a send over quota waits for room, up to the blocking send timeout",
			Checks: "WebLogic blocking sends (BlockingSendTimeout); WebLogic JMS \"Managing Your Applications\": What Happens when a Destination is Deleted (blocking send operations)",
			Expect: "with a quota of 1, a second send waits until a consumer takes the first message, then succeeds",
			Needs:  []Need{NeedQuotaBlocking},
			Run: func(t *T) {
				q := t.Queue(NeedQuotaBlocking)
				c := t.Dial()
				t.Text(c, q, "first")
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- t.TrySend(c, q, &Message{Body: "second"}, nil) }()
				t.Sleep(500 * time.Millisecond)
				select {
				case err := <-done:
					t.Fatalf("the second send returned (%v) before there was room", err)
				default:
				}
				sub := t.Subscribe(t.Dial(), q, SubOptions{Ack: AckIndividual})
				t.Ack(sub, t.ReceiveBody(sub, "first"))
				select {
				case err := <-done:
					t.Must(err, "the blocked send")
				case <-time.After(t.Within(5 * time.Second)):
					t.Fatalf("the blocked send did not complete after room was made")
				}
				t.Note("the second send waited %s", time.Since(start).Round(10*time.Millisecond))
				t.ReceiveBody(sub, "second")
			},
		},
		&Scenario{
			ID:     "destination/delete",
			Title:  "deleting a destination removes its messages and closes its consumers",
			Checks: "WebLogic JMS \"Managing Your Applications\": Dynamically Deleting Destinations, What Happens when a Destination is Deleted",
			Expect: "after deleting a queue through the admin API, its consumer is closed and its messages are gone (a queue of the same name starts empty)",
			Needs:  []Need{NeedAdminDelete},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: "doomed", Persistent: Persistent})
				watcher := t.Dial()
				sub := t.Subscribe(watcher, q, SubOptions{Selector: "never = 'true'"})
				t.DeleteDestination(q)
				ctx := t.Ctx()
				m, err := sub.Receive(ctx, t.Within(3*time.Second))
				t.Expect(m == nil, "the consumer of the deleted queue got %q", func() string {
					if m != nil {
						return m.Body
					}
					return ""
				}())
				t.Expect(err != nil, "the consumer of the deleted queue was not closed")
				t.Note("consumer closed: %s", oneLine(err.Error(), 160))
				t.NoMessage(t.Subscribe(t.Dial(), q, SubOptions{}))
			},
		},
		&Scenario{
			ID:     "restart/persistent-survives",
			Title:  "persistent messages survive a broker restart; non-persistent ones need not",
			Checks: "JMS 2.0 §3.4.2 JMSDeliveryMode (PERSISTENT: once-and-only-once, survives a provider failure)",
			Expect: "after a restart, the persistent message is delivered",
			Needs:  []Need{NeedRestart},
			Run: func(t *T) {
				q := t.Queue()
				c := t.Dial()
				t.Send(c, q, &Message{Body: "kept", Persistent: Persistent})
				t.Send(c, q, &Message{Body: "volatile", Persistent: NonPersistent})
				t.Restart()
				sub := t.Subscribe(t.Dial(), q, SubOptions{})
				m := t.ReceiveBody(sub, "kept")
				t.Expect(m.Persistent, "delivered as non-persistent")
				if m := t.TryReceive(sub, t.Quiet()); m != nil {
					t.Note("the non-persistent message survived the restart too (allowed)")
				}
			},
		},
		&Scenario{
			ID:     "restart/durable-subscription-survives",
			Title:  "a durable subscription and its persistent messages survive a broker restart",
			Checks: "JMS 2.0, durable subscriptions; WebLogic JMS \"Managing Your Applications\": Defining the Persistent Store",
			Expect: "a message published while the subscriber was away is delivered after a restart",
			Needs:  []Need{NeedRestart},
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				t.CloseSub(t.Subscribe(c, tp, SubOptions{Name: name, Durable: true}))
				t.Send(t.Dial(), tp, &Message{Body: "stored", Persistent: Persistent})
				t.Restart()
				t.ReceiveBody(t.Subscribe(t.Dial(id), tp, SubOptions{Name: name, Durable: true}), "stored")
			},
		},
		&Scenario{
			ID:     "restart/redelivered-flag",
			Title:  "a message delivered but not acknowledged before a restart comes back marked redelivered",
			Checks: "JMS 2.0 §3.4.7 (JMSRedelivered), JMSXDeliveryCount; WebLogic JMS \"Managing Your Applications\": Ordered Redelivery of Messages (messages pending recovery)",
			Expect: "after a restart, the message is delivered with JMSRedelivered true",
			Needs:  []Need{NeedRestart},
			Run: func(t *T) {
				q := t.Queue()
				c := t.Dial()
				t.Send(c, q, &Message{Body: "inflight", Persistent: Persistent})
				t.ReceiveBody(t.Subscribe(c, q, SubOptions{Ack: AckClient}), "inflight")
				t.Restart()
				m := t.ReceiveBody(t.Subscribe(t.Dial(), q, SubOptions{}), "inflight")
				t.Expect(m.Redelivered, "not marked redelivered after the restart")
				t.Expect(m.DeliveryCount == 0 || m.DeliveryCount == 2, "JMSXDeliveryCount %d, want 2", m.DeliveryCount)
			},
		},
		&Scenario{
			ID:     "restart/delayed-survives",
			Title:  "a delayed message keeps its delivery time across a restart",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Message Delivery Times (deferred for long stretches, e.g. hours later for batch processing)",
			Expect: "a message sent with a 2.5s delay is delivered after a restart, not before its time",
			Needs:  []Need{NeedRestart, NeedDeliveryDelay},
			Run: func(t *T) {
				q := t.Queue()
				c := t.Dial()
				sent := time.Now()
				t.Send(c, q, &Message{Body: "later", Persistent: Persistent, DeliveryDelay: 2500 * time.Millisecond})
				t.Restart()
				m := t.ReceiveBody(t.Subscribe(t.Dial(), q, SubOptions{}), "later")
				t.Expect(m.At.Sub(sent) >= 2500*time.Millisecond-early, "delivered %s after the send", m.At.Sub(sent))
			},
		},
		&Scenario{
			ID:     "restart/delivery-mode-override",
			Title:  "a destination's non-persistent override makes messages non-persistent",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Message Header Fields (destination overrides); WebLogic DeliveryModeOverride",
			Expect: "a message sent as persistent is delivered as non-persistent, and one left on the queue is gone after a restart",
			Needs:  []Need{NeedRestart, NeedDeliveryModeOverride},
			Run: func(t *T) {
				q := t.Queue(NeedDeliveryModeOverride)
				c := t.Dial()
				t.Send(c, q, &Message{Body: "looked-at", Persistent: Persistent})
				m := t.ReceiveBody(t.Subscribe(c, q, SubOptions{}), "looked-at")
				t.Expect(!m.Persistent, "delivered as persistent despite the override")
				t.Close(c)
				t.Send(t.Dial(), q, &Message{Body: "lost", Persistent: Persistent})
				t.Restart()
				t.NoMessage(t.Subscribe(t.Dial(), q, SubOptions{}))
			},
		},
	)
}
