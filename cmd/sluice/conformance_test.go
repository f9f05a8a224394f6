package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// runConformance runs `sluice conformance args...` and returns its output.
func runConformance(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"conformance"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func startConformanceBroker(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load("../../conformance/profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0"}
	b, err := broker.Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return b.Addr("stomp").String()
}

// TestConformanceAMQP091 runs a scenario over AMQP 0-9-1 (amqp091-go, on
// Sluice's AMQP port) and the cross-protocol one between it and STOMP.
func TestConformanceAMQP091(t *testing.T) {
	cfg, err := config.Load("../../conformance/profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data = t.TempDir()
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "127.0.0.1:0"}
	b, err := broker.Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	js := filepath.Join(t.TempDir(), "r.json")
	out, errOut, err := runConformance(t, "--stomp", b.Addr("stomp").String(), "--amqp091", b.Addr("amqp").String(),
		"--only", "*/*headers*", "--json", js)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	var rep struct {
		Rows []struct {
			ID      string
			Results map[string]struct{ Status string }
		}
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"basic/queue-headers":          {"amqp091"},
		"cross/headers-and-properties": {"stomp→amqp091", "amqp091→stomp"},
	}
	for _, r := range rep.Rows {
		for _, col := range want[r.ID] {
			if got := r.Results[col].Status; got != "pass" {
				t.Errorf("%s over %s: %s\n%s", r.ID, col, got, out)
			}
		}
		delete(want, r.ID)
	}
	if len(want) > 0 {
		t.Errorf("scenarios not run: %v\n%s", want, out)
	}
	if !strings.Contains(out, "amqp091→stomp") {
		t.Errorf("matrix without the amqp091→stomp column:\n%s", out)
	}
}

func TestConformanceListAndShowConfig(t *testing.T) {
	out, _, err := runConformance(t, "--list", "--only", "selector/*")
	if err != nil || !strings.Contains(out, "selector/string-equals") || strings.Contains(out, "basic/fifo") {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	out, _, err = runConformance(t, "--show-config")
	if err != nil || !strings.Contains(out, "[[destination]]") || !strings.Contains(out, "conf.rlimit.*") {
		t.Fatalf("--show-config: %v\n%s", err, out)
	}
	out, _, err = runConformance(t, "--show-config", "--profile", "activemq")
	if err != nil || !strings.Contains(out, "not supported:") || !strings.Contains(out, "ActiveMQ.DLQ") {
		t.Fatalf("--show-config --profile activemq: %v\n%s", err, out)
	}
	if _, _, err := runConformance(t, "--profile", "nope", "--stomp", "x:1"); err == nil {
		t.Fatal("an unknown profile is accepted")
	}
	if _, _, err := runConformance(t); err == nil || !strings.Contains(err.Error(), "--stomp") {
		t.Fatalf("no address: %v", err)
	}
}

// TestConformanceAgainstSluice runs a few scenarios against an in-process
// Sluice over STOMP, with an AMQP address nothing answers: the AMQP cells
// are reported unavailable, not failed, and the reports are written.
func TestConformanceAgainstSluice(t *testing.T) {
	stomp := startConformanceBroker(t)
	dir := t.TempDir()
	html, js, md := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	out, errOut, err := runConformance(t, "--stomp", stomp, "--amqp", closedAddr(t), "--only", "basic/*",
		"--report", html, "--json", js, "--markdown", md)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "basic/fifo") || !strings.Contains(out, "stomp:") || !strings.Contains(out, "unavailable") {
		t.Fatalf("matrix:\n%s", out)
	}
	if !strings.Contains(errOut, "AMQP listener not available") {
		t.Fatalf("no note about the AMQP listener:\n%s", errOut)
	}
	var rep struct {
		Rows []struct {
			ID      string
			Results map[string]struct{ Status string }
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Rows) == 0 {
		t.Fatalf("JSON report: %v, %d rows", err, len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Results["stomp"].Status != "pass" || r.Results["amqp"].Status != "unavailable" {
			t.Errorf("%s: %v", r.ID, r.Results)
		}
	}
	for _, f := range []string{html, md} {
		if b, err := os.ReadFile(f); err != nil || !bytes.Contains(b, []byte("basic/fifo")) {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// blackHole is a STOMP server that accepts everything and delivers
// nothing: every scenario that expects a message fails against it.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd, w := frame.NewReader(nc), frame.NewWriter(nc)
				for {
					f, err := rd.Read()
					if err != nil {
						return
					}
					if f == nil {
						continue
					}
					if f.Command == frame.CONNECT || f.Command == frame.STOMP {
						_ = w.Write(frame.New(frame.CONNECTED, frame.Version, "1.2"))
					} else if r, ok := f.Header.Contains(frame.Receipt); ok {
						_ = w.Write(frame.New(frame.RECEIPT, frame.ReceiptId, r))
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestConformanceFailureExitsNonZero runs a scenario against a broker that
// loses every message.
func TestConformanceFailureExitsNonZero(t *testing.T) {
	out, _, err := runConformance(t, "--stomp", blackHole(t), "--only", "basic/non-persistent", "--timeout", "20s")
	if err == nil || !strings.Contains(err.Error(), "1 failing cells") || !strings.Contains(out, "FAIL") {
		t.Fatalf("err %v\n%s", err, out)
	}
}

func TestConformanceNothingAnswers(t *testing.T) {
	_, _, err := runConformance(t, "--stomp", closedAddr(t), "--only", "basic/fifo")
	if err == nil || !strings.Contains(err.Error(), "STOMP listener not available") {
		t.Fatalf("err %v", err)
	}
}

// freeAddrs returns n distinct 127.0.0.1 addresses nothing listens on now.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out
}

// TestConformanceRestartCommand runs the restart scenarios against a real
// `sluice serve` (this test binary, run as main by TestMainProcess) through
// a hand-written restart script of the usual kind: it stops the broker,
// starts a new one in the background with the listener addresses the
// runner gives it, and does not redirect the new broker's output. Before
// the fix, the runner waited for that output to close, i.e. for the broker
// to exit, and every restart cell timed out.
func TestConformanceRestartCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers")
	}
	dir := t.TempDir()
	addrs := freeAddrs(t, 3)
	stomp, amqp, admin := addrs[0], addrs[1], addrs[2]
	config, err := filepath.Abs("../../conformance/profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "serve.pid")
	script := filepath.Join(dir, "restart.sh")
	args := strings.Join([]string{"serve", "--config", config, "--data", filepath.Join(dir, "data"),
		"--stomp", "$SLUICE_CONFORMANCE_STOMP", "--amqp", "$SLUICE_CONFORMANCE_AMQP", "--admin", "$SLUICE_CONFORMANCE_ADMIN", "--websocket="}, "\n")
	body := `#!/bin/sh
pidfile=` + pidFile + `
if [ -f "$pidfile" ]; then
  pid=$(cat "$pidfile")
  kill "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i+1)); [ $i -le 200 ] || { echo "broker $pid did not stop within 20s" >&2; exit 1; }
    sleep 0.1
  done
fi
SLUICE_TEST_MAIN_ARGS="` + args + `" '` + os.Args[0] + `' -test.run='^TestMainProcess$' &
echo $! >"$pidfile"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// The first start, by the same script, with the environment the runner
	// gives it; its output goes to a file, not to a pipe this test waits on.
	first := exec.Command("sh", "-c", script)
	first.Env = append(os.Environ(), "SLUICE_CONFORMANCE_STOMP="+stomp, "SLUICE_CONFORMANCE_AMQP="+amqp, "SLUICE_CONFORMANCE_ADMIN="+admin)
	logFile, err := os.Create(filepath.Join(dir, "first.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	first.Stdout, first.Stderr = logFile, logFile
	if err := first.Run(); err != nil {
		t.Fatalf("first start: %v", err)
	}
	for i := 0; ; i++ {
		if nc, err := net.DialTimeout("tcp", amqp, time.Second); err == nil {
			_ = nc.Close()
			break
		}
		if i == 100 {
			t.Fatalf("the broker does not listen on %s after 10s", amqp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	firstPid, _ := os.ReadFile(pidFile)

	start := time.Now()
	out, errOut, err := runConformance(t, "--stomp", stomp, "--amqp", amqp, "--admin", admin,
		"--only", "restart/persistent-survives", "--restart-cmd", script,
		"--restart-timeout", "30s", "--timeout", "45s", "-v")
	if err != nil {
		t.Fatalf("%v (after %s)\n%s\n%s", err, time.Since(start), out, errOut)
	}
	if !strings.Contains(out, "stomp:       1 pass") || !strings.Contains(out, "amqp:        1 pass") {
		t.Errorf("matrix:\n%s", out)
	}
	if n := strings.Count(errOut, "restarted the broker"); n != 2 {
		t.Errorf("%d restarts logged, want 2:\n%s", n, errOut)
	}
	if lastPid, _ := os.ReadFile(pidFile); bytes.Equal(lastPid, firstPid) {
		t.Errorf("the broker was not restarted: pid %s", lastPid)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("two restarts took %s", took)
	}
}
