package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine/message"
)

// publish sends a test message with headers, typed properties and a text
// or binary body; get consumes it, and the queue no longer has it; policy
// and node print what the API says.
func TestAdminCLIPublishGetPolicyNode(t *testing.T) {
	eng, url, tok := admServer(t)
	admMust(t, url, tok, "create", "queue", "orders")
	orders := message.Destination{Kind: message.Queue, Name: "orders"}

	out := admMust(t, url, tok, "publish", "orders", "--body", "order #1001", "--header", "correlation-id=cart-42",
		"--header", "type=order", "-p", "region=eu", "-p", "qty:int=3", "-p", "urgent:boolean=true", "--priority", "7", "--ttl", "1h")
	if !strings.HasPrefix(out, "published ID:") || !strings.Contains(out, "to /queue/orders") {
		t.Fatalf("publish: %q", out)
	}
	bin := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(bin, []byte{0xff, 0xfe, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	admMust(t, url, tok, "publish", "/queue/orders", "--body-file", bin, "--priority", "1", "--non-persistent")
	if out, err := admRun(t, url, tok, "from stdin", "publish", "orders", "--body-file", "-", "--priority", "0"); err != nil || !strings.Contains(out, "published") {
		t.Fatalf("publish from stdin: %v %q", err, out)
	}

	var page struct {
		Messages []struct {
			ID, CorrelationID, Type, Body, BodyKind, BodyEncoding, DeliveryMode string
			Priority                                                            int
			Expiration                                                          int64
			Properties                                                          []message.Field
		}
	}
	if err := json.Unmarshal([]byte(admMust(t, url, tok, "--json", "browse", "orders")), &page); err != nil || len(page.Messages) != 3 {
		t.Fatalf("browse: %v %+v", err, page)
	}
	m := page.Messages[0]
	if m.CorrelationID != "cart-42" || m.Type != "order" || m.Priority != 7 || m.Body != "order #1001" || m.Expiration == 0 || len(m.Properties) != 3 {
		t.Errorf("the published message: %+v", m)
	}
	if v, _ := message.Properties(m.Properties).Get("qty"); v.Type != message.Int || v.N != 3 {
		t.Errorf("qty: %+v, want the int 3", v)
	}
	if b := page.Messages[1]; b.BodyKind != "bytes" || b.BodyEncoding != "base64" || b.DeliveryMode != "NON_PERSISTENT" {
		t.Errorf("the binary message: %+v", b)
	}

	out = admMust(t, url, tok, "get", "orders")
	if !strings.Contains(out, m.ID) || !strings.Contains(out, "order #1001") || !strings.Contains(out, "qty=3") {
		t.Fatalf("get:\n%s", out)
	}
	in, _ := eng.DestinationInfo(orders)
	if in.Messages != 2 {
		t.Errorf("orders holds %d messages after get, want 2", in.Messages)
	}
	admMust(t, url, tok, "get", "orders", "--selector", "JMSPriority = 0")
	admMust(t, url, tok, "get", "orders")
	if out := admMust(t, url, tok, "get", "orders", "--timeout", "10ms"); !strings.Contains(out, "no message on /queue/orders") {
		t.Errorf("get on an empty queue: %q", out)
	}
	help := admMust(t, url, tok, "get", "--help")
	if !strings.Contains(help, "destructive") {
		t.Errorf("get --help does not say it is destructive:\n%s", help)
	}

	out = admMust(t, url, tok, "policy", "orders")
	if !strings.Contains(out, "no [[destination]] section applies") || !strings.Contains(out, "priority") || !strings.Contains(out, "connection factory") {
		t.Errorf("policy:\n%s", out)
	}
	out = admMust(t, url, tok, "node")
	if !strings.Contains(out, "goroutines") || !strings.Contains(out, "test (go") {
		t.Errorf("node:\n%s", out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"publish", "nope", "--body", "x"}, "HTTP 404"},
		{[]string{"publish", "orders", "-p", "qty:int=three"}, `"three" is not a int`},
		{[]string{"publish", "orders", "-p", "qty:money=3"}, "type \"money\""},
		{[]string{"publish", "orders", "--header", "x-custom=1"}, "the headers are"},
		{[]string{"publish", "orders", "--priority", "11"}, "priority"},
		{[]string{"get", "/topic/events"}, "topic"},
	} {
		out, err := admRun(t, url, tok, "", tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v (%q), want an error with %q", tt.args, err, out, tt.want)
		}
	}
}
