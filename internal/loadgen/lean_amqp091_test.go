package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/clientio"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// startInProcess091 starts a Sluice broker whose AMQP listener (which
// serves 0-9-1 clients too) is on 127.0.0.1:0, and returns its address.
func startInProcess091(tb testing.TB) string {
	tb.Helper()
	p, err := StartInProcessAt(context.Background(), tb.TempDir(), "", "127.0.0.1:0", nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return p.AMQPAddr()
}

// TestLeanAMQP091Scenarios runs each scenario through the lean 0-9-1
// client against an in-process Sluice and checks that every message
// arrived once.
func TestLeanAMQP091Scenarios(t *testing.T) {
	d := NewAMQP091(AMQP091Config{Addr: startInProcess091(t), Client: ClientLean})
	if d.Protocol() != "amqp091/lean" {
		t.Errorf("protocol %q", d.Protocol())
	}
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"queue no-ack", Options{Scenario: ScenarioQueue, Count: 3000}},
		{"queue ack multiple", Options{Scenario: ScenarioQueue, Count: 2000, AckMode: AckClient, AckEvery: 10, Prefetch: 100, Producers: 2, Consumers: 2}},
		{"queue large bodies", Options{Scenario: ScenarioQueue, Count: 50, Size: 300 << 10, AckMode: AckClientIndividual, Prefetch: 10}},
		{"persistent confirms", Options{Scenario: ScenarioPersistent, Count: 1000, ReceiptWindow: 64, AckMode: AckClientIndividual, Prefetch: 100}},
		{"persistent window 1", Options{Scenario: ScenarioPersistent, Count: 200, ReceiptWindow: 1, AckMode: AckClientIndividual}},
		{"fanout", Options{Scenario: ScenarioFanout, Count: 200, Consumers: 10}},
		{"backlog", Options{Scenario: ScenarioBacklog, Count: 1000, AckMode: AckClientIndividual, Prefetch: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(tc.o.Count)
			if tc.o.Scenario == ScenarioFanout {
				want *= int64(tc.o.Consumers)
			}
			checkReport(t, r, int64(tc.o.Count), want)
		})
	}
}

// mixed091 produces with one 0-9-1 driver and consumes with another.
type mixed091 struct{ producers, consumers *AMQP091 }

func (m mixed091) Name() string     { return "mixed" }
func (m mixed091) Protocol() string { return "amqp091/mixed" }
func (m mixed091) NewProducer(ctx context.Context, o *Options, idx int) (Producer, error) {
	return m.producers.NewProducer(ctx, o, idx)
}
func (m mixed091) NewConsumer(ctx context.Context, o *Options, idx int, h Handler) (Consumer, error) {
	return m.consumers.NewConsumer(ctx, o, idx, h)
}

// TestLeanAMQP091WithAMQP091Go: what the lean client publishes amqp091-go
// consumes, benchmark headers and all, and the other way round.
func TestLeanAMQP091WithAMQP091Go(t *testing.T) {
	addr := startInProcess091(t)
	lean := NewAMQP091(AMQP091Config{Addr: addr, Client: ClientLean})
	other := NewAMQP091(AMQP091Config{Addr: addr})
	for _, tc := range []struct {
		name string
		d    mixed091
		o    Options
	}{
		{"lean to amqp091-go", mixed091{lean, other}, Options{Scenario: ScenarioPersistent, Count: 500, ReceiptWindow: 16, AckMode: AckClientIndividual, Prefetch: 50}},
		{"amqp091-go to lean", mixed091{other, lean}, Options{Scenario: ScenarioQueue, Count: 500, AckMode: AckClient, AckEvery: 5, Prefetch: 50}},
		{"amqp091-go to lean fanout", mixed091{other, lean}, Options{Scenario: ScenarioFanout, Count: 100, Consumers: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), tc.d, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(tc.o.Count)
			if tc.o.Scenario == ScenarioFanout {
				want *= int64(tc.o.Consumers)
			}
			checkReport(t, r, int64(tc.o.Count), want)
		})
	}
}

// TestLeanAMQP091Refused: the broker's channel.close comes back as an
// error with its reply code (a passive declare of a queue that does not
// exist is 404).
func TestLeanAMQP091Refused(t *testing.T) {
	d := NewAMQP091(AMQP091Config{Addr: startInProcess091(t), Client: ClientLean})
	c, err := d.leanDial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	err = c.call(&spec.QueueDeclare{Queue: "lean091-absent", Passive: true}, &spec.QueueDeclareOk{})
	var rerr *lean091RefusedError
	if !errors.As(err, &rerr) || rerr.What != "channel" || rerr.ReplyCode != spec.NotFound {
		t.Fatalf("passive declare of a missing queue: %v, want a channel.close 404", err)
	}
}

// TestLean091Header: the content header the lean client writes is one the
// project's codec decodes, and the lean reader finds the same benchmark
// headers in it, a probe and headers of other field types included.
func TestLean091Header(t *testing.T) {
	for _, m := range []Msg{
		{Run: "r-1", Producer: 3, Seq: 12345678901, Sent: 1700000000123456789},
		{Run: "r-2", Probe: true},
	} {
		b := appendLean091Header(nil, &m, 2, 1000)
		fr := spec.NewFrameReader(bytes.NewReader(b), 0)
		f, err := fr.ReadFrame()
		if err != nil || f.Type != spec.FrameHeader || f.Channel != lean091Channel {
			t.Fatalf("frame %+v, %v", f, err)
		}
		var h spec.ContentHeader
		if err := h.Decode(f.Payload); err != nil {
			t.Fatal(err)
		}
		if h.BodySize != 1000 || h.Properties.DeliveryMode != 2 || h.Properties.ContentType != lean091ContentType {
			t.Errorf("header %+v", h)
		}
		if h.Properties.Headers[hdrRun] != m.Run || h.Properties.Headers[hdrTS] != m.Sent {
			t.Errorf("headers %v", h.Properties.Headers)
		}
		var fields lean091Fields
		size, err := scanLean091Header(f.Payload, &fields)
		if err != nil || size != 1000 {
			t.Fatalf("scan: %d, %v", size, err)
		}
		var run string
		got, err := fields.msg(&run)
		if err != nil {
			t.Fatal(err)
		}
		m.Confirm = false
		if m.Probe {
			m = Msg{Run: m.Run, Probe: true}
		}
		if got != m {
			t.Errorf("scanned %+v, want %+v", got, m)
		}
	}
	// A header as another client (or the broker) may write it: other
	// properties around the table, other entries, other field types.
	h := spec.ContentHeader{ClassID: spec.ClassBasic, BodySize: 7, Properties: spec.BasicProperties{
		Flags:       spec.FlagContentType | spec.FlagContentEncoding | spec.FlagHeaders | spec.FlagPriority | spec.FlagMessageID,
		ContentType: "text/plain", ContentEncoding: "utf-8", Priority: 4, MessageID: "m-1",
		Headers: spec.Table{hdrRun: []byte("r-3"), hdrSeq: "2.9", hdrTS: "-55", "JMSXDeliveryCount": int32(2),
			"nested": spec.Table{"a": []any{int64(1), "x"}}, "f": 1.5, "t": true},
	}}
	var fields lean091Fields
	if size, err := scanLean091Header(spec.AppendContentHeader(nil, &h), &fields); err != nil || size != 7 {
		t.Fatalf("scan: %d, %v", size, err)
	}
	run := "r-3"
	got, err := fields.msg(&run)
	if want := (Msg{Run: "r-3", Producer: 2, Seq: 9, Sent: -55}); err != nil || got != want {
		t.Errorf("scanned %+v, %v; want %+v", got, err, want)
	}
	// Not a benchmark message: foreign, not an error.
	h.Properties.Headers = spec.Table{"other": "x"}
	if _, err := scanLean091Header(spec.AppendContentHeader(nil, &h), &fields); err != nil {
		t.Fatal(err)
	}
	if got, err := fields.msg(&run); err != nil || got.Producer != -1 {
		t.Errorf("foreign message: %+v, %v", got, err)
	}
	// Truncated: an error, no panic.
	full := spec.AppendContentHeader(nil, &spec.ContentHeader{ClassID: spec.ClassBasic, Properties: spec.BasicProperties{Flags: spec.FlagHeaders, Headers: spec.Table{hdrSeq: "1.2"}}})
	for n := range len(full) {
		if _, err := scanLean091Header(full[:n], &fields); err == nil {
			t.Errorf("%d of %d bytes: no error", n, len(full))
		}
	}
}

// BenchmarkLean091Publish encodes a 256-byte publish (method, content
// header with the benchmark headers, body) as the lean client's Send does;
// allocs/op is the client's own.
func BenchmarkLean091Publish(b *testing.B) {
	c := &lean091Conn{frameMax: lean091FrameMax}
	nc, drain := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, drain) }()
	c.w = clientio.New(nc, 0, nil, lean091WriteLimit)
	go c.w.Run()
	defer func() { c.w.Stop(); _ = nc.Close(); _ = drain.Close() }()
	pub := spec.BasicPublish{RoutingKey: "bench-queue"}
	body := make([]byte, 256)
	m := Msg{Run: "run-1", Producer: 1}
	b.ReportAllocs()
	for b.Loop() {
		m.Seq++
		m.Sent += 1000
		if err := c.publish(&pub, &m, 1, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLean091Deliver reads a 256-byte delivery (basic.deliver,
// content header, body) and its benchmark headers as the lean consumer
// does; allocs/op is the client's own.
func BenchmarkLean091Deliver(b *testing.B) {
	m := Msg{Run: "run-1", Producer: 1, Seq: 42, Sent: 1700000000123456789}
	frames := spec.AppendMethodFrame(nil, 1, &spec.BasicDeliver{ConsumerTag: "amq.ctag-1", DeliveryTag: 7, RoutingKey: "bench-queue"})
	frames = appendLean091Header(frames, &m, 1, 256)
	frames = spec.AppendFrame(frames, spec.FrameBody, 1, make([]byte, 256))
	r := bytes.NewReader(frames)
	fr := spec.NewFrameReader(r, lean091FrameMax)
	var d spec.BasicDeliver
	var fields lean091Fields
	var run string
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frames)
		f, err := fr.ReadFrame()
		if err != nil || !isMethod(f.Payload, spec.ClassBasic, spec.MethodBasicDeliver) {
			b.Fatal(err)
		}
		if err := d.Decode(f.Payload[4:]); err != nil {
			b.Fatal(err)
		}
		if f, err = fr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		if _, err := scanLean091Header(f.Payload, &fields); err != nil {
			b.Fatal(err)
		}
		if got, err := fields.msg(&run); err != nil || got.Seq != 42 {
			b.Fatal(got, err)
		}
		if f, err = fr.ReadFrame(); err != nil || len(f.Payload) != 256 {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeanAMQP091 runs b.N 256-byte messages through each 0-9-1
// client, one producer and one consumer, against the broker at
// SLUICE_BENCH_AMQP091 (host:port, guest/guest) or else an in-process one,
// whose allocations allocs/op then counts too.
func BenchmarkLeanAMQP091(b *testing.B) {
	addr := os.Getenv("SLUICE_BENCH_AMQP091")
	if addr == "" {
		addr = startInProcess091(b)
	}
	for _, client := range []string{ClientLean, ClientAMQP091Go} {
		d := NewAMQP091(AMQP091Config{Addr: addr, Client: client})
		for _, tc := range []struct {
			name string
			o    Options
		}{
			{"noack", Options{Scenario: ScenarioQueue, Size: 256, Prefetch: 200}},
			{"ack", Options{Scenario: ScenarioQueue, Size: 256, AckMode: AckClientIndividual, Prefetch: 200}},
			{"persistent", Options{Scenario: ScenarioPersistent, Size: 256, ReceiptWindow: 64, AckMode: AckClientIndividual, Prefetch: 200}},
		} {
			b.Run(client+"/"+tc.name, func(b *testing.B) {
				o := tc.o
				o.Count = b.N
				b.ReportAllocs()
				if _, err := Run(context.Background(), d, o); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// TestLean091Heartbeat: a connection with nothing to write sends heartbeat
// frames, every half of the negotiated interval.
func TestLean091Heartbeat(t *testing.T) {
	client, broker := net.Pipe()
	defer broker.Close()
	c := &lean091Conn{nc: client, frameMax: lean091FrameMax, heartbeat: 100 * time.Millisecond}
	c.w = clientio.New(client, c.heartbeat, spec.AppendHeartbeat, lean091WriteLimit)
	go c.w.Run()
	defer c.close()
	_ = broker.SetReadDeadline(time.Now().Add(5 * time.Second))
	fr := spec.NewFrameReader(broker, 0)
	start := time.Now()
	for i := range 2 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Type != spec.FrameHeartbeat || f.Channel != 0 || len(f.Payload) != 0 {
			t.Fatalf("frame %d: %+v, want a heartbeat", i, f)
		}
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("two heartbeats within %v: more often than every 50ms", d)
	}
}

// TestLeanAMQP091Broker runs the scenarios of TestAMQP091Broker through
// the lean client against the broker at SLUICE_BENCH_AMQP091 (host:port,
// guest/guest), such as RabbitMQ.
func TestLeanAMQP091Broker(t *testing.T) {
	addr := os.Getenv("SLUICE_BENCH_AMQP091")
	if addr == "" {
		t.Skip("no AMQP 0-9-1 broker: set SLUICE_BENCH_AMQP091=HOST:PORT")
	}
	d := NewAMQP091(AMQP091Config{Addr: addr, Client: ClientLean})
	for _, o := range []Options{
		{Scenario: ScenarioQueue, Count: 2000},
		{Scenario: ScenarioQueue, Count: 2000, AckMode: AckClient, AckEvery: 10, Prefetch: 100, Producers: 2, Consumers: 2},
		{Scenario: ScenarioPersistent, Count: 500, ReceiptWindow: 16, AckMode: AckClientIndividual, Prefetch: 50},
		{Scenario: ScenarioFanout, Count: 100, Consumers: 10},
		{Scenario: ScenarioBacklog, Count: 500, AckMode: AckClientIndividual},
	} {
		t.Run(string(o.Scenario)+"/"+string(o.AckMode), func(t *testing.T) {
			r, err := Run(context.Background(), d, o)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(o.Count)
			if o.Scenario == ScenarioFanout {
				want *= int64(o.Consumers)
			}
			checkReport(t, r, int64(o.Count), want)
		})
	}
}
