package conformance

import (
	"time"
)

// Redelivery: NACK, recover, close, delay, limit, error destinations.

func init() {
	register(
		&Scenario{
			ID:     "redelivery/nack",
			Title:  "a NACKed message is redelivered with JMSRedelivered and a higher JMSXDeliveryCount",
			Checks: "JMS 2.0 §3.4.7 (JMSRedelivered), JMSXDeliveryCount; CONVENTIONS.md (NACK / modified delivery-failed is a failed delivery)",
			Expect: "after a failed delivery the message comes again with JMSRedelivered true and JMSXDeliveryCount 2; acknowledged, it is gone",
			Needs:  []Need{NeedNackRedelivery, NeedDeliveryCount},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "job")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "job")
				t.Expect(!m.Redelivered && m.DeliveryCount == 1, "first delivery: redelivered %v, count %d", m.Redelivered, m.DeliveryCount)
				t.Settle(sub, m, Failed)
				m = t.ReceiveBody(sub, "job")
				t.Expect(m.Redelivered && m.DeliveryCount == 2, "second delivery: redelivered %v, count %d; want true, 2", m.Redelivered, m.DeliveryCount)
				t.Ack(sub, m)
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "redelivery/recover",
			Title:  "recover redelivers every unacknowledged message, in order, marked redelivered",
			Checks: "JMS 2.0, Session.recover; WebLogic JMS \"Managing Your Applications\": Ordered Redelivery of Messages",
			Expect: "three messages received and not acknowledged come again after recover, in the original order, with JMSRedelivered true",
			Needs:  []Need{NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "a", "b", "c")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckClient})
				t.ReceiveBodies(sub, "a", "b", "c")
				t.Recover(sub)
				ms := t.ReceiveBodies(sub, "a", "b", "c")
				for _, m := range ms {
					t.Expect(m.Redelivered, "%s not marked redelivered", m.Body)
				}
				t.Ack(sub, ms[2])
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "redelivery/unacknowledged-on-close",
			Title:  "a message left unacknowledged when its consumer's connection closes goes to the next consumer, marked redelivered",
			Checks: "JMS 2.0, CLIENT_ACKNOWLEDGE (unacknowledged messages are redelivered), §3.4.7 (JMSRedelivered)",
			Expect: "the next consumer gets the message with JMSRedelivered true",
			Run: func(t *T) {
				c1 := t.Dial()
				q := t.Queue()
				t.Text(c1, q, "work")
				sub := t.Subscribe(c1, q, SubOptions{Ack: AckClient})
				t.ReceiveBody(sub, "work")
				t.Close(c1)
				m := t.ReceiveBody(t.Subscribe(t.Dial(), q, SubOptions{Ack: AckClient}), "work")
				t.Expect(m.Redelivered, "not marked redelivered")
				t.Expect(m.DeliveryCount == 0 || m.DeliveryCount == 2, "JMSXDeliveryCount %d, want 2", m.DeliveryCount)
			},
		},
		&Scenario{
			ID:     "redelivery/unacknowledged-no-delay",
			Title:  "a message left unacknowledged gets no redelivery delay",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Delay for Messages (\"Messages that are left unacknowledged or uncommitted by a client … are not assigned a redelivery delay\")",
			Expect: "on a destination whose redelivery delay is 1s, a message whose consumer closed without acknowledging is redelivered well within the second",
			Needs:  []Need{NeedRedeliveryDelayOverride},
			Run: func(t *T) {
				c1 := t.Dial()
				q := t.Queue(NeedRedeliveryDelayOverride)
				t.Text(c1, q, "work")
				t.ReceiveBody(t.Subscribe(c1, q, SubOptions{Ack: AckClient}), "work")
				sub := t.Subscribe(t.Dial(), q, SubOptions{Ack: AckClient})
				closed := time.Now()
				t.Close(c1)
				m := t.ReceiveBody(sub, "work")
				t.Expect(m.At.Sub(closed) < time.Second-early, "redelivered %s after the close: the 1s redelivery delay was applied", m.At.Sub(closed))
				t.Note("redelivered %s after the close", m.At.Sub(closed).Round(time.Millisecond))
			},
		},
		&Scenario{
			ID:     "redelivery/delay-override",
			Title:  "a destination's redelivery delay holds a failed message back while later ones are delivered",
			Checks: "WebLogic JMS \"Managing Your Applications\": Overriding the Redelivery Delay on a Destination; Ordered Redelivery (redelivery delay: other messages can be delivered first)",
			Expect: "a message NACKed on a destination whose redelivery delay is 1s comes back no sooner than 1s later; a message sent meanwhile is delivered first",
			Needs:  []Need{NeedRedeliveryDelayOverride, NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedRedeliveryDelayOverride)
				t.Text(c, q, "poison")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "poison")
				failed := time.Now()
				t.Settle(sub, m, Failed)
				t.Text(c, q, "fresh")
				t.Ack(sub, t.ReceiveBody(sub, "fresh"))
				m = t.ReceiveBody(sub, "poison")
				t.Expect(m.At.Sub(failed) >= time.Second-early, "redelivered %s after the NACK, want ≥ 1s", m.At.Sub(failed))
				t.Expect(m.Redelivered, "not marked redelivered")
			},
		},
		&Scenario{
			ID:     "redelivery/session-delay",
			Title:  "a session's redelivery delay applies to the messages it NACKs",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Delay (WLSession.setRedeliveryDelay)",
			Expect: "with a session redelivery delay of 800ms, a NACKed message comes back no sooner than 800ms later",
			Needs:  []Need{NeedSessionRedeliveryDelay, NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "retry")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual, RedeliveryDelay: 800 * time.Millisecond})
				m := t.ReceiveBody(sub, "retry")
				failed := time.Now()
				t.Settle(sub, m, Failed)
				m = t.ReceiveBody(sub, "retry")
				t.Expect(m.At.Sub(failed) >= 800*time.Millisecond-early, "redelivered %s after the NACK, want ≥ 800ms", m.At.Sub(failed))
			},
		},
		&Scenario{
			ID:     "redelivery/limit-to-error-destination",
			Title:  "a message over the destination's redelivery limit goes to the error destination",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Limit for Messages, Configuring a Message Redelivery Limit On a Destination, Configuring an Error Destination for Undelivered Messages",
			Expect: "with redelivery limit 2, the message is delivered 3 times (counts 1, 2, 3), then arrives on the error destination with its body and properties; the queue has nothing more",
			Needs:  []Need{NeedRedeliveryLimit, NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedRedeliveryLimit)
				tag, sel := tagged(t)
				t.Send(c, q, &Message{Body: "poison", Persistent: Persistent, Props: Props{tag, {"k", "v"}}})
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				for i := 1; i <= 3; i++ {
					t.Step("delivery %d", i)
					m := t.ReceiveBody(sub, "poison")
					t.Expect(m.DeliveryCount == 0 || m.DeliveryCount == i, "JMSXDeliveryCount %d, want %d", m.DeliveryCount, i)
					t.Settle(sub, m, Failed)
				}
				t.Step("after the third failed delivery")
				t.NoMessage(sub)
				m := t.Receive(t.Subscribe(c, t.ErrorQueue(NeedRedeliveryLimit), SubOptions{Selector: sel}))
				t.Expect(m.Body == "poison" && m.Prop("k") == "v", "error destination got %q k=%q", m.Body, m.Prop("k"))
				t.Note("properties on the dead-lettered message: %v", m.PropNames())
			},
		},
		&Scenario{
			ID:     "redelivery/limit-without-error-destination",
			Title:  "a message over its redelivery limit is deleted when there is no error destination",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Limit for Messages (\"If the redelivery limit is configured, but no error destination is configured, then persistent or non-persistent messages are simply deleted\")",
			Expect: "with redelivery limit 1, the message is delivered twice, then never again",
			Needs:  []Need{NeedRedeliveryLimitNoErrorDest, NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedRedeliveryLimitNoErrorDest)
				t.Send(c, q, &Message{Body: "poison", Persistent: Persistent})
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				t.Settle(sub, t.ReceiveBody(sub, "poison"), Failed)
				t.Settle(sub, t.ReceiveBody(sub, "poison"), Failed)
				t.NoMessage(sub)
				t.CloseSub(sub)
				t.NoMessage(t.Subscribe(t.Dial(), q, SubOptions{}))
			},
		},
		&Scenario{
			ID:     "redelivery/message-redelivery-limit",
			Title:  "a producer's JMSRedeliveryLimit applies when the destination sets none",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Limit for Messages (set dynamically on the producer), Table 6-3 JMS Header Field Methods (JMSRedeliveryLimit)",
			Expect: "a message sent with redelivery limit 1 is delivered twice, then arrives on the error destination",
			Needs:  []Need{NeedMessageRedeliveryLimit, NeedErrorDestination, NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedErrorDestination)
				tag, sel := tagged(t)
				t.Send(c, q, &Message{Body: "limited", RedeliveryLimit: Int(1), Persistent: Persistent, Props: Props{tag}})
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				t.Settle(sub, t.ReceiveBody(sub, "limited"), Failed)
				t.Settle(sub, t.ReceiveBody(sub, "limited"), Failed)
				t.NoMessage(sub)
				t.ReceiveBody(t.Subscribe(c, t.ErrorQueue(NeedErrorDestination), SubOptions{Selector: sel}), "limited")
			},
		},
		&Scenario{
			ID:     "redelivery/reject-to-error-destination",
			Title:  "a rejected message goes to the error destination at once",
			Checks: "CONVENTIONS.md (STOMP NACK requeue:false, AMQP rejected: undeliverable now); WebLogic JMS \"Managing Your Applications\": Configuring an Error Destination for Undelivered Messages",
			Expect: "a message rejected on its first delivery is not redelivered and arrives on the error destination",
			Needs:  []Need{NeedErrorDestination},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedErrorDestination)
				tag, sel := tagged(t)
				t.Send(c, q, &Message{Body: "bad", Persistent: Persistent, Props: Props{tag}})
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				t.Settle(sub, t.ReceiveBody(sub, "bad"), Rejected)
				t.NoMessage(sub)
				t.ReceiveBody(t.Subscribe(c, t.ErrorQueue(NeedErrorDestination), SubOptions{Selector: sel}), "bad")
			},
		},
		&Scenario{
			ID:     "redelivery/release-not-counted",
			Title:  "a released message comes back without counting as a failed delivery",
			Checks: "CONVENTIONS.md (AMQP released: back to the destination, not counted); AMQP 1.0 §3.4.4 (released)",
			Expect: "after a release the message is delivered again with JMSXDeliveryCount still 1",
			Needs:  []Need{NeedDeliveryCount},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "r")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				t.Settle(sub, t.ReceiveBody(sub, "r"), Released)
				m := t.ReceiveBody(sub, "r")
				t.Expect(m.DeliveryCount == 1, "JMSXDeliveryCount %d after a release, want 1", m.DeliveryCount)
			},
		},
		&Scenario{
			ID:     "redelivery/ordered",
			Title:  "with a pipeline of one, a failed message is redelivered before the messages behind it",
			Checks: "WebLogic JMS \"Managing Your Applications\": Ordered Redelivery of Messages (single consumer, pipeline size 1)",
			Expect: "of a, b, c with a NACKed once: received a, a (redelivered), b, c",
			Needs:  []Need{NeedNackRedelivery},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "a", "b", "c")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual, Prefetch: 1})
				t.Settle(sub, t.ReceiveBody(sub, "a"), Failed)
				for _, b := range []string{"a", "b", "c"} {
					t.Ack(sub, t.ReceiveBody(sub, b))
				}
			},
		},
		&Scenario{
			ID:     "redelivery/rollback-delay",
			Title:  "a transaction rollback applies the destination's redelivery delay",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Redelivery Delay for Messages (\"When a message is rolled back or recovered, the redelivery delay is the amount of time a message is put aside\")",
			Expect: "a message acknowledged in a transaction that rolls back comes again no sooner than the 1s delay, marked redelivered",
			Needs:  []Need{NeedRedeliveryDelayOverride},
			Run: func(t *T) {
				c := t.DialTransacted()
				q := t.Queue(NeedRedeliveryDelayOverride)
				t.Text(c, q, "tx")
				sub := t.Subscribe(c, q, SubOptions{Ack: AckIndividual})
				m := t.ReceiveBody(sub, "tx")
				tx := t.Begin(c)
				t.AckIn(sub, m, tx)
				rolled := time.Now()
				t.Rollback(tx)
				m = t.ReceiveBody(sub, "tx")
				t.Expect(m.Redelivered, "not marked redelivered")
				t.Expect(m.At.Sub(rolled) >= time.Second-early, "redelivered %s after the rollback, want ≥ 1s", m.At.Sub(rolled))
			},
		},
	)
}
