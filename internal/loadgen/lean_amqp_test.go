package loadgen

import (
	"context"
	"testing"
)

// BenchmarkLeanAMQP runs b.N 256-byte messages through the lean AMQP 1.0
// client, one producer and one consumer, against an in-process broker
// (persistent ones through the broker's confirmer); allocs/op counts the broker's allocations too, so compare it
// between versions of the client rather than read it alone.
func BenchmarkLeanAMQP(b *testing.B) {
	p, err := StartInProcessAt(context.Background(), b.TempDir(), "", "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	d := NewAMQP(AMQPConfig{Addr: p.AMQPAddr(), Client: ClientLean})
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"presettled", Options{Scenario: ScenarioQueue, Size: 256, Prefetch: 200}},
		{"accept", Options{Scenario: ScenarioQueue, Size: 256, AckMode: AckClientIndividual, Prefetch: 200}},
		{"persistent", Options{Scenario: ScenarioPersistent, Size: 256, ReceiptWindow: 64, AckMode: AckClientIndividual, Prefetch: 200}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := tc.o
			o.Count = b.N
			b.ReportAllocs()
			if _, err := Run(context.Background(), d, o); err != nil {
				b.Fatal(err)
			}
		})
	}
}
