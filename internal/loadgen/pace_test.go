package loadgen

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Producers together send at the rate asked, evenly interleaved: the
// schedule, not the clock, is what is checked here.
func TestPacerSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		name      string
		rate      float64
		producers int
		idx       int
		seq       uint64
		want      time.Duration // after start
	}{
		{"one producer, first send at once", 2000, 1, 0, 0, 0},
		{"one producer at 2000/s: 500 µs apart", 2000, 1, 0, 1, 500 * time.Microsecond},
		{"one producer, the 2000th send one second in", 2000, 1, 0, 2000, time.Second},
		{"four producers at 2000/s: each 2 ms apart", 2000, 4, 0, 1, 2 * time.Millisecond},
		{"four producers: the second starts 500 µs in", 2000, 4, 1, 0, 500 * time.Microsecond},
		{"four producers: the last one's third send", 2000, 4, 3, 2, 2*2*time.Millisecond + 1500*time.Microsecond},
		{"a fractional rate", 0.5, 1, 0, 3, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPacer(start, tc.rate, tc.producers, tc.idx)
			if got := p.due(tc.seq).Sub(start); got != tc.want {
				t.Errorf("send %d of producer %d/%d at %g/s is due %v after the start, want %v", tc.seq, tc.idx, tc.producers, tc.rate, got, tc.want)
			}
		})
	}
}

// Over a second, the producers' schedules cover exactly the rate's worth
// of sends, none twice at the same instant.
func TestPacerSchedulesInterleave(t *testing.T) {
	start := time.Unix(0, 0)
	const rate, producers = 3000, 3
	seen := map[time.Duration]bool{}
	n := 0
	for i := 0; i < producers; i++ {
		p := newPacer(start, rate, producers, i)
		for seq := uint64(0); ; seq++ {
			at := p.due(seq).Sub(start)
			if at >= time.Second {
				break
			}
			if seen[at] {
				t.Fatalf("producer %d's send %d is due at %v, as another one's", i, seq, at)
			}
			seen[at] = true
			n++
		}
	}
	if n != rate {
		t.Errorf("%d sends scheduled in the first second, want %d", n, rate)
	}
}

func TestPacerOff(t *testing.T) {
	if p := newPacer(time.Now(), 0, 1, 0); p != nil {
		t.Errorf("rate 0 gave a pacer: %+v", p)
	}
}

// A producer behind its schedule sends at once and counts how late it is.
func TestPacerBehind(t *testing.T) {
	p := newPacer(time.Now().Add(-time.Second), 1000, 1, 0)
	if err := p.wait(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if p.behind != 1 || p.maxBehind < 900*time.Millisecond {
		t.Errorf("a send due 990 ms ago: behind %d, latest %v; want 1 and about 990 ms", p.behind, p.maxBehind)
	}
}

func TestResolveRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"persistent paced", Options{Scenario: ScenarioPersistent, Count: 10, Rate: 2000}, true},
		{"queue paced by duration", Options{Scenario: ScenarioQueue, Duration: time.Second, Rate: 100}, true},
		{"negative", Options{Scenario: ScenarioQueue, Count: 10, Rate: -1}, false},
		{"backlog", Options{Scenario: ScenarioBacklog, Count: 10, Rate: 100}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Resolve()
			if (err == nil) != tc.ok {
				t.Errorf("Resolve: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// Paced runs are compared on their p99, each rate and ack mode its own
// group; a peer whose consumers must run another ack mode is still the
// one compared against.
func TestWriteSummaryPaced(t *testing.T) {
	rep := func(label string, ack AckMode, p99 float64) *Report {
		return &Report{Label: label, Protocol: "amqp", OK: true, MessageRate: 2000, Latency: LatencySummary{P99Ms: p99},
			Options: Options{Scenario: ScenarioPersistent, Persistent: true, Receipts: true, ReceiptWindow: 64, Rate: 2000, AckMode: ack}}
	}
	reps := []*Report{
		rep("sluice", AckClientIndividual, 1.0), rep("sluice", AckAuto, 0.8), rep("rabbitmq", AckAuto, 1.75),
		rep("sluice", AckClientIndividual, 1.2), rep("sluice", AckAuto, 0.9), rep("rabbitmq", AckAuto, 1.5),
		rep("sluice", AckClientIndividual, 3.0), rep("sluice", AckAuto, 2.9), rep("rabbitmq", AckAuto, 2.0),
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, reps, "sluice"); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"persistent w64 @2000/s ack:client-individual amqp: p99 sluice 1.20 ms, rabbitmq (ack auto) 1.75 ms  (bar no worse: MET)",
		"persistent w64 @2000/s amqp: p99 sluice 0.90 ms, rabbitmq 1.75 ms  (bar no worse: MET)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}
