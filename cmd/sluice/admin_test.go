package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/admin"
)

// admServer is an admin API over a real (in-memory) engine, requiring the
// returned bearer token.
func admServer(t *testing.T) (*engine.Broker, string, string) {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	token, hash, err := admin.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := admin.NewAuth(nil, []string{hash})
	if err != nil {
		t.Fatal(err)
	}
	srv := admin.New(admin.Options{Version: "test", Engine: eng, Auth: auth})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close(); _ = eng.Close() })
	return eng, ts.URL, token
}

// admRun runs `sluice admin ARGS` against url with token.
func admRun(t *testing.T, url, token, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"admin", "--url", url, "--token", token}, args...))
	err := root.Execute()
	return out.String(), err
}

func admMust(t *testing.T, url, token string, args ...string) string {
	t.Helper()
	out, err := admRun(t, url, token, "", args...)
	if err != nil {
		t.Fatalf("sluice admin %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func admSendN(t *testing.T, eng *engine.Broker, dest message.Destination, n int, clientID string) {
	t.Helper()
	c, err := eng.Connect(engine.ConnectionOptions{ClientID: clientID})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.CreateSession(engine.AutoAcknowledge)
	p, _ := s.CreateProducer(dest)
	for i := range n {
		m := &message.Message{Body: message.TextBody(fmt.Sprintf("hello %d", i))}
		_ = m.Props.Set("n", message.IntValue(int32(i)))
		if err := p.Send(context.Background(), m, engine.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdminCLIDestinationsAndMessages(t *testing.T) {
	eng, url, tok := admServer(t)
	if out := admMust(t, url, tok, "create", "queue", "orders"); !strings.Contains(out, "created /queue/orders") {
		t.Fatalf("create: %q", out)
	}
	admMust(t, url, tok, "create", "/queue/archive")
	admMust(t, url, tok, "create", "topic", "events")
	admSendN(t, eng, message.Destination{Kind: message.Queue, Name: "orders"}, 5, "")

	out := admMust(t, url, tok, "destinations")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "KIND") || !strings.Contains(out, "queue  orders") {
		t.Fatalf("destinations table:\n%s", out)
	}
	if !strings.Contains(lines[2], " 5 ") {
		t.Fatalf("orders row lacks its 5 messages: %q", lines[2])
	}
	var ds []map[string]any
	if err := json.Unmarshal([]byte(admMust(t, url, tok, "--json", "destinations", "--kind", "queue")), &ds); err != nil || len(ds) != 2 {
		t.Fatalf("--json destinations: %v %v", ds, err)
	}

	out = admMust(t, url, tok, "browse", "orders", "--selector", "n >= 3", "--sort", "-JMSTimestamp")
	if !strings.Contains(out, "2 of 2 messages on /queue/orders") || !strings.Contains(out, "n=3") || !strings.Contains(out, "text:hello 4") {
		t.Fatalf("browse:\n%s", out)
	}
	var page struct {
		Messages []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(admMust(t, url, tok, "--json", "browse", "/queue/orders")), &page); err != nil || len(page.Messages) != 5 {
		t.Fatalf("--json browse: %v", err)
	}

	if out := admMust(t, url, tok, "move", "orders", "--to", "archive", "--ids", page.Messages[0].ID+","+page.Messages[1].ID); !strings.Contains(out, "moved 2 messages from /queue/orders to /queue/archive") {
		t.Fatalf("move: %q", out)
	}
	if out := admMust(t, url, tok, "delete-messages", "orders", "--selector", "n = 4"); !strings.Contains(out, "deleted 1 messages") {
		t.Fatalf("delete-messages: %q", out)
	}

	// Export to a file, purge, import: the messages come back.
	file := filepath.Join(t.TempDir(), "orders.ndjson")
	if out := admMust(t, url, tok, "export", "orders", "-o", file); !strings.Contains(out, "exported 2 messages") {
		t.Fatalf("export: %q", out)
	}
	raw, _ := os.ReadFile(file)
	if strings.Count(string(raw), "\n") != 2 || !strings.Contains(string(raw), `"type":"int"`) {
		t.Fatalf("export file: %s", raw)
	}
	if out := admMust(t, url, tok, "purge", "orders"); !strings.Contains(out, "purged 2 messages") {
		t.Fatalf("purge: %q", out)
	}
	if out := admMust(t, url, tok, "import", "orders", file); !strings.Contains(out, "imported 2 messages into /queue/orders") {
		t.Fatalf("import: %q", out)
	}
	out, err := admRun(t, url, tok, string(raw), "import", "/queue/archive", "-")
	if err != nil || !strings.Contains(out, "imported 2") {
		t.Fatalf("import from stdin: %v %q", err, out)
	}
	stdout := admMust(t, url, tok, "export", "archive")
	if strings.Count(stdout, "\n") != 4 {
		t.Fatalf("export to stdout: %q", stdout)
	}

	if out := admMust(t, url, tok, "delete", "queue", "archive"); !strings.Contains(out, "deleted /queue/archive") {
		t.Fatalf("delete: %q", out)
	}

	// Errors are the API's, with a non-nil error (exit status 1).
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"browse", "orders", "--selector", "n = = 1"}, "selector:1:5"},
		{[]string{"browse", "nope"}, "does not exist (HTTP 404)"},
		{[]string{"move", "orders", "--to", "/queue/nope", "--all"}, "HTTP 404"},
		{[]string{"move", "orders", "--all"}, "--to is required"},
		{[]string{"move", "orders", "--to", "archive"}, "exactly one of"},
		{[]string{"delete", "queue", "x", "y"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"create", "pipe", "x"}, "want queue or topic"},
		{[]string{"browse"}, "name a destination"},
	} {
		out, err := admRun(t, url, tok, "", tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v (%q), want an error with %q", tt.args, err, out, tt.want)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	os.WriteFile(bad, []byte("{}\n{\"priority\":11}\n"), 0o600)
	if _, err := admRun(t, url, tok, "", "import", "orders", bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad import: %v", err)
	}
	if _, err := admRun(t, url, "wrong-token", "", "destinations"); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestAdminCLISubscriptionsAndConnections(t *testing.T) {
	eng, url, tok := admServer(t)
	topic := message.Destination{Kind: message.Topic, Name: "events"}
	c, err := eng.Connect(engine.ConnectionOptions{ClientID: "app", Protocol: "stomp/1.2", RemoteAddr: "127.0.0.1:5555", User: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	anon, err := eng.Connect(engine.ConnectionOptions{ClientID: "probe", Protocol: "amqp", RemoteAddr: "127.0.0.1:6666"})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	s, _ := c.CreateSession(engine.ClientAcknowledge)
	cons, err := s.CreateConsumer(topic, engine.ConsumerOptions{Durable: true, SubscriptionName: "audit", Selector: "n >= 0"})
	if err != nil {
		t.Fatal(err)
	}
	_ = cons.Close()
	admSendN(t, eng, topic, 3, "")

	out := admMust(t, url, tok, "subscriptions")
	if !strings.Contains(out, "/topic/events") || !strings.Contains(out, "audit") || !strings.Contains(out, "inactive") || !strings.Contains(out, "n >= 0") {
		t.Fatalf("subscriptions:\n%s", out)
	}
	out = admMust(t, url, tok, "browse", "--subscription", "audit", "--client-id", "app")
	if !strings.Contains(out, "3 of 3 messages on subscription audit") {
		t.Fatalf("browse subscription:\n%s", out)
	}
	if out := admMust(t, url, tok, "export", "--subscription", "audit", "--client-id", "app"); strings.Count(out, "\n") != 3 {
		t.Fatalf("export subscription: %q", out)
	}
	if out := admMust(t, url, tok, "purge", "--subscription", "audit", "--client-id", "app"); !strings.Contains(out, "purged 3") {
		t.Fatalf("purge subscription: %q", out)
	}

	out = admMust(t, url, tok, "connections")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  CLIENT-ID  USER  ") {
		t.Fatalf("connections:\n%s", out)
	}
	for i, want := range [][]string{{"app", "billing", "127.0.0.1:5555", "stomp/1.2"}, {"probe", "anonymous", "127.0.0.1:6666", "amqp"}} {
		if f := strings.Fields(lines[i+1]); len(f) < 5 || strings.Join(f[1:5], " ") != strings.Join(want, " ") {
			t.Errorf("connections row %d = %q, want client ID, user, remote, protocol %v", i+1, lines[i+1], want)
		}
	}
	if out := admMust(t, url, tok, "close-connection", fmt.Sprint(c.ID())); !strings.Contains(out, "closed connection") {
		t.Fatalf("close-connection: %q", out)
	}
	if _, err := admRun(t, url, tok, "", "close-connection", fmt.Sprint(c.ID())); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("closing twice: %v", err)
	}
	if out := admMust(t, url, tok, "delete-subscription", "audit", "--client-id", "app"); !strings.Contains(out, "deleted subscription audit") {
		t.Fatalf("delete-subscription: %q", out)
	}
	if out := admMust(t, url, tok, "subscriptions"); strings.Contains(out, "audit") {
		t.Fatalf("subscription still listed:\n%s", out)
	}
}

func TestAdminCLICredentialHelpers(t *testing.T) {
	out, err := admRun(t, "http://unused", "", "correct horse\n", "hash-password")
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(strings.TrimSpace(out)), []byte("correct horse")) != nil {
		t.Fatalf("hash-password printed %q", out)
	}
	out, err = admRun(t, "http://unused", "", "", "new-token")
	if err != nil {
		t.Fatal(err)
	}
	var tok, hash string
	fmt.Sscanf(out, "token: %s\nconfig: tokens = [%q]", &tok, &hash)
	if tok == "" || admin.HashToken(tok) != hash {
		t.Fatalf("new-token printed %q", out)
	}
}

// TestAdminImportTwice: importing the same file twice adds its messages once
// and the second run says it skipped them.
func TestAdminImportTwice(t *testing.T) {
	eng, url, tok := admServer(t)
	admMust(t, url, tok, "create", "queue", "orders")
	admSendN(t, eng, message.Destination{Kind: message.Queue, Name: "orders"}, 3, "")
	file := filepath.Join(t.TempDir(), "orders.ndjson")
	admMust(t, url, tok, "export", "orders", "-o", file)
	admMust(t, url, tok, "create", "queue", "copy")
	for i, want := range []string{
		"imported 3 messages into /queue/copy, skipped 0 already present",
		"imported 0 messages into /queue/copy, skipped 3 already present",
	} {
		if out := admMust(t, url, tok, "import", "copy", file); !strings.Contains(out, want) {
			t.Fatalf("import %d: %q, want %q", i+1, out, want)
		}
	}
	var res map[string]int
	if err := json.Unmarshal([]byte(admMust(t, url, tok, "--json", "import", "orders", file)), &res); err != nil ||
		res["imported"] != 0 || res["skipped"] != 3 {
		t.Fatalf("--json import onto the messages' own queue: %v %v", res, err)
	}
	var ds []struct {
		Name     string
		Messages int
	}
	if err := json.Unmarshal([]byte(admMust(t, url, tok, "--json", "destinations", "--kind", "queue")), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("queues: %+v", ds)
	}
	for _, d := range ds {
		if d.Messages != 3 {
			t.Errorf("%s holds %d messages, want 3", d.Name, d.Messages)
		}
	}
}
