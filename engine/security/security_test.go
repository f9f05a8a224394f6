package security

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

func hash(t testing.TB, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestNewRefusesBadConfig(t *testing.T) {
	good := hash(t, "pw")
	grant := Grant{Role: "r", Kind: "queue", Match: "a.*", Actions: []string{"send"}}
	cases := []struct {
		name string
		opts Options
		want []string
	}{
		{"empty name", Options{Users: []User{{PasswordHash: good}}}, []string{"users[0]: name is empty"}},
		{"colon", Options{Users: []User{{Name: "a:b", PasswordHash: good}}}, []string{"cannot contain ':'"}},
		{"twice", Options{Users: []User{{Name: "a", PasswordHash: good}, {Name: "a", PasswordHash: good}}}, []string{`users[1] ("a"): the user is listed twice`}},
		{"no secret", Options{Users: []User{{Name: "a"}}}, []string{"needs a password_hash or a certificate_subject"}},
		{"bad hash", Options{Users: []User{{Name: "a", PasswordHash: "secret"}}}, []string{"not a bcrypt hash", "hash-password"}},
		{"unknown role", Options{Users: []User{{Name: "a", PasswordHash: good, Roles: []string{"x"}}}}, []string{`role "x": no grant names this role`}},
		{"subject twice", Options{Users: []User{{Name: "a", CertificateSubject: "CN=a"}, {Name: "b", CertificateSubject: "CN=a"}}}, []string{`is user "a"'s already`}},
		{"bad kind", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Kind: "quue", Match: "*", Actions: []string{"send"}}}}, []string{`grants[0]: kind "quue"`}},
		{"bad action", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Match: "*", Actions: []string{"write"}}}}, []string{`action "write"`}},
		{"bad pattern", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Match: "[", Actions: []string{"send"}}}}, []string{`match "["`}},
		{"no match", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Actions: []string{"send"}}}}, []string{"match is empty"}},
		{"no actions", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Match: "*"}}}, []string{"actions is empty"}},
		{"admin with match", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Match: "*", Actions: []string{"admin", "send"}}}}, []string{"admin and monitor apply to the whole broker"}},
		{"subscribe on queues", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Kind: "queue", Match: "*", Actions: []string{"subscribe"}}}}, []string{"subscribe and durable apply to topics"}},
		{"browse on topics", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "r", Kind: "topic", Match: "*", Actions: []string{"browse"}}}}, []string{"consume and browse apply to queues"}},
		{"anonymous role unknown", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{grant}, AnonymousRole: "dev"}, []string{`anonymous_role "dev"`}},
		{"anonymous admin", Options{Users: []User{{Name: "a", PasswordHash: good}}, Grants: []Grant{{Role: "ops", Actions: []string{"admin"}}}, AnonymousRole: "ops"}, []string{"may not have the admin or monitor action"}},
		{"grants without users", Options{Grants: []Grant{grant}}, []string{"need at least one user"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// Every problem is reported, not only the first.
	_, err := New(Options{Users: []User{{Name: ""}, {Name: "b", PasswordHash: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "users[0]") || !strings.Contains(err.Error(), "users[1]") {
		t.Errorf("want both users reported, got %v", err)
	}
}

func newRealm(t *testing.T, opts Options) *Realm {
	t.Helper()
	if opts.FailureDelay == 0 {
		opts.FailureDelay = -1
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLogin(t *testing.T) {
	var mu sync.Mutex
	results := map[string]int{}
	r := newRealm(t, Options{
		Users:  []User{{Name: "alice", PasswordHash: hash(t, "alice-pw"), Roles: []string{"orders"}}, {Name: "ops", PasswordHash: hash(t, "ops-pw"), Roles: []string{"ops"}}},
		Grants: []Grant{{Role: "orders", Kind: "queue", Match: "orders.*", Actions: []string{"send"}}, {Role: "ops", Actions: []string{"monitor"}}},
		ObserveAttempt: func(p, res string) {
			mu.Lock()
			results[p+"/"+res]++
			mu.Unlock()
		},
	})
	ctx := context.Background()
	at := Attempt{Protocol: "stomp", Remote: "127.0.0.1:1"}
	id, err := r.Login(ctx, at, "alice", "alice-pw")
	if err != nil || id.User != "alice" || id.Permissions == nil || id.Admin || id.Monitor {
		t.Fatalf("alice: %+v, %v", id, err)
	}
	if !id.Permissions.Allows(engine.ActionSend, message.Destination{Kind: message.Queue, Name: "orders.1"}) {
		t.Error("alice may not send to orders.1")
	}
	// A second login is served from the cache of good checks.
	if _, err := r.Login(ctx, at, "alice", "alice-pw"); err != nil {
		t.Fatal(err)
	}
	if n := len(r.verified); n != 1 {
		t.Errorf("%d checks remembered, want 1", n)
	}
	_, wrongPw := r.Login(ctx, at, "alice", "nope")
	_, noUser := r.Login(ctx, at, "mallory", "alice-pw")
	if !errors.Is(wrongPw, ErrAuthentication) || !errors.Is(noUser, ErrAuthentication) || wrongPw.Error() != noUser.Error() {
		t.Errorf("wrong password %v and unknown user %v must be the same error", wrongPw, noUser)
	}
	if id, err := r.Login(ctx, at, "ops", "ops-pw"); err != nil || !id.Monitor || id.Admin {
		t.Errorf("ops: %+v, %v; want monitor only", id, err)
	}
	if _, err := r.Anonymous(ctx, at); !errors.Is(err, ErrAuthentication) {
		t.Errorf("anonymous without an anonymous role: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if results["stomp/success"] != 3 || results["stomp/failure"] != 3 {
		t.Errorf("attempts observed: %v", results)
	}
}

func TestVerifiedChecksExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRealm(t, Options{Users: []User{{Name: "a", PasswordHash: hash(t, "pw")}}, VerifiedFor: time.Minute,
		Now: func() time.Time { return now }})
	ctx := context.Background()
	if _, err := r.Login(ctx, Attempt{}, "a", "pw"); err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	for k := range r.verified {
		key = k
	}
	now = now.Add(2 * time.Minute)
	if _, err := r.Login(ctx, Attempt{}, "a", "pw"); err != nil {
		t.Fatal(err)
	}
	if exp := r.verified[key]; !exp.After(now) {
		t.Errorf("an expired check was not renewed by bcrypt: expires %v, now %v", exp, now)
	}
}

func TestConcurrentLoginsShareOneCheck(t *testing.T) {
	r := newRealm(t, Options{Users: []User{{Name: "a", PasswordHash: hash(t, "pw")}}})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Login(context.Background(), Attempt{}, "a", "pw")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if len(r.inflight) != 0 {
		t.Errorf("%d checks left running", len(r.inflight))
	}
}

func TestFailureDelay(t *testing.T) {
	r, err := New(Options{Users: []User{{Name: "a", PasswordHash: hash(t, "pw")}}, FailureDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := r.Login(context.Background(), Attempt{}, "a", "bad"); err == nil {
		t.Fatal("accepted")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("a failure was answered after %v, before the delay", d)
	}
	// A connection that goes away does not keep its goroutine waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2, _ := New(Options{Users: []User{{Name: "a", PasswordHash: hash(t, "pw")}}, FailureDelay: time.Hour})
	if _, err := r2.Login(ctx, Attempt{}, "a", "bad"); !errors.Is(err, ErrAuthentication) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestAnonymousRole(t *testing.T) {
	r := newRealm(t, Options{
		Users:         []User{{Name: "a", PasswordHash: hash(t, "pw")}},
		Grants:        []Grant{{Role: "dev", Match: "dev.*", Actions: []string{"*"}}},
		AnonymousRole: "dev",
	})
	id, err := r.Anonymous(context.Background(), Attempt{})
	if err != nil || id.User != "" || id.Permissions == nil {
		t.Fatalf("anonymous: %+v, %v", id, err)
	}
	for _, a := range engine.Actions() {
		if !id.Permissions.Allows(a, message.Destination{Kind: message.Topic, Name: "dev.x"}) {
			t.Errorf("\"*\" does not give %s", a)
		}
	}
	if id.Permissions.Allows(engine.ActionSend, message.Destination{Kind: message.Queue, Name: "prod"}) {
		t.Error("anonymous may send to prod")
	}
	if !r.AnonymousAllowed() {
		t.Error("AnonymousAllowed is false")
	}
}

func TestSecurityOff(t *testing.T) {
	for _, r := range []*Realm{nil, newRealm(t, Options{})} {
		if r.Enabled() || !r.AnonymousAllowed() {
			t.Fatal("an empty realm is enabled")
		}
		id, err := r.Login(context.Background(), Attempt{}, "anyone", "anything")
		if err != nil || id.Permissions != nil {
			t.Errorf("login with security off: %+v, %v", id, err)
		}
		if id, err := r.Anonymous(context.Background(), Attempt{}); err != nil || id.Permissions != nil {
			t.Errorf("anonymous with security off: %+v, %v", id, err)
		}
	}
}

func TestCertificate(t *testing.T) {
	r := newRealm(t, Options{
		Users:  []User{{Name: "svc", CertificateSubject: "CN=svc-a,O=Example", Roles: []string{"r"}}},
		Grants: []Grant{{Role: "r", Kind: "queue", Match: "*", Actions: []string{"consume"}}},
	})
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "svc-a", Organization: []string{"Example"}}}
	id, err := r.Certificate(context.Background(), Attempt{}, cert)
	if err != nil || id.User != "svc" {
		t.Fatalf("certificate: %+v, %v", id, err)
	}
	other := &x509.Certificate{Subject: pkix.Name{CommonName: "svc-b"}}
	if _, err := r.Certificate(context.Background(), Attempt{}, other); !errors.Is(err, ErrAuthentication) {
		t.Errorf("unknown subject: %v", err)
	}
	if _, err := r.Certificate(context.Background(), Attempt{}, nil); !errors.Is(err, ErrAuthentication) {
		t.Errorf("no certificate: %v", err)
	}
	// A certificate-only user has no password to guess.
	if _, err := r.Login(context.Background(), Attempt{}, "svc", ""); !errors.Is(err, ErrAuthentication) {
		t.Errorf("password login of a certificate user: %v", err)
	}
}

func TestAllows(t *testing.T) {
	r := newRealm(t, Options{
		Users: []User{{Name: "u", PasswordHash: hash(t, "pw"), Roles: []string{"a", "b"}}, {Name: "v", PasswordHash: hash(t, "pw")}},
		Grants: []Grant{
			{Role: "a", Kind: "queue", Match: "orders.*", Actions: []string{"send", "consume"}},
			{Role: "b", Kind: "topic", Match: "prices.*", Actions: []string{"subscribe"}},
			{Role: "b", Match: "shared", Actions: []string{"send"}},
			{Role: "c", Match: "*", Actions: []string{"*"}},
		},
	})
	id, _ := r.Login(context.Background(), Attempt{}, "u", "pw")
	q := func(n string) message.Destination { return message.Destination{Kind: message.Queue, Name: n} }
	tp := func(n string) message.Destination { return message.Destination{Kind: message.Topic, Name: n} }
	for _, c := range []struct {
		a    engine.Action
		d    message.Destination
		want bool
	}{
		{engine.ActionSend, q("orders.eu"), true},
		{engine.ActionConsume, q("orders.eu"), true},
		{engine.ActionBrowse, q("orders.eu"), false},
		{engine.ActionSend, q("orders.eu.x"), true}, // path.Match: * does not stop at dots
		{engine.ActionSend, q("orders"), false},
		{engine.ActionSend, tp("orders.eu"), false}, // kind-qualified
		{engine.ActionSubscribe, tp("prices.fx"), true},
		{engine.ActionDurable, tp("prices.fx"), false},
		{engine.ActionSend, q("shared"), true}, // no kind: both
		{engine.ActionSend, tp("shared"), true},
		{engine.ActionCreate, q("anything"), false}, // role c is not u's
	} {
		if got := id.Permissions.Allows(c.a, c.d); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.a, c.d, got, c.want)
		}
	}
	// A user with no roles may do nothing.
	v, _ := r.Login(context.Background(), Attempt{}, "v", "pw")
	if v.Permissions.Allows(engine.ActionSend, q("shared")) {
		t.Error("a user without roles may send")
	}
}
