package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Tests of WebLogic JMS "Managing Your Applications", sections "Managing
// Connections", "Managing Sessions", "Managing Destinations", "Using Temporary
// Destinations", "Setting Up Durable Subscriptions" and "Browsing Header and
// Property Fields" (issue 7) over the engine API.

var topicU = message.Destination{Kind: message.Topic, Name: "u"}

// WebLogic JMS "Managing Your Applications", "Setting the Client ID Policy"
// and "Defining the Client ID": "If a client ID is already defined for the
// connection, an IllegalStateException is thrown. If the specified client ID
// is already defined for another connection, an InvalidClientIDException is
// thrown"; RESTRICTED allows one connection per client ID, UNRESTRICTED
// connections "can specify any Client ID, even when other restricted or
// unrestricted connections already use the same Client ID".
func TestClientIDPolicies(t *testing.T) {
	R, U := engine.Restricted, engine.Unrestricted
	cases := []struct {
		first, second engine.ClientIDPolicy
		want          *engine.Error // for the second connection; nil = accepted
	}{
		{R, R, engine.ErrInvalidClientID},
		{U, R, engine.ErrInvalidClientID},
		{R, U, nil},
		{U, U, nil},
	}
	for _, tc := range cases {
		for _, via := range []string{"SetClientID", "factory"} {
			t.Run(fmt.Sprintf("%v-then-%v-%s", tc.first, tc.second, via), func(t *testing.T) {
				h := newBroker(t, engine.Config{})
				c1 := h.conn(engine.ConnectionOptions{ClientIDPolicy: tc.first, ClientID: "app"})
				if c1.ClientID() != "app" || c1.ClientIDPolicy() != tc.first {
					t.Fatalf("client ID %q policy %v", c1.ClientID(), c1.ClientIDPolicy())
				}
				var err error
				if via == "factory" {
					var c2 *engine.Connection
					c2, err = h.b.Connect(engine.ConnectionOptions{ClientIDPolicy: tc.second, ClientID: "app"})
					if err == nil {
						defer c2.Close()
					}
				} else {
					c2 := h.conn(engine.ConnectionOptions{ClientIDPolicy: tc.second})
					err = c2.SetClientID("app")
				}
				if tc.want == nil {
					if err != nil {
						t.Fatalf("second connection refused: %v", err)
					}
					return
				}
				wantCode(t, "second connection", err, tc.want)
				// Released when the first connection closes.
				_ = c1.Close()
				c3 := h.conn(engine.ConnectionOptions{ClientIDPolicy: tc.second})
				if err := c3.SetClientID("app"); err != nil {
					t.Fatalf("after the holder closed: %v", err)
				}
			})
		}
	}
}

func TestClientIDSetOnce(t *testing.T) {
	h := newBroker(t, engine.Config{})
	for _, policy := range []engine.ClientIDPolicy{engine.Restricted, engine.Unrestricted} {
		c := h.conn(engine.ConnectionOptions{ClientIDPolicy: policy, ClientID: "from-factory-" + policy.String()})
		wantCode(t, "set after factory", c.SetClientID("x"), engine.ErrIllegalState)
		wantCode(t, "set same again", c.SetClientID(c.ClientID()), engine.ErrIllegalState)
		c2 := h.conn(engine.ConnectionOptions{ClientIDPolicy: policy})
		if c2.ClientID() != "" {
			t.Fatal("client ID before set")
		}
		if err := c2.SetClientID("by-app-" + policy.String()); err != nil {
			t.Fatal(err)
		}
		wantCode(t, "second set", c2.SetClientID("other"), engine.ErrIllegalState)
		if c2.ClientID() != "by-app-"+policy.String() {
			t.Fatalf("client ID changed to %q", c2.ClientID())
		}
	}
	if err := h.conn(engine.ConnectionOptions{}).SetClientID(""); err == nil {
		t.Fatal("empty client ID accepted")
	}
}

// WebLogic JMS "Managing Your Applications", "Setting the Client ID Policy":
// "Subscriptions created with different Client ID policies are always treated
// as independent subscriptions"; "Two durable subscriptions with the same
// Client ID and Subscription Name are treated as two different independent
// subscriptions if they have a different Client ID Policy."
func TestSubscriptionsUnderDifferentClientIDPoliciesAreIndependent(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	r := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	u := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted})
	rs, us := h.session(r, engine.AutoAcknowledge), h.session(u, engine.AutoAcknowledge)
	opts := engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"}
	rc := consumer(t, rs, topicT, opts)
	uc := consumer(t, us, topicT, opts) // not "already active": another subscription
	_ = r.Start()
	_ = u.Start()
	send(t, rs, topicT, "both", engine.SendOptions{})
	if body(recv(t, rc)) != "both" || body(recv(t, uc)) != "both" {
		t.Fatal("each subscription gets its own copy")
	}
	_ = uc.Close()
	if err := us.Unsubscribe(context.Background(), "sub"); err != nil {
		t.Fatal(err)
	}
	send(t, rs, topicT, "after", engine.SendOptions{})
	if body(recv(t, rc)) != "after" {
		t.Fatal("unsubscribing the unrestricted one removed the restricted one")
	}
}

// WebLogic JMS "Managing Your Applications", "Creating Subscribers for a
// Durable Subscription": "Valid durable subscription names cannot include the
// following characters: comma ",", equals "=", colon ":", asterisk "*",
// percent "%", or question mark "?"."
func TestDurableSubscriptionNames(t *testing.T) {
	h := newBroker(t, engine.Config{})
	s := h.session(h.conn(engine.ConnectionOptions{ClientID: "cid"}), engine.AutoAcknowledge)
	for _, name := range []string{"a,b", "a=b", "a:b", "a*b", "a%b", "a?b", ",", ""} {
		for _, shared := range []bool{false, true} {
			if c, err := s.CreateConsumer(topicT, engine.ConsumerOptions{Durable: true, Shared: shared, SubscriptionName: name}); err == nil {
				_ = c.Close()
				t.Errorf("name %q (shared %v) accepted", name, shared)
			}
		}
	}
	for _, name := range []string{"orders", "a-b_c.d", "ünïcode", "with space"} {
		c, err := s.CreateConsumer(topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: name})
		if err != nil {
			t.Fatalf("name %q refused: %v", name, err)
		}
		_ = c.Close()
	}
	// "To support durable subscriptions, a client identifier (client ID)
	// must be defined for the connection."
	anon := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	if _, err := anon.CreateConsumer(topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "x"}); err == nil {
		t.Fatal("durable subscription without a client ID")
	}
	// "Durable subscriptions should not be created for a temporary topic."
	tmp, err := s.CreateTemporaryTopic()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConsumer(tmp, engine.ConsumerOptions{Durable: true, SubscriptionName: "x"}); err == nil {
		t.Fatal("durable subscription on a temporary topic")
	}
}

// WebLogic JMS "Managing Your Applications", "Setting Up Durable
// Subscriptions": "WebLogic JMS stores a message in a persistent file or
// database until the message has been delivered to the subscribers or has
// expired, even if those subscribers are not active"; non-durable subscribers
// only get messages while active.
func TestDurableSubscriptionKeepsMessagesForInactiveSubscribers(t *testing.T) {
	clock := newClock()
	h := newPersistent(t, "", engine.Config{Now: clock.Now})
	opts := func(name string) engine.ConsumerOptions {
		return engine.ConsumerOptions{Durable: true, SubscriptionName: name}
	}
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s := h.session(c, engine.AutoAcknowledge)
	active := consumer(t, s, topicT, opts("active"))
	_ = consumer(t, s, topicT, opts("away")).Close()
	plain := consumer(t, s, topicT, engine.ConsumerOptions{})
	_ = c.Start()
	send(t, s, topicT, "1", engine.SendOptions{})
	send(t, s, topicT, "2", engine.SendOptions{})
	send(t, s, topicT, "short", engine.SendOptions{Set: engine.SetTimeToLive, TimeToLive: time.Minute})
	send(t, s, topicT, "np", engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.NonPersistent})
	for _, want := range []string{"1", "2", "short", "np"} {
		if body(recv(t, active)) != want || body(recv(t, plain)) != want {
			t.Fatal("active subscribers")
		}
	}
	clock.Add(time.Hour) // "short" expires
	h.restart()

	c = h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s = h.session(c, engine.AutoAcknowledge)
	away := consumer(t, s, topicT, opts("away"))
	active = consumer(t, s, topicT, opts("active"))
	_ = c.Start()
	if got := bodies(recvAll(t, away, 50*time.Millisecond)); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("inactive durable subscriber got %v after restart, want [1 2] (expired and non-persistent gone)", got)
	}
	recvNone(t, active, 30*time.Millisecond)
}

// WebLogic JMS "Managing Your Applications", "Deleting Durable Subscriptions":
// "You cannot delete a durable subscription if any of the following are true:
// A TopicSubscriber is still active on the session. A message received by the
// durable subscription is part of a transaction or has not yet been
// acknowledged in the session."
func TestUnsubscribeRefused(t *testing.T) {
	type step func(t *testing.T, s *engine.Session, c *engine.Connection, d message.Delivery) error
	cases := []struct {
		name    string
		mode    engine.AckMode
		hold    step // leaves the subscription's message unsettled (consumer closed)
		release step // settles it
	}{
		{"unacknowledged", engine.ClientAcknowledge, nil,
			func(t *testing.T, s *engine.Session, _ *engine.Connection, d message.Delivery) error {
				return s.Acknowledge(context.Background(), d.Tag)
			}},
		{"in-session-transaction", engine.Transacted, nil,
			func(t *testing.T, s *engine.Session, _ *engine.Connection, _ message.Delivery) error {
				return s.Commit(context.Background())
			}},
		{"rolled-back-then-deletable", engine.Transacted, nil,
			func(t *testing.T, s *engine.Session, _ *engine.Connection, _ message.Delivery) error {
				return s.Rollback(context.Background())
			}},
		{"recovered-then-deletable", engine.ClientAcknowledge, nil,
			func(t *testing.T, s *engine.Session, _ *engine.Connection, _ message.Delivery) error {
				return s.Recover(context.Background())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
			s := h.session(c, tc.mode)
			opts := engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"}
			sub := consumer(t, s, topicT, opts)
			_ = c.Start()
			send(t, h.session(c, engine.AutoAcknowledge), topicT, "m", engine.SendOptions{})
			d := recv(t, sub)
			wantCode(t, "unsubscribe while active", s.Unsubscribe(context.Background(), "sub"), engine.ErrIllegalState)
			_ = sub.Close()
			wantCode(t, "unsubscribe with the message unsettled", s.Unsubscribe(context.Background(), "sub"), engine.ErrIllegalState)
			other := h.session(c, engine.AutoAcknowledge)
			wantCode(t, "unsubscribe from another session", other.Unsubscribe(context.Background(), "sub"), engine.ErrIllegalState)
			if err := tc.release(t, s, c, d); err != nil {
				t.Fatal(err)
			}
			if err := s.Unsubscribe(context.Background(), "sub"); err != nil {
				t.Fatalf("unsubscribe after settling: %v", err)
			}
			// The subscription and its message are gone.
			again := consumer(t, s, topicT, opts)
			recvNone(t, again, 30*time.Millisecond)
		})
	}
	t.Run("explicit-transaction", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
		s := h.session(c, engine.ClientAcknowledge)
		sub := consumer(t, s, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"})
		_ = c.Start()
		send(t, h.session(c, engine.AutoAcknowledge), topicT, "m", engine.SendOptions{})
		d := recv(t, sub)
		_ = sub.Close()
		tx, err := c.BeginTxn()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AcknowledgeIn(tx, d.Tag); err != nil {
			t.Fatal(err)
		}
		wantCode(t, "unsubscribe with the ack in a transaction", s.Unsubscribe(context.Background(), "sub"), engine.ErrIllegalState)
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Unsubscribe(context.Background(), "sub"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		s := h.session(h.conn(engine.ConnectionOptions{ClientID: "cid"}), engine.AutoAcknowledge)
		wantCode(t, "unknown subscription", s.Unsubscribe(context.Background(), "nope"), engine.ErrInvalidDestination)
	})
}

// WebLogic JMS "Managing Your Applications", "Modifying Durable
// Subscriptions": re-creating a durable subscription of the same name with a
// different topic, selector or noLocal deletes the old one implicitly; the
// subscription "is recreated based on the new values".
func TestDurableSubscriptionRecreatedWithChanges(t *testing.T) {
	base := engine.ConsumerOptions{Durable: true, SubscriptionName: "sub", Selector: "n > 0"}
	cases := []struct {
		name     string
		topic    message.Destination
		opts     engine.ConsumerOptions
		keepsOld bool
	}{
		{"same", topicT, base, true},
		{"other-topic", topicU, base, false},
		{"other-selector", topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub", Selector: "n > 1"}, false},
		{"no-selector", topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"}, false},
		{"noLocal", topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub", Selector: "n > 0", NoLocal: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPersistent(t, "", engine.Config{})
			c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
			s := h.session(c, engine.AutoAcknowledge)
			_ = consumer(t, s, topicT, base).Close()
			pub := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
			for i := 1; i <= 2; i++ {
				sendMsg(t, pub, topicT, withProp(fmt.Sprint("old", i), "n", message.IntValue(5)), engine.SendOptions{})
			}
			sub := consumer(t, s, tc.topic, tc.opts)
			_ = c.Start()
			old := bodies(recvAll(t, sub, 50*time.Millisecond))
			if tc.keepsOld != (fmt.Sprint(old) == "[old1 old2]") || (!tc.keepsOld && len(old) != 0) {
				t.Fatalf("re-created subscription got %v", old)
			}
			// New messages follow the new definition.
			sendMsg(t, pub, tc.topic, withProp("new", "n", message.IntValue(5)), engine.SendOptions{})
			if d := recv(t, sub); body(d) != "new" {
				t.Fatalf("got %q", body(d))
			}
			if tc.opts.NoLocal {
				sendMsg(t, s, tc.topic, withProp("local", "n", message.IntValue(5)), engine.SendOptions{})
				recvNone(t, sub, 30*time.Millisecond)
			}
			_ = sub.Close()
			_ = c.Close()
			h.restart()
			c = h.conn(engine.ConnectionOptions{ClientID: "cid"})
			sub = consumer(t, h.session(c, engine.AutoAcknowledge), tc.topic, tc.opts)
			_ = c.Start()
			recvNone(t, sub, 50*time.Millisecond) // nothing stale after a restart
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Creating a Sharable Subscription
// Policy": Exclusive (default) subscribers cannot share; Sharable ones can,
// "consumers can share a durable subscription only if they have the same
// Client ID, Client ID Policy, and Subscription Name"; the policy can be
// overridden on the connection (setSubscriptionSharingPolicy).
func TestSubscriptionSharingPolicy(t *testing.T) {
	opts := engine.ConsumerOptions{Durable: true, SubscriptionName: "work", Prefetch: 1}
	t.Run("exclusive-refuses-a-second", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c1 := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted})
		c2 := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted})
		if c1.SharingPolicy() != engine.Exclusive {
			t.Fatal("default sharing policy is not Exclusive")
		}
		_ = consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
		if _, err := h.session(c2, engine.AutoAcknowledge).CreateConsumer(topicT, opts); err == nil {
			t.Fatal("second subscriber on an exclusive subscription")
		}
		if _, err := h.session(c1, engine.AutoAcknowledge).CreateConsumer(topicT, opts); err == nil {
			t.Fatal("second subscriber on the same connection")
		}
		// A sharable latecomer cannot join an exclusive subscriber either.
		c2.SetSharingPolicy(engine.Sharable)
		if _, err := h.session(c2, engine.AutoAcknowledge).CreateConsumer(topicT, opts); err == nil {
			t.Fatal("sharable subscriber joined an exclusive one")
		}
	})
	t.Run("sharable-shares", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c1 := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted, SharingPolicy: engine.Sharable})
		c2 := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted})
		c2.SetSharingPolicy(engine.Sharable)
		if c2.SharingPolicy() != engine.Sharable {
			t.Fatal("SetSharingPolicy not kept")
		}
		a := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
		b := consumer(t, h.session(c2, engine.AutoAcknowledge), topicT, opts)
		_ = c1.Start()
		_ = c2.Start()
		checkDistributed(t, h, []*engine.Consumer{a, b}, topicT, 20)
	})
	t.Run("different-client-id-policy-is-another-subscription", func(t *testing.T) {
		h := newBroker(t, engine.Config{})
		c1 := h.conn(engine.ConnectionOptions{ClientID: "cid", SharingPolicy: engine.Sharable})
		c2 := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted, SharingPolicy: engine.Sharable})
		a := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
		b := consumer(t, h.session(c2, engine.AutoAcknowledge), topicT, opts)
		_ = c1.Start()
		_ = c2.Start()
		send(t, h.session(c1, engine.AutoAcknowledge), topicT, "m", engine.SendOptions{})
		if body(recv(t, a)) != "m" || body(recv(t, b)) != "m" {
			t.Fatal("independent subscriptions each get the message")
		}
	})
}

// checkDistributed publishes n messages to dest and checks that the
// consumers of one shared subscription receive each exactly once between
// them, every consumer some.
func checkDistributed(t *testing.T, h *harness, cs []*engine.Consumer, dest message.Destination, n int) {
	t.Helper()
	ps := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	for i := 0; i < n; i++ {
		send(t, ps, dest, fmt.Sprint(i), engine.SendOptions{})
	}
	seen := map[string]bool{}
	per := make([]int, len(cs))
	for round := 0; round < 10*n && len(seen) < n; round++ {
		for i, c := range cs {
			d, ok, err := c.ReceiveTimeout(20 * time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			if seen[body(d)] {
				t.Fatalf("%q delivered twice", body(d))
			}
			seen[body(d)] = true
			per[i]++
		}
	}
	if len(seen) != n {
		t.Fatalf("received %d of %d", len(seen), n)
	}
	for i, k := range per {
		if k == 0 {
			t.Fatalf("consumer %d got nothing: %v", i, per)
		}
	}
	for _, c := range cs {
		recvNone(t, c, 20*time.Millisecond)
	}
}

// JMS 2.0 shared subscriptions (ConsumerOptions.Shared), durable and not:
// the consumers of one subscription compete for its messages, while every
// other subscription still gets its own copy.
func TestJMS2SharedSubscriptions(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprint("durable=", durable), func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			opts := engine.ConsumerOptions{Shared: true, Durable: durable, SubscriptionName: "jobs", Prefetch: 1}
			c1 := h.conn(engine.ConnectionOptions{})
			c2 := h.conn(engine.ConnectionOptions{})
			a := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
			b := consumer(t, h.session(c2, engine.AutoAcknowledge), topicT, opts)
			plain := consumer(t, h.session(c2, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{})
			_ = c1.Start()
			_ = c2.Start()
			checkDistributed(t, h, []*engine.Consumer{a, b}, topicT, 20)
			if got := len(recvAll(t, plain, 30*time.Millisecond)); got != 20 {
				t.Fatalf("a separate subscriber got %d of 20", got)
			}
			// Changing the selector of an active shared subscription is refused.
			changed := opts
			changed.Selector = "n > 1"
			if _, err := h.session(c1, engine.AutoAcknowledge).CreateConsumer(topicT, changed); err == nil {
				t.Fatal("joined an active shared subscription with another selector")
			}
			_ = a.Close()
			_ = b.Close()
			send(t, h.session(c1, engine.AutoAcknowledge), topicT, "while-closed", engine.SendOptions{})
			again := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
			got := bodies(recvAll(t, again, 50*time.Millisecond))
			if durable && fmt.Sprint(got) != "[while-closed]" {
				t.Fatalf("durable shared subscription lost %v", got)
			}
			if !durable && len(got) != 0 {
				t.Fatalf("non-durable shared subscription outlived its consumers: %v", got)
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Using Temporary Destinations".
func TestTemporaryDestinations(t *testing.T) {
	for _, kind := range []string{"queue", "topic"} {
		t.Run(kind, func(t *testing.T) {
			h := newPersistent(t, "", engine.Config{})
			owner := h.conn(engine.ConnectionOptions{})
			os := h.session(owner, engine.AutoAcknowledge)
			var tmp message.Destination
			var err error
			if kind == "queue" {
				tmp, err = os.CreateTemporaryQueue()
			} else {
				tmp, err = os.CreateTemporaryTopic()
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tmp.Kind.IsTemporary() {
				t.Fatalf("kind %v", tmp.Kind)
			}
			cons := consumer(t, os, tmp, engine.ConsumerOptions{})
			_ = owner.Start()

			// Another connection may send (JMSReplyTo) but not consume.
			other := h.conn(engine.ConnectionOptions{})
			others := h.session(other, engine.AutoAcknowledge)
			if _, err := others.CreateConsumer(tmp, engine.ConsumerOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("other connection consuming: %v", err)
			}
			if kind == "queue" {
				if _, err := others.CreateBrowser(tmp, ""); err == nil {
					t.Fatal("other connection browsing a temporary queue")
				}
			}
			// "all PERSISTENT messages are silently made NON_PERSISTENT"
			before := h.st.Stats()
			m := send(t, others, tmp, "reply", engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.Persistent})
			if m.DeliveryMode != message.NonPersistent {
				t.Fatalf("delivery mode %v", m.DeliveryMode)
			}
			if d := recv(t, cons); body(d) != "reply" || d.Msg.DeliveryMode != message.NonPersistent {
				t.Fatal("owner did not receive a non-persistent reply")
			}
			if after := h.st.Stats(); after.Ops != before.Ops {
				t.Fatalf("temporary destination wrote %d store ops", after.Ops-before.Ops)
			}

			// Deleting one with an active consumer is refused; only its
			// connection may delete it.
			wantCode(t, "delete with a consumer", owner.DeleteTemporary(tmp), engine.ErrIllegalState)
			wantCode(t, "delete by another connection", other.DeleteTemporary(tmp), engine.ErrInvalidDestination)
			_ = cons.Close()
			if err := owner.DeleteTemporary(tmp); err != nil {
				t.Fatal(err)
			}
			p, _ := others.CreateProducer(message.Destination{})
			if err := p.SendTo(context.Background(), tmp, text("late"), engine.SendOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("send to a deleted temporary destination: %v", err)
			}

			// One that is not deleted lives as long as its connection.
			var tmp2 message.Destination
			if kind == "queue" {
				tmp2, _ = os.CreateTemporaryQueue()
			} else {
				tmp2, _ = os.CreateTemporaryTopic()
			}
			send(t, others, tmp2, "ok", engine.SendOptions{})
			_ = owner.Close()
			if err := p.SendTo(context.Background(), tmp2, text("late"), engine.SendOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("send after the owner closed: %v", err)
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "What Happens when a Destination
// is Deleted", for a queue.
func TestDeleteQueue(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("persistent=", persistent), func(t *testing.T) {
			h := newStrict(t, persistent, "", engine.Config{})
			h.create(queueA)
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			prod, err := s.CreateProducer(queueA)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				mode := message.Persistent
				if i == 2 {
					mode = message.NonPersistent
				}
				if err := prod.Send(context.Background(), text(fmt.Sprint(i)), engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: mode}); err != nil {
					t.Fatal(err)
				}
			}
			// A consumer with a pending receive, on a session with an
			// exception listener; another on a session without one (its
			// connection's listener hears instead).
			ls := h.session(c, engine.ClientAcknowledge)
			var mu sync.Mutex
			var sessErrs, connErrs []error
			ls.SetExceptionListener(func(err error) { mu.Lock(); sessErrs = append(sessErrs, err); mu.Unlock() })
			c.SetExceptionListener(func(err error) { mu.Lock(); connErrs = append(connErrs, err); mu.Unlock() })
			busy := consumer(t, ls, queueA, engine.ConsumerOptions{Selector: "nothing = 1"})
			quiet := consumer(t, h.session(c, engine.AutoAcknowledge), queueA, engine.ConsumerOptions{Selector: "nothing = 1"})
			_ = c.Start()
			pending := make(chan error, 1)
			go func() {
				d, ok, err := busy.ReceiveTimeout(time.Minute)
				if ok {
					err = fmt.Errorf("pending receive got %q", body(d))
				}
				pending <- err
			}()
			br, err := s.CreateBrowser(queueA, "")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // let the receive block (if not, it gets IllegalState)

			if err := h.b.DeleteDestination(context.Background(), queueA); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-pending:
				if err != nil && !errors.Is(err, engine.ErrConsumerClosed) && !errors.Is(err, engine.ErrIllegalState) {
					t.Fatalf("pending receive: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("pending receive did not return")
			}
			mu.Lock()
			if len(sessErrs) != 1 || len(connErrs) != 1 {
				t.Fatalf("session listener heard %v, connection listener %v", sessErrs, connErrs)
			}
			for _, err := range append(sessErrs, connErrs...) {
				if engine.CodeOf(err) != engine.CodeConsumerClosed || !strings.Contains(err.Error(), "Destination was deleted") {
					t.Fatalf("exception %v (%v)", err, engine.CodeOf(err))
				}
			}
			mu.Unlock()
			// "Attempts by an application to do anything but close() a
			// closed consumer will result in an IllegalStateException."
			if _, _, err := busy.ReceiveTimeout(10 * time.Millisecond); !errors.Is(err, engine.ErrIllegalState) {
				t.Fatalf("receive on a consumer closed by deletion: %v", err)
			}
			if err := quiet.SetListener(func(message.Delivery) {}); !errors.Is(err, engine.ErrIllegalState) {
				t.Fatalf("listener on a consumer closed by deletion: %v", err)
			}
			if err := busy.Close(); err != nil {
				t.Fatalf("close of a closed consumer: %v", err)
			}
			if _, err := br.Enumeration(); !errors.Is(err, engine.ErrIllegalState) {
				t.Fatalf("enumeration of a browser closed by deletion: %v", err)
			}

			// "as if the destination does not exist"
			if _, err := s.CreateProducer(queueA); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("new producer: %v", err)
			}
			if _, err := s.CreateConsumer(queueA, engine.ConsumerOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("new consumer: %v", err)
			}
			if _, err := s.CreateBrowser(queueA, ""); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("new browser: %v", err)
			}
			if err := prod.Send(context.Background(), text("x"), engine.SendOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("send by an existing producer: %v", err)
			}
			if _, err := h.b.Browse(queueA, ""); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("browse: %v", err)
			}
			wantCode(t, "delete twice", h.b.DeleteDestination(context.Background(), queueA), engine.ErrInvalidDestination)

			// Its messages are gone for good, also from the store.
			if persistent {
				h.restartStrict()
				if _, err := h.b.Browse(queueA, ""); !errors.Is(err, engine.ErrInvalidDestination) {
					t.Fatalf("deleted queue came back after restart: %v", err)
				}
			}
			h.create(queueA)
			if n := h.depth(queueA); n != 0 {
				t.Fatalf("re-created queue holds %d old messages", n)
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "What Happens when a Destination
// is Deleted": "all durable subscribers for the deleted destination are
// permanently deleted" and "all existing consumers for the deleted destination
// are closed", for a topic.
func TestDeleteTopic(t *testing.T) {
	h := newStrict(t, true, "", engine.Config{})
	h.create(topicT)
	c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s := h.session(c, engine.AutoAcknowledge)
	var got []error
	var mu sync.Mutex
	s.SetExceptionListener(func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() })
	durable := consumer(t, s, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"})
	_ = consumer(t, s, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "inactive"}).Close()
	plain := consumer(t, s, topicT, engine.ConsumerOptions{})
	send(t, s, topicT, "kept-for-inactive", engine.SendOptions{})
	if err := h.b.DeleteDestination(context.Background(), topicT); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 2 {
		t.Fatalf("exception listener heard %d errors, want 2 (one per consumer): %v", len(got), got)
	}
	mu.Unlock()
	for _, cons := range []*engine.Consumer{durable, plain} {
		if _, _, err := cons.ReceiveTimeout(10 * time.Millisecond); !errors.Is(err, engine.ErrIllegalState) {
			t.Fatalf("receive on a closed subscriber: %v", err)
		}
	}
	if _, err := s.CreateConsumer(topicT, engine.ConsumerOptions{}); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("subscriber on a deleted topic: %v", err)
	}
	wantCode(t, "unsubscribe a deleted topic's subscription", s.Unsubscribe(context.Background(), "inactive"), engine.ErrInvalidDestination)
	h.restartStrict()
	h.create(topicT)
	c = h.conn(engine.ConnectionOptions{ClientID: "cid"})
	s = h.session(c, engine.AutoAcknowledge)
	again := consumer(t, s, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "inactive"})
	_ = c.Start()
	recvNone(t, again, 50*time.Millisecond)
}

// WebLogic JMS "Managing Your Applications", "What Happens when a Destination
// is Deleted", "Closing of enumerations": what HasMoreElements and NextElement
// do after the browser's destination is deleted depends on the last call
// before.
func TestDeleteDestinationEnumerationRules(t *testing.T) {
	cases := []struct {
		name   string
		before func(t *testing.T, e *engine.Enumeration)
		// after the close: the calls and what they must give
		promised bool
	}{
		{"never-called", func(*testing.T, *engine.Enumeration) {}, false},
		{"last-hasMoreElements-true", func(t *testing.T, e *engine.Enumeration) {
			if !e.HasMoreElements() {
				t.Fatal("empty")
			}
		}, true},
		{"last-hasMoreElements-true-twice", func(t *testing.T, e *engine.Enumeration) {
			_, _ = e.NextElement()
			_ = e.HasMoreElements()
			if !e.HasMoreElements() {
				t.Fatal("empty")
			}
		}, true},
		{"last-nextElement", func(t *testing.T, e *engine.Enumeration) {
			if !e.HasMoreElements() {
				t.Fatal("empty")
			}
			if _, err := e.NextElement(); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"last-hasMoreElements-false", func(t *testing.T, e *engine.Enumeration) {
			for i := 0; i < 3; i++ {
				_, _ = e.NextElement()
			}
			if e.HasMoreElements() {
				t.Fatal("more than 3")
			}
		}, false},
	}
	for _, tc := range cases {
		for _, how := range []string{"deleted", "browser-closed"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				h := newStrict(t, false, "", engine.Config{})
				h.create(queueA)
				s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
				for i := 0; i < 3; i++ {
					send(t, s, queueA, fmt.Sprint(i), engine.SendOptions{})
				}
				br, err := s.CreateBrowser(queueA, "")
				if err != nil {
					t.Fatal(err)
				}
				e, err := br.Enumeration()
				if err != nil {
					t.Fatal(err)
				}
				tc.before(t, e)
				if how == "deleted" {
					if err := h.b.DeleteDestination(context.Background(), queueA); err != nil {
						t.Fatal(err)
					}
				} else {
					br.Close()
				}
				if tc.promised {
					// "Calls to hasMoreElements() made before the first call
					// to nextElement() will return true"; "The first call to
					// nextElement() will return a message"; then false and
					// NoSuchElementException.
					for i := 0; i < 2; i++ {
						if !e.HasMoreElements() {
							t.Fatal("hasMoreElements false before the promised element")
						}
					}
					if _, err := e.NextElement(); err != nil {
						t.Fatalf("promised element: %v", err)
					}
				}
				for i := 0; i < 2; i++ {
					if e.HasMoreElements() {
						t.Fatal("hasMoreElements true after close")
					}
					if _, err := e.NextElement(); err == nil {
						t.Fatal("nextElement returned an element after close")
					}
				}
			})
		}
	}
}

// WebLogic JMS "Managing Your Applications", "What Happens when a Destination
// is Deleted": "Blocking send operations cancelled — ... Send operations
// waiting for quota will receive a ResourceAllocationException" and
// "Uncommitted transactions unaffected — ... the net result ... is the
// deletion of the associated messages."
func TestDeleteDestinationBlockedSendsAndTransactions(t *testing.T) {
	t.Run("blocked-send", func(t *testing.T) {
		pols := newPolicies().set(queueA, func(p *engine.Policy) {
			p.MaxMessages = 1
			p.BlockingSendTimeout = time.Minute
		})
		h := newStrict(t, false, "", engine.Config{Policy: pols.get})
		h.create(queueA)
		s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
		send(t, s, queueA, "fills", engine.SendOptions{})
		p, _ := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge).CreateProducer(queueA)
		done := make(chan error, 1)
		go func() { done <- p.Send(context.Background(), text("waits"), engine.SendOptions{}) }()
		time.Sleep(200 * time.Millisecond) // let the send reach the quota wait
		select {
		case err := <-done:
			t.Fatalf("send over quota returned early: %v", err)
		default:
		}
		if err := h.b.DeleteDestination(context.Background(), queueA); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			wantCode(t, "blocked send", err, engine.ErrResourceAllocation)
		case <-time.After(5 * time.Second):
			t.Fatal("blocked send not cancelled by the deletion")
		}
	})
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("uncommitted-transaction/persistent=", persistent), func(t *testing.T) {
			h := newStrict(t, persistent, "", engine.Config{})
			h.create(queueA, queueB)
			c := h.conn(engine.ConnectionOptions{})
			ps := h.session(c, engine.AutoAcknowledge)
			send(t, ps, queueB, "to-consume", engine.SendOptions{})
			tx := h.session(c, engine.Transacted)
			cons := consumer(t, tx, queueB, engine.ConsumerOptions{})
			_ = c.Start()
			_ = recv(t, cons)
			p, _ := tx.CreateProducer(queueA)
			if err := p.Send(context.Background(), text("uncommitted"), engine.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			// Both destinations of the transaction go.
			for _, d := range []message.Destination{queueA, queueB} {
				if err := h.b.DeleteDestination(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatalf("commit after the deletion: %v", err)
			}
			if persistent {
				h.restartStrict()
				storeEmpty(t, h)
			}
			h.create(queueA, queueB)
			if n, m := h.depth(queueA), h.depth(queueB); n+m != 0 {
				t.Fatalf("deleted destinations hold %d and %d messages after the commit", n, m)
			}
		})
	}
	t.Run("uncommitted-transaction-rollback", func(t *testing.T) {
		h := newStrict(t, true, "", engine.Config{})
		h.create(queueB)
		c := h.conn(engine.ConnectionOptions{})
		send(t, h.session(c, engine.AutoAcknowledge), queueB, "to-consume", engine.SendOptions{})
		tx := h.session(c, engine.Transacted)
		cons := consumer(t, tx, queueB, engine.ConsumerOptions{})
		_ = c.Start()
		_ = recv(t, cons)
		if err := h.b.DeleteDestination(context.Background(), queueB); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.restartStrict()
		storeEmpty(t, h)
	})
}

// storeEmpty checks that no message or ref record is left in the store
// (destination records may remain).
func storeEmpty(t *testing.T, h *harness) {
	t.Helper()
	n := 0
	_ = h.st.Buckets(func(name string) error {
		if name == "dests" {
			return nil
		}
		return h.st.ForEach(name, func(k, _ []byte) error {
			n++
			t.Logf("left in %s: %x", name, k)
			return nil
		})
	})
	if n != 0 {
		t.Fatalf("%d records left in the store", n)
	}
}

// WebLogic JMS "Managing Your Applications", "Browsing Header and Property
// Fields": a queue browser, with or without a selector, shows the queue's
// messages in delivery order without consuming them; "You cannot browse topic
// message header and property fields."
func TestBrowsing(t *testing.T) {
	h := newBroker(t, engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.ClientAcknowledge)
	for i, p := range []uint8{4, 9, 4, 0, 9} {
		m := withProp(fmt.Sprintf("%d-%d", p, i), "n", message.IntValue(int32(i)))
		sendMsg(t, s, queueA, m, engine.SendOptions{Set: engine.SetPriority, Priority: p})
	}
	send(t, s, queueA, "scheduled", engine.SendOptions{Set: engine.SetTimeToDeliver, TimeToDeliver: time.Hour})
	cases := []struct{ sel, want string }{
		{"", "[9-1 9-4 4-0 4-2 0-3]"},
		{"n >= 2", "[9-4 4-2 0-3]"},
		{"JMSPriority > 4", "[9-1 9-4]"},
		{"n = 99", "[]"},
	}
	for _, tc := range cases {
		br, err := s.CreateBrowser(queueA, tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if br.Queue() != queueA || br.MessageSelector() != tc.sel {
			t.Fatalf("browser queue %v selector %q", br.Queue(), br.MessageSelector())
		}
		e, err := br.Enumeration()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := 0; i < 10 && e.HasMoreElements(); i++ {
			d, err := e.NextElement()
			if err != nil {
				t.Fatal(err)
			}
			if d.Msg.ID == "" || d.Msg.Timestamp == 0 || d.Msg.Destination != queueA {
				t.Fatalf("header fields missing: %+v", d.Msg)
			}
			got = append(got, body(d))
		}
		if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && got == nil) {
			t.Fatalf("selector %q: browsed %v, want %s", tc.sel, got, tc.want)
		}
		if _, err := e.NextElement(); err == nil {
			t.Fatal("nextElement past the end")
		}
		br.Close()
		if _, err := br.Enumeration(); !errors.Is(err, engine.ErrIllegalState) {
			t.Fatalf("enumeration of a closed browser: %v", err)
		}
	}
	if _, err := s.CreateBrowser(queueA, "n = "); !errors.Is(err, engine.ErrInvalidSelector) {
		t.Fatalf("bad selector: %v", err)
	}
	// Browsing consumed nothing; messages in flight are not shown.
	cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	d := recv(t, cons)
	if body(d) != "9-1" {
		t.Fatalf("first message %q", body(d))
	}
	if got := bodies(mustBrowse(t, h, queueA)); len(got) != 3 && len(got) != 4 {
		t.Fatalf("broker browse while one is in flight: %v", got)
	}
	// Topics cannot be browsed.
	for _, topic := range []message.Destination{topicT} {
		if _, err := s.CreateBrowser(topic, ""); !errors.Is(err, engine.ErrInvalidDestination) {
			t.Fatalf("topic browser: %v", err)
		}
		if _, err := h.b.Browse(topic, ""); !errors.Is(err, engine.ErrInvalidDestination) {
			t.Fatalf("topic browse: %v", err)
		}
	}
	tmpTopic, _ := s.CreateTemporaryTopic()
	if _, err := s.CreateBrowser(tmpTopic, ""); !errors.Is(err, engine.ErrInvalidDestination) {
		t.Fatalf("temporary topic browser: %v", err)
	}
}

// Quotas: a send that would exceed a destination's MaxMessages or MaxBytes
// waits up to BlockingSendTimeout for room, then fails with a
// resource-allocation error; it succeeds when a consumer frees room in time.
func TestQuotas(t *testing.T) {
	cases := []struct {
		name string
		pol  func(p *engine.Policy, size int64)
	}{
		{"max-messages", func(p *engine.Policy, _ int64) { p.MaxMessages = 2 }},
		{"max-bytes", func(p *engine.Policy, size int64) { p.MaxBytes = 2*size + size/2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pols := newPolicies()
			h := newBroker(t, engine.Config{Policy: pols.get})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.ClientAcknowledge)
			size := int64(send(t, s, queueB, "xxxxxxxx", engine.SendOptions{}).Size()) // as stamped
			pols.set(queueA, func(p *engine.Policy) { tc.pol(p, size) })
			p, _ := s.CreateProducer(queueA)
			sendOne := func() error { return p.Send(context.Background(), text("xxxxxxxx"), engine.SendOptions{}) }
			for i := 0; i < 2; i++ {
				if err := sendOne(); err != nil {
					t.Fatalf("send %d within quota: %v", i, err)
				}
			}
			// No blocking timeout: fails at once.
			wantCode(t, "over quota", sendOne(), engine.ErrResourceAllocation)
			// A blocking timeout: waits, then fails.
			pols.set(queueA, func(p *engine.Policy) { p.BlockingSendTimeout = 150 * time.Millisecond })
			start := time.Now()
			err := sendOne()
			wantCode(t, "over quota after waiting", err, engine.ErrResourceAllocation)
			if el := time.Since(start); el < 140*time.Millisecond {
				t.Fatalf("failed after %v, before the blocking-send timeout", el)
			}
			// Room made within the timeout: the send goes through. A
			// delivered, unacknowledged message still counts.
			pols.set(queueA, func(p *engine.Policy) { p.BlockingSendTimeout = time.Minute })
			cons := consumer(t, s, queueA, engine.ConsumerOptions{Prefetch: 1})
			_ = c.Start()
			d := recv(t, cons)
			done := make(chan error, 1)
			go func() { done <- sendOne() }()
			time.Sleep(30 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("send returned while the queue was full: %v", err)
			default:
			}
			if err := s.Acknowledge(context.Background(), d.Tag); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("send after room was made: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("blocked send did not proceed")
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Closing a Session" and
// "Starting, Stopping, and Closing a Connection": close "terminates the
// receipt of all pending messages" (a waiting receive returns without a
// message) and "waits until all message listeners that are currently
// processing messages have completed".
func TestCloseEndsPendingReceivesAndWaitsForListeners(t *testing.T) {
	for _, what := range []string{"session", "connection"} {
		t.Run(what, func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			waiting := consumer(t, s, queueB, engine.ConsumerOptions{})
			listened := consumer(t, s, queueA, engine.ConsumerOptions{})
			inside, release := make(chan struct{}), make(chan struct{})
			if err := listened.SetListener(func(message.Delivery) { close(inside); <-release }); err != nil {
				t.Fatal(err)
			}
			_ = c.Start()
			pending := make(chan error, 1)
			go func() {
				_, ok, err := waiting.ReceiveTimeout(time.Minute)
				if ok {
					err = errors.New("got a message")
				}
				pending <- err
			}()
			send(t, h.session(c, engine.AutoAcknowledge), queueA, "x", engine.SendOptions{})
			<-inside
			closed := make(chan struct{})
			go func() {
				if what == "session" {
					_ = s.Close()
				} else {
					_ = c.Close()
				}
				close(closed)
			}()
			select {
			case <-closed:
				t.Fatal("close returned while a listener was processing a message")
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("close did not return after the listener completed")
			}
			select {
			case err := <-pending:
				if err != nil && !errors.Is(err, engine.ErrConsumerClosed) && !errors.Is(err, engine.ErrIllegalState) {
					t.Fatalf("pending receive: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("pending receive not terminated by close")
			}
		})
	}
}

// WebLogic JMS "Managing Your Applications", "Defining a Session Exception
// Listener": "if a message listener is executing at the time a problem occurs,
// execution of the exception listener is blocked until the message listener
// completes its execution."
func TestExceptionListenerWaitsForMessageListener(t *testing.T) {
	h := newBroker(t, engine.Config{})
	h.create(queueA)
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	var mu sync.Mutex
	var order []string
	s.SetExceptionListener(func(err error) { mu.Lock(); order = append(order, "exception"); mu.Unlock() })
	cons := consumer(t, s, queueA, engine.ConsumerOptions{})
	inside, release := make(chan struct{}), make(chan struct{})
	_ = cons.SetListener(func(message.Delivery) {
		close(inside)
		<-release
		mu.Lock()
		order = append(order, "message")
		mu.Unlock()
	})
	_ = c.Start()
	send(t, h.session(c, engine.AutoAcknowledge), queueA, "x", engine.SendOptions{})
	<-inside
	deleted := make(chan error, 1)
	go func() { deleted <- h.b.DeleteDestination(context.Background(), queueA) }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[message exception]" {
		t.Fatalf("order %v", order)
	}
}
