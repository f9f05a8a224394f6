package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// BenchmarkQueueNonPersistent measures send→receive of 1 KiB non-persistent
// messages through one queue, one producer goroutine and one consumer.
func BenchmarkQueueNonPersistent(b *testing.B) {
	br, _ := openBench(b, false)
	benchSendReceive(b, br, message.NonPersistent, 1)
}

// BenchmarkQueuePersistent64 measures send→receive of 1 KiB persistent
// messages with 64 concurrent senders, each send confirmed only once it is
// fsynced, and one auto-acknowledging consumer.
func BenchmarkQueuePersistent64(b *testing.B) {
	br, st := openBench(b, true)
	before := st.Stats()
	benchSendReceive(b, br, message.Persistent, 64)
	b.StopTimer()
	after := st.Stats()
	commits := float64(after.Commits - before.Commits)
	if commits > 0 {
		b.ReportMetric(float64(after.Updates-before.Updates)/commits, "updates/commit")
		b.ReportMetric(float64(after.Ops-before.Ops)/commits, "ops/commit")
	}
}

func openBench(b *testing.B, persistent bool) (*engine.Broker, *journal.Store) {
	cfg := engine.Config{AutoCreate: true}
	var st *journal.Store
	if persistent {
		st, _ = openDurable(b, b.TempDir())
		b.Cleanup(func() { _ = st.Close() })
		cfg.Store = st
	}
	br, err := engine.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	return br, st
}

func benchSendReceive(b *testing.B, br *engine.Broker, mode message.DeliveryMode, senders int) {
	ctx := context.Background()
	conn, err := br.Connect(engine.ConnectionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	cs, _ := conn.CreateSession(engine.AutoAcknowledge)
	cons, err := cs.CreateConsumer(queueA, engine.ConsumerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	_ = conn.Start()
	payload := make([]byte, 1024)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / senders
	extra := b.N % senders
	for g := 0; g < senders; g++ {
		n := per
		if g < extra {
			n++
		}
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			s, _ := conn.CreateSession(engine.AutoAcknowledge)
			p, _ := s.CreateProducer(queueA)
			for i := 0; i < n; i++ {
				m := &message.Message{Body: message.Body{Kind: message.BodyBytes, Data: payload}}
				if err := p.Send(ctx, m, engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: mode}); err != nil {
					b.Error(err)
					return
				}
			}
		}(n)
	}
	for i := 0; i < b.N; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}
