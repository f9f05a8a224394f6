package conformance_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/conformance"
)

// fakeBrokerEnv, when set to HOST:PORT, makes the test binary a fake
// broker (TestFakeBrokerProcess) instead of running tests.
const fakeBrokerEnv = "SLUICE_CONFORMANCE_FAKE_BROKER"

// TestFakeBrokerProcess is not a test: started by a restart script with
// SLUICE_CONFORMANCE_FAKE_BROKER=HOST:PORT, it is a broker that greets every
// connection with "pid PID" and keeps it open, and that, like a broker
// shutting down slowly, goes on accepting for 700ms after SIGTERM. It binds
// as soon as the address is free (within 10s) and lives at most 2 minutes.
func TestFakeBrokerProcess(t *testing.T) {
	addr := os.Getenv(fakeBrokerEnv)
	if addr == "" {
		t.Skip("runs only as the fake broker of the restart tests")
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var ln net.Listener
	var err error
	for range 200 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake broker:", err)
		os.Exit(2)
	}
	go func() {
		var held []net.Conn // referenced, so that no finalizer closes them
		for range 10000 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			_, _ = fmt.Fprintf(c, "pid %d\n", os.Getpid())
		}
	}()
	select {
	case <-term:
		time.Sleep(700 * time.Millisecond)
	case <-time.After(2 * time.Minute):
	}
	os.Exit(0) // closes the listener and every connection
}

// freeAddr returns a 127.0.0.1 address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// greeting connects to addr and returns the pid the fake broker there
// announces.
func greeting(t *testing.T, addr string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("greeting from %s: %v", addr, err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil {
		t.Fatalf("greeting %q: %v", line, err)
	}
	return pid
}

// readPid reads a pid file.
func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", file, err)
	}
	return pid
}

// A restart command of the kind people write: it signals the running broker
// and starts a new one in the background without redirecting its output,
// and returns at once, while the old broker is still accepting. The restart
// must return promptly (not wait for the new broker's inherited output to
// close) and only once the new broker is the one answering.
func TestRestartCommandWaitsForTheNewBroker(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "restart.sh")
	body := fmt.Sprintf(`#!/bin/sh
[ -f %[1]q ] && kill "$(cat %[1]q)"
%[2]s=%[3]q %[4]q -test.run='^TestFakeBrokerProcess$' &
echo $! >%[1]q
echo "started $!"
`, pidFile, fakeBrokerEnv, addr, os.Args[0])
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
	rc := &conformance.RestartCommand{Shell: script, Addrs: []string{addr}, Timeout: 20 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	// The first start goes through the same command: nothing is listening
	// yet, so there is no canary and the restart only waits for the port.
	if err := rc.Restart(ctx); err != nil {
		t.Fatalf("first start: %v", err)
	}
	first := readPid(t, pidFile)
	if got := greeting(t, addr); got != first {
		t.Fatalf("after the first start, pid %d answers, want %d", got, first)
	}

	for i := range 2 {
		start := time.Now()
		if err := rc.Restart(ctx); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
		took := time.Since(start)
		now := readPid(t, pidFile)
		if now == first {
			t.Fatalf("restart %d: the script did not start a new broker", i+1)
		}
		if got := greeting(t, addr); got != now {
			t.Fatalf("restart %d returned after %s while pid %d still answers, want the new broker %d", i+1, took, got, now)
		}
		if took > 10*time.Second {
			t.Errorf("restart %d took %s, want a few seconds at most", i+1, took)
		}
		first = now
	}
}

// A failing command, one that never exits, a broker that never comes back
// and one that never goes away each fail the restart within its timeout,
// with an error that says which and quotes the command and its output.
func TestRestartCommandFailures(t *testing.T) {
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	go func() { // a broker that keeps its connections across "restarts"
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for range 100 {
			c, err := live.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	for _, tc := range []struct {
		name, shell string
		addrs       []string
		want        []string
	}{
		{"exit status", `echo "no pid file: broker not started by this script" >&2; exit 3`, nil,
			[]string{"failed", "exit status 3", "no pid file: broker not started by this script"}},
		{"never exits", `echo serving; exec sleep 60`, nil,
			[]string{"did not exit within", "serving", "in the background"}},
		{"never comes back", `echo restarted`, []string{freeAddr(t)},
			[]string{"does not accept connections", "restarted"}},
		{"never goes away", `true`, []string{live.Addr().String()},
			[]string{"kept a connection opened before the restart", "old broker is still running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &conformance.RestartCommand{Shell: tc.shell, Addrs: tc.addrs, Timeout: 1500 * time.Millisecond}
			start := time.Now()
			err := rc.Restart(context.Background())
			took := time.Since(start)
			if err == nil {
				t.Fatal("the restart succeeded")
			}
			for _, w := range append(tc.want, strconv.Quote(tc.shell)) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if took > 8*time.Second {
				t.Errorf("took %s with a 1.5s timeout", took)
			}
		})
	}
}

// The command gets the environment it is documented to get.
func TestRestartCommandEnvironment(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	rc := &conformance.RestartCommand{
		Shell:   `echo "$SLUICE_CONFORMANCE_STOMP $FROM_RUNNER" >` + out,
		Env:     []string{"SLUICE_CONFORMANCE_STOMP=127.0.0.1:1234", "FROM_RUNNER=yes"},
		Timeout: 10 * time.Second,
	}
	if err := rc.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || strings.TrimSpace(string(b)) != "127.0.0.1:1234 yes" {
		t.Fatalf("environment seen by the command: %q, %v", b, err)
	}
}
