package loadgen

import (
	"context"
	"os"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// TestAMQP091Broker runs the standard scenarios through the AMQP 0-9-1
// driver against the broker at SLUICE_BENCH_AMQP091 (host:port, guest/guest;
// RabbitMQ as ../shared/peers/scripts start it listens on 127.0.0.1:5673).
func TestAMQP091Broker(t *testing.T) {
	addr := os.Getenv("SLUICE_BENCH_AMQP091")
	if addr == "" {
		t.Skip("no AMQP 0-9-1 broker: set SLUICE_BENCH_AMQP091=HOST:PORT")
	}
	d := NewAMQP091(AMQP091Config{Addr: addr})
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
			want := int64(o.Count) // a queue's consumers share the messages
			if o.Scenario == ScenarioFanout {
				want *= int64(o.Consumers) // every subscriber gets each one
			}
			checkReport(t, r, int64(o.Count), want)
		})
	}
}

// TestAMQP091Headers: the benchmark headers come back whatever field type
// the broker or a foreign producer used for them.
func TestAMQP091Headers(t *testing.T) {
	tab := amqp091.Table{hdrRun: "r1", hdrSeq: []byte("3.7"), hdrTS: int64(12345), "n32": int32(-4)}
	for name, want := range map[string]string{hdrRun: "r1", hdrSeq: "3.7", hdrTS: "12345", "n32": "-4", "absent": ""} {
		if got := amqp091Header(tab, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	m, err := parseMsg(func(name string) string { return amqp091Header(tab, name) })
	if err != nil || m.Run != "r1" || m.Producer != 3 || m.Seq != 7 || m.Sent != 12345 {
		t.Fatalf("parsed %+v, %v", m, err)
	}
}
