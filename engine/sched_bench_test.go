package engine_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Scheduler benchmarks through the public API: messages sent with a
// JMSDeliveryTime in the future (SendOptions SetDeliveryTime) are held by
// the scheduler until due. Run with
//
//	go test -run '^$' -bench 'BenchmarkSchedule' -benchmem ./engine/

// BenchmarkScheduleInsert measures sending one non-persistent message that
// is due an hour later: stamping, routing and the scheduler insert. The
// retained-B/msg metric is the heap still held per scheduled message after
// a GC, message included (a 16-byte body, no properties).
func BenchmarkScheduleInsert(b *testing.B) {
	clock := newClock()
	br, err := engine.New(context.Background(), engine.Config{AutoCreate: true, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	conn, _ := br.Connect(engine.ConnectionOptions{})
	s, _ := conn.CreateSession(engine.AutoAcknowledge)
	p, err := s.CreateProducer(queueA)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte("0123456789abcdef")
	o := engine.SendOptions{
		Set:          engine.SetDeliveryMode | engine.SetDeliveryTime,
		DeliveryMode: message.NonPersistent,
		DeliveryTime: clock.Now().Add(time.Hour).UnixMilli(),
	}
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyBytes, Data: payload}}
		if err := p.Send(ctx, m, o); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if b.N >= 10000 {
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "retained-B/msg")
	}
	runtime.KeepAlive(p)
}

// BenchmarkScheduleFire measures a scheduled message becoming due and
// reaching a waiting consumer: b.N messages are scheduled over a second of
// fake time (outside the timer), the clock jumps past them all, and the
// benchmark times the scheduler popping them, the queues dispatching them
// and the consumer receiving them.
func BenchmarkScheduleFire(b *testing.B) {
	clock := newClock()
	br, err := engine.New(context.Background(), engine.Config{AutoCreate: true, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	conn, _ := br.Connect(engine.ConnectionOptions{})
	s, _ := conn.CreateSession(engine.AutoAcknowledge)
	p, err := s.CreateProducer(queueA)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := s.CreateConsumer(queueA, engine.ConsumerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	_ = conn.Start()
	ctx := context.Background()
	base := clock.Now().UnixMilli()
	payload := []byte("0123456789abcdef")
	for i := 0; i < b.N; i++ {
		m := &message.Message{Body: message.Body{Kind: message.BodyBytes, Data: payload}}
		o := engine.SendOptions{
			Set:          engine.SetDeliveryMode | engine.SetDeliveryTime,
			DeliveryMode: message.NonPersistent,
			DeliveryTime: base + 1 + int64(i*7919%1000), // spread over a second, out of order
		}
		if err := p.Send(ctx, m, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	clock.Add(2 * time.Second)
	for i := 0; i < b.N; i++ {
		if _, err := cons.Receive(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
