package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// runAfterFill runs o.AfterFill between the backlog scenario's fill and
// its drain, with SLUICE_BENCH_QUEUE set to the filled queue's name and
// SLUICE_BENCH_BROKER_PID to the broker's PID. It is how a run restarts the
// broker with its backlog (scripts/backlog-restart.sh): when the command's
// last line of output is a number, that is the broker's PID from then on.
// It returns the new PID (0 if none) and how long the command ran.
func runAfterFill(ctx context.Context, o *Options, queue string) (pid int, took time.Duration, err error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", o.AfterFill)
	cmd.Env = append(os.Environ(), "SLUICE_BENCH_QUEUE="+queue, "SLUICE_BENCH_BROKER_PID="+strconv.Itoa(o.BrokerPID))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, time.Since(start), fmt.Errorf("after-fill command: %w", err)
	}
	took = time.Since(start)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1])); err == nil && n > 0 {
		pid = n
	}
	return pid, took, nil
}
