package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// decodeInto re-decodes a JSON answer into v.
func decodeInto(t *testing.T, from any, v any) {
	t.Helper()
	raw, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// The history endpoints: messages per second in each interval, for the
// broker and per destination, the depth at its end; a deleted
// destination's history goes; past the cap, a destination has none; a
// series never holds more than its capacity.
func TestRateHistory(t *testing.T) {
	e := newEnv(t, nil)
	h := newHistory(5*time.Second, 20*time.Second, 2) // 4 samples a series, 2 destinations
	e.srv.history = h
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 5 * time.Second) }
	sample := func(i int) { h.sample(at(i), e.eng.Destinations(), e.eng.Totals()) }

	for _, d := range []message.Destination{qA, qB, {Kind: message.Queue, Name: "c"}} {
		if _, err := e.eng.CreateDestination(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	sample(0)
	e.send(qA, 10, "") // 10 in 5 s: 2 a second
	e.send(qB, 5, "")
	c, err := e.eng.Connect(engine.ConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, _ := c.CreateSession(engine.AutoAcknowledge)
	cons, _ := sess.CreateConsumer(qB, engine.ConsumerOptions{})
	_ = c.Start()
	for range 5 {
		if _, ok, err := cons.ReceiveTimeout(5 * time.Second); !ok || err != nil {
			t.Fatal("no message", err)
		}
	}
	_ = cons.Close()
	sample(1)

	var got historyJSON
	decodeInto(t, e.want("GET", "/api/destinations/queue/a/history", nil, 200), &got)
	if !got.Tracked || got.Interval != 5 || len(got.Samples) != 1 {
		t.Fatalf("queue a history: %+v", got)
	}
	if s := got.Samples[0]; s.Enqueued != 2 || s.Delivered != 0 || s.Messages != 10 || s.Time != at(1).UnixMilli() {
		t.Errorf("queue a sample: %+v, want 2 enqueued a second and 10 messages", s)
	}
	decodeInto(t, e.want("GET", "/api/destinations/queue/b/history", nil, 200), &got)
	if s := got.Samples[0]; s.Enqueued != 1 || s.Delivered != 1 || s.Acknowledged != 1 || s.Messages != 0 {
		t.Errorf("queue b sample: %+v, want 1 a second enqueued, delivered and acknowledged", s)
	}
	decodeInto(t, e.want("GET", "/api/history", nil, 200), &got)
	if s := got.Samples[0]; s.Enqueued != 3 || s.Delivered != 1 || s.Messages != 10 || got.Untracked != 1 {
		t.Errorf("broker sample: %+v untracked %d, want 3 a second enqueued, 10 messages, 1 untracked", s, got.Untracked)
	}
	decodeInto(t, e.want("GET", "/api/destinations/queue/c/history", nil, 200), &got)
	if got.Tracked || len(got.Samples) != 0 {
		t.Errorf("queue c over the cap: %+v, want untracked", got)
	}

	// since= returns only newer samples; the ring keeps 4.
	for i := 2; i <= 7; i++ {
		sample(i)
	}
	decodeInto(t, e.want("GET", "/api/history", nil, 200), &got)
	if len(got.Samples) != 4 || got.Samples[0].Time != at(4).UnixMilli() || got.Samples[3].Time != at(7).UnixMilli() {
		t.Errorf("after 7 samples: %d held, first %d last %d; want the last 4", len(got.Samples), got.Samples[0].Time, got.Samples[len(got.Samples)-1].Time)
	}
	decodeInto(t, e.want("GET", fmt.Sprintf("/api/history?since=%d", at(6).UnixMilli()), nil, 200), &got)
	if len(got.Samples) != 1 {
		t.Errorf("since the sixth: %d samples, want 1", len(got.Samples))
	}
	e.want("GET", "/api/history?since=yesterday", nil, 400, "since")

	// Deleting a: its history goes, and c takes the free place.
	if err := e.eng.DeleteDestination(context.Background(), qA); err != nil {
		t.Fatal(err)
	}
	sample(8)
	e.want("GET", "/api/destinations/queue/a/history", nil, 404)
	h.mu.Lock()
	_, tracksA := h.dests[qA]
	_, tracksC := h.dests[message.Destination{Kind: message.Queue, Name: "c"}]
	h.mu.Unlock()
	if tracksA || !tracksC {
		t.Errorf("after deleting a: tracks a %v, c %v; want c only", tracksA, tracksC)
	}
}

// The node page: the process's memory, goroutines, files and the data
// directory's size and free space.
func TestNodeEndpoint(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sluice.db"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "journal"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal", "1.log"), make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envOptions{options: func(o *Options) { o.DataDir = dir }})
	var n nodeJSON
	decodeInto(t, e.want("GET", "/api/node", nil, 200), &n)
	if n.Version != "test" || n.Goroutines < 1 || n.Memory.HeapAllocBytes == 0 || n.UptimeSeconds < 0 || n.GoVersion != runtime.Version() {
		t.Errorf("node: %+v", n)
	}
	if n.Data == nil || n.Data.Bytes != 5096 || n.Data.Files != 2 {
		t.Fatalf("data directory: %+v, want 5096 bytes in 2 files", n.Data)
	}
	if n.Store == nil || n.Store.Commits != 7 {
		t.Errorf("store stats: %+v", n.Store)
	}
	if runtime.GOOS == "linux" {
		if n.Memory.RSSBytes == nil || *n.Memory.RSSBytes <= 0 || n.OpenFiles == nil || *n.OpenFiles <= 0 ||
			n.Data.FreeBytes == nil || n.Data.TotalBytes == nil || *n.Data.FreeBytes > *n.Data.TotalBytes {
			t.Errorf("linux values missing: rss %v files %v disk %v/%v", n.Memory.RSSBytes, n.OpenFiles, n.Data.FreeBytes, n.Data.TotalBytes)
		}
	}
	text := e.scrape()
	if metricValue(text, "sluice_data_directory_bytes") != "5096" {
		t.Errorf("sluice_data_directory_bytes = %q, want 5096", metricValue(text, "sluice_data_directory_bytes"))
	}
	if runtime.GOOS == "linux" && metricValue(text, "sluice_data_directory_free_bytes") == "" {
		t.Error("no sluice_data_directory_free_bytes")
	}
}

// The policy endpoint names the section the broker applies and each
// value's source; without the broker's explanation, the defaults.
func TestPolicyEndpoint(t *testing.T) {
	cfg := config.Default()
	limit := int32(3)
	cfg.Destinations = []config.Destination{{Match: "orders.*", Kind: "queue", RedeliveryLimit: &limit, ErrorDestination: "/queue/DLQ"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envOptions{options: func(o *Options) { o.Policy = cfg.ExplainPolicy }})
	if _, err := e.eng.CreateDestination(context.Background(), message.Destination{Kind: message.Queue, Name: "orders.eu"}); err != nil {
		t.Fatal(err)
	}
	var p policyJSON
	decodeInto(t, e.want("GET", "/api/destinations/queue/orders.eu/policy", nil, 200), &p)
	if !p.Exists || p.Section != 0 || p.Match != "orders.*" || p.Destination != "/queue/orders.eu" {
		t.Fatalf("policy: %+v", p)
	}
	byName := map[string]policyValueJSON{}
	for _, v := range p.Values {
		byName[v.Name] = v
	}
	if v := byName["redelivery_limit"]; v.Value != "3" || v.Source != "destination[0]" || !v.Override {
		t.Errorf("redelivery_limit: %+v", v)
	}
	if v := byName["priority"]; v.Value != "4" || v.Source != "connection factory" || v.Key != "connection.priority" {
		t.Errorf("priority: %+v", v)
	}
	decodeInto(t, e.want("GET", "/api/destinations/topic/orders.eu/policy", nil, 200), &p)
	if p.Exists || p.Section != -1 {
		t.Errorf("a topic of the same name: %+v, want no section and not existing", p)
	}

	plain := newEnv(t, nil)
	decodeInto(t, plain.want("GET", "/api/destinations/queue/x/policy", nil, 200), &p)
	if p.Section != -1 || len(p.Values) != 11 {
		t.Errorf("default explanation: %+v", p)
	}
}

// Publish sends a test message as a client would (headers, typed
// properties, a text or base64 body); get consumes the next one, gone
// from the queue afterwards; both are logged with who did it.
func TestPublishAndGet(t *testing.T) {
	var logs syncBuffer
	e := newEnvWith(t, envOptions{logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := e.eng.CreateDestination(context.Background(), qA); err != nil {
		t.Fatal(err)
	}
	pub := e.want("POST", "/api/destinations/queue/a/messages/publish", map[string]any{
		"correlationId": "cart-42", "type": "order", "priority": 7, "replyTo": "/queue/replies",
		"properties": []map[string]any{{"name": "region", "type": "string", "value": "eu"}, {"name": "qty", "type": "int", "value": 3}},
		"body":       "order #1001: 3 × widget",
	}, 201)
	id, _ := pub["id"].(string)
	if !strings.HasPrefix(id, "ID:") || pub["destination"] != "/queue/a" {
		t.Fatalf("publish answered %v", pub)
	}
	e.want("POST", "/api/destinations/queue/a/messages/publish", map[string]any{
		"body": "AAECAw==", "bodyEncoding": "base64", "deliveryMode": "NON_PERSISTENT", "priority": 1}, 201)

	var page pageJSON
	decodeInto(t, e.want("GET", "/api/destinations/queue/a/messages", nil, 200), &page)
	if page.Total != 2 {
		t.Fatalf("%d messages, want 2", page.Total)
	}
	m := page.Messages[0]
	if m.ID != id || m.Priority != 7 || m.CorrelationID != "cart-42" || m.Type != "order" || m.ReplyTo != "/queue/replies" ||
		m.Body != "order #1001: 3 × widget" || m.BodyEncoding != "text" || len(m.Properties) != 2 || m.DeliveryMode != "PERSISTENT" {
		t.Errorf("published message: %+v", m)
	}
	if b := page.Messages[1]; b.BodyKind != "bytes" || b.BodyEncoding != "base64" || b.Body != "AAECAw==" || b.DeliveryMode != "NON_PERSISTENT" {
		t.Errorf("binary message: %+v", b)
	}

	got := e.want("POST", "/api/destinations/queue/a/messages/get", map[string]any{"timeout": 0}, 200)
	var one struct{ Message *messageJSON }
	decodeInto(t, got, &one)
	if one.Message == nil || one.Message.ID != id || one.Message.Message == nil || one.Message.Body != "order #1001: 3 × widget" {
		t.Fatalf("get: %v", got)
	}
	if d := e.depth(qA); d != 1 {
		t.Errorf("queue a holds %d messages after get, want 1", d)
	}
	e.want("POST", "/api/destinations/queue/a/messages/get", nil, 200) // the binary one, no body: the defaults
	start := time.Now()
	if got := e.want("POST", "/api/destinations/queue/a/messages/get", map[string]any{"timeout": 100}, 200); got["message"] != nil {
		t.Errorf("get on an empty queue: %v", got)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond || waited > 3*time.Second {
		t.Errorf("get waited %v for a 100 ms timeout", waited)
	}
	if len(e.eng.Connections()) != 0 {
		t.Errorf("publish and get left connections open: %v", e.eng.Connections())
	}

	for _, tc := range []struct {
		path   string
		body   any
		status int
		want   string
	}{
		{"/api/destinations/queue/nope/messages/publish", map[string]any{"body": "x"}, 404, "does not exist"},
		{"/api/destinations/queue/a/messages/publish", map[string]any{"body": "x", "priority": 12}, 400, "priority"},
		{"/api/destinations/queue/a/messages/publish", map[string]any{"body": "x", "properties": []map[string]any{{"name": "not valid", "type": "string", "value": "v"}}}, 400, "not valid"},
		{"/api/destinations/queue/a/messages/publish", map[string]any{"body": "%%", "bodyEncoding": "base64"}, 400, "base64"},
		{"/api/destinations/queue/a/messages/publish", map[string]any{"body": "x", "deliveryMode": "SOMETIMES"}, 400, "PERSISTENT"},
		{"/api/destinations/queue/a/messages/publish", map[string]any{"bodie": "x"}, 400, "bodie"},
		{"/api/destinations/topic/t/messages/get", nil, 400, "topic"},
		{"/api/destinations/queue/a/messages/get", map[string]any{"timeout": 3600000}, 400, "timeout"},
		{"/api/destinations/queue/a/messages/get", map[string]any{"selector": "a ="}, 400, "selector"},
	} {
		e.want("POST", tc.path, tc.body, tc.status, tc.want)
	}
	// Each publish and get that got as far as the engine had a connection
	// of its own, protocol admin (the bad selector's too).
	if ct := e.eng.Totals().Connections["admin"]; ct.Opened != 6 || ct.Closed[engine.ClosedByClient] != 6 {
		t.Errorf("admin connections: %+v, want 6 opened and closed", ct)
	}
	out := logs.String()
	for _, want := range []string{`msg="test message published by an administrator" user=anonymous destination=/queue/a message_id=` + id,
		`msg="message consumed by an administrator" user=anonymous destination=/queue/a message_id=` + id,
		`msg="admin request" user=anonymous role=admin remote=127.0.0.1:`,
		`method=POST path=/api/destinations/queue/a/messages/publish status=201`,
		`method=POST path=/api/destinations/queue/a/messages/get status=200`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}

// Bodies are shown as text when they are valid UTF-8, whatever their kind
// (a STOMP SEND with content-length makes a bytes body); others in base64.
func TestBodyPreviewText(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     message.Body
		text     string
		encoding string
	}{
		{"text", message.TextBody("héllo"), "héllo", "text"},
		{"utf-8 bytes", message.BytesBody([]byte(`{"sku":"W-1"}`)), `{"sku":"W-1"}`, "text"},
		{"binary bytes", message.BytesBody([]byte{0xff, 0x00, 0x41}), "/wBB", "base64"},
		{"control characters", message.BytesBody([]byte{0, 1, 2, 3}), "AAECAw==", "base64"},
		{"lines and tabs", message.BytesBody([]byte("a\tb\r\nc")), "a\tb\r\nc", "text"},
		{"latin-1 text", message.Body{Kind: message.BodyText, Data: []byte{'c', 'a', 'f', 0xe9}}, "Y2Fm6Q==", "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, enc, _, _ := preview(tc.body, 0)
			if text != tc.text || enc != tc.encoding {
				t.Errorf("preview = %q %s, want %q %s", text, enc, tc.text, tc.encoding)
			}
		})
	}
}

// The broker-wide counters and the connection totals are on /metrics,
// every protocol and reason at zero from the start.
func TestTotalsMetrics(t *testing.T) {
	sync := NewStoreSyncLatency()
	e := newEnvWith(t, envOptions{options: func(o *Options) { o.StoreSync = sync }})
	sync.Observe(3 * time.Millisecond)
	e.send(qA, 2, "")
	c, err := e.eng.Connect(engine.ConnectionOptions{Protocol: "stomp/1.2"})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := c.CreateSession(engine.AutoAcknowledge)
	cons, _ := sess.CreateConsumer(qA, engine.ConsumerOptions{})
	_ = c.Start()
	for range 2 {
		if _, ok, _ := cons.ReceiveTimeout(5 * time.Second); !ok {
			t.Fatal("no message")
		}
	}
	_ = c.CloseWithReason(engine.ClosedHeartbeatTimeout, nil)
	text := e.scrape()
	for series, want := range map[string]string{
		`sluice_messages_enqueued_total`:                                               "2",
		`sluice_messages_delivered_total`:                                              "2",
		`sluice_messages_acknowledged_total`:                                           "2",
		`sluice_messages_redelivered_total`:                                            "0",
		`sluice_destination_delivered_total{kind="queue",name="a"}`:                    "2",
		`sluice_producer_confirms_total{result="failed"}`:                              "0",
		`sluice_connections_opened_total{protocol="stomp"}`:                            "1",
		`sluice_connections_opened_total{protocol="embedded"}`:                         "1",
		`sluice_connections_closed_total{protocol="stomp",reason="heartbeat_timeout"}`: "1",
		`sluice_connections_closed_total{protocol="stomp",reason="client"}`:            "0",
		`sluice_connections_closed_total{protocol="embedded",reason="client"}`:         "1",
		`sluice_connections_opened_total{protocol="amqp"}`:                             "0",
		`sluice_connections_closed_total{protocol="admin",reason="shutdown"}`:          "0",
		`sluice_store_sync_seconds_count`:                                              "1",
	} {
		if got := metricValue(text, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}
