package amqp091_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// BenchmarkPublishConsume publishes b.N 256-byte messages through the
// default exchange (confirm mode, transient) and consumes them with a
// no-ack consumer on another connection.
func BenchmarkPublishConsume(b *testing.B) {
	addr, _ := startServer(b, engine.Config{}, amqp091.Options{})
	pc, cc := dial(b, addr), dial(b, addr)
	pch, cch := channel(b, pc), channel(b, cc)
	if _, err := pch.QueueDeclare("bench", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if err := pch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	confirms := pch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	ds, err := cch.Consume("bench", "", true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 256)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	go func() {
		for range b.N {
			_ = pch.PublishWithContext(context.Background(), "", "bench", false, false, amqp.Publishing{Body: body})
		}
	}()
	got, acked := 0, 0
	timeout := time.After(5 * time.Minute)
	for got < b.N || acked < b.N {
		select {
		case <-ds:
			got++
		case <-confirms:
			acked++
		case <-timeout:
			b.Fatalf("%d of %d delivered, %d confirmed", got, b.N, acked)
		}
	}
}
