package loadgen

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of a run.
type Report struct {
	// Label names the broker in comparisons (default: the target).
	Label  string `json:"label"`
	Target string `json:"target"`
	// Protocol is the protocol and client: "stomp", "stomp/lean", "amqp".
	Protocol string  `json:"protocol"`
	Options  Options `json:"options"`

	Sent       int64 `json:"sent"`
	Received   int64 `json:"received"`   // deliveries counted, over all consumers
	Expected   int64 `json:"expected"`   // deliveries expected: sent, times the subscribers for a topic
	Missing    int64 `json:"missing"`    // expected deliveries that never came
	Duplicates int64 `json:"duplicates"` // deliveries of a message a consumer (topic) or any consumer (queue) already had
	Foreign    int64 `json:"foreign"`    // messages of other runs (leftovers in a reused destination)

	// Seconds from the first send: until the last send was confirmed
	// (SendSeconds), until the last counted message arrived
	// (ReceiveSeconds), until the run ended (Seconds).
	SendSeconds    float64 `json:"send_seconds"`
	ReceiveSeconds float64 `json:"receive_seconds"`
	Seconds        float64 `json:"seconds"`

	SendRate     float64 `json:"send_rate"`     // messages/s sent
	ReceiveRate  float64 `json:"receive_rate"`  // deliveries/s over all consumers
	MessageRate  float64 `json:"message_rate"`  // messages/s end to end: sent, over the time until the last arrived
	DeliveryRate float64 `json:"delivery_rate"` // deliveries/s end to end (= MessageRate × subscribers for a topic)

	Latency LatencySummary `json:"latency"`

	// With Options.Rate: the sends that started more than a millisecond
	// after their scheduled time (the producer was waiting for
	// confirmations), and the latest of them. Latency is measured from
	// the actual send, so a run with many late sends did not offer the
	// load it was asked to.
	PaceBehind      int64   `json:"pace_behind,omitempty"`
	PaceMaxBehindMs float64 `json:"pace_max_behind_ms,omitempty"`

	// Backlog has the phases of the backlog scenario (nil for the others).
	Backlog *BacklogReport `json:"backlog,omitempty"`

	// BrokerCPU is the CPU seconds (user+system) of Options.BrokerPID over
	// the measured part of the run; ClientCPU the same for this process.
	BrokerCPU        float64  `json:"broker_cpu_seconds,omitempty"`
	BrokerCPUPer100k float64  `json:"broker_cpu_seconds_per_100k,omitempty"`
	ClientCPU        float64  `json:"client_cpu_seconds"`
	LoadBefore       string   `json:"loadavg_before,omitempty"`
	LoadAfter        string   `json:"loadavg_after,omitempty"`
	Errors           []string `json:"errors,omitempty"`
	OK               bool     `json:"ok"` // every message arrived, no duplicates, no errors
}

// BacklogReport is the backlog scenario's two phases: the fill (every
// message sent and confirmed, no consumer attached) and the drain (from the
// moment the consumers start to attach until the last message arrived).
// The broker figures need Options.BrokerPID.
type BacklogReport struct {
	FillSeconds  float64 `json:"fill_seconds"`
	FillRate     float64 `json:"fill_rate"` // messages/s confirmed
	DrainSeconds float64 `json:"drain_seconds"`
	DrainRate    float64 `json:"drain_rate"` // messages/s received (and acknowledged, unless ack auto)

	FillBrokerCPU         float64 `json:"fill_broker_cpu_seconds,omitempty"`
	FillBrokerCPUPer100k  float64 `json:"fill_broker_cpu_seconds_per_100k,omitempty"`
	DrainBrokerCPU        float64 `json:"drain_broker_cpu_seconds,omitempty"`
	DrainBrokerCPUPer100k float64 `json:"drain_broker_cpu_seconds_per_100k,omitempty"`
	RSSBeforeFill         int64   `json:"rss_before_fill_bytes,omitempty"` // the broker's VmRSS
	RSSAfterFill          int64   `json:"rss_after_fill_bytes,omitempty"`
	RSSAfterDrain         int64   `json:"rss_after_drain_bytes,omitempty"`
	// With Options.AfterFill: how long its command ran (a restart, until
	// the broker was ready) and the broker's RSS when it ended.
	AfterFillSeconds float64 `json:"after_fill_seconds,omitempty"`
	RSSAfterRestart  int64   `json:"rss_after_restart_bytes,omitempty"`
}

func (b *BacklogReport) finish(sent, received int64) {
	if b.FillSeconds > 0 {
		b.FillRate = float64(sent) / b.FillSeconds
	}
	if b.DrainSeconds > 0 {
		b.DrainRate = float64(received) / b.DrainSeconds
	}
	if b.FillBrokerCPU > 0 && sent > 0 {
		b.FillBrokerCPUPer100k = b.FillBrokerCPU / float64(sent) * 1e5
	}
	if b.DrainBrokerCPU > 0 && received > 0 {
		b.DrainBrokerCPUPer100k = b.DrainBrokerCPU / float64(received) * 1e5
	}
}

func (r *Report) finish() {
	o := &r.Options
	if r.Label == "" {
		r.Label = r.Target
	}
	r.Expected = r.Sent
	if o.Topic {
		r.Expected = r.Sent * int64(o.Consumers)
	}
	if r.SendSeconds > 0 {
		r.SendRate = float64(r.Sent) / r.SendSeconds
	}
	if r.ReceiveSeconds > 0 {
		r.ReceiveRate = float64(r.Received) / r.ReceiveSeconds
		r.MessageRate = float64(r.Sent) / r.ReceiveSeconds
		r.DeliveryRate = float64(r.Expected) / r.ReceiveSeconds
		if r.Missing > 0 {
			// Not everything arrived: the end-to-end rate is what did.
			r.MessageRate = float64(r.Received) / r.ReceiveSeconds
			if o.Topic {
				r.MessageRate /= float64(o.Consumers)
			}
			r.DeliveryRate = r.ReceiveRate
		}
	}
	// CPU per 100k deliveries: for a topic the broker's work grows with the
	// deliveries, and that is what the other scenarios count too.
	if r.BrokerCPU > 0 && r.Expected > 0 {
		r.BrokerCPUPer100k = r.BrokerCPU / float64(r.Expected) * 1e5
	}
	if r.Backlog != nil {
		r.Backlog.finish(r.Sent, r.Received)
	}
	r.OK = r.Missing == 0 && r.Duplicates == 0 && len(r.Errors) == 0 && r.Sent > 0
}

// WriteText writes the report as a human-readable table.
func (r *Report) WriteText(w io.Writer) error {
	o := &r.Options
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	p("target", "%s", r.Target)
	kind := "queue"
	if o.Topic {
		kind = "topic"
	}
	mode := "non-persistent"
	if o.Persistent {
		mode = "persistent"
	}
	receipts := "no receipts"
	if o.Receipts {
		receipts = fmt.Sprintf("receipts (window %d)", o.ReceiptWindow)
	}
	bound := ""
	if o.Count > 0 {
		bound = fmt.Sprintf("%d messages", o.Count)
	}
	if o.Duration > 0 {
		if bound != "" {
			bound += " or "
		}
		bound += o.Duration.String()
	}
	p("scenario", "%s: %s %s, %d producer(s), %d consumer(s), %d B, %s, %s, ack %s, prefetch %s",
		o.Scenario, kind, o.Destination, o.Producers, o.Consumers, o.Size, mode, receipts, o.AckMode, prefetchString(o.Prefetch))
	p("bound", "%s", bound)
	if o.Rate > 0 {
		p("paced", "%s msg/s across the producers; %d sends started over 1 ms late (latest by %s ms)", rate(o.Rate), r.PaceBehind, ms(r.PaceMaxBehindMs))
	}
	p("sent", "%d in %.3fs = %s msg/s", r.Sent, r.SendSeconds, rate(r.SendRate))
	p("received", "%d of %d deliveries in %.3fs = %s deliveries/s", r.Received, r.Expected, r.ReceiveSeconds, rate(r.ReceiveRate))
	if o.Topic {
		p("end to end", "%s msg/s, %s deliveries/s", rate(r.MessageRate), rate(r.DeliveryRate))
	} else {
		p("end to end", "%s msg/s", rate(r.MessageRate))
	}
	if b := r.Backlog; b != nil {
		p("fill", "%d confirmed in %.3fs = %s msg/s, no consumer attached", r.Sent, b.FillSeconds, rate(b.FillRate))
		if o.AfterFill != "" {
			p("after fill", "%q ran %.3fs; broker rss then %s", o.AfterFill, b.AfterFillSeconds, mib(b.RSSAfterRestart))
		}
		p("drain", "%d received in %.3fs = %s msg/s", r.Received, b.DrainSeconds, rate(b.DrainRate))
		if o.BrokerPID > 0 {
			p("broker cpu fill", "%.2fs = %.2fs per 100k messages", b.FillBrokerCPU, b.FillBrokerCPUPer100k)
			p("broker cpu drain", "%.2fs = %.2fs per 100k messages", b.DrainBrokerCPU, b.DrainBrokerCPUPer100k)
			p("broker rss", "before fill %s, after fill %s, after drain %s", mib(b.RSSBeforeFill), mib(b.RSSAfterFill), mib(b.RSSAfterDrain))
		}
	}
	l := r.Latency
	p("latency ms", "p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s", ms(l.P50Ms), ms(l.P90Ms), ms(l.P99Ms), ms(l.P999Ms), ms(l.MaxMs), ms(l.MeanMs))
	p("verified", "missing %d, duplicates %d, other runs' messages %d", r.Missing, r.Duplicates, r.Foreign)
	if o.BrokerPID > 0 {
		p("broker cpu", "%.2fs (pid %d) = %.2fs per 100k deliveries", r.BrokerCPU, o.BrokerPID, r.BrokerCPUPer100k)
	}
	p("client cpu", "%.2fs", r.ClientCPU)
	if r.LoadBefore != "" {
		p("loadavg", "before %s, after %s", r.LoadBefore, r.LoadAfter)
	}
	for _, e := range r.Errors {
		p("error", "%s", e)
	}
	if r.OK {
		p("result", "OK")
	} else {
		p("result", "FAILED")
	}
	return tw.Flush()
}

func prefetchString(n int) string {
	if n == 0 {
		return "broker default"
	}
	return strconv.Itoa(n)
}

func rate(v float64) string {
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func mib(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

func ms(v float64) string {
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// loadAvg is /proc/loadavg's first three fields, or "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
