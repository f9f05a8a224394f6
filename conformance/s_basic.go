package conformance

import (
	"fmt"
	"time"
)

func init() {
	register(
		&Scenario{
			ID:     "basic/queue-headers",
			Title:  "a queue message keeps its header fields and properties",
			Checks: "JMS 2.0 §3.4 (header fields), §3.5 (properties); WebLogic JMS \"Managing Your Applications\": Setting and Browsing Message Header and Property Fields",
			Expect: "the consumer gets body, JMSCorrelationID, JMSType, JMSReplyTo, JMSPriority, JMSDeliveryMode and the property as sent; JMSMessageID and JMSTimestamp are set by the broker; JMSRedelivered is false",
			Run: func(t *T) {
				c := t.Dial()
				q, reply := t.Queue(), t.Queue()
				sub := t.Subscribe(c, q, SubOptions{})
				before := time.Now()
				t.Send(c, q, &Message{Body: "hello", CorrelationID: "c-1", Type: "order", ReplyTo: &reply,
					Priority: Prio(7), Persistent: Persistent, Props: Props{{"region", "emea"}, {"customer", "Ünïcode: a,b"}}})
				m := t.ReceiveBody(sub, "hello")
				t.Expect(m.CorrelationID == "c-1", "JMSCorrelationID %q, want c-1", m.CorrelationID)
				t.Expect(m.Type == "order", "JMSType %q, want order", m.Type)
				t.Expect(m.Priority == 7, "JMSPriority %d, want 7", m.Priority)
				t.Expect(m.Persistent, "JMSDeliveryMode non-persistent, want persistent")
				t.Expect(m.Prop("region") == "emea", "property region %q, want emea", m.Prop("region"))
				t.Expect(m.Prop("customer") == "Ünïcode: a,b", "property customer %q", m.Prop("customer"))
				t.Expect(m.ReplyTo != nil && m.ReplyTo.Kind == Queue && m.ReplyTo.Name == reply.Name, "JMSReplyTo %v, want %s", m.ReplyTo, reply)
				t.Expect(m.ID != "", "no JMSMessageID")
				t.Expect(!m.Redelivered, "JMSRedelivered is true on a first delivery")
				t.Expect(m.DeliveryCount <= 1, "JMSXDeliveryCount %d on a first delivery", m.DeliveryCount)
				ts := time.UnixMilli(m.Timestamp)
				t.Expect(m.Timestamp == 0 || (ts.After(before.Add(-5*time.Second)) && ts.Before(time.Now().Add(5*time.Second))),
					"JMSTimestamp %v is not about now", ts)
				if m.Timestamp == 0 {
					t.Note("no JMSTimestamp carried")
				}
			},
		},
		&Scenario{
			ID:     "basic/default-priority",
			Title:  "a message sent without a priority has priority 4",
			Checks: "JMS 2.0 §3.4.10 (JMSPriority): the default priority is 4",
			Expect: "JMSPriority of the delivered message is 4",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Text(c, q, "x")
				sub := t.Subscribe(c, q, SubOptions{})
				m := t.ReceiveBody(sub, "x")
				t.Expect(m.Priority == 4, "JMSPriority %d, want 4", m.Priority)
			},
		},
		&Scenario{
			ID:     "basic/fifo",
			Title:  "messages of one producer and one priority arrive in the order sent",
			Checks: "JMS 2.0, message order (messages of one session and priority arrive in the order sent)",
			Expect: "ten messages are received in the order they were sent",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				var bodies []string
				for i := 0; i < 10; i++ {
					bodies = append(bodies, fmt.Sprintf("m%d", i))
				}
				t.Text(c, q, bodies...)
				sub := t.Subscribe(c, q, SubOptions{})
				t.ReceiveBodies(sub, bodies...)
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "basic/queue-competing-consumers",
			Title:  "each queue message goes to exactly one of two consumers",
			Checks: "JMS 2.0, point-to-point (a queue message goes to one consumer)",
			Expect: "two consumers together receive each of eight messages exactly once",
			Run: func(t *T) {
				c1, c2 := t.Dial(), t.Dial()
				q := t.Queue()
				s1 := t.Subscribe(c1, q, SubOptions{Prefetch: 1})
				s2 := t.Subscribe(c2, q, SubOptions{Prefetch: 1})
				p := t.Dial()
				var want []string
				for i := 0; i < 8; i++ {
					want = append(want, fmt.Sprintf("w%d", i))
				}
				t.Text(p, q, want...)
				seen := map[string]int{}
				for len(seen) < 8 {
					got := false
					for _, s := range []Sub{s1, s2} {
						if m := t.TryReceive(s, 100*time.Millisecond); m != nil {
							seen[m.Body]++
							got = true
						}
					}
					if !got && len(seen) < 8 {
						if m := t.TryReceive(s1, t.Within(3*time.Second)); m != nil {
							seen[m.Body]++
						} else {
							t.Fatalf("received %d of 8", len(seen))
						}
					}
				}
				for b, n := range seen {
					t.Expect(n == 1, "%s received %d times", b, n)
				}
				t.NoMessage(s1)
				t.NoMessage(s2)
			},
		},
		&Scenario{
			ID:     "basic/topic-fan-out",
			Title:  "every topic subscriber gets every message; a later subscriber gets none of the earlier ones",
			Checks: "JMS 2.0, publish/subscribe with non-durable subscriptions",
			Expect: "both subscribers get the message; a subscriber created after the publish gets nothing",
			Run: func(t *T) {
				c := t.Dial()
				tp := t.Topic()
				s1 := t.Subscribe(c, tp, SubOptions{})
				s2 := t.Subscribe(t.Dial(), tp, SubOptions{})
				t.Text(t.Dial(), tp, "news")
				t.ReceiveBody(s1, "news")
				t.ReceiveBody(s2, "news")
				late := t.Subscribe(c, tp, SubOptions{})
				t.NoMessage(late)
			},
		},
		&Scenario{
			ID:     "basic/non-persistent",
			Title:  "a non-persistent message is delivered as non-persistent",
			Checks: "JMS 2.0 §3.4.2 (JMSDeliveryMode)",
			Expect: "JMSDeliveryMode of the delivered message is NON_PERSISTENT",
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: "np", Persistent: NonPersistent})
				m := t.ReceiveBody(t.Subscribe(c, q, SubOptions{}), "np")
				t.Expect(!m.Persistent, "delivered as persistent")
			},
		},
		&Scenario{
			ID:     "basic/client-id-restricted",
			Title:  "a client ID in use by one connection is refused to another",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting the Client ID Policy (RESTRICTED, the default); Defining the Client ID (InvalidClientIDException)",
			Expect: "the second connection with the same client ID is refused; after the first closes, the ID can be used again",
			Run: func(t *T) {
				id := t.Name("cid")
				first := t.Dial(id)
				_, err := t.TryDialOn(t.P, id)
				t.ExpectRefused(err, "a second connection with client ID "+id)
				t.Close(first)
				t.Redial(t.P, id)
			},
		},
	)
}
