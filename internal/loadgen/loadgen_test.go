package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// startSluice runs an in-process Sluice for one test.
func startSluice(t *testing.T) *STOMP {
	t.Helper()
	p, err := StartInProcess(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return NewSTOMP(STOMPConfig{Addr: p.STOMPAddr()})
}

// checkReport asserts that every message arrived once and the figures are
// consistent; it asserts nothing about speed.
func checkReport(t *testing.T, r *Report, wantSent, wantDeliveries int64) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	if !r.OK || len(r.Errors) > 0 {
		t.Fatalf("run failed: %v", r.Errors)
	}
	if wantSent >= 0 && r.Sent != wantSent {
		t.Errorf("sent %d, want %d", r.Sent, wantSent)
	}
	if r.Expected != wantDeliveries || r.Received != wantDeliveries {
		t.Errorf("received %d of %d deliveries, want %d", r.Received, r.Expected, wantDeliveries)
	}
	if r.Missing != 0 || r.Duplicates != 0 || r.Foreign != 0 {
		t.Errorf("missing %d, duplicates %d, foreign %d", r.Missing, r.Duplicates, r.Foreign)
	}
	if r.Latency.Samples != wantDeliveries {
		t.Errorf("latency samples %d, want %d", r.Latency.Samples, wantDeliveries)
	}
	l := r.Latency
	if !(0 <= l.P50Ms && l.P50Ms <= l.P90Ms && l.P90Ms <= l.P99Ms && l.P99Ms <= l.P999Ms && l.P999Ms <= l.MaxMs) {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	for _, v := range []float64{r.SendRate, r.ReceiveRate, r.MessageRate, r.DeliveryRate} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("rate %v not positive: %+v", v, r)
		}
	}
	if !(r.SendSeconds > 0 && r.SendSeconds <= r.Seconds && r.ReceiveSeconds > 0 && r.ReceiveSeconds <= r.Seconds) {
		t.Errorf("times: send %v receive %v total %v", r.SendSeconds, r.ReceiveSeconds, r.Seconds)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("json: %v", err)
	}
}

func TestQueueScenario(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioQueue, Count: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Options.Persistent || r.Options.Receipts || r.Options.Topic || r.Options.Size != 1024 {
		t.Errorf("queue scenario defaults: %+v", r.Options)
	}
	checkReport(t, r, 2000, 2000)
}

func TestPersistentScenario(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioPersistent, Count: 300})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Options.Persistent || !r.Options.Receipts || r.Options.ReceiptWindow != 1 {
		t.Errorf("persistent scenario defaults: %+v", r.Options)
	}
	checkReport(t, r, 300, 300)
}

func TestPersistentReceiptWindow(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioPersistent, Count: 2000, ReceiptWindow: 32,
		AckMode: AckClientIndividual, Prefetch: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, 2000, 2000)
}

func TestFanoutScenario(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioFanout, Count: 400, Consumers: 8})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, 400, 400*8)
}

func TestFanoutDefaultSubscribers(t *testing.T) {
	if testing.Short() {
		t.Skip("50 connections")
	}
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioFanout, Count: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Options.Consumers != 50 {
		t.Fatalf("fanout subscribers %d, want 50", r.Options.Consumers)
	}
	checkReport(t, r, 100, 100*50)
}

func TestManyProducersConsumersClientAck(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioQueue, Count: 2001, Producers: 3, Consumers: 4,
		AckMode: AckClient, AckEvery: 10, Prefetch: 50, Size: 100, MaxBacklog: 200})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, 2001, 2001)
}

func TestDurationBound(t *testing.T) {
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioQueue, Duration: 300 * time.Millisecond, MaxBacklog: 500, Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent == 0 {
		t.Fatal("nothing sent")
	}
	checkReport(t, r, -1, r.Sent)
}

func TestLeftoversAreForeign(t *testing.T) {
	d := startSluice(t)
	// A first run leaves 50 messages in the queue (its consumer stops
	// after... none: it has no consumer of its own); simulate with a
	// producer only.
	o := Options{Scenario: ScenarioQueue, Count: 50, Destination: "shared.q", RunID: "old"}
	if err := o.Resolve(); err != nil {
		t.Fatal(err)
	}
	p, err := d.NewProducer(context.Background(), &o, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := p.Send(context.Background(), Msg{Run: "old", Seq: uint64(i), Sent: time.Now().UnixNano()}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.Close()
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioQueue, Count: 100, Destination: "shared.q", DrainTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Foreign != 50 || r.Received != 100 || !r.OK {
		t.Fatalf("foreign %d received %d ok %v errors %v", r.Foreign, r.Received, r.OK, r.Errors)
	}
}

func TestMissingMessagesAreReported(t *testing.T) {
	d := startSluice(t)
	// The consumer listens on another queue than the producer sends to.
	r, err := Run(context.Background(), splitDriver{d}, Options{Scenario: ScenarioQueue, Count: 20, DrainTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Missing != 20 || r.Received != 0 {
		t.Fatalf("ok %v missing %d received %d", r.OK, r.Missing, r.Received)
	}
	if len(r.Errors) == 0 || !strings.Contains(strings.Join(r.Errors, ";"), "missing") {
		t.Fatalf("errors %v", r.Errors)
	}
}

// splitDriver subscribes its consumers to a different destination.
type splitDriver struct{ *STOMP }

func (s splitDriver) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	o2 := *o
	o2.Destination += ".elsewhere"
	return s.STOMP.NewConsumer(ctx, &o2, idx, h)
}

func TestBrokerCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	d := startSluice(t)
	r, err := Run(context.Background(), d, Options{Scenario: ScenarioQueue, Count: 500, BrokerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, 500, 500)
	if r.BrokerCPU < 0 {
		t.Fatalf("broker cpu %v", r.BrokerCPU)
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "bounded"},
		{Options{Scenario: "nope", Count: 1}, "scenario"},
		{Options{Count: 1, AckMode: "sometimes"}, "ack mode"},
		{Options{Count: 2, Producers: 3}, "smaller"},
		{Options{Count: 1, RunID: "a.b"}, "run ID"},
		{Options{Count: -1}, "negative"},
	} {
		if err := tc.o.Resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
	o := Options{Scenario: ScenarioFanout, Duration: time.Second, RunID: "r1"}
	if err := o.Resolve(); err != nil {
		t.Fatal(err)
	}
	if !o.Topic || o.Consumers != 50 || o.Destination != "sluicebench.fanout.r1" || stompDestination(&o) != "/topic/sluicebench.fanout.r1" {
		t.Fatalf("%+v", o)
	}
}

func TestHistogram(t *testing.T) {
	var h Histogram
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(-time.Millisecond)
	for _, tc := range []struct{ q, want float64 }{{0.5, 5000}, {0.99, 9900}, {0.999, 9990}, {1, 10000}} {
		got := h.Quantile(tc.q)
		if math.Abs(got-tc.want)/tc.want > 0.04 {
			t.Errorf("q%v = %v, want %v ±4%%", tc.q, got, tc.want)
		}
	}
	var m Histogram
	m.Merge(&h)
	if s := m.Summary(); s.Samples != 10001 || s.MaxMs != 10 {
		t.Fatalf("%+v", s)
	}
	for us := uint64(0); us < 1<<40; us = us*3/2 + 1 {
		i := histIndex(us)
		if v := histValue(i); v < float64(us) || (us > histSub && v > float64(us)*1.04) {
			t.Fatalf("bucket %d of %d µs has bound %v", i, us, v)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "1234 (java (x) y) S 1 1234 1234 0 -1 4194560 123 0 0 0 250 75 0 0 20 0 40 0 100 0 0"
	cpu, err := parseStat(line)
	if err != nil || cpu != 3.25 {
		t.Fatalf("cpu %v err %v", cpu, err)
	}
	if _, err := parseStat("garbage"); err == nil {
		t.Fatal("want an error")
	}
}

// startSluiceAMQP runs an in-process Sluice with only its AMQP 1.0 listener.
func startSluiceAMQP(t *testing.T) *AMQP {
	t.Helper()
	p, err := StartInProcessAt(context.Background(), t.TempDir(), "", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return NewAMQP(AMQPConfig{Addr: p.AMQPAddr()})
}

func TestAMQPScenarios(t *testing.T) {
	d := startSluiceAMQP(t)
	for _, tc := range []struct {
		name       string
		o          Options
		deliveries int64
	}{
		{"queue-presettled", Options{Scenario: ScenarioQueue, Count: 2000, Prefetch: 200}, 2000},
		{"queue-accept", Options{Scenario: ScenarioQueue, Count: 2000, AckMode: AckClientIndividual}, 2000},
		{"persistent", Options{Scenario: ScenarioPersistent, Count: 200}, 200},
		{"persistent-window", Options{Scenario: ScenarioPersistent, Count: 1000, ReceiptWindow: 16, AckMode: AckClientIndividual}, 1000},
		{"fanout", Options{Scenario: ScenarioFanout, Count: 200, Consumers: 6}, 1200},
		{"many", Options{Scenario: ScenarioQueue, Count: 1001, Producers: 2, Consumers: 3, MaxBacklog: 100}, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r, int64(tc.o.Count), tc.deliveries)
		})
	}
}

func TestAMQPAddresses(t *testing.T) {
	o := Options{Destination: "d"}
	for _, tc := range []struct {
		style AddressStyle
		topic bool
		want  string
		caps  []string
	}{
		{AddressPlain, false, "d", []string{"queue"}},
		{AddressPlain, true, "d", []string{"topic"}},
		{AddressPrefix, false, "queue://d", nil},
		{AddressRabbitMQ, true, "/topic/d", nil},
	} {
		o.Topic = tc.topic
		got, caps := NewAMQP(AMQPConfig{Addresses: tc.style}).address(&o)
		if got != tc.want || strings.Join(caps, ",") != strings.Join(tc.caps, ",") {
			t.Errorf("%s topic=%v: %q %v, want %q %v", tc.style, tc.topic, got, caps, tc.want, tc.caps)
		}
	}
}

// TestPeerBrokers runs the scenarios against real peer brokers when their
// addresses are given, e.g. SLUICE_BENCH_STOMP=127.0.0.1:62613 or
// SLUICE_BENCH_RABBITMQ=1 (RabbitMQ's STOMP 63613 and AMQP 1.0 5673 with
// guest/guest), as ../shared/peers/scripts start them.
func TestPeerBrokers(t *testing.T) {
	var drivers []Driver
	if addr := os.Getenv("SLUICE_BENCH_STOMP"); addr != "" {
		drivers = append(drivers, NewSTOMP(STOMPConfig{Addr: addr}), NewSTOMP(STOMPConfig{Addr: addr, Client: ClientLean}))
	}
	if os.Getenv("SLUICE_BENCH_RABBITMQ") != "" {
		drivers = append(drivers,
			NewSTOMP(STOMPConfig{Addr: "127.0.0.1:63613", Login: "guest", Passcode: "guest", Host: "/"}),
			NewSTOMP(STOMPConfig{Addr: "127.0.0.1:63613", Login: "guest", Passcode: "guest", Host: "/", Client: ClientLean}),
			// Pre-settled consumers: RabbitMQ 3.10's AMQP 1.0 plugin stalls
			// consumers that accept each message.
			NewAMQP(AMQPConfig{Addr: "127.0.0.1:5673", User: "guest", Password: "guest", Addresses: AddressRabbitMQ, DefaultCredit: 1000}))
	}
	if len(drivers) == 0 {
		t.Skip("no peer broker: set SLUICE_BENCH_STOMP=HOST:PORT or SLUICE_BENCH_RABBITMQ=1")
	}
	for _, d := range drivers {
		for _, o := range []Options{
			{Scenario: ScenarioQueue, Count: 2000},
			{Scenario: ScenarioPersistent, Count: 200},
			{Scenario: ScenarioFanout, Count: 100, Consumers: 10},
		} {
			t.Run(d.Name()+"/"+string(o.Scenario), func(t *testing.T) {
				r, err := Run(context.Background(), d, o)
				if err != nil {
					t.Fatal(err)
				}
				checkReport(t, r, int64(o.Count), int64(o.Count)*int64(max(1, o.Consumers)))
			})
		}
	}
}

func TestLeanClient(t *testing.T) {
	p, err := StartInProcess(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	d := NewSTOMP(STOMPConfig{Addr: p.STOMPAddr(), Client: ClientLean})
	if !strings.Contains(d.Name(), "lean") {
		t.Fatalf("name %q", d.Name())
	}
	for _, tc := range []struct {
		name       string
		o          Options
		deliveries int64
	}{
		{"queue", Options{Scenario: ScenarioQueue, Count: 2000}, 2000},
		{"persistent", Options{Scenario: ScenarioPersistent, Count: 200}, 200},
		{"persistent-window", Options{Scenario: ScenarioPersistent, Count: 500, ReceiptWindow: 8, AckMode: AckClientIndividual, Prefetch: 20}, 500},
		{"fanout", Options{Scenario: ScenarioFanout, Count: 300, Consumers: 7}, 2100},
		{"client-ack", Options{Scenario: ScenarioQueue, Count: 1000, Consumers: 2, AckMode: AckClient, AckEvery: 5, Prefetch: 30}, 1000},
		{"duration", Options{Scenario: ScenarioQueue, Duration: 200 * time.Millisecond, MaxBacklog: 300}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.deliveries
			sent := int64(tc.o.Count)
			if want < 0 {
				want, sent = r.Sent, -1
			}
			checkReport(t, r, sent, want)
		})
	}
}

func TestLeanFrameReader(t *testing.T) {
	in := "\n\r\nMESSAGE\nbench_run:r\\c1\nbench_run:second\ncontent-length:3\nother:x\n\nab\x00\x00\n" +
		"ERROR\nmessage:bad thing\n\ndetail\x00"
	c := &leanConn{r: bufio.NewReader(strings.NewReader(in))}
	var f leanFrame
	if err := c.readFrame(&f, []string{hdrRun, "message"}); err != nil {
		t.Fatal(err)
	}
	if f.command != "MESSAGE" || f.get(hdrRun) != "r:1" || f.get("other") != "" || f.body != nil {
		t.Fatalf("%+v", f)
	}
	if err := c.readFrame(&f, []string{"message"}); err != nil {
		t.Fatal(err)
	}
	if f.command != "ERROR" || f.get("message") != "bad thing" || string(f.body) != "detail" {
		t.Fatalf("%+v %q", f, f.body)
	}
	if err := c.readFrame(&f, nil); err == nil {
		t.Fatal("want EOF")
	}
}

func TestLeanAMQPClient(t *testing.T) {
	p, err := StartInProcessAt(context.Background(), t.TempDir(), "", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	d := NewAMQP(AMQPConfig{Addr: p.AMQPAddr(), Client: ClientLean})
	if !strings.Contains(d.Name(), "lean") || d.Protocol() != "amqp/lean" {
		t.Fatalf("name %q, protocol %q", d.Name(), d.Protocol())
	}
	for _, tc := range []struct {
		name       string
		o          Options
		deliveries int64
	}{
		{"queue-presettled", Options{Scenario: ScenarioQueue, Count: 2000, Prefetch: 200}, 2000},
		{"queue-accept", Options{Scenario: ScenarioQueue, Count: 2000, AckMode: AckClientIndividual, Prefetch: 30}, 2000},
		{"persistent", Options{Scenario: ScenarioPersistent, Count: 200}, 200},
		{"persistent-window", Options{Scenario: ScenarioPersistent, Count: 1000, ReceiptWindow: 16, AckMode: AckClientIndividual}, 1000},
		{"fanout", Options{Scenario: ScenarioFanout, Count: 200, Consumers: 4}, 800},
		{"many", Options{Scenario: ScenarioQueue, Count: 1001, Producers: 2, Consumers: 3, MaxBacklog: 100}, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, r, int64(tc.o.Count), tc.deliveries)
		})
	}
}
