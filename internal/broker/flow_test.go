package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"
)

// A data directory short of free space holds STOMP producers until space
// comes back, and /metrics shows the limits and the block.
func TestDiskWatermarkHoldsProducers(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.STOMP = "127.0.0.1:0"
	cfg.Limits.DiskFreeLimit = "1GiB"
	cfg.Limits.MemoryLimit = "256MiB"
	var free atomic.Int64
	free.Store(100 << 30)
	b, err := startWith(context.Background(), cfg, nil, startOptions{tlsPoll: time.Hour, diskPoll: time.Millisecond,
		diskUsage: func(string) (int64, int64, error) { return free.Load(), 200 << 30, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, b)
	c, err := gostomp.Dial("tcp", b.Addr("stomp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect()
	if err := c.Send("/queue/disk", "text/plain", []byte("a"), gostomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	free.Store(10 << 20)
	waitMetric(t, b, `sluice_flow_blocked{reason="disk"} 1`)
	sent := make(chan error, 1)
	go func() { sent <- c.Send("/queue/disk", "text/plain", []byte("b"), gostomp.SendOpt.Receipt) }()
	select {
	case err := <-sent:
		t.Fatalf("SEND answered while the disk is short (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	body := metrics(t, b)
	for _, want := range []string{
		fmt.Sprintf("sluice_memory_limit_bytes %g", float64(heldAt(256<<20))),
		"sluice_disk_free_limit_bytes 1.073741824e+09",
		`sluice_flow_blocked_total{reason="disk"} 1`,
		`sluice_flow_blocked{reason="memory"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "flow"))
		}
	}
	free.Store(100 << 30)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer was not released")
	}
	waitMetric(t, b, `sluice_flow_blocked{reason="disk"} 0`)
}

func metrics(t *testing.T, b *Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.Addr("admin").String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// waitMetric waits (boundedly) until /metrics shows line.
func waitMetric(t *testing.T, b *Broker, line string) {
	t.Helper()
	var body string
	for i := 0; i < 500; i++ {
		if body = metrics(t, b); strings.Contains(body, line) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("/metrics never showed %q:\n%s", line, grepLines(body, "flow"))
}
