package stomp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"
	gostompframe "github.com/go-stomp/stomp/v3/frame"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Passwords of the test realm's users.
const (
	alicePW = "alice-secret"
	bobPW   = "bob-secret"
)

// realmOptions are the test realm's users and grants. alice is a trader:
// she may send to, consume from, browse and create orders.* queues, and
// send to, subscribe to and keep durable subscriptions on prices.* topics.
// bob is a clerk: he may only send to orders.* queues and subscribe to
// prices.* topics. The guest role (for anonymous clients, when a test
// asks for it) may subscribe to prices.* topics.
func realmOptions(t testing.TB) security.Options {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	return security.Options{
		Users: []security.User{
			{Name: "alice", PasswordHash: hash(alicePW), Roles: []string{"trader"}},
			{Name: "bob", PasswordHash: hash(bobPW), Roles: []string{"clerk"}},
		},
		Grants: []security.Grant{
			{Role: "trader", Kind: "queue", Match: "orders.*", Actions: []string{"send", "consume", "browse", "create"}},
			{Role: "trader", Kind: "topic", Match: "prices.*", Actions: []string{"send", "subscribe", "durable"}},
			{Role: "clerk", Kind: "queue", Match: "orders.*", Actions: []string{"send"}},
			{Role: "clerk", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe"}},
			{Role: "guest", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe"}},
		},
		FailureDelay: -1, // no delay: TestFailedLoginIsDelayed checks it
	}
}

func newRealm(t testing.TB, opts security.Options) *security.Realm {
	t.Helper()
	r, err := security.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Destinations the secured brokers start with (AutoCreate stays on, for
// the create action).
var (
	ordersA  = message.Destination{Kind: message.Queue, Name: "orders.a"}
	billingA = message.Destination{Kind: message.Queue, Name: "billing.a"}
	pricesX  = message.Destination{Kind: message.Topic, Name: "prices.x"}
	newsX    = message.Destination{Kind: message.Topic, Name: "news.x"}
)

// startSecured runs an in-memory engine with cfg (AutoCreate as given) and
// the destinations above, and a STOMP server with realm on 127.0.0.1:0.
func startSecured(t testing.TB, cfg engine.Config, realm *security.Realm) (string, *engine.Broker) {
	t.Helper()
	eng, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []message.Destination{ordersA, billingA, pricesX, newsX} {
		if _, err := eng.CreateDestination(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return serveWith(t, eng, func() { _ = eng.Close() }, stomp.Options{Realm: realm}), eng
}

// dialQuick is dial for a connection that may get an ERROR: it ends with
// MustDisconnect, because go-stomp can deadlock a Disconnect that follows
// an ERROR (Send returns the ERROR before go-stomp marks the connection
// closed, and Disconnect then waits its 30s receipt timeout).
func dialQuick(t *testing.T, addr string, opts ...func(*gostomp.Conn) error) *gostomp.Conn {
	t.Helper()
	c, err := gostomp.Dial("tcp", addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.MustDisconnect() })
	return c
}

// serveWith serves STOMP with opts on eng at 127.0.0.1:0 until the test
// ends, then calls closeEng.
func serveWith(t testing.TB, eng *engine.Broker, closeEng func(), opts stomp.Options) string {
	t.Helper()
	addr, _ := serve(t, eng, closeEng, opts)
	return addr
}

// login dials as user (with its password from the realm above).
func login(t *testing.T, addr, user string, opts ...func(*gostomp.Conn) error) *gostomp.Conn {
	t.Helper()
	pw := map[string]string{"alice": alicePW, "bob": bobPW}[user]
	return dialQuick(t, addr, append([]func(*gostomp.Conn) error{gostomp.ConnOpt.Login(user, pw)}, opts...)...)
}

// roundTrip returns once the server has handled every frame c sent
// before it: a SEND to a temporary queue (which needs no permission) with
// a receipt.
func roundTrip(t *testing.T, c *gostomp.Conn) {
	t.Helper()
	if err := c.Send("/temp-queue/sync", "text/plain", nil, gostomp.SendOpt.Receipt); err != nil {
		t.Fatalf("round trip: %v", err)
	}
}

// first is the first thing a subscription gets: a message (nil error) or
// the ERROR frame's message.
func first(t *testing.T, sub *gostomp.Subscription) (*gostomp.Message, error) {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		if !ok || m == nil {
			t.Fatal("subscription closed without a message or an error")
		}
		if m.Err != nil {
			return nil, m.Err
		}
		return m, nil
	case <-time.After(5 * time.Second):
		t.Fatal("nothing within 5s")
	}
	return nil, nil
}

// errText is the ERROR message go-stomp reports, or "" for no error.
func errText(err error) string {
	var se *gostomp.Error
	if errors.As(err, &se) {
		return se.Message
	}
	var sv gostomp.Error
	if errors.As(err, &sv) {
		return sv.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func messages(t *testing.T, eng *engine.Broker, d message.Destination) int64 {
	t.Helper()
	info, err := eng.DestinationInfo(d)
	if err != nil {
		t.Fatal(err)
	}
	return info.Messages
}

func durableExists(eng *engine.Broker, clientID, name string) bool {
	for _, s := range eng.Subscriptions() {
		if s.ClientID == clientID && s.Name == name {
			return true
		}
	}
	return false
}

// Every action, allowed and denied, through go-stomp: a denied one gets
// an ERROR naming the user, the action and the destination, and has no
// effect; an allowed one works.
func TestAuthorizationOfEveryAction(t *testing.T) {
	realm := newRealm(t, realmOptions(t))
	send := func(dest string) func(*testing.T, string, *gostomp.Conn) error {
		return func(t *testing.T, addr string, c *gostomp.Conn) error {
			return c.Send(dest, "text/plain", []byte("m"), gostomp.SendOpt.Receipt)
		}
	}
	// consume subscribes to a queue alice has put one message on.
	consume := func(dest string) func(*testing.T, string, *gostomp.Conn) error {
		return func(t *testing.T, addr string, c *gostomp.Conn) error {
			sub, err := c.Subscribe(dest, gostomp.AckAuto)
			if err != nil {
				return err
			}
			m, err := first(t, sub)
			if err == nil && string(m.Body) != "waiting" {
				t.Fatalf("consumed %q", m.Body)
			}
			return err
		}
	}
	// subscribe subscribes with the given headers, then has alice publish.
	subscribe := func(dest string, headers ...string) func(*testing.T, string, *gostomp.Conn) error {
		return func(t *testing.T, addr string, c *gostomp.Conn) error {
			var opts []func(*gostompframe.Frame) error
			for i := 0; i+1 < len(headers); i += 2 {
				opts = append(opts, gostomp.SubscribeOpt.Header(headers[i], headers[i+1]))
			}
			sub, err := c.Subscribe(dest, gostomp.AckAuto, opts...)
			if err != nil {
				return err
			}
			roundTripOrError(t, c)
			publisher := login(t, addr, "alice")
			if err := publisher.Send("/topic/prices.x", "text/plain", []byte("tick"), gostomp.SendOpt.Receipt); err != nil {
				t.Fatal(err)
			}
			m, err := first(t, sub)
			if err == nil && string(m.Body) != "tick" {
				t.Fatalf("got %q", m.Body)
			}
			return err
		}
	}
	browse := func(dest string) func(*testing.T, string, *gostomp.Conn) error {
		return func(t *testing.T, addr string, c *gostomp.Conn) error {
			sub, err := c.Subscribe(dest, gostomp.AckAuto, gostomp.SubscribeOpt.Header("browser", "true"))
			if err != nil {
				return err
			}
			m, err := first(t, sub)
			if err == nil && string(m.Body) != "waiting" {
				t.Fatalf("browsed %q", m.Body)
			}
			return err
		}
	}
	// unsubscribeDurable deletes the durable subscription "d1" of the
	// connection's client ID (made, inactive, by the case's setup).
	unsubscribeDurable := func(t *testing.T, addr string, c *gostomp.Conn) error {
		sub, err := c.Subscribe("/topic/prices.x", gostomp.AckAuto)
		if err != nil {
			return err
		}
		return unsubscribe(t, sub, gostomp.SubscribeOpt.Header("activemq.subscriptionName", "d1"))
	}
	// queueHolds checks the number of messages on a queue afterwards.
	queueHolds := func(d message.Destination, n int64) func(*testing.T, *engine.Broker) {
		return func(t *testing.T, eng *engine.Broker) {
			if got := messages(t, eng, d); got != n {
				t.Fatalf("%s holds %d messages, want %d", d, got, n)
			}
		}
	}
	durable := func(clientID string, want bool) func(*testing.T, *engine.Broker) {
		return func(t *testing.T, eng *engine.Broker) {
			if got := durableExists(eng, clientID, "d1"); got != want {
				t.Fatalf("durable subscription d1 of %s exists: %v, want %v", clientID, got, want)
			}
		}
	}
	notCreated := func(d message.Destination) func(*testing.T, *engine.Broker) {
		return func(t *testing.T, eng *engine.Broker) {
			if _, err := eng.DestinationInfo(d); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("%s: %v, want it not to exist", d, err)
			}
		}
	}
	// waiting puts one message on orders.a, as alice.
	waiting := func(t *testing.T, addr string) {
		if err := login(t, addr, "alice").Send("/queue/orders.a", "text/plain", []byte("waiting"), gostomp.SendOpt.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	// durableD1 makes the inactive durable subscription d1 of clientID.
	durableD1 := func(clientID string) func(*testing.T, string) {
		return func(t *testing.T, addr string) {
			c := login(t, addr, "alice", gostomp.ConnOpt.Header("client-id", clientID))
			sub, err := c.Subscribe("/topic/prices.x", gostomp.AckAuto, gostomp.SubscribeOpt.Header("activemq.subscriptionName", "d1"))
			if err != nil {
				t.Fatal(err)
			}
			if err := unsubscribe(t, sub); err != nil {
				t.Fatal(err)
			}
			if err := c.Disconnect(); err != nil {
				t.Fatal(err)
			}
		}
	}
	orderNew := message.Destination{Kind: message.Queue, Name: "orders.new"}
	cases := []struct {
		name     string
		user     string
		clientID string
		setup    func(*testing.T, string)
		do       func(*testing.T, string, *gostomp.Conn) error
		denied   string // the ERROR message; "" when allowed
		check    func(*testing.T, *engine.Broker)
	}{
		{name: "send/allowed", user: "bob", do: send("/queue/orders.a"), check: queueHolds(ordersA, 1)},
		{name: "send/denied by pattern", user: "alice", do: send("/queue/billing.a"),
			denied: "user alice may not send to /queue/billing.a (action send)", check: queueHolds(billingA, 0)},
		{name: "send/denied by action", user: "bob", do: send("/topic/prices.x"),
			denied: "user bob may not send to /topic/prices.x (action send)"},
		{name: "consume/allowed", user: "alice", setup: waiting, do: consume("/queue/orders.a")},
		{name: "consume/denied", user: "bob", setup: waiting, do: consume("/queue/orders.a"),
			denied: "user bob may not consume from /queue/orders.a (action consume)", check: queueHolds(ordersA, 1)},
		{name: "subscribe/allowed", user: "bob", do: subscribe("/topic/prices.x")},
		{name: "subscribe/denied", user: "alice", do: subscribe("/topic/news.x"),
			denied: "user alice may not subscribe to /topic/news.x (action subscribe)"},
		{name: "durable create/allowed", user: "alice", clientID: "app", do: subscribe("/topic/prices.x", "activemq.subscriptionName", "d1"),
			check: durable("app", true)},
		{name: "durable create/denied", user: "bob", clientID: "app", do: subscribe("/topic/prices.x", "activemq.subscriptionName", "d1"),
			denied: "user bob may not create or delete a durable or shared subscription on /topic/prices.x (action durable)", check: durable("app", false)},
		{name: "shared create/denied", user: "bob", do: subscribe("/topic/prices.x", "sluice-subscription-name", "d1", "sluice-shared", "true"),
			denied: "user bob may not create or delete a durable or shared subscription on /topic/prices.x (action durable)"},
		{name: "durable delete/allowed", user: "alice", clientID: "app", setup: durableD1("app"), do: unsubscribeDurable,
			check: durable("app", false)},
		{name: "durable delete/denied", user: "bob", clientID: "app", setup: durableD1("app"), do: unsubscribeDurable,
			denied: "user bob may not create or delete a durable or shared subscription on /topic/prices.x (action durable)", check: durable("app", true)},
		{name: "browse/allowed", user: "alice", setup: waiting, do: browse("/queue/orders.a"), check: queueHolds(ordersA, 1)},
		{name: "browse/denied", user: "bob", setup: waiting, do: browse("/queue/orders.a"),
			denied: "user bob may not browse /queue/orders.a (action browse)", check: queueHolds(ordersA, 1)},
		{name: "create/allowed", user: "alice", do: send("/queue/orders.new"), check: queueHolds(orderNew, 1)},
		{name: "create/denied", user: "bob", do: send("/queue/orders.new"),
			denied: "user bob may not create /queue/orders.new (action create)", check: notCreated(orderNew)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr, eng := startSecured(t, engine.Config{AutoCreate: true}, realm)
			if tc.setup != nil {
				tc.setup(t, addr)
			}
			var opts []func(*gostomp.Conn) error
			if tc.clientID != "" {
				opts = append(opts, gostomp.ConnOpt.Header("client-id", tc.clientID))
			}
			c := login(t, addr, tc.user, opts...)
			if got := errText(tc.do(t, addr, c)); got != tc.denied {
				t.Fatalf("got error %q, want %q", got, tc.denied)
			}
			if tc.check != nil {
				tc.check(t, eng)
			}
		})
	}
}

// roundTripOrError is roundTrip on a connection whose last frame may have
// been refused: go-stomp closes the connection on an ERROR, and the ERROR
// then reaches the subscription instead.
// unsubscribe sends UNSUBSCRIBE on sub and returns once the server has
// answered it: nil for its RECEIPT, the ERROR frame's message otherwise.
// It does not take go-stomp's word for the answer: its Unsubscribe can
// miss the wake-up of a RECEIPT that arrives before it starts waiting (the
// broadcast is not made under the lock it waits with) and then returns
// only after 30 s with a timeout; the subscription's channel, which is
// closed on either answer, is what is waited for here, for 5 s at most.
func unsubscribe(t *testing.T, sub *gostomp.Subscription, opts ...func(*gostompframe.Frame) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- sub.Unsubscribe(opts...) }()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			done = nil // it returned: the channel says how it was answered
		case m, ok := <-sub.C:
			if !ok {
				return nil
			}
			if m != nil && m.Err != nil {
				return m.Err
			}
		case <-deadline:
			t.Fatal("no answer to UNSUBSCRIBE within 5s")
		}
	}
}

func roundTripOrError(t *testing.T, c *gostomp.Conn) {
	t.Helper()
	_ = c.Send("/temp-queue/sync", "text/plain", nil, gostomp.SendOpt.Receipt)
}

// CONNECT with a wrong password, an unknown user or no login at all (where
// anonymous clients are refused) gets the same ERROR text, which does not
// say which it was; then the connection closes. Anonymous clients are let
// in with the anonymous role's permissions where one is set.
func TestConnectAuthentication(t *testing.T) {
	refusing := newRealm(t, realmOptions(t))
	guestOpts := realmOptions(t)
	guestOpts.AnonymousRole = "guest"
	guests := newRealm(t, guestOpts)
	generic := security.ErrAuthentication.Error()
	cases := []struct {
		name    string
		realm   *security.Realm
		connect string // CONNECT's login and passcode header lines
		refused bool
		user    string // the engine connection's user when accepted
	}{
		{"right password", refusing, "login:alice\npasscode:" + alicePW + "\n", false, "alice"},
		{"wrong password", refusing, "login:alice\npasscode:" + bobPW + "\n", true, ""},
		{"no passcode", refusing, "login:alice\n", true, ""},
		{"unknown user", refusing, "login:mallory\npasscode:" + alicePW + "\n", true, ""},
		{"anonymous refused", refusing, "", true, ""},
		{"empty login is anonymous", refusing, "login:\npasscode:x\n", true, ""},
		{"anonymous allowed", guests, "", false, ""},
		{"login where anonymous is allowed", guests, "login:bob\npasscode:" + bobPW + "\n", false, "bob"},
		{"wrong password where anonymous is allowed", guests, "login:bob\npasscode:nope\n", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr, eng := startSecured(t, engine.Config{}, tc.realm)
			r := dialRaw(t, addr)
			r.write("CONNECT\naccept-version:1.2\nhost:x\nclient-id:c1\n" + tc.connect + "\n\x00")
			f := r.read()
			if tc.refused {
				msg, _ := f.Get("message")
				if f.Command != frame.CmdError || msg != generic {
					t.Fatalf("got %s %q, want ERROR %q", f.Command, msg, generic)
				}
				if strings.Contains(string(f.Body), "alice") || strings.Contains(string(f.Body), "mallory") {
					t.Fatalf("the ERROR names the user: %q", f.Body)
				}
				r.closed()
				if n := len(eng.Connections()); n != 0 {
					t.Fatalf("%d engine connections after a refused login", n)
				}
				return
			}
			if f.Command != frame.CmdConnected {
				msg, _ := f.Get("message")
				t.Fatalf("got %s %q, want CONNECTED", f.Command, msg)
			}
			conns := eng.Connections()
			if len(conns) != 1 || conns[0].User != tc.user {
				t.Fatalf("engine connections %+v, want one of user %q", conns, tc.user)
			}
		})
	}
}

// An anonymous client with the anonymous role may do what the role
// grants and nothing else; its refusals name it "anonymous".
func TestAnonymousRolePermissions(t *testing.T) {
	opts := realmOptions(t)
	opts.AnonymousRole = "guest"
	addr, _ := startSecured(t, engine.Config{}, newRealm(t, opts))
	c := dialQuick(t, addr)
	sub, err := c.Subscribe("/topic/prices.x", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c)
	if err := login(t, addr, "alice").Send("/topic/prices.x", "text/plain", []byte("tick"), gostomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	if m, err := first(t, sub); err != nil || string(m.Body) != "tick" {
		t.Fatalf("anonymous subscriber: %v", err)
	}
	err = c.Send("/queue/orders.a", "text/plain", []byte("m"), gostomp.SendOpt.Receipt)
	if got, want := errText(err), "user anonymous may not send to /queue/orders.a (action send)"; got != want {
		t.Fatalf("anonymous send: %q, want %q", got, want)
	}
}

// Without a realm, or with one that has no users, security is off: any
// login, or none, is accepted, and everything is allowed.
func TestSecurityOffAcceptsAnyLogin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		realm *security.Realm
	}{
		{"no realm", nil},
		{"realm without users", newRealm(t, security.Options{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, eng := startSecured(t, engine.Config{}, tc.realm)
			for _, opts := range [][]func(*gostomp.Conn) error{nil, {gostomp.ConnOpt.Login("whoever", "whatever")}} {
				c := dial(t, addr, opts...)
				if err := c.Send("/queue/billing.a", "text/plain", []byte("m"), gostomp.SendOpt.Receipt); err != nil {
					t.Fatal(err)
				}
			}
			if n := messages(t, eng, billingA); n != 2 {
				t.Fatalf("billing.a holds %d messages, want 2", n)
			}
		})
	}
}

// A failed login is answered only after the realm's failure delay (1s by
// default), so passwords cannot be guessed fast.
func TestFailedLoginIsDelayed(t *testing.T) {
	opts := realmOptions(t)
	opts.FailureDelay = 0 // the default
	addr, _ := startSecured(t, engine.Config{}, newRealm(t, opts))
	r := dialRaw(t, addr)
	start := time.Now()
	r.write("CONNECT\naccept-version:1.2\nlogin:alice\npasscode:guess\n\n\x00")
	f := r.read()
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("refused after %s, want the 1s failure delay", took)
	}
	if f.Command != frame.CmdError {
		t.Fatalf("got %s", f.Command)
	}
}

// JMSXUserID can be trusted: with Config.StampUserID it is the sender's
// user, whatever the client put there; with security on and no stamping,
// a client's value is removed; with security off it is the client's.
func TestJMSXUserID(t *testing.T) {
	cases := []struct {
		name    string
		stamp   bool
		secured bool
		want    string // "" is no JMSXUserID header
	}{
		{"stamped", true, true, "alice"},
		{"security on, not stamped", false, true, ""},
		{"security off", false, false, "mallory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var realm *security.Realm
			if tc.secured {
				realm = newRealm(t, realmOptions(t))
			}
			addr, _ := startSecured(t, engine.Config{StampUserID: tc.stamp}, realm)
			c := login(t, addr, "alice")
			sub, err := c.Subscribe("/queue/orders.a", gostomp.AckAuto)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Send("/queue/orders.a", "text/plain", []byte("m"), gostomp.SendOpt.Receipt,
				gostomp.SendOpt.Header("JMSXUserID", "mallory")); err != nil {
				t.Fatal(err)
			}
			m := next(t, sub)
			got, present := m.Header.Contains("JMSXUserID")
			if got != tc.want || present != (tc.want != "") {
				t.Fatalf("JMSXUserID %q (present %v), want %q", got, present, tc.want)
			}
		})
	}
}

// lockedBuffer is a log sink for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// No log line, at any level, carries a passcode: neither a right one nor
// a wrong one; the user's name and the connection are logged instead.
func TestPasscodesAreNeverLogged(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := realmOptions(t)
	opts.Logger = log
	eng, err := engine.New(context.Background(), engine.Config{Logger: log, AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWith(t, eng, func() { _ = eng.Close() }, stomp.Options{Realm: newRealm(t, opts), Logger: log})
	const wrong = "wrong-Passc0de"
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\nlogin:alice\npasscode:" + wrong + "\n\n\x00")
	r.expect(frame.CmdError, "", "authentication failed")
	r.closed()
	r = connectAs(t, addr, "alice")
	r.write("SEND\ndestination:/queue/billing.a\nreceipt:1\n\nx\x00")
	r.expect(frame.CmdError, "1", "may not send")
	r.write("DISCONNECT\nreceipt:bye\n\n\x00")
	r.expect(frame.CmdReceipt, "bye", "")
	r.closed()
	out := logs.String()
	if !strings.Contains(out, "alice") {
		t.Fatalf("the logs do not name the user:\n%s", out)
	}
	for _, pw := range []string{wrong, alicePW} {
		if strings.Contains(out, pw) {
			t.Fatalf("a passcode is in the logs:\n%s", out)
		}
	}
}
