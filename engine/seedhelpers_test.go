package engine_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Helpers shared by the tests of the delivery-management and
// destination-lifecycle sections of WebLogic JMS "Managing Your Applications"
// (delivery_test.go, durability_test.go, lifecycle_test.go,
// incarnation_test.go).

var (
	queueB   = message.Destination{Kind: message.Queue, Name: "b"}
	errQueue = message.Destination{Kind: message.Queue, Name: "errors"}
	errTopic = message.Destination{Kind: message.Topic, Name: "error-topic"}
)

// policyTable is a mutable Config.Policy: tests change a destination's
// policy while the broker runs (the policy in effect at the time of an
// operation is the one that applies).
type policyTable struct {
	mu sync.Mutex
	m  map[message.Destination]engine.Policy
}

func newPolicies() *policyTable {
	return &policyTable{m: map[message.Destination]engine.Policy{}}
}

// set changes d's policy, starting from DefaultPolicy the first time.
func (p *policyTable) set(d message.Destination, fn func(*engine.Policy)) *policyTable {
	p.mu.Lock()
	defer p.mu.Unlock()
	pol, ok := p.m[d]
	if !ok {
		pol = engine.DefaultPolicy()
	}
	fn(&pol)
	p.m[d] = pol
	return p
}

func (p *policyTable) get(d message.Destination) engine.Policy {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pol, ok := p.m[d]; ok {
		return pol
	}
	return engine.DefaultPolicy()
}

// fakeClock is Config.Now for tests that need exact times. Note that the
// engine's scheduler sleeps in real time for (due - fake now); a test that
// moves the clock past a due time relies on a restart, a scan or a dispatch
// to notice, never on the scheduler's timer.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.UnixMilli(1_700_000_000_000).UTC()}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logSink collects the engine's structured log lines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lineWith returns the first log line containing every one of parts.
func (l *logSink) lineWith(parts ...string) (string, bool) {
	for _, line := range strings.Split(l.String(), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok && line != "" {
			return line, true
		}
	}
	return "", false
}

// eventually polls cond every few milliseconds for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// newStrict is a broker without AutoCreate (only created or configured
// destinations exist), in memory, or on a bbolt store in dir when
// persistent. The harness's restart works on it and keeps AutoCreate off.
func newStrict(t *testing.T, persistent bool, dir string, cfg engine.Config) *harness {
	t.Helper()
	h := &harness{t: t, cfg: cfg}
	if persistent {
		if dir == "" {
			dir = t.TempDir()
		}
		st, _ := openDurable(t, dir)
		h.st, h.dir = st, dir
		cfg.Store = st
	}
	cfg.AutoCreate = false
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		if h.st != nil {
			_ = h.st.Close()
		}
		t.Fatal(err)
	}
	h.b = b
	t.Cleanup(h.close)
	return h
}

// restartStrict is harness.restart for a newStrict broker.
func (h *harness) restartStrict() {
	h.t.Helper()
	dir, cfg := h.dir, h.cfg
	h.close()
	n := newStrict(h.t, true, dir, cfg)
	*h = *n
}

// create makes destinations on the broker.
func (h *harness) create(dests ...message.Destination) {
	h.t.Helper()
	for _, d := range dests {
		if _, err := h.b.CreateDestination(context.Background(), d); err != nil {
			h.t.Fatal(err)
		}
	}
}

// depth returns how many messages Browse shows on a queue.
func (h *harness) depth(d message.Destination) int {
	h.t.Helper()
	ds, err := h.b.Browse(d, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return len(ds)
}

// bodies returns the bodies of deliveries.
func bodies(ds []message.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = body(d)
	}
	return out
}

// recvAll receives until nothing comes for wait.
func recvAll(t *testing.T, c *engine.Consumer, wait time.Duration) []message.Delivery {
	t.Helper()
	var out []message.Delivery
	for i := 0; i < 100000; i++ {
		d, ok, err := c.ReceiveTimeout(wait)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
	t.Fatal("recvAll: too many messages")
	return nil
}

// sendMsg sends m with options and fails the test on error.
func sendMsg(t *testing.T, s *engine.Session, dest message.Destination, m *message.Message, o engine.SendOptions) *message.Message {
	t.Helper()
	p, err := s.CreateProducer(dest)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), m, o); err != nil {
		t.Fatal(err)
	}
	return m
}

// withProp returns a text message with one property set.
func withProp(bodyText, name string, v message.Value) *message.Message {
	m := text(bodyText)
	if err := m.Props.Set(name, v); err != nil {
		panic(err)
	}
	return m
}

// wantCode fails unless err is an engine error of the code of want.
func wantCode(t *testing.T, what string, err error, want *engine.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v (%v), want %v", what, err, engine.CodeOf(err), want.Code)
	}
}
