package loadgen

import (
	"bytes"
	"strings"
	"testing"
)

// The summary compares like with like: runs with another confirmation
// window are their own group, each with its ratio and verdict.
func TestWriteSummaryGroupsByWindow(t *testing.T) {
	rep := func(label string, window int, rate float64) *Report {
		return &Report{Label: label, Protocol: "amqp", OK: true, MessageRate: rate,
			Options: Options{Scenario: ScenarioPersistent, Persistent: true, Receipts: true, ReceiptWindow: window}}
	}
	reps := []*Report{
		rep("sluice", 1, 4000), rep("rabbitmq", 1, 2800),
		rep("sluice", 1000, 30000), rep("rabbitmq", 1000, 14000),
		rep("sluice", 1000, 32000), rep("rabbitmq", 1000, 15000),
		rep("sluice", 1000, 28000), rep("rabbitmq", 1000, 16000),
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, reps, "sluice"); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"persistent amqp: sluice / rabbitmq (better peer) = 1.43×  (bar ≥ 2.0×: NOT MET)",
		"persistent w1000 amqp: sluice / rabbitmq (better peer) = 2.00×  (bar ≥ 2.0×: MET)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "persistent w1000"); n != 3 {
		t.Errorf("want 2 table rows and 1 ratio line for window 1000, got %d mentions:\n%s", n, s)
	}
}
