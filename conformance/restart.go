package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultRestartTimeout bounds one restart by a RestartCommand whose Timeout
// is zero: the command, the old broker going away and the new one
// accepting connections, together.
const DefaultRestartTimeout = 60 * time.Second

// restartOutputLimit is how much of the command's output an error quotes.
const restartOutputLimit = 2000

// RestartCommand restarts the broker under test by running a shell command
// (`sh -c Shell`), for the scenarios that need a restart (NeedRestart). Its
// Restart method is what Options.Restart expects.
//
// A restart is done in four steps, all within Timeout:
//
//  1. A plain TCP connection (a "canary", which sends nothing) is opened to
//     each address in Addrs that accepts one.
//  2. The command runs, with standard input from /dev/null and standard
//     output and error going to a temporary file, never to a pipe: a broker
//     the command starts in the background inherits that file and may keep
//     it open for as long as it likes, and the runner waits only for the
//     command's own process to exit. A non-zero exit status fails the
//     restart with the status and the end of the output.
//  3. The runner waits until the broker has closed every canary, that is
//     until the broker that was running before the command has stopped: a
//     command that only signals the old broker and starts a new one returns
//     while the old one may still be accepting.
//  4. The runner waits until every address in Addrs and OtherAddrs accepts
//     a TCP connection again.
type RestartCommand struct {
	// Shell is the command, run by sh -c in the runner's working directory.
	Shell string
	// Addrs are the messaging listener addresses (HOST:PORT) of the
	// broker: each gets a canary, and the restart is over when each accepts
	// connections again.
	Addrs []string
	// OtherAddrs are listeners that must accept connections again but get
	// no canary, such as an HTTP admin API: an HTTP server being shut down
	// waits up to 5s for a connection that has sent nothing yet.
	OtherAddrs []string
	// Env is added to the runner's environment for the command
	// (KEY=VALUE entries).
	Env []string
	// Timeout bounds the whole restart (DefaultRestartTimeout if zero); the
	// context given to Restart can bound it further.
	Timeout time.Duration
	// Log receives a line per restart; nil discards them.
	Log *slog.Logger
}

// Restart runs the command and waits until the broker is back; see
// RestartCommand for the steps. The error names the command and the step
// that failed; it is logged too, at level warn.
func (r *RestartCommand) Restart(ctx context.Context) error {
	log := r.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	err := r.restart(ctx, log)
	if err != nil {
		log.Warn("restart failed", slog.Any("err", err))
	}
	return err
}

func (r *RestartCommand) restart(ctx context.Context, log *slog.Logger) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultRestartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()

	canaries := r.openCanaries(ctx)
	defer func() {
		for _, c := range canaries {
			_ = c.conn.Close()
		}
	}()
	out, err := r.run(ctx)
	if err != nil {
		return err
	}
	ran := time.Since(start)
	for _, c := range canaries {
		if err := waitClosed(ctx, c.conn); err != nil {
			return fmt.Errorf("restart command %q exited after %s, but the broker at %s kept a connection opened before the restart: "+
				"the old broker is still running (the command must stop it, or have it stop, before the new one can take over): %w%s",
				r.Shell, ran.Round(time.Millisecond), c.addr, err, quoteOutput(out))
		}
	}
	for _, a := range append(append([]string(nil), r.Addrs...), r.OtherAddrs...) {
		if err := waitAccepting(ctx, a); err != nil {
			return fmt.Errorf("restart command %q exited after %s, but %s does not accept connections: %w%s",
				r.Shell, ran.Round(time.Millisecond), a, err, quoteOutput(out))
		}
	}
	log.Info("restarted the broker", slog.String("command", r.Shell),
		slog.Duration("command_took", ran.Round(time.Millisecond)),
		slog.Duration("took", time.Since(start).Round(time.Millisecond)))
	return nil
}

// canary is an idle connection to one listener of the broker as it was
// before the restart.
type canary struct {
	addr string
	conn net.Conn
}

// openCanaries connects to each address that accepts a connection now. An
// address that does not (the broker is already down) gets no canary.
func (r *RestartCommand) openCanaries(ctx context.Context) []canary {
	var cs []canary
	for _, a := range r.Addrs {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var d net.Dialer
		nc, err := d.DialContext(dctx, "tcp", a)
		cancel()
		if err == nil {
			cs = append(cs, canary{addr: a, conn: nc})
		}
	}
	return cs
}

// run runs the command and returns its output. Its standard output and
// error are a temporary file, so that Wait returns when the shell exits,
// whatever its background children hold open.
func (r *RestartCommand) run(ctx context.Context) (string, error) {
	f, err := os.CreateTemp("", "sluice-restart-*.out")
	if err != nil {
		return "", fmt.Errorf("restart command %q: output file: %w", r.Shell, err)
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}()
	c := exec.CommandContext(ctx, "sh", "-c", r.Shell)
	c.Stdin = nil // /dev/null
	c.Stdout, c.Stderr = f, f
	c.Env = append(os.Environ(), r.Env...)
	c.WaitDelay = 5 * time.Second
	started := time.Now()
	runErr := c.Run()
	out := readTail(f.Name(), restartOutputLimit)
	if runErr != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("restart command %q did not exit within %s (%v): it must return once the broker is restarting; start a long-running broker in the background (with &)%s",
				r.Shell, time.Since(started).Round(time.Millisecond), ctx.Err(), quoteOutput(out))
		}
		return out, fmt.Errorf("restart command %q failed: %w%s", r.Shell, runErr, quoteOutput(out))
	}
	return out, nil
}

// readTail returns at most the last n bytes of the file at path.
func readTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	return strings.TrimSpace(string(b))
}

func quoteOutput(out string) string {
	if out == "" {
		return " (no output)"
	}
	return "; its output:\n" + out
}

// waitClosed reads from c until the peer closes it or ctx ends. Whatever
// the peer sends is discarded, up to 1MiB: a peer that sends more is not
// closing it.
func waitClosed(ctx context.Context, c net.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 4096)
	for range 256 {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("still open: %w", ctx.Err())
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("still open: %w", err)
		}
		return nil // EOF, reset: the old broker is gone
	}
	return errors.New("still open, and sending data")
}

// waitAccepting dials a every 100ms until it accepts a connection that
// stays open for settle, or ctx ends (and at most acceptTries times). A
// connection the kernel completed on the listener of a broker that is
// exiting is reset when that listener closes, an instant later.
func waitAccepting(ctx context.Context, a string) error {
	var last error
	for range acceptTries {
		last = acceptsAndKeeps(ctx, a)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last dial: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no connection accepted in %d tries (last dial: %v)", acceptTries, last)
}

// acceptTries bounds waitAccepting's dials: 10 minutes of them.
const acceptTries = 6000

// settle is how long a connection to a restarted listener must stay open.
const settle = 100 * time.Millisecond

// acceptsAndKeeps dials a and reports an error unless the connection stays
// open (silent or sending) for settle.
func acceptsAndKeeps(ctx context.Context, a string) error {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", a)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(settle))
	_, err = nc.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return fmt.Errorf("accepted, then closed: %w", err)
}
