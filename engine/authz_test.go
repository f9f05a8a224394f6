package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"golang.org/x/crypto/bcrypt"
)

// securedRealm has alice (send, consume, browse, create on queues orders.*;
// subscribe and durable on topics prices.*) and bob (consume on orders.*,
// subscribe on prices.*), and grants nothing else.
func securedRealm(t testing.TB) *security.Realm {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	r, err := security.New(security.Options{
		Users: []security.User{
			{Name: "alice", PasswordHash: string(h), Roles: []string{"orders", "prices"}},
			{Name: "bob", PasswordHash: string(h), Roles: []string{"reader"}},
		},
		Grants: []security.Grant{
			{Role: "orders", Kind: "queue", Match: "orders.*", Actions: []string{"send", "consume", "browse", "create"}},
			{Role: "prices", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe", "durable", "send", "create"}},
			{Role: "reader", Kind: "queue", Match: "orders.*", Actions: []string{"consume"}},
			{Role: "reader", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe"}},
		},
		FailureDelay: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// login connects as user through the realm, as a front-end does.
func login(t *testing.T, h *harness, r *security.Realm, user, clientID string) *engine.Connection {
	t.Helper()
	id, err := r.Login(context.Background(), security.Attempt{Protocol: "test"}, user, "pw")
	if err != nil {
		t.Fatal(err)
	}
	c := h.conn(engine.ConnectionOptions{User: id.User, Permissions: id.Permissions, ClientID: clientID, Protocol: "test"})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func wantDenied(t *testing.T, err error, words ...string) {
	t.Helper()
	if engine.CodeOf(err) != engine.CodeSecurity {
		t.Fatalf("err = %v (%v), want a JMSSecurityException", err, engine.CodeOf(err))
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestAuthorizationDecisionPoints(t *testing.T) {
	ctx := context.Background()
	orders := message.Destination{Kind: message.Queue, Name: "orders.eu"}
	other := message.Destination{Kind: message.Queue, Name: "payroll"}
	prices := message.Destination{Kind: message.Topic, Name: "prices.fx"}
	var denied []string
	var mu sync.Mutex
	h := newBroker(t, engine.Config{ObserveDenied: func(p string, a engine.Action) {
		mu.Lock()
		denied = append(denied, p+"/"+a.String())
		mu.Unlock()
	}})
	r := securedRealm(t)
	alice := login(t, h, r, "alice", "alice-app")
	bob := login(t, h, r, "bob", "bob-app")
	as := h.session(alice, engine.AutoAcknowledge)
	bs := h.session(bob, engine.AutoAcknowledge)

	// alice creates orders.eu by sending to it and may consume and browse
	// it; she creates prices.fx by subscribing.
	send(t, as, orders, "one", engine.SendOptions{})
	if _, err := as.CreateConsumer(prices, engine.ConsumerOptions{}); err != nil {
		t.Fatalf("alice subscribe: %v", err)
	}
	if _, err := as.CreateBrowser(orders, ""); err != nil {
		t.Fatalf("alice browse: %v", err)
	}

	cases := []struct {
		name  string
		do    func() error
		words []string
	}{
		{"bob send (named producer)", func() error { _, err := bs.CreateProducer(orders); return err }, []string{"bob", "send", "/queue/orders.eu"}},
		{"bob send (anonymous producer)", func() error {
			p, err := bs.CreateProducer(message.Destination{})
			if err != nil {
				return err
			}
			return p.SendTo(ctx, orders, text("x"), engine.SendOptions{})
		}, []string{"send"}},
		{"bob send in a transaction", func() error {
			p, err := bs.CreateProducer(message.Destination{})
			if err != nil {
				return err
			}
			tx, err := bob.BeginTxn()
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx)
			return p.SendIn(ctx, tx, orders, text("x"), engine.SendOptions{})
		}, []string{"send"}},
		{"bob browse", func() error { _, err := bs.CreateBrowser(orders, ""); return err }, []string{"browse", "orders.eu"}},
		{"alice consume other queue", func() error {
			_, err := as.CreateConsumer(other, engine.ConsumerOptions{})
			return err
		}, []string{"alice", "consume", "payroll"}},
		{"alice send creates nothing outside her grant", func() error {
			_, err := as.CreateProducer(other)
			return err
		}, []string{"send", "payroll"}},
		{"bob durable subscription", func() error {
			_, err := bs.CreateConsumer(prices, engine.ConsumerOptions{Durable: true, SubscriptionName: "s"})
			return err
		}, []string{"durable", "prices.fx"}},
		{"bob shared subscription", func() error {
			_, err := bs.CreateConsumer(prices, engine.ConsumerOptions{Shared: true, SubscriptionName: "sh"})
			return err
		}, []string{"durable"}},
		{"alice subscribe other topic", func() error {
			_, err := as.CreateConsumer(message.Destination{Kind: message.Topic, Name: "news"}, engine.ConsumerOptions{})
			return err
		}, []string{"subscribe", "/topic/news"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantDenied(t, c.do(), c.words...) })
	}
	if n := h.depth(orders); n != 1 {
		t.Errorf("orders.eu holds %d messages, want 1: a denied send stored something", n)
	}
	if _, err := h.b.DestinationInfo(other); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("payroll: %v, want not found: a denied send created it", err)
	}

	// What is granted works: bob consumes what alice sends; both subscribe.
	bc := consumer(t, bs, orders, engine.ConsumerOptions{})
	if got := string(recv(t, bc).Msg.Body.Data); got != "one" {
		t.Errorf("bob got %q", got)
	}
	if _, err := bs.CreateConsumer(prices, engine.ConsumerOptions{}); err != nil {
		t.Errorf("bob subscribe: %v", err)
	}
	dc, err := as.CreateConsumer(prices, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"})
	if err != nil {
		t.Fatalf("alice durable: %v", err)
	}
	_ = dc.Close()
	if err := as.Unsubscribe(ctx, "d"); err != nil {
		t.Errorf("alice unsubscribe: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(denied) != len(cases) || denied[0] != "test/send" {
		t.Errorf("ObserveDenied saw %v, want one per refusal", denied)
	}
}

func TestUnsubscribeNeedsDurable(t *testing.T) {
	ctx := context.Background()
	prices := message.Destination{Kind: message.Topic, Name: "prices.fx"}
	h := newBroker(t, engine.Config{})
	r := securedRealm(t)
	// A subscription made by an unsecured connection with bob's client ID.
	open := h.conn(engine.ConnectionOptions{ClientID: "shared-id", ClientIDPolicy: engine.Unrestricted})
	c := consumer(t, h.session(open, engine.AutoAcknowledge), prices, engine.ConsumerOptions{Durable: true, SubscriptionName: "keep"})
	_ = c.Close()
	id, err := r.Login(ctx, security.Attempt{}, "bob", "pw")
	if err != nil {
		t.Fatal(err)
	}
	bob := h.conn(engine.ConnectionOptions{User: "bob", Permissions: id.Permissions, ClientID: "shared-id", ClientIDPolicy: engine.Unrestricted})
	bs := h.session(bob, engine.AutoAcknowledge)
	wantDenied(t, bs.Unsubscribe(ctx, "keep"), "durable", "prices.fx")
	// Attaching to the existing subscription needs only subscribe.
	if _, err := bs.CreateConsumer(prices, engine.ConsumerOptions{Durable: true, SubscriptionName: "keep"}); err != nil {
		t.Errorf("bob attaching to an existing durable subscription: %v", err)
	}
}

func TestTemporaryDestinationsNeedNoGrant(t *testing.T) {
	h := newBroker(t, engine.Config{})
	r := securedRealm(t)
	bob := login(t, h, r, "bob", "")
	alice := login(t, h, r, "alice", "")
	bs, as := h.session(bob, engine.AutoAcknowledge), h.session(alice, engine.AutoAcknowledge)
	tq, err := bs.CreateTemporaryQueue()
	if err != nil {
		t.Fatal(err)
	}
	c := consumer(t, bs, tq, engine.ConsumerOptions{})
	send(t, as, tq, "reply", engine.SendOptions{}) // a reply address anyone may answer
	if got := string(recv(t, c).Msg.Body.Data); got != "reply" {
		t.Errorf("got %q", got)
	}
	if _, err := as.CreateConsumer(tq, engine.ConsumerOptions{}); engine.CodeOf(err) != engine.CodeInvalidDestination {
		t.Errorf("alice consuming bob's temporary queue: %v, want refused as today", err)
	}
}

func TestJMSXUserID(t *testing.T) {
	orders := message.Destination{Kind: message.Queue, Name: "orders.eu"}
	r := securedRealm(t)
	forged := func() *message.Message {
		m := text("x")
		m.Props.SetUnchecked(message.PropUserID, message.StringValue("mallory"))
		return m
	}
	for _, c := range []struct {
		name    string
		stamp   bool
		secured bool
		want    string // "" = absent
	}{
		{"stamped", true, true, "alice"},
		{"secured without stamping drops the client's value", false, true, ""},
		{"security off keeps it", false, false, "mallory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newBroker(t, engine.Config{StampUserID: c.stamp})
			var conn *engine.Connection
			if c.secured {
				conn = login(t, h, r, "alice", "")
			} else {
				conn = h.conn(engine.ConnectionOptions{})
				if err := conn.Start(); err != nil {
					t.Fatal(err)
				}
			}
			s := h.session(conn, engine.AutoAcknowledge)
			p, err := s.CreateProducer(orders)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Send(context.Background(), forged(), engine.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			d := recv(t, consumer(t, s, orders, engine.ConsumerOptions{}))
			v, ok := d.Msg.Props.Get(message.PropUserID)
			if got := v.S; !ok && c.want != "" || ok && got != c.want {
				t.Errorf("JMSXUserID = %q (present %v), want %q", got, ok, c.want)
			}
		})
	}
}

// BenchmarkAuthorizedSend measures what authorization adds to a
// non-persistent send: security off, and a user whose role has 100 grants
// (the decision is cached per connection, so the grants are searched
// once).
func BenchmarkAuthorizedSend(b *testing.B) {
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	grants := make([]security.Grant, 100)
	for i := range grants {
		grants[i] = security.Grant{Role: "r", Kind: "queue", Match: "app" + string(rune('a'+i%26)) + ".*", Actions: []string{"send", "consume", "create"}}
	}
	grants[99].Match = "bench.*"
	r, err := security.New(security.Options{Users: []security.User{{Name: "u", PasswordHash: string(h), Roles: []string{"r"}}}, Grants: grants})
	if err != nil {
		b.Fatal(err)
	}
	id, err := r.Login(context.Background(), security.Attempt{}, "u", "pw")
	if err != nil {
		b.Fatal(err)
	}
	dest := message.Destination{Kind: message.Queue, Name: "bench.q"}
	for _, c := range []struct {
		name string
		opts engine.ConnectionOptions
	}{{"off", engine.ConnectionOptions{}}, {"100grants", engine.ConnectionOptions{User: "u", Permissions: id.Permissions}}} {
		b.Run(c.name, func(b *testing.B) {
			eb, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
			if err != nil {
				b.Fatal(err)
			}
			defer eb.Close()
			conn, err := eb.Connect(c.opts)
			if err != nil {
				b.Fatal(err)
			}
			s, _ := conn.CreateSession(engine.AutoAcknowledge)
			p, err := s.CreateProducer(message.Destination{})
			if err != nil {
				b.Fatal(err)
			}
			cons, err := s.CreateConsumer(dest, engine.ConsumerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := conn.Start(); err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m := &message.Message{DeliveryMode: message.NonPersistent, Body: message.Body{Kind: message.BodyBytes, Data: body}}
				if err := p.SendTo(context.Background(), dest, m, engine.SendOptions{DeliveryMode: message.NonPersistent, Set: engine.SetDeliveryMode}); err != nil {
					b.Fatal(err)
				}
				if _, err := cons.Receive(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
