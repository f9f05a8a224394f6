package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// The crash tests run a broker in a child process (this test binary,
// re-executed with the name of a child test and an environment), kill it
// with SIGKILL and restart it on the same store. The child reports what
// the engine confirmed on stdout, one line per event; the parent reads the
// lines and decides when to kill. This file holds what both crash tests
// (crash_test.go, crash_nack_test.go) share.

// crashDirEnv names the child's store directory.
const crashDirEnv = "SLUICE_CRASH_DIR"

// crashChildBroker opens the child's broker on the durable store in
// crashDirEnv with cfg, and returns it, the store, and a say that writes
// one line to stdout at once (the parent must see it before a kill).
func crashChildBroker(t *testing.T, cfg engine.Config) (*engine.Broker, *journal.Store, func(format string, args ...any)) {
	st, _ := openDurable(t, os.Getenv(crashDirEnv))
	cfg.Store, cfg.AutoCreate, cfg.ConsumeBeforeStore = st, true, true
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		mu.Unlock()
	}
	return b, st, say
}

// crashLoad starts n producers on conn that send "g-i" to queueA until the
// process dies, saying SENT for each send the engine confirmed.
func crashLoad(conn *engine.Connection, n int, say func(format string, args ...any)) {
	for g := range n {
		go func() {
			s, _ := conn.CreateSession(engine.AutoAcknowledge)
			p, _ := s.CreateProducer(queueA)
			for i := 0; ; i++ {
				id := fmt.Sprintf("%d-%d", g, i)
				if err := p.Send(context.Background(), text(id), engine.SendOptions{}); err != nil {
					say("ERR send %v", err)
					return
				}
				say("SENT %s", id)
			}
		}()
	}
}

// crashChild is a child process the parent reads and may kill.
type crashChild struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	timer  *time.Timer
	killed bool
}

// startCrashChild runs the test named child in a new process with env; it
// is killed after a minute whatever happens.
func startCrashChild(t *testing.T, child string, env ...string) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &crashChild{cmd: cmd, lines: bufio.NewScanner(stdout),
		timer: time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })}
}

// kill sends SIGKILL, once.
func (c *crashChild) kill() {
	if !c.killed {
		c.killed = true
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// wait waits for the child to end; with mustKill it fails the test when
// the child ended before it was killed.
func (c *crashChild) wait(t *testing.T, mustKill bool) {
	t.Helper()
	_ = c.cmd.Wait()
	c.timer.Stop()
	if mustKill && !c.killed {
		t.Fatalf("child ended before it was killed")
	}
}
