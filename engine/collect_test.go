package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// openSmallWindow opens a broker on a journaled bbolt store in dir whose
// queues keep at most 10 ready messages in memory.
func openSmallWindow(t *testing.T, dir string) (*Broker, func()) {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), bs, journal.Options{Validate: boltstore.Validate})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), Config{Store: js, AutoCreate: true, WindowMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	return b, func() { _ = b.Close(); _ = js.Close() }
}

// A topic's messages paged out for two durable subscriptions cost no
// memory per message: their record stays while either subscription holds
// them, across a restart, and goes (by the collector) once both have them
// acknowledged, or once the last holder is deleted.
func TestCollectorDeletesSharedPagedMessages(t *testing.T) {
	for _, last := range []string{"acknowledges", "unsubscribes"} {
		t.Run(last, func(t *testing.T) {
			dir := t.TempDir()
			b, closeBroker := openSmallWindow(t, dir)
			defer func() { closeBroker() }()
			topic := message.Destination{Kind: message.Topic, Name: "fanout"}
			subscribe := func(name string) (*Connection, *Consumer) {
				conn, err := b.Connect(ConnectionOptions{ClientID: "c-" + name})
				if err != nil {
					t.Fatal(err)
				}
				s, _ := conn.CreateSession(AutoAcknowledge)
				c, err := s.CreateConsumer(topic, ConsumerOptions{SubscriptionName: name, Durable: true})
				if err != nil {
					t.Fatal(err)
				}
				return conn, c
			}
			for _, name := range []string{"a", "b"} {
				conn, _ := subscribe(name)
				_ = conn.Close()
			}
			const n = 200
			pconn, _ := b.Connect(ConnectionOptions{})
			ps, _ := pconn.CreateSession(AutoAcknowledge)
			p, _ := ps.CreateProducer(topic)
			for i := 0; i < n; i++ {
				if err := p.Send(context.Background(), &message.Message{Body: message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(i))}}, SendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			_ = pconn.Close()
			for _, s := range b.subs {
				s.q.mu.Lock()
				paged := s.q.pg.n
				s.q.mu.Unlock()
				if paged < n-10 {
					t.Fatalf("subscription %s pages %d of %d messages, want all but its window", s.name, paged, n)
				}
			}
			drain := func(name string) {
				conn, c := subscribe(name)
				_ = conn.Start()
				for i := 0; i < n; i++ {
					d, ok, err := c.ReceiveTimeout(10 * time.Second)
					if err != nil || !ok {
						t.Fatalf("subscription %s message %d: ok=%v err=%v", name, i, ok, err)
					}
					if string(d.Msg.Body.Data) != fmt.Sprint(i) {
						t.Fatalf("subscription %s got %s, want %d", name, d.Msg.Body.Data, i)
					}
				}
				_ = conn.Close()
			}
			drain("a")
			// Let the collector run: b still holds every message.
			b.coll.poke()
			time.Sleep(300 * time.Millisecond)
			if got := storeKeys(t, b, records.Messages); got != n {
				t.Fatalf("%d message records after a acknowledged, want %d (b holds them)", got, n)
			}
			closeBroker()
			b, closeBroker = openSmallWindow(t, dir)
			if last == "acknowledges" {
				drain("b")
			} else {
				conn, _ := b.Connect(ConnectionOptions{ClientID: "c-b"})
				s, _ := conn.CreateSession(AutoAcknowledge)
				if err := s.Unsubscribe(context.Background(), "b"); err != nil {
					t.Fatal(err)
				}
				_ = conn.Close()
			}
			for i := 0; storeKeys(t, b, records.Messages)+storeKeys(t, b, records.Collect) != 0; i++ {
				if i == 400 {
					t.Fatalf("%d message records and %d candidates left once no subscription holds them",
						storeKeys(t, b, records.Messages), storeKeys(t, b, records.Collect))
				}
				b.coll.poke()
				time.Sleep(25 * time.Millisecond)
			}
		})
	}
}
