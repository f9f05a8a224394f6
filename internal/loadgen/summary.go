package loadgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Bars are the targets of issue 4 (STOMP) and issue 5 (AMQP 1.0): Sluice's
// end-to-end rate over the better peer's, per protocol and scenario.
var Bars = map[string]map[Scenario]float64{
	"stomp": {ScenarioQueue: 2, ScenarioPersistent: 1.5, ScenarioFanout: 2},
	"amqp":  {ScenarioQueue: 2, ScenarioPersistent: 2},
}

// ReadReports reads reports written with --json: one or more JSON values,
// one after another.
func ReadReports(r io.Reader) ([]*Report, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []*Report
	for {
		var rep Report
		err := dec.Decode(&rep)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, &rep)
	}
}

// Group is the runs of one scenario against one broker.
type Group struct {
	Scenario Scenario
	Protocol string
	Label    string
	// Window is the confirmations a producer had outstanding, when it
	// asked for them (persistent); runs with other windows form other
	// groups.
	Window int
	// Rate is the paced send rate (Options.Rate), 0 when unpaced; paced
	// runs are compared on latency, not on rate.
	Rate float64
	// Ack is the consumers' acknowledgement mode; runs with other modes
	// form other groups.
	Ack  AckMode
	Runs []*Report
}

// Name is the scenario, with the confirmation window when there is one
// other than 1: "persistent w1000".
func (g *Group) Name() string {
	name := string(g.Scenario)
	if g.Window > 1 {
		name = fmt.Sprintf("%s w%d", g.Scenario, g.Window)
	}
	if g.Rate > 0 {
		name += fmt.Sprintf(" @%g/s", g.Rate)
	}
	if g.Ack != "" && g.Ack != AckAuto {
		name += " ack:" + string(g.Ack)
	}
	return name
}

func windowOf(r *Report) int {
	if r.Options.Receipts {
		return r.Options.ReceiptWindow
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// values is f of every verified run (a run that lost messages or failed
// has no meaningful rate).
func (g *Group) values(f func(*Report) float64) []float64 {
	v := make([]float64, 0, len(g.Runs))
	for _, r := range g.Runs {
		if r.OK {
			v = append(v, f(r))
		}
	}
	return v
}

// Median of a figure over the group's runs.
func (g *Group) Median(f func(*Report) float64) float64 { return median(g.values(f)) }

// Failed counts the runs that did not verify.
func (g *Group) Failed() int {
	n := 0
	for _, r := range g.Runs {
		if !r.OK {
			n++
		}
	}
	return n
}

func protocolOf(r *Report) string {
	if r.Protocol != "" {
		return r.Protocol
	}
	p, _, _ := strings.Cut(r.Target, " ")
	return p
}

// GroupReports groups reports by scenario, confirmation window, protocol
// and label, in the order they first appear.
func GroupReports(reps []*Report) []*Group {
	var out []*Group
	for _, r := range reps {
		var g *Group
		for _, h := range out {
			if h.Scenario == r.Options.Scenario && h.Window == windowOf(r) && h.Rate == r.Options.Rate && h.Ack == r.Options.AckMode && h.Label == r.Label && h.Protocol == protocolOf(r) {
				g = h
			}
		}
		if g == nil {
			g = &Group{Scenario: r.Options.Scenario, Window: windowOf(r), Rate: r.Options.Rate, Ack: r.Options.AckMode, Protocol: protocolOf(r), Label: r.Label}
			out = append(out, g)
		}
		g.Runs = append(g.Runs, r)
	}
	return out
}

// WriteSummary prints, per scenario, each broker's medians over its runs
// and the ratio of baseline (a label, e.g. "sluice") to the better of the
// others on the end-to-end message rate, against the bar where there is
// one.
func WriteSummary(w io.Writer, reps []*Report, baseline string) error {
	groups := GroupReports(reps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tprotocol\tbroker\tok runs\tmsg/s\t(min–max)\tdeliveries/s\tp50 ms\tp99 ms\tp99.9 ms\tbroker CPU s/100k deliveries\tclient CPU s\tfailed runs\t")
	for _, g := range groups {
		rates := g.values(func(r *Report) float64 { return r.MessageRate })
		lo, hi := 0.0, 0.0
		if len(rates) > 0 {
			lo, hi = slices.Min(rates), slices.Max(rates)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t(%.0f–%.0f)\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t%d\t\n",
			g.Name(), g.Protocol, g.Label, len(rates), median(rates), lo, hi,
			g.Median(func(r *Report) float64 { return r.DeliveryRate }),
			g.Median(func(r *Report) float64 { return r.Latency.P50Ms }),
			g.Median(func(r *Report) float64 { return r.Latency.P99Ms }),
			g.Median(func(r *Report) float64 { return r.Latency.P999Ms }),
			cpuString(g),
			g.Median(func(r *Report) float64 { return r.ClientCPU }),
			g.Failed())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if baseline == "" {
		return nil
	}
	fmt.Fprintln(w)
	seen := map[string]bool{}
	for _, g := range groups {
		key := g.Name() + "/" + g.Protocol + "/" + string(g.Ack)
		if seen[key] || g.Label != baseline {
			continue
		}
		seen[key] = true
		var best *Group
		for _, h := range groups {
			// Paced runs compare latencies, whatever the peer's consumers
			// do (a peer may have to run them pre-settled).
			sameAck := h.Ack == g.Ack || g.Rate > 0
			if h.Scenario == g.Scenario && h.Window == g.Window && h.Rate == g.Rate && sameAck && h.Protocol == g.Protocol && h.Label != baseline {
				if best == nil || h.Median(func(r *Report) float64 { return r.MessageRate }) > best.Median(func(r *Report) float64 { return r.MessageRate }) {
					best = h
				}
			}
		}
		if best == nil {
			continue
		}
		if g.Rate > 0 {
			fmt.Fprintln(w, pacedLine(g, best, baseline))
			continue
		}
		mine := g.Median(func(r *Report) float64 { return r.MessageRate })
		theirs := best.Median(func(r *Report) float64 { return r.MessageRate })
		if theirs == 0 {
			continue
		}
		ratio := mine / theirs
		line := fmt.Sprintf("%s %s: %s / %s (better peer) = %.2f×", g.Name(), g.Protocol, baseline, best.Label, ratio)
		proto, client, _ := strings.Cut(g.Protocol, "/")
		if bar, ok := Bars[proto][g.Scenario]; ok {
			verdict := "MET"
			if ratio < bar {
				verdict = "NOT MET"
			}
			line += fmt.Sprintf("  (bar ≥ %.1f×: %s)", bar, verdict)
			if client != "" {
				line += " [" + client + " client]"
			}
		}
		if cb, cp := g.Median(func(r *Report) float64 { return r.BrokerCPUPer100k }), best.Median(func(r *Report) float64 { return r.BrokerCPUPer100k }); cb > 0 && cp > 0 {
			line += fmt.Sprintf("; CPU per 100k deliveries %.2fs vs %.2fs", cb, cp)
		}
		if n := g.Failed() + best.Failed(); n > 0 {
			line += fmt.Sprintf("; %d run(s) failed verification and are left out", n)
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// pacedLine compares paced groups on their median p99 latency: at a
// fixed offered load the rate says nothing, the tail does.
func pacedLine(g, peer *Group, baseline string) string {
	p99 := func(r *Report) float64 { return r.Latency.P99Ms }
	mine, theirs := g.Median(p99), peer.Median(p99)
	verdict := "no worse: MET"
	if mine > theirs {
		verdict = "no worse: NOT MET"
	}
	who := peer.Label
	if peer.Ack != g.Ack {
		who += " (ack " + string(peer.Ack) + ")"
	}
	line := fmt.Sprintf("%s %s: p99 %s %.2f ms, %s %.2f ms  (bar %s)", g.Name(), g.Protocol, baseline, mine, who, theirs, verdict)
	if n := g.Failed() + peer.Failed(); n > 0 {
		line += fmt.Sprintf("; %d run(s) failed verification and are left out", n)
	}
	return line
}

func cpuString(g *Group) string {
	v := g.Median(func(r *Report) float64 { return r.BrokerCPUPer100k })
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
