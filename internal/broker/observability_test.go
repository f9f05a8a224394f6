package broker

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/config"
)

// The broker wires what the admin listener reports about itself: a
// persistent send over STOMP shows as journal syncs, the data directory's
// size, the STOMP connection's end by reason, and the policy of the
// configuration's [[destination]] sections.
func TestBrokerObservability(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.STOMP = "127.0.0.1:0"
	limit := int32(2)
	cfg.Destinations = []config.Destination{{Match: "obs.*", Kind: "queue", RedeliveryLimit: &limit}}
	b := start(t, cfg)
	defer shutdown(t, b)
	nc, err := net.Dial("tcp", b.Addr("stomp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(nc, "CONNECT\naccept-version:1.2\n\n\x00"+
		"SEND\ndestination:/queue/obs.a\npersistent:true\nreceipt:1\n\nkept\x00"+
		"DISCONNECT\nreceipt:2\n\n\x00")
	rd := bufio.NewReader(nc)
	for range 3 { // CONNECTED, RECEIPT 1, RECEIPT 2
		if _, err := rd.ReadString(0); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + b.Addr("admin").String()
	var text string
	closed := regexp.MustCompile(`(?m)^sluice_connections_closed_total\{protocol="stomp",reason="client"\} 1$`)
	for range 100 { // the close is logged and counted after the receipt
		text = get(t, base+"/metrics")
		if closed.MatchString(text) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !closed.MatchString(text) {
		t.Errorf("the STOMP client's DISCONNECT is not counted:\n%s", grepLines(text, "sluice_connections_closed_total"))
	}
	for _, series := range []string{"sluice_store_sync_seconds_count", "sluice_data_directory_bytes", "sluice_data_directory_free_bytes",
		`sluice_producer_confirms_total{result="confirmed"}`} {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("/metrics lacks %s", series)
			continue
		}
		if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
			t.Errorf("%s = %s, want more than 0", series, m[1])
		}
	}
	var p struct {
		Section int
		Values  []struct{ Name, Value, Source string }
	}
	if err := json.Unmarshal([]byte(get(t, base+"/api/destinations/queue/obs.a/policy")), &p); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range p.Values {
		found = found || (v.Name == "redelivery_limit" && v.Value == "2" && v.Source == "destination[0]")
	}
	if p.Section != 0 || !found {
		t.Errorf("policy of /queue/obs.a: %+v, want section 0 with its redelivery_limit", p)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}
