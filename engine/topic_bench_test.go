package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// BenchmarkTargetedPublish publishes messages that name 2 of 10,000
// subscribers whose selectors have the indexed form "name IS NOT NULL" of
// WebLogic JMS "Managing Your Applications", "Indexing Topic Subscriber
// Message Selectors To Optimize Performance", against the same subscribers
// with selectors that only resemble it (and so are evaluated one by one), and
// against a mix.
func BenchmarkTargetedPublish(b *testing.B) {
	const subscribers = 10000
	cases := []struct {
		name     string
		selector func(i int) string
	}{
		{"indexed", func(i int) string { return fmt.Sprintf("user%d IS NOT NULL", i) }},
		{"unindexed", func(i int) string { return fmt.Sprintf("user%d IS NOT NULL AND TRUE", i) }},
		{"mixed", func(i int) string {
			if i%2 == 0 {
				return fmt.Sprintf("user%d IS NOT NULL", i)
			}
			return fmt.Sprintf("user%d IS NOT NULL AND TRUE", i)
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			br, _ := openBench(b, false)
			conn, _ := br.Connect(engine.ConnectionOptions{})
			defer conn.Close()
			s, _ := conn.CreateSession(engine.AutoAcknowledge)
			cons := make([]*engine.Consumer, subscribers)
			for i := range cons {
				c, err := s.CreateConsumer(topicT, engine.ConsumerOptions{Selector: tc.selector(i)})
				if err != nil {
					b.Fatal(err)
				}
				cons[i] = c
			}
			p, _ := s.CreateProducer(topicT)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte("hi")}}
				m.Props.SetUnchecked("user17", message.BoolValue(true))
				m.Props.SetUnchecked("user4242", message.BoolValue(true))
				if err := p.Send(ctx, m, engine.SendOptions{Set: engine.SetDeliveryMode, DeliveryMode: message.NonPersistent}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// The two named subscribers, and only they, got every message.
			conn.Start()
			for _, i := range []int{17, 4242} {
				if _, ok, _ := cons[i].ReceiveTimeout(5e9); !ok {
					b.Fatalf("subscriber %d got nothing", i)
				}
			}
			if _, ok, _ := cons[5].ReceiveTimeout(1e6); ok {
				b.Fatal("an unnamed subscriber got a message")
			}
		})
	}
}
