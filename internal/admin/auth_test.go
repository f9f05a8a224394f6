package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
)

// The password of every user of testRealm.
const testPassword = "s3cret"

// testRealm has the users an admin listener meets: ops, an [admin] user
// (security.User.Admin); watcher, with the monitor grant; app, a messaging
// user with no admin grant who may only send to orders.*. observe, when
// set, counts the realm's authentications.
func testRealm(t *testing.T, observe func(protocol, result string)) *security.Realm {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	h := string(hash)
	r, err := security.New(security.Options{
		Users: []security.User{
			{Name: "ops", PasswordHash: h, Admin: true},
			{Name: "watcher", PasswordHash: h, Roles: []string{"watchers"}},
			{Name: "app", PasswordHash: h, Roles: []string{"apps"}},
		},
		Grants: []security.Grant{
			{Role: "watchers", Actions: []string{"monitor"}},
			{Role: "apps", Kind: "queue", Match: "orders.*", Actions: []string{"send"}},
		},
		FailureDelay:   -1,
		ObserveAttempt: observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testAuth is testRealm's users and one bearer token, which it returns.
func testAuth(t *testing.T) (*Auth, string) {
	t.Helper()
	token, tokenHash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuth(testRealm(t, nil), []string{tokenHash})
	if err != nil {
		t.Fatal(err)
	}
	return a, token
}

func basic(u, p string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(u, p)
	return req.Header.Get("Authorization")
}

// sessionCookieOf returns the session cookie a login set, or nil.
func sessionCookieOf(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

// consoleLogin logs in through POST /api/login and makes e send the
// session cookie from then on.
func (e *env) consoleLogin(user, password string) map[string]any {
	e.t.Helper()
	code, v, res := e.do("POST", "/api/login", map[string]string{"user": user, "password": password})
	c := sessionCookieOf(res)
	if code != 200 || c == nil {
		e.t.Fatalf("login as %s: %d %v", user, code, v)
	}
	e.header.Set("Cookie", sessionCookie+"="+c.Value)
	return v.(map[string]any)
}

func TestAuthRequiredAndNothingChanges(t *testing.T) {
	a, token := testAuth(t)
	e := newEnv(t, a)
	// Probes need nothing.
	e.want("GET", "/healthz", nil, 200)
	e.want("GET", "/readyz", nil, 200)
	e.want("GET", "/", nil, 200) // the console's files; its data needs a login

	create := map[string]string{"kind": "queue", "name": "a"}
	code, v, res := e.do("POST", "/api/destinations", create)
	if code != 401 || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic") || v.(map[string]any)["error"] == "" {
		t.Fatalf("no credentials: %d %v %v", code, v, res.Header)
	}
	code, _, res = e.do("GET", "/api/destinations", nil, "X-Sluice-Console", "1")
	if code != 401 || res.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("console request without a session: %d %v", code, res.Header)
	}
	e.header.Set("Authorization", basic("ops", "wrong"))
	e.want("POST", "/api/destinations", create, 401, "wrong user name or password")
	e.header.Set("Authorization", basic("nobody", testPassword))
	e.want("POST", "/api/destinations", create, 401)
	e.header.Set("Authorization", "Bearer not-the-token")
	e.want("POST", "/api/destinations", create, 401, "bearer token")
	e.header.Del("Authorization")
	e.want("GET", "/metrics", nil, 401)
	if _, err := e.eng.DestinationInfo(qA); err == nil {
		t.Fatal("a refused request created a destination")
	}

	e.header.Set("Authorization", basic("ops", testPassword))
	e.want("POST", "/api/destinations", create, 201)
	if m := e.want("GET", "/api/whoami", nil, 200); m["user"] != "ops" || m["role"] != "admin" || m["authRequired"] != true {
		t.Fatalf("whoami = %v", m)
	}
	e.header.Set("Authorization", "Bearer "+token)
	e.want("GET", "/api/destinations", nil, 200)
	e.want("GET", "/metrics", nil, 200)
	if m := e.want("GET", "/api/whoami", nil, 200); m["user"] != "token-1" || m["role"] != "admin" {
		t.Fatalf("whoami with a token = %v", m)
	}
	e.header.Del("Authorization")

	// The console's login: a session cookie.
	e.want("POST", "/api/login", map[string]string{"user": "ops", "password": "nope"}, 401, "wrong")
	e.want("POST", "/api/login", `{"user":"ops"`, 400)
	_, _, res = e.do("POST", "/api/login", map[string]string{"user": "ops", "password": testPassword})
	cookie := sessionCookieOf(res)
	if res.StatusCode != 200 || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d %v", res.StatusCode, res.Cookies())
	}
	e.header.Set("Cookie", sessionCookie+"="+cookie.Value)
	e.want("GET", "/api/destinations", nil, 200)
	e.want("POST", "/api/logout", nil, 200)
	e.want("GET", "/api/destinations", nil, 401)
	e.header.Set("Cookie", sessionCookie+"=forged")
	e.want("GET", "/api/destinations", nil, 401)
}

// Every class of endpoint, for every kind of caller: an administrator
// (an [admin] user, a bearer token, anyone on loopback when no admin
// credentials exist) may do everything; a monitor may read but not
// change; a user without an admin grant, a wrong password or no
// credentials may do nothing, and nothing changes.
func TestAuthorizationByRole(t *testing.T) {
	type request struct {
		method, path string
		body         any
		status       int // answered to an administrator, in this order
	}
	reads := []request{
		{"GET", "/api/whoami", nil, 200},
		{"GET", "/api/overview", nil, 200},
		{"GET", "/api/destinations", nil, 200},
		{"GET", "/api/destinations/queue/a", nil, 200},
		{"GET", "/api/destinations/queue/a/messages", nil, 200},
		{"GET", "/api/destinations/queue/a/messages/export", nil, 200},
		{"GET", "/api/subscriptions", nil, 200},
		{"GET", "/api/connections", nil, 200},
		{"GET", "/api/history", nil, 200},
		{"GET", "/api/node", nil, 200},
		{"GET", "/api/destinations/queue/a/history", nil, 200},
		{"GET", "/api/destinations/queue/a/policy", nil, 200},
		{"GET", "/metrics", nil, 200},
		{"HEAD", "/api/destinations", nil, 200},
	}
	writes := []request{
		{"POST", "/api/destinations", map[string]string{"kind": "queue", "name": "c"}, 201},
		{"POST", "/api/destinations/queue/a/messages/import", `{"body":{"kind":"text","text":"x"}}` + "\n", 200},
		{"POST", "/api/destinations/queue/a/messages/move", map[string]any{"selector": "i = 0", "to": "/queue/c"}, 200},
		{"POST", "/api/destinations/queue/a/messages/delete", map[string]any{"selector": "i = 1"}, 200},
		{"POST", "/api/destinations/queue/a/purge", nil, 200},
		{"DELETE", "/api/subscriptions/cid/nope", nil, 404},
		{"DELETE", "/api/connections/{conn}", nil, 200},
		{"POST", "/api/destinations/queue/a/messages/publish", map[string]string{"body": "test"}, 201},
		{"POST", "/api/destinations/queue/a/messages/get", map[string]int{"timeout": 0}, 200},
		{"DELETE", "/api/destinations/queue/c", nil, 200},
	}
	realm := testRealm(t, nil)
	_, tokenHash, _ := NewToken()
	token, th, _ := NewToken()
	withUsers, _ := NewAuth(realm, []string{tokenHash, th})
	messagingOnly, _ := NewAuth(func() *security.Realm {
		hash, _ := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
		r, err := security.New(security.Options{FailureDelay: -1,
			Users:  []security.User{{Name: "app", PasswordHash: string(hash), Roles: []string{"apps"}}},
			Grants: []security.Grant{{Role: "apps", Match: "*", Actions: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}(), nil)

	const (
		admin = iota
		monitor
		refused      // 403
		unauthorized // 401
	)
	for _, tt := range []struct {
		name    string
		auth    *Auth
		session bool   // log in through the console instead of basic authentication
		header  string // Authorization
		want    int
		error   string // in every refusal
	}{
		{"admin user", withUsers, false, basic("ops", testPassword), admin, ""},
		{"admin user, console session", withUsers, true, basic("ops", testPassword), admin, ""},
		{"bearer token", withUsers, false, "Bearer " + token, admin, ""},
		{"monitor user", withUsers, false, basic("watcher", testPassword), monitor, "user watcher has the monitor role, which is read-only"},
		{"monitor user, console session", withUsers, true, basic("watcher", testPassword), monitor, "user watcher has the monitor role, which is read-only"},
		{"user without an admin grant", withUsers, false, basic("app", testPassword), refused, "user app has no admin or monitor grant"},
		{"wrong password", withUsers, false, basic("ops", "wrong"), unauthorized, "wrong user name or password"},
		{"unknown user", withUsers, false, basic("nobody", testPassword), unauthorized, "wrong user name or password"},
		{"wrong token", withUsers, false, "Bearer sluice_0000", unauthorized, "bearer token is not valid"},
		{"no credentials", withUsers, false, "", unauthorized, "authentication required"},
		{"loopback, no users", nil, false, "", admin, ""},
		{"loopback, empty auth", &Auth{}, false, "", admin, ""},
		{"only messaging users: no anonymous administrator", messagingOnly, false, "", unauthorized, "authentication required"},
		{"only messaging users: a messaging user is no administrator", messagingOnly, false, basic("app", testPassword), refused, "user app has no admin or monitor grant"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.auth)
			for _, d := range []message.Destination{qA, tT} {
				if _, err := e.eng.CreateDestination(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			e.send(qA, 3, "")
			conn, err := e.eng.Connect(engine.ConnectionOptions{User: "app", Protocol: "stomp/1.2"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if tt.session {
				u, p, _ := (&http.Request{Header: http.Header{"Authorization": {tt.header}}}).BasicAuth()
				e.consoleLogin(u, p)
			} else if tt.header != "" {
				e.header.Set("Authorization", tt.header)
			}
			check := func(r request, allowed bool, refusal int) {
				t.Helper()
				path := strings.ReplaceAll(r.path, "{conn}", fmt.Sprint(conn.ID()))
				code, v, _ := e.do(r.method, path, r.body)
				if allowed {
					if code != r.status {
						t.Errorf("%s %s: %d %v, want %d", r.method, path, code, v, r.status)
					}
					return
				}
				obj, _ := v.(map[string]any)
				msg, _ := obj["error"].(string)
				if r.method == "HEAD" {
					msg = tt.error // no body
				}
				if code != refusal || !strings.Contains(msg, tt.error) {
					t.Errorf("%s %s: %d %q, want %d with %q", r.method, path, code, msg, refusal, tt.error)
				}
			}
			refusal := map[int]int{monitor: 403, refused: 403, unauthorized: 401}[tt.want]
			for _, r := range reads {
				check(r, tt.want == admin || tt.want == monitor, refusal)
			}
			for _, r := range writes {
				check(r, tt.want == admin, refusal)
			}
			if tt.want == admin {
				return
			}
			// Refused changes changed nothing.
			if d := e.depth(qA); d != 3 {
				t.Errorf("queue a holds %d messages after refused changes, want 3", d)
			}
			if _, err := e.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "c"}); err == nil {
				t.Error("a refused request created /queue/c")
			}
			if len(e.eng.Connections()) != 1 {
				t.Error("a refused request closed the connection")
			}
		})
	}
}

// The console's login: an administrator and a monitor get a session that
// says their role; a user without an admin grant, a wrong password and,
// on a listener with only bearer tokens, any password get none.
func TestConsoleLogin(t *testing.T) {
	a, _ := testAuth(t)
	_, th, _ := NewToken()
	tokensOnly, _ := NewAuth(nil, []string{th})
	emptyRealm, err := security.New(security.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokensAndEmptyRealm, _ := NewAuth(emptyRealm, []string{th})
	for _, tt := range []struct {
		name, user, password string
		auth                 *Auth
		status               int
		role, error          string
	}{
		{"admin", "ops", testPassword, a, 200, "admin", ""},
		{"monitor", "watcher", testPassword, a, 200, "monitor", ""},
		{"no admin grant", "app", testPassword, a, 403, "", "user app has no admin or monitor grant"},
		{"wrong password", "watcher", "nope", a, 401, "", "wrong user name or password"},
		{"unknown user", "nobody", testPassword, a, 401, "", "wrong user name or password"},
		{"only tokens", "ops", testPassword, tokensOnly, 401, "", "wrong user name or password"},
		{"only tokens, a realm without users", "ops", "anything", tokensAndEmptyRealm, 401, "", "wrong user name or password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.auth)
			code, v, res := e.do("POST", "/api/login", map[string]string{"user": tt.user, "password": tt.password})
			m, _ := v.(map[string]any)
			if code != tt.status {
				t.Fatalf("login: %d %v, want %d", code, v, tt.status)
			}
			if tt.status != 200 {
				if c := sessionCookieOf(res); c != nil {
					t.Errorf("a refused login set a session cookie")
				}
				if msg, _ := m["error"].(string); !strings.Contains(msg, tt.error) {
					t.Errorf("error %q, want %q", msg, tt.error)
				}
				return
			}
			if m["user"] != tt.user || m["role"] != tt.role || m["authRequired"] != true {
				t.Errorf("login answered %v", m)
			}
			e.header.Set("Cookie", sessionCookie+"="+sessionCookieOf(res).Value)
			if w := e.want("GET", "/api/whoami", nil, 200); w["user"] != tt.user || w["role"] != tt.role {
				t.Errorf("whoami in the session = %v", w)
			}
		})
	}
	// Basic authentication with only tokens configured accepts no password.
	e := newEnv(t, tokensAndEmptyRealm)
	e.header.Set("Authorization", basic("ops", "anything"))
	e.want("GET", "/api/destinations", nil, 401, "wrong user name or password")
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Every request that may change something is logged once answered, with
// who made it, the method, path and status; no password or token is.
func TestChangesLogged(t *testing.T) {
	a, token := testAuth(t)
	var logs syncBuffer
	e := newEnvWith(t, envOptions{auth: a, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	e.header.Set("Authorization", basic("ops", testPassword))
	e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "a"}, 201)
	e.want("GET", "/api/destinations", nil, 200)
	e.header.Set("Authorization", "Bearer "+token)
	e.want("POST", "/api/destinations/queue/nope/purge", nil, 404)
	e.header.Set("Authorization", basic("watcher", testPassword))
	e.want("DELETE", "/api/destinations/queue/a", nil, 403)
	e.header.Del("Authorization")
	e.consoleLogin("ops", testPassword)
	e.want("DELETE", "/api/destinations/queue/a", nil, 200)

	type line struct {
		Msg, User, Token, Role, Method, Path string
		Status                               int
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if x.Method != "" {
			got = append(got, x)
		}
	}
	want := []line{
		{"admin request", "ops", "", "admin", "POST", "/api/destinations", 201},
		{"admin request", "", "token-1", "admin", "POST", "/api/destinations/queue/nope/purge", 404},
		{"admin request refused", "watcher", "", "monitor", "DELETE", "/api/destinations/queue/a", 403},
		{"admin request", "ops", "", "admin", "DELETE", "/api/destinations/queue/a", 200},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("request log lines:\n got %v\nwant %v", got, want)
	}
	if s := logs.String(); strings.Contains(s, testPassword) || strings.Contains(s, token) {
		t.Errorf("the log holds a credential:\n%s", s)
	}
}

// scrape returns /metrics' text.
func (e *env) scrape() string {
	e.t.Helper()
	code, _, res := e.do("GET", "/metrics", nil)
	raw, _ := io.ReadAll(res.Body)
	if code != 200 {
		e.t.Fatalf("GET /metrics: %d %s", code, raw)
	}
	return string(raw)
}

// metricValue reads one series' value from a scrape ("" when absent).
func metricValue(text, series string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

// The authentication and authorization counters: every known series at
// zero before anything happens, then counting the realm's logins, the
// admin listener's tokens and refusals, and the engine's denied actions,
// without a user label.
func TestAuthMetrics(t *testing.T) {
	m := NewAuthMetrics()
	_, th, _ := NewToken()
	token, th2, _ := NewToken()
	a, err := NewAuth(testRealm(t, m.Attempt), []string{th, th2})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envOptions{auth: a, metrics: m})
	e.header.Set("Authorization", "Bearer "+token)
	before := e.scrape()
	for _, p := range []string{"stomp", "amqp", "admin"} {
		for _, r := range []string{"success", "failure"} {
			s := fmt.Sprintf(`sluice_auth_attempts_total{protocol=%q,result=%q}`, p, r)
			want := "0"
			if p == "admin" && r == "success" {
				want = "1" // this scrape's token
			}
			if v := metricValue(before, s); v != want {
				t.Errorf("before any event %s = %q, want %s", s, v, want)
			}
		}
	}
	for _, p := range []string{"stomp", "amqp"} {
		for _, act := range engine.Actions() {
			s := fmt.Sprintf(`sluice_authorization_denied_total{action=%q,protocol=%q}`, act, p)
			if v := metricValue(before, s); v != "0" {
				t.Errorf("before any event %s = %q, want 0", s, v)
			}
		}
	}

	// The admin listener: two good and two bad passwords, a bad token, a
	// monitor's purge and a login without an admin grant.
	e.header.Set("Authorization", basic("ops", testPassword))
	e.want("GET", "/api/overview", nil, 200)
	e.header.Set("Authorization", basic("ops", "wrong"))
	e.want("GET", "/api/overview", nil, 401)
	e.header.Set("Authorization", basic("nobody", "wrong"))
	e.want("GET", "/api/overview", nil, 401)
	e.header.Set("Authorization", "Bearer sluice_nope")
	e.want("GET", "/api/overview", nil, 401)
	e.header.Set("Authorization", basic("watcher", testPassword))
	e.want("POST", "/api/destinations/queue/a/purge", nil, 403)
	e.header.Del("Authorization")
	e.want("POST", "/api/login", map[string]string{"user": "app", "password": testPassword}, 403)

	// The engine: app may send to orders.*, not consume from a.
	if _, err := e.eng.CreateDestination(context.Background(), qA); err != nil {
		t.Fatal(err)
	}
	id, err := testRealm(t, m.Attempt).Login(context.Background(), security.Attempt{Protocol: "stomp"}, "app", testPassword)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.eng.Connect(engine.ConnectionOptions{User: id.User, Permissions: id.Permissions, Protocol: "stomp/1.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.CreateSession(engine.AutoAcknowledge)
	if _, err := s.CreateConsumer(qA, engine.ConsumerOptions{}); err == nil {
		t.Fatal("app consumed from /queue/a")
	}
	m.Attempt("amqp", "failure")

	e.header.Set("Authorization", "Bearer "+token)
	after := e.scrape()
	for series, want := range map[string]string{
		`sluice_auth_attempts_total{protocol="admin",result="success"}`:            "5", // ops, watcher, app's login, 2 scrapes' tokens
		`sluice_auth_attempts_total{protocol="admin",result="failure"}`:            "3",
		`sluice_auth_attempts_total{protocol="stomp",result="success"}`:            "1",
		`sluice_auth_attempts_total{protocol="amqp",result="failure"}`:             "1",
		`sluice_authorization_denied_total{action="admin",protocol="admin"}`:       "1",
		`sluice_authorization_denied_total{action="monitor",protocol="admin"}`:     "1",
		`sluice_authorization_denied_total{action="consume",protocol="stomp"}`:     "1",
		`sluice_authorization_denied_total{action="create",protocol="stomp"}`:      "0",
		`sluice_authorization_denied_total{action="subscribe",protocol="amqp"}`:    "0",
		`sluice_connections{protocol="stomp"}`:                                     "1",
		`# TYPE sluice_auth_attempts_total counter`:                                "",
		`# TYPE sluice_authorization_denied_total counter`:                         "",
		`sluice_authorization_denied_total{action="consume",protocol="stomp/1.2"}`: "",
	} {
		if strings.HasPrefix(series, "#") {
			if !strings.Contains(after, series) {
				t.Errorf("/metrics lacks %q", series)
			}
			continue
		}
		if got := metricValue(after, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	if strings.Contains(after, `user="`) {
		t.Error("a metric has a user label")
	}
}

func TestWithoutCredentialsOnlyLoopbackHosts(t *testing.T) {
	e := newEnv(t, nil)
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/destinations", nil)
	req.Host = "evil.example:8161"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("DNS-rebinding host: %d", res.StatusCode)
	}
	for _, host := range []string{"localhost:8161", "127.0.0.1", "[::1]:8161", "app.localhost"} {
		if !loopbackHost(host) {
			t.Errorf("loopbackHost(%q) = false", host)
		}
	}
	if loopbackHost("10.0.0.1:8161") || loopbackHost("localhost.evil.example") {
		t.Error("loopbackHost accepts a remote host")
	}
	if m := e.want("GET", "/api/whoami", nil, 200); m["user"] != "" || m["role"] != "admin" || m["authRequired"] != false {
		t.Fatalf("whoami without credentials = %v", m)
	}
}

func TestCrossOriginChangesRefused(t *testing.T) {
	e := newEnv(t, nil)
	code, v, _ := e.do("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "a"},
		"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	if code != 403 || v.(map[string]any)["error"] == "" {
		t.Fatalf("cross-origin POST: %d %v", code, v)
	}
	if _, err := e.eng.DestinationInfo(qA); err == nil {
		t.Fatal("a cross-origin request created a destination")
	}
	// The console's own requests are same-origin.
	e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "a"}, 201)
	code, _, _ = e.do("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "b"}, "Sec-Fetch-Site", "same-origin")
	if code != 201 {
		t.Fatalf("same-origin POST: %d", code)
	}
}

func TestCheckListen(t *testing.T) {
	a, _ := testAuth(t)
	_, th, _ := NewToken()
	tokenOnly, _ := NewAuth(nil, []string{th})
	hash, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	messaging, err := security.New(security.Options{
		Users:  []security.User{{Name: "app", PasswordHash: string(hash), Roles: []string{"apps"}}},
		Grants: []security.Grant{{Role: "apps", Match: "*", Actions: []string{"*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	messagingOnly, _ := NewAuth(messaging, nil)
	for _, tt := range []struct {
		addr string
		auth *Auth
		ok   bool
	}{
		{"127.0.0.1:8161", nil, true},
		{"127.0.0.2:0", nil, true},
		{"[::1]:8161", nil, true},
		{"localhost:8161", nil, true},
		{":8161", nil, false},
		{"0.0.0.0:8161", nil, false},
		{"[::]:8161", nil, false},
		{"10.1.2.3:8161", nil, false},
		{"0.0.0.0:8161", &Auth{}, false},
		{"0.0.0.0:8161", messagingOnly, false},
		{"0.0.0.0:8161", a, true},
		{":8161", a, true},
		{":8161", tokenOnly, true},
		{"no-port", nil, false},
	} {
		err := CheckListen(tt.addr, tt.auth)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListen(%q, auth=%v) = %v", tt.addr, tt.auth.Enabled(), err)
		}
	}
}

func TestNewAuthChecksTokens(t *testing.T) {
	for _, tt := range []struct {
		tokens []string
		want   string
	}{
		{[]string{"token"}, "sha256:"},
		{[]string{"sha256:abcd"}, "64 hex"},
		{[]string{HashToken("x"), "sha256:zz"}, "token 2"},
	} {
		if _, err := NewAuth(nil, tt.tokens); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewAuth(nil, %v) = %v, want an error with %q", tt.tokens, err, tt.want)
		}
	}
	if a, err := NewAuth(nil, nil); err != nil || a.Enabled() {
		t.Fatalf("empty auth: %v %v", a.Enabled(), err)
	}
	h, err := HashPassword("pw")
	if err != nil || bcrypt.CompareHashAndPassword([]byte(h), []byte("pw")) != nil {
		t.Fatalf("HashPassword: %q %v", h, err)
	}
	if _, err := HashPassword(""); err == nil {
		t.Error("HashPassword accepted an empty password")
	}
	tok, th, _ := NewToken()
	a, _ := NewAuth(nil, []string{th})
	if _, ok := a.AuthenticateToken(tok); !ok || HashToken(tok) != th || !a.Enabled() {
		t.Fatal("NewToken/AuthenticateToken")
	}
	if _, ok := a.AuthenticateToken(tok + "x"); ok {
		t.Fatal("a wrong token passed")
	}
}

func TestSessionsExpire(t *testing.T) {
	a, _ := testAuth(t)
	now := time.Now()
	a.now = func() time.Time { return now }
	v, err := a.newSession(Caller{Name: "watcher", Role: RoleMonitor})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := a.sessionCaller(v); !ok || c.Name != "watcher" || c.Role != RoleMonitor {
		t.Fatalf("fresh session: %v %v", c, ok)
	}
	now = now.Add(sessionFor + time.Second)
	if _, ok := a.sessionCaller(v); ok {
		t.Fatal("expired session accepted")
	}
}
