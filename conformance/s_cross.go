package conformance

import (
	"fmt"
	"strings"
	"time"
)

// Cross-protocol scenarios: sent over one protocol (T.P), received over the
// other (T.Q). Each runs in both directions.

// carriesTypes reports whether d's protocol carries typed properties
// (AMQP 1.0 application properties, 0-9-1 headers tables).
func carriesTypes(d Driver) bool { return d.Protocol() == "amqp" || d.Protocol() == "amqp091" }

func init() {
	register(
		&Scenario{
			ID:     "cross/headers-and-properties",
			Mode:   Cross,
			Title:  "a message keeps its header fields and properties across protocols",
			Checks: "CONVENTIONS.md, Across protocols; JMS 2.0 §3.4 (header fields), §3.5 (properties)",
			Expect: "body, JMSCorrelationID, JMSType, JMSPriority, JMSDeliveryMode, JMSReplyTo and string properties arrive as sent",
			Run: func(t *T) {
				q, reply := t.Queue(), t.Queue()
				sub := t.Subscribe(t.DialQ(), q, SubOptions{})
				t.Send(t.Dial(), q, &Message{Body: "across", CorrelationID: "x-1", Type: "order", Priority: Prio(6),
					Persistent: Persistent, ReplyTo: &reply, Props: Props{{"region", "emea"}, {"note", "a:b,c"}}})
				m := t.ReceiveBody(sub, "across")
				t.Expect(m.CorrelationID == "x-1", "JMSCorrelationID %q", m.CorrelationID)
				t.Expect(m.Type == "order", "JMSType %q", m.Type)
				t.Expect(m.Priority == 6, "JMSPriority %d", m.Priority)
				t.Expect(m.Persistent, "delivered as non-persistent")
				t.Expect(m.ReplyTo != nil && m.ReplyTo.Name == reply.Name, "JMSReplyTo %v, want %s", m.ReplyTo, reply)
				t.Expect(m.Prop("region") == "emea" && m.Prop("note") == "a:b,c", "properties %v", m.Props)
				t.Expect(!m.Redelivered, "marked redelivered")
			},
		},
		&Scenario{
			ID:     "cross/typed-properties",
			Mode:   Cross,
			Title:  "typed properties keep their types where both protocols carry types, and arrive as strings over STOMP",
			Checks: "CONVENTIONS.md, Across protocols (\"a typed property read over STOMP arrives as its string form\"); WebLogic JMS \"Managing Your Applications\": Table 6-5 Message Property Conversion Chart",
			Expect: "sent over AMQP as int, long, double, boolean: read over STOMP as \"42\", \"5000000000\", \"2.5\", \"true\"; sent over STOMP (strings): read over AMQP as strings",
			Run: func(t *T) {
				q := t.Queue()
				sub := t.Subscribe(t.DialQ(), q, SubOptions{})
				props := Props{{"n", "42"}, {"l", "5000000000"}, {"d", "2.5"}, {"b", "true"}}
				if carriesTypes(t.P) {
					props = Props{{"n", int32(42)}, {"l", int64(5000000000)}, {"d", 2.5}, {"b", true}}
				}
				t.Send(t.Dial(), q, &Message{Body: "typed", Props: props})
				m := t.ReceiveBody(sub, "typed")
				for _, p := range props {
					got, ok := m.Props[p.Name]
					t.Expect(ok, "property %s missing", p.Name)
					want := p.Value
					if !carriesTypes(t.Q) {
						want = fmt.Sprint(p.Value)
					}
					t.Expect(fmt.Sprintf("%T %v", got, got) == fmt.Sprintf("%T %v", want, want), "property %s is %T %v, want %T %v", p.Name, got, got, want, want)
				}
			},
		},
		&Scenario{
			ID:     "cross/selector-and-types",
			Mode:   Cross,
			Title:  "a selector sees the property types the sender's protocol gave",
			Checks: "JMS 2.0 §3.8.1 (comparing a string with a number is unknown); CONVENTIONS.md, Across protocols",
			Expect: "\"n > 40\" selects n sent as AMQP int 42 but not n sent as STOMP string \"42\"; \"s = 'x'\" selects either",
			Run: func(t *T) {
				q := t.Queue()
				c := t.DialQ()
				num := t.Subscribe(c, q, SubOptions{Selector: "n > 40 OR s = 'never'"})
				var n any = "42"
				if carriesTypes(t.P) {
					n = int32(42)
				}
				t.Send(t.Dial(), q, &Message{Body: "m", Props: Props{{"n", n}, {"s", "x"}}})
				if carriesTypes(t.P) {
					t.ReceiveBody(num, "m")
					return
				}
				t.NoMessage(num)
				t.CloseSub(num)
				t.ReceiveBody(t.Subscribe(c, q, SubOptions{Selector: "s = 'x'"}), "m")
			},
		},
		&Scenario{
			ID:     "cross/redelivered-elsewhere",
			Mode:   Cross,
			Title:  "a message left unacknowledged over one protocol is redelivered over the other, counted",
			Checks: "JMS 2.0 §3.4.7 (JMSRedelivered), JMSXDeliveryCount; CONVENTIONS.md (delivery-count = JMSXDeliveryCount − 1)",
			Expect: "the second consumer gets the message with JMSRedelivered true and JMSXDeliveryCount 2",
			Run: func(t *T) {
				q := t.Queue()
				a := t.Dial()
				t.Text(a, q, "twice")
				t.ReceiveBody(t.Subscribe(a, q, SubOptions{Ack: AckClient}), "twice")
				t.Close(a)
				m := t.ReceiveBody(t.Subscribe(t.DialQ(), q, SubOptions{}), "twice")
				t.Expect(m.Redelivered, "not marked redelivered")
				t.Expect(m.DeliveryCount == 0 || m.DeliveryCount == 2, "JMSXDeliveryCount %d, want 2", m.DeliveryCount)
			},
		},
		&Scenario{
			ID:     "cross/durable-subscription",
			Mode:   Cross,
			Title:  "a durable subscription made over one protocol is resumed over the other",
			Checks: "WebLogic JMS \"Managing Your Applications\": Setting Up Durable Subscriptions (client ID + subscription name identify it); CONVENTIONS.md (STOMP client-id + subscription name; AMQP container-id + link name)",
			Expect: "a message published while away is delivered to the same client ID and subscription name connecting over the other protocol",
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				t.CloseSub(t.Subscribe(c, tp, SubOptions{Name: name, Durable: true}))
				t.Close(c)
				t.Send(t.Dial(), tp, &Message{Body: "kept", Persistent: Persistent})
				t.ReceiveBody(t.Subscribe(t.Redial(t.Q, id), tp, SubOptions{Name: name, Durable: true}), "kept")
			},
		},
		&Scenario{
			ID:     "cross/delivery-delay",
			Mode:   Cross,
			Title:  "a delivery delay set over one protocol holds the message for consumers of the other",
			Checks: "JMS 2.0, JMSDeliveryTime; CONVENTIONS.md (AMQ_SCHEDULED_DELAY, x-opt-delivery-delay)",
			Expect: "the message arrives no sooner than 700ms after the send, carrying its JMSDeliveryTime",
			Needs:  []Need{NeedDeliveryDelay},
			Run: func(t *T) {
				q := t.Queue()
				sub := t.Subscribe(t.DialQ(), q, SubOptions{})
				sent := time.Now()
				t.Send(t.Dial(), q, &Message{Body: "held", DeliveryDelay: 700 * time.Millisecond})
				m := t.ReceiveBody(sub, "held")
				t.Expect(m.At.Sub(sent) >= 700*time.Millisecond-early, "delivered %s after the send", m.At.Sub(sent))
				t.Expect(m.DeliveryTime != 0, "no JMSDeliveryTime")
			},
		},
		&Scenario{
			ID:     "cross/expiration",
			Mode:   Cross,
			Title:  "a time to live set over one protocol is JMSExpiration over the other",
			Checks: "JMS 2.0 §3.4.9 (JMSExpiration); CONVENTIONS.md (STOMP expires, AMQP ttl / absolute-expiry-time)",
			Expect: "JMSExpiration is within 2s of JMSTimestamp + 60000",
			Run: func(t *T) {
				q := t.Queue()
				before := time.Now()
				t.Send(t.Dial(), q, &Message{Body: "ttl", TTL: time.Minute})
				m := t.ReceiveBody(t.Subscribe(t.DialQ(), q, SubOptions{}), "ttl")
				base := m.Timestamp
				if base == 0 {
					base = before.UnixMilli()
				}
				d := m.Expiration - (base + 60000)
				t.Expect(d > -2000 && d < 2000, "JMSExpiration %d is %dms off", m.Expiration, d)
			},
		},
		&Scenario{
			ID:     "cross/priority-order",
			Mode:   Cross,
			Title:  "priorities set over one protocol order delivery over the other",
			Checks: "JMS 2.0 §3.4.10 (JMSPriority)",
			Expect: "messages with priorities 1, 9, 5 are received as 9, 5, 1",
			Needs:  []Need{NeedPriorityOrder},
			Run: func(t *T) {
				q := t.Queue()
				c := t.Dial()
				for _, p := range []int{1, 9, 5} {
					t.Send(c, q, &Message{Body: fmt.Sprintf("p%d", p), Priority: Prio(p)})
				}
				t.ReceiveBodies(t.Subscribe(t.DialQ(), q, SubOptions{Prefetch: 1}), "p9", "p5", "p1")
			},
		},
		&Scenario{
			ID:     "cross/request-reply",
			Mode:   Cross,
			Title:  "a reply over the other protocol reaches a temporary queue",
			Checks: "WebLogic JMS \"Managing Your Applications\": Using Temporary Destinations (JMSReplyTo); CONVENTIONS.md (/temp-queue/, dynamic terminus with temporary-queue)",
			Expect: "the responder on the other protocol reads JMSReplyTo and its reply arrives on the requester's temporary queue",
			Run: func(t *T) {
				requestReply(t, t.P, t.Q)
			},
		},
		&Scenario{
			ID:     "cross/transaction",
			Mode:   Cross,
			Title:  "messages sent in a transaction over one protocol reach the other only on commit",
			Checks: "JMS 2.0 transacted sessions",
			Expect: "nothing before the commit, the message after it",
			Run: func(t *T) {
				q := t.Queue()
				sub := t.Subscribe(t.DialQ(), q, SubOptions{})
				c := t.DialTransacted()
				tx := t.Begin(c)
				t.SendIn(c, tx, q, &Message{Body: "tx"})
				t.NoMessage(sub)
				t.Commit(tx)
				t.ReceiveBody(sub, "tx")
			},
		},
		&Scenario{
			ID:     "cross/browse",
			Mode:   Cross,
			Title:  "a browser over one protocol sees messages sent over the other",
			Checks: "WebLogic JMS \"Managing Your Applications\": Browsing Header and Property Fields",
			Expect: "the browser sees both messages with their properties, and they stay on the queue",
			Run: func(t *T) {
				q := t.Queue()
				c := t.Dial()
				t.Send(c, q, &Message{Body: "b1", Props: Props{{"k", "1"}}})
				t.Send(c, q, &Message{Body: "b2", Props: Props{{"k", "2"}}})
				ms := t.Browse(t.DialQ(), q, "")
				t.Expect(strings.Join(bodies(ms), ",") == "b1,b2", "browsed %v", bodies(ms))
				t.Expect(ms[1].Prop("k") == "2", "browsed property k %q", ms[1].Prop("k"))
				t.ReceiveBodies(t.Subscribe(c, q, SubOptions{}), "b1", "b2")
			},
		},
	)
}
