//go:build interop

// Package interop tests Sluice with real non-Go clients. Each test starts an
// in-process broker (internal/broker.Start, a temporary data directory,
// STOMP on 127.0.0.1:0, AMQP and admin off), then runs a client script as a
// subprocess with the port as its first argument and in SLUICE_STOMP_PORT,
// and asserts on its exit code and its "PASS <scenario>" line.
//
// The clients:
//   - stomp.py, Debian's python3-stomp, run by /usr/bin/python3 (the python3
//     first on PATH may be another installation without Debian's modules);
//     SLUICE_INTEROP_PYTHON overrides the interpreter. Script:
//     python/stomp_py.py.
//   - @stomp/stompjs on Node (20 or later) over raw TCP through
//     @stomp/tcp-wrapper, the adapter stompjs documents for Node (the
//     client's webSocketFactory returns a TCPWrapper around a net.Socket).
//     Pinned in package.json and package-lock.json; install with `npm ci`
//     in this directory. Script: js/stompjs.mjs.
//
// A client that is not installed skips its tests with a message saying how
// to install it, except under CI (CI set, as .ci/run is run) or with
// SLUICE_INTEROP_REQUIRE=1, where it fails: CI installs every client, so a
// skip there would hide a broken install.
//
// Run with: make interop (go test -tags interop ./interop/...). With
// SLUICE_INTEROP_DEBUG=1 every script's output is logged (each check it
// made) and the stompjs script also prints its frame trace to stderr.
package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// scriptTimeout bounds one client script run. The slowest scenario (stomp.py
// heart-beats) waits for a 10s server heart-beat; the rest take well under
// a few seconds.
const scriptTimeout = 90 * time.Second

// syncBuffer collects the broker's log, shown when a test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sluice is an in-process broker for one test.
type sluice struct {
	t    *testing.T
	dir  string
	logs *syncBuffer
	b    *broker.Broker
	port int
}

// startSluice starts a broker on a fresh temporary data directory.
func startSluice(t *testing.T) *sluice {
	t.Helper()
	s := &sluice{t: t, dir: t.TempDir(), logs: &syncBuffer{}}
	s.start()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("broker log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *sluice) start() {
	s.t.Helper()
	cfg := config.Default()
	cfg.Data = s.dir
	cfg.LogLevel = "debug"
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "", Admin: ""}
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := broker.Start(context.Background(), cfg, log)
	if err != nil {
		s.t.Fatalf("start broker: %v", err)
	}
	s.b = b
	addr, ok := b.Addr("stomp").(*net.TCPAddr)
	if !ok || addr.Port == 0 {
		s.t.Fatalf("STOMP listener address %v", b.Addr("stomp"))
	}
	s.port = addr.Port
	if b.Addr("amqp") != nil || b.Addr("admin") != nil {
		s.t.Fatalf("AMQP %v / admin %v listening, want them disabled", b.Addr("amqp"), b.Addr("admin"))
	}
}

func (s *sluice) stop() {
	s.t.Helper()
	if s.b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.b.Shutdown(ctx); err != nil {
		s.t.Errorf("broker shutdown: %v", err)
	}
	s.b = nil
}

// restart shuts the broker down cleanly and starts it again on the same data
// directory (on a new port).
func (s *sluice) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

// missing skips the test because a client is not installed, or fails it
// where the clients must be there (CI).
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" || os.Getenv("SLUICE_INTEROP_REQUIRE") == "1" {
		t.Fatalf("%s (CI installs the interop clients, so they must be present here)", msg)
	}
	t.Skip(msg)
}

// interop clients, found once per test binary and remembered by name.
var clients sync.Map // name → clientResult

type clientResult struct {
	path string
	err  error
}

// findOnce runs find the first time name is asked for; a client that cannot
// run skips the test (fails it in CI: see missing).
func findOnce(t *testing.T, name string, find func() (string, error)) string {
	t.Helper()
	v, ok := clients.Load(name)
	if !ok {
		path, err := find()
		v, _ = clients.LoadOrStore(name, clientResult{path, err})
	}
	r := v.(clientResult)
	if r.err != nil {
		missing(t, "%s cannot run: %v", name, r.err)
	}
	return r.path
}

// pythonWith returns an interpreter that imports module (Debian's
// python3-… package pkg), checked by printing versionExpr.
func pythonWith(t *testing.T, module, versionExpr, name, pkg string) string {
	t.Helper()
	return findOnce(t, name, func() (string, error) {
		py := os.Getenv("SLUICE_INTEROP_PYTHON")
		if py == "" {
			py = "/usr/bin/python3"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, py, "-c", "import "+module+"; print("+versionExpr+")").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s cannot import %s (%v): %s; install Debian's %s (apt-get install %s)",
				py, module, err, strings.TrimSpace(string(out)), pkg, pkg)
		}
		return py, nil
	})
}

// nodeWith returns a Node 20+ that finds packages in this directory's
// node_modules.
func nodeWith(t *testing.T, packages ...string) string {
	t.Helper()
	return findOnce(t, strings.Join(packages, "+"), func() (string, error) {
		path, err := exec.LookPath("node")
		if err != nil {
			return "", errors.New("node is not on PATH")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		if err != nil {
			return "", fmt.Errorf("node --version: %v", err)
		}
		v := strings.TrimSpace(string(out))
		major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
		if major < 20 {
			return "", fmt.Errorf("node %s is older than 20", v)
		}
		for _, pkg := range packages {
			if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
				return "", fmt.Errorf("%s is not installed in interop/node_modules: run `npm ci` in interop/", pkg)
			}
		}
		return path, nil
	})
}

// runScript runs a client scenario against the broker on port and returns
// its output; the test fails unless it exits 0 and prints "PASS scenario".
func runScript(t *testing.T, port int, scenario string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	args := append(argv[1:len(argv):len(argv)], strconv.Itoa(port), scenario)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	cmd.Env = append(os.Environ(),
		"SLUICE_STOMP_PORT="+strconv.Itoa(port),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"NO_COLOR=1",
	)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Round(10 * time.Millisecond)
	output := out.String()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: no result within %s\n%s", filepath.Base(argv[len(argv)-1]), scenario, scriptTimeout, output)
	case err != nil:
		t.Fatalf("%s %s: %v after %s\n%s", filepath.Base(argv[len(argv)-1]), scenario, err, elapsed, output)
	case !regexp.MustCompile(`(?m)^PASS ` + regexp.QuoteMeta(scenario) + `\b`).MatchString(output):
		t.Fatalf("%s %s exited 0 without its PASS line\n%s", filepath.Base(argv[len(argv)-1]), scenario, output)
	}
	t.Logf("%s %s passed in %s", filepath.Base(argv[len(argv)-1]), scenario, elapsed)
	if os.Getenv("SLUICE_INTEROP_DEBUG") == "1" {
		t.Logf("output:\n%s", output)
	}
	return output
}

// TestStompPy runs each stomp.py scenario against its own broker.
func TestStompPy(t *testing.T) {
	py := pythonWith(t, "stomp", "'.'.join(map(str, stomp.__version__))", "stomp.py", "python3-stomp")
	script := filepath.Join("python", "stomp_py.py")
	for _, scenario := range []string{
		"heartbeat",   // CONNECT 1.2 (STOMP frame) with heart-beats, a server beat while idle
		"versions",    // stomp.py 1.0 and 1.1: negotiation, ACK/NACK by message-id (+ subscription)
		"queue",       // SEND/MESSAGE, persistent:true, JMS and custom headers, escaping, bodies up to 1 MiB
		"selector",    // topic fan-out, selectors on a property and on JMSPriority
		"nack",        // client-individual ACK/NACK, redelivered:true, JMSXDeliveryCount 2
		"transaction", // BEGIN/SEND/COMMIT, ABORT, ACKs in a transaction
		"durable",     // client-id + activemq.subscriptionName across a disconnect, then deleted
		"tempqueue",   // request/reply through /temp-queue/ reply-to
		"error",       // priority:12 and a bad selector: ERROR with receipt-id, then the close
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			s := startSluice(t)
			runScript(t, s.port, scenario, py, script)
		})
	}
}

// TestStompPyPersistentAcrossRestart sends a persistent and a
// non-persistent message, restarts the broker on the same data directory,
// and checks that only the persistent one, with its headers, is there.
func TestStompPyPersistentAcrossRestart(t *testing.T) {
	py := pythonWith(t, "stomp", "'.'.join(map(str, stomp.__version__))", "stomp.py", "python3-stomp")
	script := filepath.Join("python", "stomp_py.py")
	s := startSluice(t)
	runScript(t, s.port, "persist-send", py, script)
	s.restart()
	runScript(t, s.port, "persist-recv", py, script)
}

// TestStompJS runs each @stomp/stompjs scenario against its own broker.
func TestStompJS(t *testing.T) {
	nd := nodeWith(t, "@stomp/stompjs", "@stomp/tcp-wrapper")
	script := filepath.Join("js", "stompjs.mjs")
	for _, scenario := range []string{
		"headers",  // SEND/MESSAGE with JMS and custom headers, text and binary bodies
		"ack",      // ack:client with ack(), client-individual with nack(), redelivery
		"receipts", // RECEIPTs in order for SUBSCRIBE, SEND, ACK, NACK, UNSUBSCRIBE, DISCONNECT; ERROR receipt-id
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			s := startSluice(t)
			runScript(t, s.port, scenario, nd, script)
		})
	}
}
