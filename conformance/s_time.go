package conformance

import (
	"fmt"
	"time"
)

// Priority, expiry and delivery time.

// tagged returns the property a scenario puts on messages that end up on a
// shared destination (an error destination), and the selector that finds
// them again.
func tagged(t *T) (Prop, string) {
	return Prop{"ctag", t.Tag()}, fmt.Sprintf("ctag = '%s'", t.Tag())
}

// early is how much sooner than asked a delayed message may arrive: clock
// granularity between the scenario and the broker.
const early = 60 * time.Millisecond

func init() {
	register(
		&Scenario{
			ID:     "priority/order",
			Title:  "a queue delivers higher priorities first, in send order within a priority",
			Checks: "JMS 2.0 §3.4.10 (JMSPriority: 0-4 normal, 5-9 expedited); WebLogic JMS \"Managing Your Applications\": Ordered Redelivery of Messages (sort order)",
			Expect: "messages queued with priorities 3 8 1 9 5 4 5 0 are received as 9 8 5(a) 5(b) 4 3 1 0",
			Needs:  []Need{NeedPriorityOrder},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				send := []struct {
					body string
					prio int
				}{{"p3", 3}, {"p8", 8}, {"p1", 1}, {"p9", 9}, {"p5a", 5}, {"p4", 4}, {"p5b", 5}, {"p0", 0}}
				for _, m := range send {
					t.Send(c, q, &Message{Body: m.body, Priority: Prio(m.prio)})
				}
				sub := t.Subscribe(c, q, SubOptions{Prefetch: 1})
				ms := t.ReceiveBodies(sub, "p9", "p8", "p5a", "p5b", "p4", "p3", "p1", "p0")
				t.Expect(ms[0].Priority == 9, "JMSPriority %d, want 9", ms[0].Priority)
			},
		},
		&Scenario{
			ID:     "priority/override",
			Title:  "a destination's priority override replaces the producer's priority",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Message Header Fields (values set on a destination override the producer's)",
			Expect: "a message sent with priority 1 to a destination whose override is 9 is delivered with JMSPriority 9",
			Needs:  []Need{NeedPriorityOverride},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedPriorityOverride)
				t.Send(c, q, &Message{Body: "low", Priority: Prio(1)})
				m := t.ReceiveBody(t.Subscribe(c, q, SubOptions{}), "low")
				t.Expect(m.Priority == 9, "JMSPriority %d, want 9 (the override)", m.Priority)
			},
		},
		&Scenario{
			ID:     "expiry/time-to-live",
			Title:  "a message whose time to live has passed is not delivered",
			Checks: "JMS 2.0 §3.4.9 (JMSExpiration), time to live; WebLogic JMS \"Managing Your Applications\": Handling Expired Messages",
			Expect: "of a message with time to live 300ms and one without, a consumer created 800ms later gets only the second",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: "short-lived", TTL: 300 * time.Millisecond})
				t.Send(c, q, &Message{Body: "lasting"})
				t.Sleep(800 * time.Millisecond)
				sub := t.Subscribe(c, q, SubOptions{})
				t.ReceiveBody(sub, "lasting")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "expiry/absolute-expiration",
			Title:  "a message with an absolute expiration time in the past is not delivered",
			Checks: "JMS 2.0 §3.4.9 (JMSExpiration is an absolute time); CONVENTIONS.md (STOMP expires, AMQP absolute-expiry-time)",
			Expect: "a message sent with JMSExpiration = now + 300ms is gone 800ms later",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: "dated", Expiration: time.Now().Add(300 * time.Millisecond)})
				t.Send(c, q, &Message{Body: "lasting"})
				t.Sleep(800 * time.Millisecond)
				sub := t.Subscribe(c, q, SubOptions{})
				t.ReceiveBody(sub, "lasting")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "expiry/expiration-header",
			Title:  "JMSExpiration is the send time plus the time to live, or 0",
			Checks: "JMS 2.0 §3.4.9: JMSExpiration = JMSTimestamp + time to live; 0 when the message does not expire",
			Expect: "a message with time to live 60s has JMSExpiration within 2s of JMSTimestamp + 60000; one without has 0",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				before := time.Now()
				t.Send(c, q, &Message{Body: "ttl", TTL: time.Minute})
				t.Send(c, q, &Message{Body: "forever"})
				sub := t.Subscribe(c, q, SubOptions{})
				m := t.ReceiveBody(sub, "ttl")
				base := m.Timestamp
				if base == 0 {
					base = before.UnixMilli()
				}
				d := m.Expiration - (base + 60000)
				t.Expect(d > -2000 && d < 2000, "JMSExpiration %d is %dms off JMSTimestamp+60000", m.Expiration, d)
				m = t.ReceiveBody(sub, "forever")
				t.Expect(m.Expiration == 0, "JMSExpiration %d, want 0", m.Expiration)
			},
		},
		&Scenario{
			ID:     "expiry/policy-redirect",
			Title:  "with expiration policy redirect, an expired message moves to the error destination",
			Checks: "WebLogic JMS \"Managing Your Applications\": Handling Expired Messages (redirecting expired messages to an error destination)",
			Expect: "an expired message is not delivered from its queue and arrives on the error destination with its body and properties",
			Needs:  []Need{NeedExpireRedirect},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedExpireRedirect)
				tag, sel := tagged(t)
				t.Send(c, q, &Message{Body: "stale", TTL: 300 * time.Millisecond, Persistent: Persistent, Props: Props{tag, {"k", "v"}}})
				t.Sleep(600 * time.Millisecond)
				sub := t.Subscribe(c, q, SubOptions{}) // a consumer also makes brokers that expire on dispatch look
				t.NoMessage(sub)
				errs := t.Subscribe(c, t.ErrorQueue(NeedExpireRedirect), SubOptions{Selector: sel})
				m := t.Receive(errs, 10*time.Second)
				t.Expect(m.Body == "stale" && m.Prop("k") == "v", "error destination got %q k=%q", m.Body, m.Prop("k"))
				t.Note("properties on the redirected message: %v", m.PropNames())
			},
		},
		&Scenario{
			ID:     "expiry/policy-discard",
			Title:  "with expiration policy discard, an expired message is deleted, not redirected",
			Checks: "WebLogic JMS \"Managing Your Applications\": Handling Expired Messages (discarding expired messages)",
			Expect: "an expired message reaches neither its queue's consumer nor the error destination",
			Needs:  []Need{NeedExpireDiscard},
			Run: func(t *T) {
				expiredGone(t, NeedExpireDiscard)
			},
		},
		&Scenario{
			ID:     "expiry/policy-log",
			Title:  "with expiration policy log, an expired message is logged and deleted",
			Checks: "WebLogic JMS \"Managing Your Applications\": Handling Expired Messages (discarding expired messages and logging their removal)",
			Expect: "an expired message reaches neither its queue's consumer nor the error destination (the log entry is not visible over the wire)",
			Needs:  []Need{NeedExpireLog},
			Run: func(t *T) {
				expiredGone(t, NeedExpireLog)
			},
		},
		&Scenario{
			ID:     "expiry/ttl-override",
			Title:  "a destination's time-to-live override replaces the producer's",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Message Header Fields (destination overrides); WebLogic TimeToLiveOverride",
			Expect: "messages sent without a time to live, or with one hour, to a destination whose override is 300ms are gone 800ms later",
			Needs:  []Need{NeedTTLOverride},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedTTLOverride)
				t.Send(c, q, &Message{Body: "no-ttl"})
				t.Send(c, q, &Message{Body: "hour", TTL: time.Hour})
				t.Sleep(800 * time.Millisecond)
				t.NoMessage(t.Subscribe(c, q, SubOptions{}))
			},
		},
		&Scenario{
			ID:     "expiry/before-delivery-time",
			Title:  "a message that expires before its delivery time is never delivered",
			Checks: "WebLogic JMS \"Managing Your Applications\": Interaction With the Time-to-Live Value",
			Expect: "a message with time to live 300ms and delivery delay 600ms never arrives; the same without time to live does",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				t.Send(c, q, &Message{Body: "expires-first", TTL: 300 * time.Millisecond, DeliveryDelay: 600 * time.Millisecond})
				t.Send(c, q, &Message{Body: "delayed", DeliveryDelay: 600 * time.Millisecond})
				t.ReceiveBody(sub, "delayed")
				t.NoMessage(sub, 500*time.Millisecond)
			},
		},
		&Scenario{
			ID:     "delay/relative",
			Title:  "a message with a delivery delay is invisible until the delay has passed",
			Checks: "JMS 2.0, message delivery delay; WebLogic JMS \"Managing Your Applications\": Setting Message Delivery Times, Setting a Delivery Time on Producers",
			Expect: "a message sent with delay 800ms, then one without: the second arrives first, the first no sooner than 800ms after its send",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				sent := time.Now()
				t.Send(c, q, &Message{Body: "later", DeliveryDelay: 800 * time.Millisecond})
				t.Send(c, q, &Message{Body: "now"})
				t.ReceiveBody(sub, "now")
				m := t.ReceiveBody(sub, "later")
				waited := m.At.Sub(sent)
				t.Expect(waited >= 800*time.Millisecond-early, "delivered after %s, want ≥ 800ms", waited)
				t.Note("delivered %s after the send", waited.Round(time.Millisecond))
			},
		},
		&Scenario{
			ID:     "delay/absolute-time",
			Title:  "a message with an absolute delivery time is invisible until then",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Delivery Time on Messages (JMSDeliveryTime, the earliest absolute time); CONVENTIONS.md (AMQ_SCHEDULED_TIME, x-opt-delivery-time)",
			Expect: "a message with delivery time now+800ms arrives no sooner than that",
			Needs:  []Need{NeedDeliveryTime},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				at := time.Now().Add(800 * time.Millisecond)
				t.Send(c, q, &Message{Body: "at", DeliveryTime: at})
				t.NoMessage(sub, 400*time.Millisecond)
				m := t.ReceiveBody(sub, "at")
				t.Expect(!m.At.Before(at.Add(-early)), "delivered %s before its delivery time", at.Sub(m.At))
			},
		},
		&Scenario{
			ID:     "delay/jms-delivery-time",
			Title:  "JMSDeliveryTime of a delayed message is its send time plus the delay",
			Checks: "JMS 2.0, JMSDeliveryTime; WebLogic JMS \"Managing Your Applications\": Setting a Delivery Time on Messages",
			Expect: "a message sent with delay 500ms carries a JMSDeliveryTime within 1s of JMSTimestamp + 500",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				t.Send(c, q, &Message{Body: "d", DeliveryDelay: 500 * time.Millisecond})
				m := t.ReceiveBody(sub, "d")
				t.Expect(m.DeliveryTime != 0, "no JMSDeliveryTime on the delivered message")
				base := m.Timestamp
				if base == 0 {
					base = m.At.UnixMilli() - 500
				}
				d := m.DeliveryTime - (base + 500)
				t.Expect(d > -1000 && d < 1000, "JMSDeliveryTime %d is %dms off JMSTimestamp+500", m.DeliveryTime, d)
			},
		},
		&Scenario{
			ID:     "delay/invisible-to-browser",
			Title:  "a browser does not see a message before its delivery time",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Message Delivery Times (\"Until that delivery time, the message is essentially invisible\")",
			Expect: "browsing during the delay shows only the undelayed message; after the delay, both",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: "hidden", DeliveryDelay: 2 * time.Second})
				t.Send(c, q, &Message{Body: "visible"})
				ms := t.Browse(c, q, "")
				t.Expect(len(ms) == 1 && ms[0].Body == "visible", "browsed %v during the delay, want [visible]", bodies(ms))
				t.Sleep(2300 * time.Millisecond)
				ms = t.Browse(c, q, "")
				t.Expect(len(ms) == 2, "browsed %v after the delay, want both", bodies(ms))
			},
		},
		&Scenario{
			ID:     "delay/topic",
			Title:  "a delayed message published to a topic reaches its subscribers after the delay",
			Checks: "JMS 2.0, message delivery delay (applies to topics too)",
			Expect: "a subscriber gets the message no sooner than 600ms after the publish",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				c := t.Dial()
				tp := t.Topic()
				sub := t.Subscribe(c, tp, SubOptions{})
				sent := time.Now()
				t.Send(c, tp, &Message{Body: "t", DeliveryDelay: 600 * time.Millisecond})
				m := t.ReceiveBody(sub, "t")
				t.Expect(m.At.Sub(sent) >= 600*time.Millisecond-early, "delivered after %s", m.At.Sub(sent))
			},
		},
		&Scenario{
			ID:     "delay/time-to-deliver-override",
			Title:  "a destination's relative time-to-deliver override delays every message",
			Checks: "WebLogic JMS \"Managing Your Applications\": Overriding a Delivery Time, Setting a Relative Time-to-Deliver Override",
			Expect: "a message sent without a delay to a destination whose override is 800ms arrives no sooner than 800ms later",
			Needs:  []Need{NeedTTDOverride},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedTTDOverride)
				sub := t.Subscribe(c, q, SubOptions{})
				sent := time.Now()
				t.Text(c, q, "held")
				m := t.ReceiveBody(sub, "held")
				t.Expect(m.At.Sub(sent) >= 800*time.Millisecond-early, "delivered after %s, want ≥ 800ms", m.At.Sub(sent))
			},
		},
		&Scenario{
			ID:     "delay/scheduled-override",
			Title:  "a destination's scheduled time-to-deliver override holds messages until the next scheduled time",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting a Scheduled Time-to-Deliver Override, Table 6-1 Message Delivery Schedule",
			Expect: "with the schedule \"0 0,5,…,55 * * * * *\", a message is delivered at the next multiple of five seconds, not before",
			Needs:  []Need{NeedTTDSchedule},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue(NeedTTDSchedule)
				sub := t.Subscribe(c, q, SubOptions{})
				sent := time.Now()
				t.Text(c, q, "scheduled")
				next := sent.Truncate(5 * time.Second).Add(5 * time.Second)
				m := t.Receive(sub, 8*time.Second)
				t.Expect(!m.At.Before(next.Add(-early)), "delivered at %s, before the scheduled %s", m.At.Format("15:04:05.000"), next.Format("15:04:05.000"))
				if m.DeliveryTime != 0 {
					t.Expect(m.DeliveryTime%5000 == 0, "JMSDeliveryTime %d is not on a fifth second", m.DeliveryTime)
				}
			},
		},
	)
}

// expiredGone checks that an expired message reaches neither its queue nor
// the error destination.
func expiredGone(t *T, need Need) {
	c := t.Dial()
	q := t.Queue(need)
	tag, sel := tagged(t)
	t.Send(c, q, &Message{Body: "stale", TTL: 300 * time.Millisecond, Persistent: Persistent, Props: Props{tag}})
	t.Sleep(600 * time.Millisecond)
	t.NoMessage(t.Subscribe(c, q, SubOptions{}))
	errs := t.Subscribe(c, t.ErrorQueue(need), SubOptions{Selector: sel})
	t.NoMessage(errs, t.Within(1500*time.Millisecond))
}

func bodies(ms []*Received) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}
