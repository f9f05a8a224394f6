package stomp_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Each way a STOMP connection ends is logged once, as the engine's
// "connection closed" line with the client ID, the user, the protocol and
// the reason an operator reads in it; a failed login names the client ID
// it asked for.
func TestConnectionEndsAreLoggedWithTheirReason(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := realmOptions(t)
	opts.Logger = log
	eng, err := engine.New(context.Background(), engine.Config{Logger: log, AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	addr, srv := serveShutdownable(t, eng, stomp.Options{Realm: newRealm(t, opts), Logger: log,
		HeartBeat: frame.HeartBeat{Send: 100 * time.Millisecond, Receive: 100 * time.Millisecond}})
	connect := func(clientID, extra string) *raw {
		r := dialRaw(t, addr)
		r.write("CONNECT\naccept-version:1.2\nlogin:alice\npasscode:" + alicePW + "\nclient-id:" + clientID + "\n" + extra + "\n\x00")
		if f := r.read(); f.Command != frame.CmdConnected {
			t.Fatalf("%s: got %s", clientID, f.Command)
		}
		return r
	}

	r := connect("says-goodbye", "")
	r.write("DISCONNECT\nreceipt:bye\n\n\x00")
	r.read()
	r.closed()

	r = connect("pulls-the-plug", "")
	_ = r.nc.(*net.TCPConn).SetLinger(0)
	_ = r.nc.Close()

	r = connect("falls-silent", "heart-beat:100,0\n")
	if f := r.read(); f.Command != frame.CmdError { // it sends no heart-beat
		t.Fatalf("falls-silent: got %s, want ERROR", f.Command)
	}
	r.closed()

	r = connect("sends-garbage", "")
	r.write("SEND\ndestination:/queue/orders.a\ncontent-length:9999999999999999999\n\nx\x00")
	r.read()
	r.closed()

	r = connect("closed-by-ops", "")
	for _, ci := range eng.Connections() {
		if ci.ClientID == "closed-by-ops" {
			if err := eng.CloseConnection(ci.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.read()
	r.closed()

	r = connect("still-there", "heart-beat:0,0\n")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r.closed()

	r = dialRaw(t, addr2(t, eng, log, opts))
	r.write("CONNECT\naccept-version:1.2\nlogin:alice\npasscode:wrong\nclient-id:forgot-password\n\n\x00")
	r.read()
	r.closed()

	for _, tc := range []struct{ clientID, reason string }{
		{"says-goodbye", `reason="client disconnect"`},
		{"pulls-the-plug", `reason="network error"`},
		{"falls-silent", `reason="heartbeat timeout"`},
		{"sends-garbage", `reason=error`},
		{"closed-by-ops", `reason="closed by administrator"`},
		{"still-there", `reason="broker shutdown"`},
	} {
		var lines []string
		eventuallyTrue(t, tc.clientID+" logged", func() bool {
			lines = linesWith(logs.String(), `msg="connection closed"`, "client_id="+tc.clientID)
			return len(lines) > 0
		})
		if len(lines) != 1 {
			t.Errorf("%s: %d connection closed lines, want 1:\n%s", tc.clientID, len(lines), strings.Join(lines, "\n"))
		}
		for _, want := range []string{tc.reason, "user=alice", "protocol=stomp/1.2", "remote=127.0.0.1:"} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("%s: %q lacks %s", tc.clientID, lines[0], want)
			}
		}
		if len(linesWith(logs.String(), `msg="connection opened"`, "client_id="+tc.clientID, "user=alice")) != 1 {
			t.Errorf("%s: no connection opened line", tc.clientID)
		}
	}
	failed := linesWith(logs.String(), `msg="authentication failed"`, "client_id=forgot-password", "user=alice", "protocol=stomp", "level=INFO")
	if len(failed) != 1 {
		t.Errorf("no authentication failed line with the client ID:\n%s", logs.String())
	}
}

// serveShutdownable serves eng on 127.0.0.1:0 and returns the server, for
// a test that shuts it down.
func serveShutdownable(t *testing.T, eng *engine.Broker, opts stomp.Options) (string, *stomp.Server) {
	t.Helper()
	return serve(t, eng, func() { _ = eng.Close() }, opts)
}

// addr2 serves eng once more, on a second server, after the first shut
// down.
func addr2(t *testing.T, eng *engine.Broker, log *slog.Logger, opts security.Options) string {
	t.Helper()
	addr, _ := serveShutdownable(t, eng, stomp.Options{Realm: newRealm(t, opts), Logger: log})
	return addr
}

// linesWith returns the log lines holding every one of parts.
func linesWith(logs string, parts ...string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// eventuallyTrue polls cond for up to 5 seconds.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
