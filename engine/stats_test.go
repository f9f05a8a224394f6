package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Every way a connection ends is one "connection closed" line with its
// reason, and one count under its protocol and reason; a second close of
// the same connection changes neither.
func TestConnectionCloseReasons(t *testing.T) {
	var logs logSink
	h := newBroker(t, engine.Config{Logger: logs.logger()})
	for _, tc := range []struct {
		name     string
		protocol string
		close    func(c *engine.Connection) error
		reason   string
		label    string
	}{
		{"client", "stomp/1.2", func(c *engine.Connection) error { return c.Close() }, "client disconnect", "client"},
		{"network", "stomp/1.2", func(c *engine.Connection) error {
			return c.CloseWithReason(engine.ClosedNetworkError, errors.New("read: connection reset by peer"))
		}, "network error", "network_error"},
		{"heartbeat", "amqp", func(c *engine.Connection) error {
			return c.CloseWithReason(engine.ClosedHeartbeatTimeout, nil)
		}, "heartbeat timeout", "heartbeat_timeout"},
		{"administrator", "amqp", func(c *engine.Connection) error { return h.b.CloseConnection(c.ID()) }, "closed by administrator", "administrator"},
		{"error", "stomp/1.1", func(c *engine.Connection) error { return c.CloseWithReason(engine.ClosedError, nil) }, "error", "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.conn(engine.ConnectionOptions{Protocol: tc.protocol, ClientID: "cid-" + tc.name, User: "u-" + tc.name, RemoteAddr: "10.0.0.1:4242"})
			before := h.b.Totals().Connections[protocolOf(tc.protocol)]
			if err := tc.close(c); err != nil {
				t.Fatal(err)
			}
			_ = c.Close() // a second close: no second line, no second count
			line, ok := logs.lineWith(`msg="connection closed"`, "client_id=cid-"+tc.name)
			if !ok {
				t.Fatalf("no connection closed line for %s:\n%s", tc.name, logs.String())
			}
			reason := "reason=" + tc.reason
			if strings.Contains(tc.reason, " ") {
				reason = "reason=" + strconv.Quote(tc.reason)
			}
			for _, want := range []string{reason, "user=u-" + tc.name, "remote=10.0.0.1:4242", "protocol=" + tc.protocol} {
				if !strings.Contains(line, want) {
					t.Errorf("line %q lacks %s", line, want)
				}
			}
			if n := countLines(logs.String(), `msg="connection closed"`, "client_id=cid-"+tc.name); n != 1 {
				t.Errorf("%d connection closed lines, want 1", n)
			}
			after := h.b.Totals().Connections[protocolOf(tc.protocol)]
			got := map[string]uint64{}
			for _, r := range engine.CloseReasons() {
				if d := after.Closed[r] - before.Closed[r]; d > 0 {
					got[r.Label()] = d
				}
			}
			if len(got) != 1 || got[tc.label] != 1 {
				t.Errorf("closed counts changed by %v, want %s: 1", got, tc.label)
			}
		})
	}
	tot := h.b.Totals()
	if tot.Connections["stomp"].Opened != 3 || tot.Connections["amqp"].Opened != 2 {
		t.Errorf("opened: stomp %d, amqp %d; want 3 and 2", tot.Connections["stomp"].Opened, tot.Connections["amqp"].Opened)
	}
}

// A broker that shuts down closes its connections with reason "broker
// shutdown".
func TestConnectionClosedByShutdown(t *testing.T) {
	var logs logSink
	b, err := engine.New(context.Background(), engine.Config{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Connect(engine.ConnectionOptions{Protocol: "amqp", ClientID: "left-open"}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, ok := logs.lineWith(`msg="connection closed"`, "client_id=left-open", `reason="broker shutdown"`); !ok {
		t.Fatalf("no shutdown close line:\n%s", logs.String())
	}
	if n := b.Totals().Connections["amqp"].Closed[engine.ClosedShutdown]; n != 1 {
		t.Errorf("closed by shutdown: %d, want 1", n)
	}
}

// The broker-wide counters count what the destinations' counters count,
// deliveries apart from acknowledgements, and keep their values when the
// destination is deleted.
func TestTotalsOutliveDestinations(t *testing.T) {
	h := newBroker(t, engine.Config{})
	q := message.Destination{Kind: message.Queue, Name: "totals"}
	c := h.conn(engine.ConnectionOptions{})
	ps := h.session(c, engine.AutoAcknowledge)
	for range 3 {
		send(t, ps, q, "x", engine.SendOptions{})
	}
	cs := h.session(c, engine.ClientAcknowledge)
	cons := consumer(t, cs, q, engine.ConsumerOptions{Prefetch: 1})
	_ = c.Start()
	recv(t, cons)
	if err := cs.Recover(context.Background()); err != nil { // first comes back: a redelivery
		t.Fatal(err)
	}
	var last message.Delivery
	for range 3 {
		last = recv(t, cons)
	}
	if err := cs.Acknowledge(context.Background(), last.Tag); err != nil { // all three
		t.Fatal(err)
	}
	in, err := h.b.DestinationInfo(q)
	if err != nil {
		t.Fatal(err)
	}
	if in.Enqueued != 3 || in.Delivered != 4 || in.Dequeued != 3 || in.Redelivered != 1 {
		t.Fatalf("queue counters: enqueued %d delivered %d acknowledged %d redelivered %d; want 3 4 3 1",
			in.Enqueued, in.Delivered, in.Dequeued, in.Redelivered)
	}
	_ = cons.Close()
	if err := h.b.DeleteDestination(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	tot := h.b.Totals()
	if tot.Enqueued != 3 || tot.Delivered != 4 || tot.Acknowledged != 3 || tot.Redelivered != 1 {
		t.Errorf("totals after the delete: enqueued %d delivered %d acknowledged %d redelivered %d; want 3 4 3 1",
			tot.Enqueued, tot.Delivered, tot.Acknowledged, tot.Redelivered)
	}
}

// Every pipelined send is confirmed once, however often its producer asks.
func TestTotalsCountConfirms(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	p, err := h.session(c, engine.AutoAcknowledge).CreateProducer(message.Destination{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		m := text("confirm me")
		if i%2 == 1 {
			m.DeliveryMode = message.NonPersistent
		}
		conf, err := p.SendToAsync(context.Background(), queueA, m, engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: m.DeliveryMode})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := conf.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tot := h.b.Totals(); tot.Confirmed != n || tot.ConfirmFailed != 0 {
		t.Errorf("confirmed %d, failed %d; want %d and 0", tot.Confirmed, tot.ConfirmFailed, n)
	}
}

func protocolOf(p string) string {
	family, _, _ := strings.Cut(p, "/")
	return family
}

// countLines counts the log lines that contain every one of parts.
func countLines(logs string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			n++
		}
	}
	return n
}
