package conformance

import (
	"fmt"
	"time"
)

// Durable, shared and noLocal subscriptions, and temporary destinations.

func init() {
	register(
		&Scenario{
			ID:     "durable/keeps-messages-while-away",
			Title:  "a durable subscription keeps the messages published while its subscriber is away",
			Checks: "JMS 2.0, durable subscriptions; WebLogic JMS \"Managing Your Applications\": Setting Up Durable Subscriptions, Creating Subscribers for a Durable Subscription",
			Expect: "after the subscriber's connection closes, a message published meanwhile is delivered when a connection with the same client ID subscribes again",
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				sub := t.Subscribe(c, tp, SubOptions{Name: name, Durable: true})
				p := t.Dial()
				t.Send(p, tp, &Message{Body: "first", Persistent: Persistent})
				t.ReceiveBody(sub, "first")
				t.Close(c)
				t.Send(p, tp, &Message{Body: "while away", Persistent: Persistent})
				c = t.Redial(t.P, id)
				t.ReceiveBody(t.Subscribe(c, tp, SubOptions{Name: name, Durable: true}), "while away")
			},
		},
		&Scenario{
			ID:     "durable/needs-client-id",
			Title:  "an unshared durable subscription needs a client ID",
			Checks: "WebLogic JMS \"Managing Your Applications\": Defining the Client ID (\"To support durable subscriptions, a client ID must be defined for the connection\"); JMS 2.0, durable subscriptions",
			Expect: "a durable subscription on a connection without a client ID is refused",
			Run: func(t *T) {
				c := t.Dial()
				_, err := t.TrySubscribe(c, t.Topic(), SubOptions{Name: t.Name("sub"), Durable: true})
				t.ExpectRefused(err, "a durable subscription without a client ID")
			},
		},
		&Scenario{
			ID:     "durable/exclusive",
			Title:  "an unshared durable subscription has at most one active subscriber",
			Checks: "WebLogic JMS \"Managing Your Applications\": Creating a Sharable Subscription Policy (Exclusive, the default); JMS 2.0, durable subscriptions",
			Expect: "a second subscriber to an active unshared durable subscription is refused",
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				t.Subscribe(c, tp, SubOptions{Name: name, Durable: true})
				_, err := t.TrySubscribe(c, tp, SubOptions{Name: name, Durable: true})
				t.ExpectRefused(err, "a second subscriber to "+name)
			},
		},
		&Scenario{
			ID:     "durable/unsubscribe",
			Title:  "unsubscribing deletes a durable subscription and its messages",
			Checks: "WebLogic JMS \"Managing Your Applications\": Deleting Durable Subscriptions; JMS 2.0, Session.unsubscribe",
			Expect: "a message waiting on the subscription is gone after unsubscribe; a new subscription of the same name starts empty",
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				sub := t.Subscribe(c, tp, SubOptions{Name: name, Durable: true})
				t.CloseSub(sub)
				t.Send(t.Dial(), tp, &Message{Body: "pending", Persistent: Persistent})
				t.Unsubscribe(c, tp, name, "")
				t.Close(c)
				c = t.Redial(t.P, id)
				t.NoMessage(t.Subscribe(c, tp, SubOptions{Name: name, Durable: true}))
			},
		},
		&Scenario{
			ID:     "durable/change-selector",
			Title:  "subscribing again with a different selector replaces the durable subscription",
			Checks: "WebLogic JMS \"Managing Your Applications\": Modifying Durable Subscriptions (recreated with a different message selector; the old one is deleted implicitly)",
			Expect: "a message kept for the old selector is gone; the new selector applies from then on",
			Run: func(t *T) {
				id, name, tp := t.Name("cid"), t.Name("sub"), t.Topic()
				c := t.Dial(id)
				t.CloseSub(t.Subscribe(c, tp, SubOptions{Name: name, Durable: true, Selector: "color = 'red'"}))
				p := t.Dial()
				t.Send(p, tp, &Message{Body: "red", Persistent: Persistent, Props: Props{{"color", "red"}}})
				sub := t.Subscribe(c, tp, SubOptions{Name: name, Durable: true, Selector: "color = 'blue'"})
				t.NoMessage(sub)
				t.Send(p, tp, &Message{Body: "red2", Persistent: Persistent, Props: Props{{"color", "red"}}})
				t.Send(p, tp, &Message{Body: "blue", Persistent: Persistent, Props: Props{{"color", "blue"}}})
				t.ReceiveBody(sub, "blue")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "durable/no-local",
			Title:  "a durable subscriber with noLocal does not get its own connection's messages",
			Checks: "WebLogic JMS \"Managing Your Applications\": Creating Subscribers for a Durable Subscription (the noLocal flag); JMS 2.0, durable subscriptions",
			Expect: "of a message published on the subscriber's connection and one from another connection, only the second arrives",
			Run: func(t *T) {
				id, tp := t.Name("cid"), t.Topic()
				c := t.Dial(id)
				sub := t.Subscribe(c, tp, SubOptions{Name: t.Name("sub"), Durable: true, NoLocal: true})
				t.Send(c, tp, &Message{Body: "own", Persistent: Persistent})
				t.Send(t.Dial(), tp, &Message{Body: "other", Persistent: Persistent})
				t.ReceiveBody(sub, "other")
				t.NoMessage(sub)
			},
		},
		&Scenario{
			ID:     "durable/temporary-topic-refused",
			Title:  "a durable subscription on a temporary topic is refused",
			Checks: "WebLogic JMS \"Managing Your Applications\": Defining the Client ID, note (\"Durable subscriptions should not be created for a temporary topic\")",
			Expect: "subscribing durably to the connection's temporary topic is refused",
			Run: func(t *T) {
				c := t.Dial(t.Name("cid"))
				_, tmp := t.Temporary(c, TempTopic)
				_, err := t.TrySubscribe(c, tmp, SubOptions{Name: t.Name("sub"), Durable: true})
				t.ExpectRefused(err, "a durable subscription on a temporary topic")
			},
		},
		&Scenario{
			ID:     "durable/name-rules",
			Title:  "a durable subscription name with a forbidden character is refused",
			Checks: "WebLogic JMS \"Managing Your Applications\": Creating Subscribers for a Durable Subscription, note (names cannot include , = : * % ?)",
			Expect: "each of the names a,b  a=b  a:b  a*b  a%b  a?b is refused",
			Run: func(t *T) {
				tp := t.Topic()
				for _, bad := range []string{",", "=", ":", "*", "%", "?"} {
					name := "a" + bad + "b"
					t.Step("subscribe as %q", name)
					c := t.Dial(t.Name("cid"))
					_, err := t.TrySubscribe(c, tp, SubOptions{Name: name, Durable: true})
					t.ExpectRefused(err, fmt.Sprintf("subscription name %q", name))
					_ = c.Close()
				}
			},
		},
		&Scenario{
			ID:     "nolocal/topic",
			Title:  "a noLocal topic subscriber does not get messages published on its own connection",
			Checks: "JMS 2.0, noLocal; WebLogic JMS \"Managing Your Applications\": Creating Subscribers for a Durable Subscription (the noLocal flag)",
			Expect: "only the message from the other connection arrives",
			Needs:  []Need{NeedNoLocal},
			Run: func(t *T) {
				c := t.Dial()
				tp := t.Topic()
				sub := t.Subscribe(c, tp, SubOptions{NoLocal: true})
				plain := t.Subscribe(c, tp, SubOptions{})
				t.Text(c, tp, "own")
				t.Text(t.Dial(), tp, "other")
				t.ReceiveBody(sub, "other")
				t.NoMessage(sub)
				t.ReceiveSet(plain, "own", "other")
			},
		},
		&Scenario{
			ID:     "shared/durable",
			Title:  "consumers of a shared durable subscription split its messages, which outlive them",
			Checks: "JMS 2.0, shared durable subscriptions (createSharedDurableConsumer); WebLogic JMS \"Managing Your Applications\": Creating a Sharable Subscription Policy",
			Expect: "two consumers on different connections together receive each of six messages once; after both close, a message published meanwhile waits for the next consumer",
			Needs:  []Need{NeedSharedSubscriptions},
			Run: func(t *T) {
				sharedSplit(t, true)
			},
		},
		&Scenario{
			ID:     "shared/non-durable",
			Title:  "consumers of a shared non-durable subscription split its messages; it ends with its last consumer",
			Checks: "JMS 2.0, shared non-durable subscriptions (createSharedConsumer)",
			Expect: "two consumers together receive each of six messages once; after both close, nothing published meanwhile is kept",
			Needs:  []Need{NeedSharedSubscriptions},
			Run: func(t *T) {
				sharedSplit(t, false)
			},
		},
		&Scenario{
			ID:     "temporary/request-reply",
			Title:  "a reply sent to a temporary queue named in JMSReplyTo reaches the requester",
			Checks: "WebLogic JMS \"Managing Your Applications\": Using Temporary Destinations (JMSReplyTo advertises the temporary destination); JMS 2.0, TemporaryQueue",
			Expect: "the responder reads JMSReplyTo and its reply arrives on the requester's temporary queue",
			Run: func(t *T) {
				requestReply(t, t.P, t.P)
			},
		},
		&Scenario{
			ID:     "temporary/owner-only-consumes",
			Title:  "only the connection that made a temporary queue may consume from it",
			Checks: "JMS 2.0, TemporaryQueue (only the connection that created it can create consumers for it)",
			Expect: "another connection's consumer on the temporary queue is refused",
			Run: func(t *T) {
				req := t.Dial()
				_, tmp := t.Temporary(req, TempQueue)
				q := t.Queue()
				t.Send(req, q, &Message{Body: "req", ReplyTo: &tmp})
				other := t.Dial()
				m := t.ReceiveBody(t.Subscribe(other, q, SubOptions{}), "req")
				t.Expect(m.ReplyTo != nil, "no JMSReplyTo")
				_, err := t.TrySubscribe(t.Dial(), *m.ReplyTo, SubOptions{})
				t.ExpectRefused(err, "a consumer on another connection's temporary queue")
			},
		},
		&Scenario{
			ID:     "temporary/deleted-with-connection",
			Title:  "a temporary queue ends with its connection",
			Checks: "WebLogic JMS \"Managing Your Applications\": Using Temporary Destinations (\"Temporary destinations exist only for the duration of the current connection\")",
			Expect: "after the requester's connection closes, a send to its temporary queue is refused",
			Run: func(t *T) {
				req := t.Dial()
				_, tmp := t.Temporary(req, TempQueue)
				q := t.Queue()
				t.Send(req, q, &Message{Body: "req", ReplyTo: &tmp})
				resp := t.Dial()
				m := t.ReceiveBody(t.Subscribe(resp, q, SubOptions{}), "req")
				t.Close(req)
				t.Sleep(200 * time.Millisecond)
				err := t.TrySend(resp, *m.ReplyTo, &Message{Body: "too late"}, nil)
				t.ExpectRefused(err, "a send to a deleted temporary queue")
			},
		},
		&Scenario{
			ID:     "temporary/non-persistent",
			Title:  "persistent messages sent to a temporary queue are made non-persistent",
			Checks: "WebLogic JMS \"Managing Your Applications\": Using Temporary Destinations (\"all PERSISTENT messages are silently made NON_PERSISTENT\")",
			Expect: "a message sent as persistent to a temporary queue is delivered as non-persistent",
			Run: func(t *T) {
				c := t.Dial()
				sub, tmp := t.Temporary(c, TempQueue)
				t.Send(c, tmp, &Message{Body: "p", Persistent: Persistent})
				m := t.ReceiveBody(sub, "p")
				t.Expect(!m.Persistent, "delivered as persistent")
			},
		},
		&Scenario{
			ID:     "temporary/topic",
			Title:  "a temporary topic delivers to its creator's subscriber",
			Checks: "WebLogic JMS \"Managing Your Applications\": Creating a Temporary Topic",
			Expect: "a message another connection publishes to the temporary topic (learned from JMSReplyTo) arrives",
			Run: func(t *T) {
				c := t.Dial()
				sub, tmp := t.Temporary(c, TempTopic)
				q := t.Queue()
				t.Send(c, q, &Message{Body: "where", ReplyTo: &tmp})
				other := t.Dial()
				m := t.ReceiveBody(t.Subscribe(other, q, SubOptions{}), "where")
				t.Expect(m.ReplyTo != nil && m.ReplyTo.Kind == TempTopic, "JMSReplyTo %v, want a temporary topic", m.ReplyTo)
				t.Send(other, *m.ReplyTo, &Message{Body: "here"})
				t.ReceiveBody(sub, "here")
			},
		},
	)
}

// sharedSplit checks a shared subscription with two consumers.
func sharedSplit(t *T, durable bool) {
	tp, name := t.Topic(), t.Name("shared")
	o := SubOptions{Name: name, Shared: true, Durable: durable, Prefetch: 1}
	c1, c2 := t.Dial(), t.Dial()
	s1, s2 := t.Subscribe(c1, tp, o), t.Subscribe(c2, tp, o)
	p := t.Dial()
	for i := 0; i < 6; i++ {
		t.Send(p, tp, &Message{Body: fmt.Sprintf("m%d", i), Persistent: Persistent})
	}
	seen := map[string]int{}
	n1, n2 := 0, 0
	deadline := time.Now().Add(t.Within(10 * time.Second))
	for len(seen) < 6 && time.Now().Before(deadline) {
		if m := t.TryReceive(s1, 50*time.Millisecond); m != nil {
			seen[m.Body]++
			n1++
		}
		if m := t.TryReceive(s2, 50*time.Millisecond); m != nil {
			seen[m.Body]++
			n2++
		}
	}
	t.Expect(len(seen) == 6, "received %d distinct messages of 6", len(seen))
	for b, n := range seen {
		t.Expect(n == 1, "%s received %d times", b, n)
	}
	t.NoMessage(s1)
	t.NoMessage(s2)
	t.Note("split %d/%d", n1, n2)
	t.Close(c1)
	t.Close(c2)
	t.Send(p, tp, &Message{Body: "meanwhile", Persistent: Persistent})
	s3 := t.Subscribe(t.Dial(), tp, o)
	if durable {
		t.ReceiveBody(s3, "meanwhile")
	} else {
		t.NoMessage(s3)
	}
}

// requestReply runs a request over a and a reply over b to a temporary
// queue made on a.
func requestReply(t *T, a, b Driver) {
	req := t.DialOn(a)
	replies, tmp := t.Temporary(req, TempQueue)
	q := t.Queue()
	t.Send(req, q, &Message{Body: "ping", ReplyTo: &tmp, CorrelationID: "rr-1"})
	resp := t.DialOn(b)
	m := t.ReceiveBody(t.Subscribe(resp, q, SubOptions{}), "ping")
	t.Expect(m.ReplyTo != nil, "the request has no JMSReplyTo")
	t.Expect(m.ReplyTo.Kind == TempQueue, "JMSReplyTo %v is not a temporary queue", m.ReplyTo)
	t.Send(resp, *m.ReplyTo, &Message{Body: "pong", CorrelationID: m.CorrelationID})
	r := t.ReceiveBody(replies, "pong")
	t.Expect(r.CorrelationID == "rr-1", "reply JMSCorrelationID %q", r.CorrelationID)
}
