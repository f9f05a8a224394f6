package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// crashEnv, when set, makes TestCrashHelper act as the child process of
// TestCrashDurability; its value is the store path and the round, "path|round".
const crashEnv = "SLUICE_BOLTSTORE_CRASH_HELPER"

// crashValue is the value the helper stores for key, derived from the key so
// the parent can check it; its length varies so that commits touch overflow
// pages too.
func crashValue(key string) []byte {
	n := 50 + len(key)*37%3000
	return bytes.Repeat([]byte(key[len(key)-1:]), n)
}

// TestCrashHelper is not a test: run by TestCrashDurability with crashEnv
// set, it writes confirmed Updates from several goroutines until killed,
// printing "ok KEY" after each Update returns nil.
func TestCrashHelper(t *testing.T) {
	arg := os.Getenv(crashEnv)
	if arg == "" {
		t.Skip("helper process of TestCrashDurability")
	}
	path, round, _ := strings.Cut(arg, "|")
	s, err := Open(path, quietOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("r%s-w%d-%07d", round, w, i)
				ops := []store.Op{
					{Kind: store.Put, Bucket: "crash", Key: []byte(key), Value: crashValue(key)},
					{Kind: store.Put, Bucket: "crash-index", Key: []byte(key)},
				}
				if i%3 == 2 { // delete some earlier keys, so commits also free pages
					prev := fmt.Sprintf("r%s-w%d-%07d", round, w, i-1)
					ops = append(ops,
						store.Op{Kind: store.Delete, Bucket: "crash", Key: []byte(prev)},
						store.Op{Kind: store.Delete, Bucket: "crash-index", Key: []byte(prev)})
				}
				if err := s.Update(context.Background(), ops); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				// One write per line: the parent never sees half a line
				// unless the process dies inside this write.
				_, _ = os.Stdout.WriteString("ok " + key + "\n")
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestCrashDurability kills a process that is writing to the store with
// SIGKILL, several times, and checks after each kill that every Update the
// process saw succeed is in the reopened store, and that no Update is half
// applied.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	const (
		rounds        = 3
		confirmations = 2000 // per round
		roundTimeout  = 30 * time.Second
	)
	path := filepath.Join(t.TempDir(), "sluice.db")
	confirmed := map[string]bool{} // every key whose Update was confirmed
	for round := range rounds {
		keys := runCrashChild(t, path, round, confirmations, roundTimeout)
		for _, k := range keys {
			confirmed[k] = true
		}
		verifyCrashStore(t, path, confirmed)
		t.Logf("round %d: %d confirmed updates survived SIGKILL", round, len(keys))
	}
}

// runCrashChild runs the helper until it has confirmed n updates (or
// timeout passes), kills it with SIGKILL and returns the confirmed keys.
func runCrashChild(t *testing.T, path string, round, n int, timeout time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d", crashEnv, path, round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	timer := time.AfterFunc(timeout, kill)
	defer timer.Stop()

	var keys []string
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break // a last line without its newline is not a confirmation
		}
		if err != nil {
			t.Fatalf("read helper output: %v", err)
		}
		if key, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ok "); ok {
			keys = append(keys, key)
			if len(keys) == n {
				kill() // keep reading: lines already written are confirmations too
			}
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("helper exited by itself: %v\n%s", err, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, not SIGKILL\n%s", err, stderr.String())
	}
	if len(keys) < n {
		t.Fatalf("helper confirmed only %d updates in %v\n%s", len(keys), timeout, stderr.String())
	}
	return keys
}

// verifyCrashStore reopens the store and checks that every confirmed key is
// there with its value and that both buckets hold the same keys (no Update
// half applied).
func verifyCrashStore(t *testing.T, path string, confirmed map[string]bool) {
	t.Helper()
	checkFile(t, path)
	s, err := Open(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stored := map[string]bool{}
	err = s.ForEach("crash", func(k, v []byte) error {
		if !bytes.Equal(v, crashValue(string(k))) {
			return fmt.Errorf("key %s holds a wrong value (%d bytes)", k, len(v))
		}
		stored[string(k)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	index := 0
	err = s.ForEach("crash-index", func(k, _ []byte) error {
		index++
		if !stored[string(k)] {
			return fmt.Errorf("key %s is in crash-index but not in crash: an update was half applied", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if index != len(stored) {
		t.Fatalf("crash holds %d keys, crash-index %d: an update was half applied", len(stored), index)
	}
	missing := 0
	for k := range confirmed {
		if !stored[k] && !deletedLater(k, stored) {
			if missing < 5 {
				t.Errorf("confirmed key %s is missing after SIGKILL", k)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d confirmed keys missing", missing, len(confirmed))
	}
}

// deletedLater reports whether key was deleted by its writer's next Update
// (which deletes key i-1 when i%3 == 2) and that Update was applied, even if
// its confirmation was lost to the kill.
func deletedLater(key string, stored map[string]bool) bool {
	var r, w, i int
	if _, err := fmt.Sscanf(key, "r%d-w%d-%07d", &r, &w, &i); err != nil {
		return false
	}
	return (i+1)%3 == 2 && stored[fmt.Sprintf("r%d-w%d-%07d", r, w, i+1)]
}
