package loadgen

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// orderDriver records, for each consumer it attaches, how many producers
// had already flushed (had every send confirmed).
type orderDriver struct {
	Driver
	flushed  atomic.Int64
	atAttach []int64
}

type flushCounter struct {
	Producer
	n *atomic.Int64
}

func (f flushCounter) Flush(ctx context.Context) error {
	err := f.Producer.Flush(ctx)
	f.n.Add(1)
	return err
}

func (d *orderDriver) NewProducer(ctx context.Context, o *Options, idx int) (Producer, error) {
	p, err := d.Driver.NewProducer(ctx, o, idx)
	if err != nil {
		return nil, err
	}
	return flushCounter{p, &d.flushed}, nil
}

func (d *orderDriver) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	d.atAttach = append(d.atAttach, d.flushed.Load())
	return d.Driver.NewConsumer(ctx, o, idx, h)
}

func TestBacklogScenario(t *testing.T) {
	inproc, err := StartInProcessAt(context.Background(), t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inproc.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	pid := 0
	if _, err := os.Stat("/proc/self/status"); err == nil {
		pid = os.Getpid() // the broker runs in this process
	}
	stompD := func(client string) Driver {
		return NewSTOMP(STOMPConfig{Addr: inproc.STOMPAddr(), Client: client})
	}
	amqpD := func(client string) Driver {
		return NewAMQP(AMQPConfig{Addr: inproc.AMQPAddr(), Client: client})
	}
	for _, tc := range []struct {
		name string
		d    Driver
		o    Options
	}{
		{"stomp lean client-individual", stompD(ClientLean),
			Options{Count: 1500, Producers: 2, Consumers: 2, AckMode: AckClientIndividual}},
		// A backlog deeper than the broker's default prefetch (1000),
		// drained by go-stomp with an ACK per message: its channels are
		// sized above the prefetch (channelCapacity).
		{"stomp go-stomp client-individual default prefetch", stompD(ClientGoSTOMP),
			Options{Count: 3000, AckMode: AckClientIndividual}},
		{"stomp go-stomp client cumulative", stompD(ClientGoSTOMP),
			Options{Count: 1001, Producers: 3, AckMode: AckClient, AckEvery: 10, Prefetch: 100, ReceiptWindow: 8}},
		{"amqp lean accept each", amqpD(ClientLean),
			Options{Count: 1500, Producers: 2, Consumers: 2, AckMode: AckClientIndividual}},
		{"amqp go-amqp accept each", amqpD(ClientGoAMQP),
			Options{Count: 800, AckMode: AckClientIndividual, Prefetch: 50}},
		{"amqp lean auto", amqpD(ClientLean),
			Options{Count: 500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			od := &orderDriver{Driver: tc.d}
			o := tc.o
			o.Scenario, o.BrokerPID = ScenarioBacklog, pid
			r, err := Run(context.Background(), od, o)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(o.Count)
			checkReport(t, r, n, n)
			if !r.Options.Persistent || !r.Options.Receipts {
				t.Errorf("backlog scenario not persistent with receipts: %+v", r.Options)
			}
			if tc.o.ReceiptWindow == 0 && r.Options.ReceiptWindow != defaultBacklogWindow {
				t.Errorf("receipt window %d, want %d", r.Options.ReceiptWindow, defaultBacklogWindow)
			}
			if len(od.atAttach) != r.Options.Consumers {
				t.Fatalf("%d consumers attached, want %d", len(od.atAttach), r.Options.Consumers)
			}
			for i, f := range od.atAttach {
				if f != int64(r.Options.Producers) {
					t.Errorf("consumer %d attached when %d of %d producers had their fill confirmed", i, f, r.Options.Producers)
				}
			}
			b := r.Backlog
			if b == nil {
				t.Fatal("no backlog report")
			}
			if !(b.FillSeconds > 0 && b.DrainSeconds > 0 && b.FillRate > 0 && b.DrainRate > 0) {
				t.Errorf("phases: %+v", b)
			}
			if b.FillSeconds+b.DrainSeconds > r.Seconds+1e-3 {
				t.Errorf("fill %vs + drain %vs exceed the run's %vs", b.FillSeconds, b.DrainSeconds, r.Seconds)
			}
			if pid > 0 && (b.RSSBeforeFill <= 0 || b.RSSAfterFill <= 0 || b.RSSAfterDrain <= 0) {
				t.Errorf("broker RSS not read: %+v", b)
			}
			if pid > 0 && (b.FillBrokerCPU < 0 || b.DrainBrokerCPU < 0 || b.FillBrokerCPU+b.DrainBrokerCPU > r.BrokerCPU+1e-9) {
				t.Errorf("broker CPU: fill %v drain %v run %v", b.FillBrokerCPU, b.DrainBrokerCPU, r.BrokerCPU)
			}
		})
	}
}

func TestBacklogResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"duration", Options{Scenario: ScenarioBacklog, Duration: 1}, "message count"},
		{"count and duration", Options{Scenario: ScenarioBacklog, Count: 10, Duration: 1}, "message count"},
		{"topic", Options{Scenario: ScenarioBacklog, Count: 10, Topic: true}, "topic"},
		{"max backlog", Options{Scenario: ScenarioBacklog, Count: 10, MaxBacklog: 5}, "max-backlog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	o := Options{Scenario: ScenarioBacklog, Count: 10, ReceiptWindow: 7}
	if err := o.Resolve(); err != nil {
		t.Fatal(err)
	}
	if !o.Persistent || !o.Receipts || o.ReceiptWindow != 7 || o.Topic {
		t.Fatalf("%+v", o)
	}
}

func TestChannelCapacity(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want int
	}{
		{"auto", Options{AckMode: AckAuto, Prefetch: 5000}, defaultChannelCapacity},
		{"small prefetch", Options{AckMode: AckClientIndividual, Prefetch: 10}, defaultChannelCapacity},
		{"broker default", Options{AckMode: AckClientIndividual}, brokerDefaultPrefetch + 64},
		{"large prefetch", Options{AckMode: AckClient, Prefetch: 4000}, 4064},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := channelCapacity(&tc.o); got != tc.want {
				t.Errorf("capacity %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
		ok       bool
	}{
		{"status", "Name:\tsluice\nVmPeak:\t  999 kB\nVmRSS:\t   12345 kB\nRssAnon:\t 1 kB\n", 12345 * 1024, true},
		{"none", "Name:\tkworker\nState:\tI (idle)\n", 0, false},
		{"bad unit", "VmRSS:\t12 MB\n", 0, false},
		{"bad number", "VmRSS:\tx kB\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVmRSS(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("got %d, %v; want %d (ok %v)", got, err, tc.want, tc.ok)
			}
		})
	}
}
