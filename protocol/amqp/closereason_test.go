package amqp_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// logBuffer collects log lines from concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines holding every one of parts.
func (b *logBuffer) lines(parts ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		ok := l != ""
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// Each way an AMQP connection ends is one "connection closed" line with
// the container-id as the client ID and the reason an operator reads.
func TestConnectionEndsAreLoggedWithTheirReason(t *testing.T) {
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ts := startServer(t, sluiceamqp.Options{IdleTimeout: 300 * time.Millisecond, Logger: log}, engine.Config{Logger: log})

	rc := rawDial(t, ts.addr)
	rc.openAs(t, 0, "says-goodbye")
	rc.write(t, 0, types.NewClose(), nil)
	rc.expectClose(t, 5*time.Second)

	rc = rawDial(t, ts.addr)
	rc.openAs(t, 0, "pulls-the-plug")
	_ = rc.nc.Close()

	rc = rawDial(t, ts.addr)
	rc.openAs(t, 0, "falls-silent")
	if e := closeErr(rc.expectClose(t, 5*time.Second)); e == nil || !strings.Contains(e.Description, "idle time-out") {
		t.Fatalf("falls-silent: closed with %v, want the idle time-out", e)
	}

	rc = rawDial(t, ts.addr)
	rc.openAs(t, 0, "opens-twice")
	rc.write(t, 0, types.NewOpen(), nil)
	rc.expectClose(t, 5*time.Second)

	rc = rawDial(t, ts.addr)
	rc.openAs(t, 0, "closed-by-ops")
	for _, ci := range ts.eng.Connections() {
		if ci.ClientID == "closed-by-ops" {
			if err := ts.eng.CloseConnection(ci.ID); err != nil {
				t.Fatal(err)
			}
		}
	}

	rc = rawDial(t, ts.addr)
	rc.openAs(t, 0, "still-there")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)

	for _, tc := range []struct{ clientID, reason string }{
		{"says-goodbye", `reason="client disconnect"`},
		{"pulls-the-plug", `reason="network error"`},
		{"falls-silent", `reason="heartbeat timeout"`},
		{"opens-twice", `reason=error`},
		{"closed-by-ops", `reason="closed by administrator"`},
		{"still-there", `reason="broker shutdown"`},
	} {
		var lines []string
		waitFor(t, func() bool {
			lines = logs.lines(`msg="connection closed"`, "client_id="+tc.clientID)
			return len(lines) > 0
		}, "%s: no connection closed line", tc.clientID)
		if len(lines) != 1 || !strings.Contains(lines[0], tc.reason) || !strings.Contains(lines[0], "protocol=amqp/1.0") {
			t.Errorf("%s: %q, want one line with %s", tc.clientID, lines, tc.reason)
		}
		if len(logs.lines(`msg="connection opened"`, "client_id="+tc.clientID)) != 1 {
			t.Errorf("%s: the connection opened line does not name the container-id", tc.clientID)
		}
	}
}
