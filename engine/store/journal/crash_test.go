package journal_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/journal"
)

const crashEnv = "SLUICE_JOURNAL_CRASH_DIR"

// TestCrashChild is the process the crash test kills: 8 writers confirm
// updates as fast as they can and print every confirmed key.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashSIGKILL")
	}
	s := open(t, dir, journal.Options{SegmentSize: 256 << 10})
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				k := fmt.Sprintf("%d-%07d", g, i)
				ops := []store.Op{
					{Kind: store.Put, Bucket: "data", Key: []byte(k), Value: []byte(strings.Repeat("v", 512))},
					{Kind: store.Put, Bucket: "other", Key: []byte(k), Value: []byte("x")},
				}
				if i > 0 && i%3 == 0 {
					// Delete an earlier key: deletions must survive too.
					ops = append(ops, store.Op{Kind: store.Delete, Bucket: "other", Key: []byte(fmt.Sprintf("%d-%07d", g, i-3))})
				}
				if err := s.Update(context.Background(), ops); err != nil {
					fmt.Println("ERR", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(out, "OK", k)
				out.Flush()
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
}

func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	for round := 0; round < 3; round++ {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		confirmed := map[string]bool{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "OK" {
				confirmed[f[1]] = true
				if len(confirmed) == 3000+round*2000 {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
			} else if len(f) > 0 && f[0] == "ERR" {
				t.Fatal(sc.Text())
			}
		}
		_ = cmd.Wait()
		timer.Stop()
		if len(confirmed) < 3000 {
			t.Fatalf("only %d updates confirmed before the child ended", len(confirmed))
		}
		s := open(t, dir, journal.Options{})
		data := map[string]bool{}
		if err := s.ForEach("data", func(k, v []byte) error {
			if len(v) != 512 {
				t.Errorf("key %s has a %d-byte value", k, len(v))
			}
			data[string(k)] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		other := map[string]bool{}
		_ = s.ForEach("other", func(k, _ []byte) error { other[string(k)] = true; return nil })
		for k := range confirmed {
			if !data[k] {
				t.Fatalf("round %d: confirmed key %s lost", round, k)
			}
		}
		// Every key of "other" whose deletion was confirmed is gone.
		for k := range other {
			var g, i int
			fmt.Sscanf(k, "%d-%d", &g, &i)
			if confirmed[fmt.Sprintf("%d-%07d", g, i+3)] && (i+3)%3 == 0 {
				t.Fatalf("round %d: key %s reappeared after its confirmed deletion", round, k)
			}
		}
		_ = s.Close()
	}
}
