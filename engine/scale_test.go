package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// The scale test of issue 6: a million persistent messages scheduled on one
// queue, the memory they take, a SIGKILL while they wait, and their delivery
// after the restart, each within 50 ms of its time. It takes a few minutes,
// so it runs only with SLUICE_SCALE=1 (make scale); SLUICE_SCALE_N changes
// the count.

const (
	scaleEnv  = "SLUICE_SCALE_CHILD"
	scaleWait = 75 * time.Second // from the first send to the first due time
	scaleSpan = 60 * time.Second // the due times spread over this
)

func scaleCount() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_SCALE_N")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// TestScaleChild is the broker process: "load" sends and reports memory,
// then waits to be killed; "drain" recovers and receives everything.
func TestScaleChild(t *testing.T) {
	mode := os.Getenv(scaleEnv)
	if mode == "" {
		t.Skip("helper process for TestScaleScheduled")
	}
	dir := os.Getenv("SLUICE_SCALE_DIR")
	n := scaleCount()
	q := message.Destination{Kind: message.Queue, Name: "scheduled"}
	start := time.Now()
	b, closeBroker := openScale(t, dir)
	defer closeBroker()
	fmt.Printf("RECOVERED %d ms paged=%d\n", time.Since(start).Milliseconds(), b.pagedScheduled())
	conn, _ := b.Connect(ConnectionOptions{})
	if mode == "load" {
		base, _ := strconv.ParseInt(os.Getenv("SLUICE_SCALE_BASE"), 10, 64)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		const senders = 64
		for g := 0; g < senders; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				s, _ := conn.CreateSession(AutoAcknowledge)
				p, _ := s.CreateProducer(q)
				body := make([]byte, 100)
				for i := g; i < n; i += senders {
					m := &message.Message{Body: message.Body{Kind: message.BodyBytes, Data: body}}
					at := base + int64(i)*scaleSpan.Milliseconds()/int64(n)
					m.Props.SetUnchecked("i", message.IntValue(int32(i)))
					if err := p.Send(context.Background(), m, SendOptions{Set: SetDeliveryTime, DeliveryTime: at}); err != nil {
						fmt.Println("ERR", err)
						os.Exit(2)
					}
				}
			}(g)
		}
		wg.Wait()
		sent := time.Since(start)
		// The pager writes the time index behind the sends.
		for i := 0; b.pagedScheduled() < n && i < 1200; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		// Let the journal reach bbolt, so its buffers are not counted.
		_ = b.store.Buckets(func(string) error { return nil })
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		fmt.Printf("SENT %d in %d ms paged=%d scheduler=%d\n", n, sent.Milliseconds(), b.pagedScheduled(), b.sched.len())
		fmt.Printf("MEMORY %.1f bytes per scheduled message\n", float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n))
		fmt.Println("READY")
		time.Sleep(10 * time.Minute)
		return
	}
	s, _ := conn.CreateSession(AutoAcknowledge)
	c, _ := s.CreateConsumer(q, ConsumerOptions{})
	_ = conn.Start()
	out := bufio.NewWriter(os.Stdout)
	seen := make([]bool, n)
	lates := make([]int64, 0, n)
	dups := 0
	for got := 0; got < n; {
		d, ok, err := c.ReceiveTimeout(scaleWait + scaleSpan)
		if err != nil || !ok {
			fmt.Fprintf(out, "ERR receive after %d: ok=%v err=%v\n", got, ok, err)
			out.Flush()
			os.Exit(2)
		}
		now := time.Now().UnixMilli()
		v, _ := d.Msg.Props.Get("i")
		i, _ := v.AsInt()
		if seen[i] {
			dups++
			continue
		}
		seen[i] = true
		got++
		lates = append(lates, now-d.Msg.DeliveryTime)
	}
	slices.Sort(lates)
	fmt.Fprintf(out, "LATENESS p99.9=%d ms, over 50 ms: %d of %d\n", lates[len(lates)*999/1000], len(lates)-countBelow(lates, 51), len(lates))
	fmt.Fprintf(out, "DELIVERED %d dups=%d early=%d p50=%d p99=%d max=%d ms\n", n, dups,
		countBelow(lates, 0), lates[len(lates)/2], lates[len(lates)*99/100], lates[len(lates)-1])
	out.Flush()
}

func countBelow(sorted []int64, v int64) int {
	i, _ := slices.BinarySearch(sorted, v)
	return i
}

func openScale(t *testing.T, dir string) (*Broker, func()) {
	return openPagingOpts(t, dir, 0, 0)
}

func TestScaleScheduled(t *testing.T) {
	if os.Getenv("SLUICE_SCALE") == "" {
		t.Skip("set SLUICE_SCALE=1 (make scale) to run the million-message scheduling test")
	}
	dir := t.TempDir()
	base := time.Now().Add(scaleWait).UnixMilli()
	run := func(mode string, kill bool) []string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScaleChild$", "-test.count=1", "-test.timeout=20m")
		cmd.Env = append(os.Environ(), scaleEnv+"="+mode, "SLUICE_SCALE_DIR="+dir, "SLUICE_SCALE_BASE="+strconv.FormatInt(base, 10))
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(10*time.Minute, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			t.Log(line)
			if strings.HasPrefix(line, "ERR") {
				_ = cmd.Process.Kill()
				t.Fatal(line)
			}
			if kill && line == "READY" {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		_ = cmd.Wait()
		return lines
	}
	run("load", true)
	if time.Now().UnixMilli() > base-5000 {
		t.Fatal("loading took longer than the wait before the first due time; raise scaleWait")
	}
	lines := run("drain", false)
	last := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "DELIVERED") {
			last = l
		}
	}
	var n, dups, early int
	var p50, p99, maxLate int64
	if _, err := fmt.Sscanf(last, "DELIVERED %d dups=%d early=%d p50=%d p99=%d max=%d ms", &n, &dups, &early, &p50, &p99, &maxLate); err != nil {
		t.Fatalf("unexpected last line %q: %v", last, err)
	}
	if n != scaleCount() || dups != 0 || early != 0 {
		t.Fatalf("delivered %d (want %d), %d duplicates, %d early", n, scaleCount(), dups, early)
	}
	if maxLate > 50 {
		t.Errorf("a message came %d ms after its time (p99 %d ms): want every one within 50 ms", maxLate, p99)
	}
}
