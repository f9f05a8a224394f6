package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// env is an admin server over a real engine (on a bbolt store), served by
// httptest on 127.0.0.1.
type env struct {
	t   *testing.T
	eng *engine.Broker
	srv *Server
	ts  *httptest.Server
	// header is added to every request (credentials).
	header http.Header
}

func newEnv(t *testing.T, auth *Auth) *env {
	t.Helper()
	return newEnvWith(t, envOptions{auth: auth})
}

// envOptions configure newEnvWith.
type envOptions struct {
	auth    *Auth
	metrics *AuthMetrics // registered, and the engine's ObserveDenied
	logger  *slog.Logger
	options func(*Options) // changes the server's options
}

func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Store: st, AutoCreate: true}
	if o.metrics != nil {
		cfg.ObserveDenied = o.metrics.Denied
	}
	eng, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Version: "test", Engine: eng, Auth: o.auth, AuthMetrics: o.metrics, Logger: o.logger,
		StoreStats: func() StoreStats { return StoreStats{Commits: 7, Updates: 9, Ops: 21} }}
	if o.options != nil {
		o.options(&opts)
	}
	srv := New(opts)
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		_ = eng.Close()
		_ = st.Close()
	})
	return &env{t: t, eng: eng, srv: srv, ts: ts, header: http.Header{}}
}

// do sends a request and returns the status, the decoded JSON body (nil
// when it is not JSON) and the response.
func (e *env) do(method, path string, body any, hdr ...string) (int, any, *http.Response) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range e.header {
		req.Header[k] = v
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	var v any
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") { // HEAD has no body
		if err := json.Unmarshal(raw, &v); err != nil {
			e.t.Fatalf("%s %s: bad JSON %q: %v", method, path, raw, err)
		}
	}
	return res.StatusCode, v, res
}

// want checks a status and, for errors, that the body is {"error": ...}
// containing every fragment.
func (e *env) want(method, path string, body any, status int, fragments ...string) map[string]any {
	e.t.Helper()
	code, v, _ := e.do(method, path, body)
	obj, _ := v.(map[string]any)
	if code != status {
		e.t.Fatalf("%s %s: status %d %v, want %d", method, path, code, v, status)
	}
	if status >= 400 {
		msg, _ := obj["error"].(string)
		if msg == "" {
			e.t.Fatalf("%s %s: error body without \"error\": %v", method, path, v)
		}
		for _, f := range fragments {
			if !strings.Contains(msg, f) {
				e.t.Errorf("%s %s: error %q does not mention %q", method, path, msg, f)
			}
		}
	}
	return obj
}

func (e *env) list(path string) []any {
	e.t.Helper()
	code, v, _ := e.do("GET", path, nil)
	if code != 200 {
		e.t.Fatalf("GET %s: %d %v", path, code, v)
	}
	l, ok := v.([]any)
	if !ok {
		e.t.Fatalf("GET %s: not a list: %v", path, v)
	}
	return l
}

// send puts n text messages with an int property i on a queue or topic.
func (e *env) send(dest message.Destination, n int, clientID string) {
	e.t.Helper()
	c, err := e.eng.Connect(engine.ConnectionOptions{ClientID: clientID})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.CreateSession(engine.AutoAcknowledge)
	p, err := s.CreateProducer(dest)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range n {
		m := &message.Message{Body: message.TextBody(fmt.Sprint("m", i))}
		_ = m.Props.Set("i", message.IntValue(int32(i)))
		_ = m.Props.Set("color", message.StringValue([]string{"red", "blue"}[i%2]))
		if err := p.Send(context.Background(), m, engine.SendOptions{Set: engine.SetPriority, Priority: uint8(i % 10)}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) depth(dest message.Destination) int64 {
	e.t.Helper()
	in, err := e.eng.DestinationInfo(dest)
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Messages
}

var (
	qA = message.Destination{Kind: message.Queue, Name: "a"}
	qB = message.Destination{Kind: message.Queue, Name: "b"}
	tT = message.Destination{Kind: message.Topic, Name: "t"}
)

func TestHealthReadyAndUnknownEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	if m := e.want("GET", "/healthz", nil, 200); m["version"] != "test" {
		t.Fatalf("healthz = %v", m)
	}
	e.want("GET", "/readyz", nil, 200)
	e.srv.SetReady(false)
	if code, v, _ := e.do("GET", "/readyz", nil); code != 503 || v.(map[string]any)["status"] != "starting" {
		t.Fatalf("readyz while not ready: %d %v", code, v)
	}
	e.want("GET", "/api/nothing", nil, 404, "no such API endpoint")
	e.want("PUT", "/api/destinations", nil, 405)
}

func TestDestinationsEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	if m := e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "a"}, 201); m["destination"] != "/queue/a" {
		t.Fatalf("create = %v", m)
	}
	e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "a"}, 200)
	e.want("POST", "/api/destinations", map[string]string{"kind": "topic", "name": "t"}, 201)
	e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": "with/slash"}, 201)
	// Bad input: clear 4xx, nothing made.
	e.want("POST", "/api/destinations", map[string]string{"kind": "temp-queue", "name": "x"}, 400, "want queue or topic")
	e.want("POST", "/api/destinations", map[string]string{"kind": "queue", "name": ""}, 400, "empty")
	e.want("POST", "/api/destinations", `{"kind":"queue","name":"x","extra":1}`, 400, "unknown field")
	e.want("POST", "/api/destinations", `{"kind":"queue",`, 400, "malformed JSON")
	e.want("POST", "/api/destinations", `{"kind":"queue","name":"x"} {}`, 400, "after the JSON")
	e.want("POST", "/api/destinations", nil, 400, "needs a JSON body")
	e.want("POST", "/api/destinations", strings.Repeat(" ", maxJSONBody+10)+"{}", 413)

	l := e.list("/api/destinations")
	if len(l) != 3 {
		t.Fatalf("list = %v", l)
	}
	if q := e.list("/api/destinations?kind=topic"); len(q) != 1 || q[0].(map[string]any)["name"] != "t" {
		t.Fatalf("topics = %v", q)
	}
	e.want("GET", "/api/destinations?kind=nope", nil, 400, "unknown destination kind")

	e.send(qA, 3, "")
	d := e.want("GET", "/api/destinations/queue/a", nil, 200)
	if d["messages"] != 3.0 || d["enqueued"] != 3.0 || d["kind"] != "queue" || d["created"] == "" {
		t.Fatalf("get = %v", d)
	}
	e.want("GET", "/api/destinations/queue/with%2Fslash", nil, 200)
	e.want("GET", "/api/destinations/queue/nope", nil, 404, "does not exist")
	e.want("GET", "/api/destinations/pipe/a", nil, 400, "unknown destination kind")

	if m := e.want("POST", "/api/destinations/queue/a/purge", nil, 200); m["purged"] != 3.0 {
		t.Fatalf("purge = %v", m)
	}
	e.want("POST", "/api/destinations/queue/nope/purge", nil, 404)
	e.want("POST", "/api/destinations/topic/t/purge", nil, 400, "durable subscriptions")

	e.want("DELETE", "/api/destinations/queue/a", nil, 200)
	e.want("DELETE", "/api/destinations/queue/a", nil, 404)
	e.want("DELETE", "/api/destinations/topic/t", nil, 200)
	if l := e.list("/api/destinations"); len(l) != 1 {
		t.Fatalf("after deletes = %v", l)
	}
}

func TestMessagesEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	for _, d := range []message.Destination{qA, qB} {
		if _, err := e.eng.CreateDestination(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	e.send(qA, 10, "")
	page := func(q string) map[string]any { return e.want("GET", "/api/destinations/queue/a/messages"+q, nil, 200) }
	ids := func(p map[string]any) (out []string) {
		for _, m := range p["messages"].([]any) {
			out = append(out, m.(map[string]any)["body"].(string))
		}
		return out
	}

	p := page("")
	if p["total"] != 10.0 || len(p["messages"].([]any)) != 10 {
		t.Fatalf("browse = %v", p)
	}
	first := p["messages"].([]any)[0].(map[string]any)
	if first["body"] != "m9" || first["priority"] != 9.0 || first["deliveryCount"] != 1.0 || first["bodyKind"] != "text" {
		t.Fatalf("first message = %v", first)
	}
	props := first["properties"].([]any)
	if props[0].(map[string]any)["type"] != "int" || props[0].(map[string]any)["value"] != 9.0 {
		t.Fatalf("typed properties = %v", props)
	}
	if got := strings.Join(ids(page("?selector="+url.QueryEscape("color = 'red' AND i < 5")+"&sort=JMSPriority")), " "); got != "m0 m2 m4" {
		t.Fatalf("selector+sort = %s", got)
	}
	if got := strings.Join(ids(page("?sort=-priority&offset=2&limit=3")), " "); got != "m7 m6 m5" {
		t.Fatalf("paging = %s", got)
	}
	if p := page("?preview=1&full=true&limit=1"); p["messages"].([]any)[0].(map[string]any)["message"] == nil {
		t.Fatalf("full = %v", p)
	}
	if p := page("?preview=1&limit=1"); p["messages"].([]any)[0].(map[string]any)["bodyTruncated"] != true {
		t.Fatalf("preview = %v", p)
	}

	// Bad input on browse.
	bad := e.want("GET", "/api/destinations/queue/a/messages?selector="+url.QueryEscape("color = = 'red'"), nil, 400, "selector")
	if pos, _ := bad["position"].(map[string]any); pos == nil || pos["column"] != 9.0 || bad["code"] != "InvalidSelectorException" {
		t.Fatalf("bad selector body = %v", bad)
	}
	e.want("GET", "/api/destinations/queue/a/messages?sort=color", nil, 400, "sort")
	e.want("GET", "/api/destinations/queue/a/messages?limit=0", nil, 400, "limit")
	e.want("GET", "/api/destinations/queue/a/messages?offset=-1", nil, 400, "offset")
	e.want("GET", "/api/destinations/queue/nope/messages", nil, 404)
	e.want("GET", "/api/destinations/topic/a/messages", nil, 400)

	// Move by IDs and by selector.
	all := page("")["messages"].([]any)
	idOf := func(body string) string {
		for _, m := range all {
			if m.(map[string]any)["body"] == body {
				return m.(map[string]any)["id"].(string)
			}
		}
		t.Fatalf("no message %s", body)
		return ""
	}
	if m := e.want("POST", "/api/destinations/queue/a/messages/move", map[string]any{"ids": []string{idOf("m1"), idOf("m2")}, "to": "/queue/b"}, 200); m["moved"] != 2.0 {
		t.Fatalf("move = %v", m)
	}
	if m := e.want("POST", "/api/destinations/queue/a/messages/move", map[string]any{"selector": "i >= 8", "to": "queue://b"}, 200); m["moved"] != 2.0 {
		t.Fatalf("move = %v", m)
	}
	// Bad moves change nothing.
	for _, tt := range []struct {
		body any
		code int
		frag string
	}{
		{map[string]any{"ids": []string{idOf("m0")}}, 400, `"to" is missing`},
		{map[string]any{"ids": []string{idOf("m0")}, "to": "b"}, 400, "no known prefix"},
		{map[string]any{"ids": []string{idOf("m0")}, "to": "/queue/nope"}, 404, "does not exist"},
		{map[string]any{"ids": []string{idOf("m0")}, "to": "/queue/a"}, 400, "itself"},
		{map[string]any{"ids": []string{idOf("m0")}, "selector": "i > 1", "to": "/queue/b"}, 400, "exactly one"},
		{map[string]any{"to": "/queue/b"}, 400, "exactly one"},
		{map[string]any{"selector": "  ", "to": "/queue/b"}, 400, "selector is empty"},
		{map[string]any{"ids": []string{}, "to": "/queue/b"}, 400, "ids is empty"},
		{map[string]any{"selector": "i >", "to": "/queue/b"}, 400, "selector"},
		{map[string]any{"all": true, "to": "/queue/b", "x": 1}, 400, "unknown field"},
	} {
		e.want("POST", "/api/destinations/queue/a/messages/move", tt.body, tt.code, tt.frag)
	}
	e.want("POST", "/api/destinations/queue/nope/messages/move", map[string]any{"all": true, "to": "/queue/b"}, 404)
	if e.depth(qA) != 6 || e.depth(qB) != 4 {
		t.Fatalf("depths after moves: a %d b %d", e.depth(qA), e.depth(qB))
	}

	// Delete.
	e.want("POST", "/api/destinations/queue/a/messages/delete", map[string]any{"all": true, "to": "/queue/b"}, 400, "belongs to move")
	e.want("POST", "/api/destinations/queue/a/messages/delete", map[string]any{}, 400, "exactly one")
	if m := e.want("POST", "/api/destinations/queue/a/messages/delete", map[string]any{"selector": "i = 0"}, 200); m["deleted"] != 1.0 {
		t.Fatalf("delete = %v", m)
	}
	if e.depth(qA) != 5 {
		t.Fatalf("depth after delete: %d", e.depth(qA))
	}

	// Export, delete all, import: the same messages come back.
	before := page("")
	code, _, res := e.do("GET", "/api/destinations/queue/a/messages/export", nil)
	raw, _ := io.ReadAll(res.Body)
	if code != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" || res.Header.Get("X-Sluice-Messages") != "5" ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "queue-a.ndjson") || bytes.Count(raw, []byte("\n")) != 5 {
		t.Fatalf("export: %d %v %q", code, res.Header, raw)
	}
	code, _, res = e.do("GET", "/api/destinations/queue/a/messages/export?selector="+url.QueryEscape("color = 'blue'"), nil)
	if code != 200 || res.Header.Get("X-Sluice-Messages") != "3" {
		t.Fatalf("export with selector: %d %v", code, res.Header)
	}
	e.want("GET", "/api/destinations/queue/a/messages/export?selector=(", nil, 400, "selector")
	e.want("GET", "/api/destinations/queue/nope/messages/export", nil, 404)

	e.want("POST", "/api/destinations/queue/a/messages/delete", map[string]any{"all": true}, 200)
	// A bad import file imports nothing.
	badFile := string(raw) + "{\"priority\": 99}\n"
	if m := e.want("POST", "/api/destinations/queue/a/messages/import", badFile, 400, "line 6", "priority"); m["line"] != 6.0 {
		t.Fatalf("bad import body = %v", m)
	}
	e.want("POST", "/api/destinations/queue/a/messages/import", "not json\n", 400, "line 1")
	e.want("POST", "/api/destinations/queue/nope/messages/import", string(raw), 404)
	if e.depth(qA) != 0 {
		t.Fatalf("a bad import changed the queue: %d", e.depth(qA))
	}
	if m := e.want("POST", "/api/destinations/queue/a/messages/import", raw, 200); m["imported"] != 5.0 {
		t.Fatalf("import = %v", m)
	}
	after := page("")
	bm, am := before["messages"].([]any), after["messages"].([]any)
	for i := range bm {
		b, a := bm[i].(map[string]any), am[i].(map[string]any)
		for _, k := range []string{"id", "timestamp", "priority", "expiration", "deliveryMode", "properties", "body", "bodyKind"} {
			if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
				t.Errorf("message %d: %s = %v after the round trip, was %v", i, k, a[k], b[k])
			}
		}
	}

	// Import into a topic publishes to its subscriptions.
	e.want("POST", "/api/destinations/topic/nope/messages/import", string(raw), 404)
}

func TestImportTooLarge(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.opts.MaxImportBytes = 100
	e.eng.CreateDestination(context.Background(), qA)
	e.want("POST", "/api/destinations/queue/a/messages/import", strings.Repeat(`{"id":"ID:1"}`+"\n", 20), 413)
	if e.depth(qA) != 0 {
		t.Fatal("a refused import changed the queue")
	}
}

func TestSubscriptionsEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	c, err := e.eng.Connect(engine.ConnectionOptions{ClientID: "cid"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.CreateSession(engine.AutoAcknowledge)
	for _, name := range []string{"s1", "s2"} {
		cons, err := s.CreateConsumer(tT, engine.ConsumerOptions{Durable: true, SubscriptionName: name, Selector: "i >= 0"})
		if err != nil {
			t.Fatal(err)
		}
		if name == "s1" {
			_ = cons.Close()
		}
	}
	anon, err := e.eng.Connect(engine.ConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as, _ := anon.CreateSession(engine.AutoAcknowledge)
	if _, err := as.CreateConsumer(tT, engine.ConsumerOptions{Durable: true, Shared: true, SubscriptionName: "sh"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConsumer(tT, engine.ConsumerOptions{}); err != nil {
		t.Fatal(err)
	}
	e.send(tT, 4, "")
	all := e.list("/api/subscriptions")
	durable := e.list("/api/subscriptions?durable=true")
	if len(all) != 4 || len(durable) != 3 {
		t.Fatalf("subscriptions = %v", all)
	}
	s1 := durable[1].(map[string]any) // sorted by topic, client ID ("" first), name
	if s1["name"] != "s1" || s1["clientId"] != "cid" || s1["active"] != false || s1["pending"] != 4.0 || s1["selector"] != "i >= 0" || s1["topic"] != "/topic/t" {
		t.Fatalf("s1 = %v (all %v)", s1, durable)
	}
	e.want("GET", "/api/subscriptions?durable=maybe", nil, 400)

	base := "/api/subscriptions/cid/s1"
	p := e.want("GET", base+"/messages?sort=JMSTimestamp", nil, 200)
	if p["total"] != 4.0 {
		t.Fatalf("browse subscription = %v", p)
	}
	if _, err := e.eng.CreateDestination(context.Background(), qB); err != nil {
		t.Fatal(err)
	}
	if m := e.want("POST", base+"/messages/move", map[string]any{"selector": "i < 2", "to": "/queue/b"}, 200); m["moved"] != 2.0 {
		t.Fatalf("move = %v", m)
	}
	code, _, res := e.do("GET", base+"/messages/export", nil)
	raw, _ := io.ReadAll(res.Body)
	if code != 200 || res.Header.Get("X-Sluice-Messages") != "2" || !strings.Contains(res.Header.Get("Content-Disposition"), "s1.ndjson") {
		t.Fatalf("export = %d %v", code, res.Header)
	}
	if m := e.want("POST", base+"/purge", nil, 200); m["purged"] != 2.0 {
		t.Fatalf("purge = %v", m)
	}
	if m := e.want("POST", base+"/messages/import", raw, 200); m["imported"] != 2.0 {
		t.Fatalf("import = %v", m)
	}
	if m := e.want("POST", base+"/messages/delete", map[string]any{"all": true}, 200); m["deleted"] != 2.0 {
		t.Fatalf("delete = %v", m)
	}
	// A shared durable subscription without client ID is "-" in paths.
	if p := e.want("GET", "/api/subscriptions/-/sh/messages", nil, 200); p["total"] != 4.0 {
		t.Fatalf("shared subscription = %v", p)
	}
	e.want("GET", "/api/subscriptions/cid/nope/messages", nil, 404, "no durable subscription")
	e.want("POST", "/api/subscriptions/nope/s1/purge", nil, 404)
	e.want("DELETE", "/api/subscriptions/cid/s2", nil, 409, "active")
	e.want("DELETE", "/api/subscriptions/cid/s1", nil, 200)
	e.want("DELETE", "/api/subscriptions/cid/s1", nil, 404)
	if l := e.list("/api/subscriptions?durable=true"); len(l) != 2 {
		t.Fatalf("after delete = %v", l)
	}
	// Importing into the topic reaches every subscription whose selector
	// takes the message: sh and the non-durable one, not s2 (i >= 0).
	before := e.depth(tT)
	e.want("POST", "/api/destinations/topic/t/messages/import", `{"body":{"kind":"text","text":"x"}}`, 200)
	if e.depth(tT) != before+2 {
		t.Fatalf("topic import: depth %d → %d", before, e.depth(tT))
	}
}

func TestConnectionsEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	c, err := e.eng.Connect(engine.ConnectionOptions{ClientID: "app", RemoteAddr: "127.0.0.1:4000", Protocol: "stomp/1.2", User: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.eng.Connect(engine.ConnectionOptions{Protocol: "amqp"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	heard := make(chan error, 1)
	c.SetExceptionListener(func(err error) { heard <- err })
	s, _ := c.CreateSession(engine.ClientAcknowledge)
	if _, err := s.CreateConsumer(qA, engine.ConsumerOptions{Selector: "i > 2"}); err != nil {
		t.Fatal(err)
	}
	l := e.list("/api/connections")
	if len(l) != 2 {
		t.Fatalf("connections = %v", l)
	}
	cj := l[0].(map[string]any)
	if cj["user"] != "billing" || l[1].(map[string]any)["user"] != "" {
		t.Fatalf("the connections' users: %v and %v, want billing and \"\" (anonymous)", cj["user"], l[1].(map[string]any)["user"])
	}
	sess := cj["sessions"].([]any)[0].(map[string]any)
	cons := sess["consumers"].([]any)[0].(map[string]any)
	if cj["clientId"] != "app" || cj["protocol"] != "stomp/1.2" || cj["consumers"] != 1.0 || sess["mode"] != "CLIENT_ACKNOWLEDGE" ||
		cons["destination"] != "/queue/a" || cons["selector"] != "i > 2" {
		t.Fatalf("connection = %v", cj)
	}
	id := fmt.Sprint(c.ID())
	if one := e.want("GET", "/api/connections/"+id, nil, 200); one["user"] != "billing" {
		t.Fatalf("GET /api/connections/%s: user %v", id, one["user"])
	}
	e.want("GET", "/api/connections/999", nil, 404)
	e.want("GET", "/api/connections/x", nil, 400, "not a number")
	e.want("DELETE", "/api/connections/x", nil, 400)
	e.want("DELETE", "/api/connections/999", nil, 404, "does not exist")
	e.want("DELETE", "/api/connections/"+id, nil, 200)
	select {
	case err := <-heard:
		if err != engine.ErrClosedByAdministrator {
			t.Fatalf("heard %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the connection's exception listener was not told")
	}
	if l := e.list("/api/connections"); len(l) != 1 {
		t.Fatalf("after close = %v", l)
	}
}

func TestOverview(t *testing.T) {
	e := newEnv(t, nil)
	e.send(qA, 3, "")
	o := e.want("GET", "/api/overview", nil, 200)
	if o["queues"] != 1.0 || o["messages"] != 3.0 || o["enqueued"] != 3.0 || o["version"] != "test" || o["ready"] != true {
		t.Fatalf("overview = %v", o)
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, nil)
	e.send(qA, 3, "")
	e.send(tT, 1, "")
	c, _ := e.eng.Connect(engine.ConnectionOptions{Protocol: "stomp/1.2"})
	defer c.Close()
	code, _, res := e.do("GET", "/metrics", nil)
	raw, _ := io.ReadAll(res.Body)
	text := string(raw)
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		`sluice_destination_messages{kind="queue",name="a"} 3`,
		`sluice_destination_enqueued_total{kind="queue",name="a"} 3`,
		`sluice_destination_dequeued_total{kind="queue",name="a"} 0`,
		`sluice_destination_expired_total{kind="queue",name="a"} 0`,
		`sluice_destination_redelivered_total{kind="queue",name="a"} 0`,
		`sluice_destination_messages{kind="topic",name="t"} 0`,
		`sluice_connections{protocol="stomp"} 1`,
		`sluice_connections{protocol="amqp"} 0`,
		`sluice_store_commits_total 7`,
		`sluice_build_info{version="test"} 1`,
		`# TYPE sluice_destination_enqueued_total counter`,
		`# TYPE sluice_destination_messages gauge`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The registry is the server's own, and lints clean.
	if n, err := e.srv.Registry().Gather(); err != nil || len(n) == 0 {
		t.Fatalf("Gather: %d families, %v", len(n), err)
	}
}

func TestConsoleServed(t *testing.T) {
	e := newEnv(t, nil)
	code, _, res := e.do("GET", "/", nil)
	raw, _ := io.ReadAll(res.Body)
	if code != 200 || !strings.Contains(string(raw), "Sluice console") || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("console: %d %v", code, res.Header)
	}
	for _, f := range []string{"/ui/app.js", "/ui/style.css", "/ui/favicon.svg"} {
		if code, _, _ := e.do("GET", f, nil); code != 200 {
			t.Errorf("%s: %d", f, code)
		}
	}
	// Nothing in the console refers to another host.
	for _, f := range []string{"index.html", "app.js", "style.css"} {
		b, _ := consoleFiles.ReadFile("console/" + f)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("console/%s mentions %q: the console must not fetch anything from elsewhere", f, bad)
			}
		}
	}
	if code, _, _ := e.do("GET", "/nothing", nil); code != 404 {
		t.Errorf("/nothing: %d", code)
	}
}

// Every API route is in docs/openapi.yaml (with its method) and in
// docs/admin-api.md.
func TestRoutesDocumented(t *testing.T) {
	e := newEnv(t, nil)
	spec, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile("../../docs/admin-api.md")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{} // path → its block in the spec
	var cur string
	for _, line := range strings.Split(string(spec), "\n") {
		if strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":") {
			cur = strings.TrimSuffix(strings.TrimSpace(line), ":")
			continue
		}
		if cur != "" && (len(line) > 0 && line[0] != ' ') {
			cur = ""
		}
		if cur != "" {
			paths[cur] += line + "\n"
		}
	}
	if len(e.srv.apiRoutes) < 20 {
		t.Fatalf("only %d routes recorded", len(e.srv.apiRoutes))
	}
	for _, r := range e.srv.apiRoutes {
		method, path, _ := strings.Cut(r, " ")
		block, ok := paths[path]
		if !ok {
			t.Errorf("docs/openapi.yaml lacks %s", path)
			continue
		}
		if !strings.Contains(block, "    "+strings.ToLower(method)+":") {
			t.Errorf("docs/openapi.yaml lacks %s %s", method, path)
		}
		last := path[strings.LastIndex(path, "/"):]
		if strings.HasPrefix(last, "/{") {
			last = ""
		}
		if !strings.Contains(string(guide), method) || !strings.Contains(string(guide), last) {
			t.Errorf("docs/admin-api.md does not mention %s %s", method, path)
		}
	}
}
