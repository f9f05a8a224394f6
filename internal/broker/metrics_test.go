package broker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A message sent and received over STOMP shows in the delivery-latency
// histogram at /metrics.
func TestDeliveryLatencyMetric(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.STOMP = "127.0.0.1:0"
	b := start(t, cfg)
	defer shutdown(t, b)
	nc, err := net.Dial("tcp", b.Addr("stomp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(nc, "CONNECT\naccept-version:1.2\n\n\x00"+
		"SUBSCRIBE\nid:1\ndestination:/queue/lat\n\n\x00"+
		"SEND\ndestination:/queue/lat\n\nhello\x00")
	rd := bufio.NewReader(nc)
	for i := 0; i < 2; i++ { // CONNECTED, MESSAGE
		if _, err := rd.ReadString(0); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get("http://" + b.Addr("admin").String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `sluice_delivery_latency_seconds_count{kind="queue"} 1`) {
		t.Fatalf("no delivery latency recorded in /metrics:\n%s", grepLines(string(body), "latency"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
