package admin

import (
	"io"
	"strings"
	"testing"
)

// Flow control shows in the overview and in /metrics while it holds
// producers, and is gone from both once it ends.
func TestFlowInOverviewAndMetrics(t *testing.T) {
	e := newEnv(t, nil)
	metrics := func() string {
		_, _, res := e.do("GET", "/metrics", nil)
		raw, _ := io.ReadAll(res.Body)
		return string(raw)
	}
	tests := []struct {
		name    string
		low     bool
		blocked bool
		metrics []string
	}{
		{"flowing", false, false, []string{`sluice_flow_blocked{reason="disk"} 0`, `sluice_flow_blocked{reason="memory"} 0`,
			`sluice_flow_blocked_total{reason="disk"} 0`, "sluice_memory_limit_bytes 0", "# TYPE sluice_flow_blocked_seconds_total counter"}},
		{"disk low", true, true, []string{`sluice_flow_blocked{reason="disk"} 1`, `sluice_flow_blocked_total{reason="disk"} 1`,
			"sluice_disk_free_limit_bytes 1000"}},
		{"room again", false, false, []string{`sluice_flow_blocked{reason="disk"} 0`, `sluice_flow_blocked_total{reason="disk"} 1`}},
	}
	for _, tt := range tests {
		e.eng.Flow().SetDiskAlarm(tt.low, 500, 1000)
		o := e.want("GET", "/api/overview", nil, 200)
		f, _ := o["flow"].(map[string]any)
		if f == nil || f["blocked"] != tt.blocked || f["diskFreeLimit"] != 1000.0 {
			t.Fatalf("%s: overview flow = %v", tt.name, o["flow"])
		}
		if reasons, _ := f["reasons"].([]any); tt.blocked != (len(reasons) == 1 && reasons[0] == "disk") {
			t.Fatalf("%s: reasons %v", tt.name, f["reasons"])
		}
		text := metrics()
		for _, w := range tt.metrics {
			if !strings.Contains(text, w) {
				t.Errorf("%s: /metrics lacks %q", tt.name, w)
			}
		}
	}
}
