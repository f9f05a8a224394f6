package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
)

// TestAcknowledgeRefusedByTheStore: an acknowledgement the store refuses
// returns the store's error and leaves the delivery unacknowledged, so the
// application can acknowledge it again or recover it; it is neither lost
// until a restart nor delivered twice after one.
func TestAcknowledgeRefusedByTheStore(t *testing.T) {
	q := message.Destination{Kind: message.Queue, Name: "ack.refused"}
	tests := []struct {
		name string
		// after runs once the disk is back, with the refused tag.
		after func(t *testing.T, s *engine.Session, c *engine.Consumer, tag uint64)
	}{
		{"acknowledged again", func(t *testing.T, s *engine.Session, _ *engine.Consumer, tag uint64) {
			if err := s.Acknowledge(context.Background(), tag); err != nil {
				t.Fatalf("second acknowledgement: %v", err)
			}
		}},
		{"recovered and acknowledged", func(t *testing.T, s *engine.Session, c *engine.Consumer, _ uint64) {
			if err := s.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			d, ok, err := c.ReceiveTimeout(5 * time.Second)
			if err != nil || !ok {
				t.Fatalf("redelivery after recover: %v %v", ok, err)
			}
			if !d.Redelivered || string(d.Msg.Body.Data) != "m" {
				t.Fatalf("redelivery %+v", d)
			}
			if err := s.Acknowledge(context.Background(), d.Tag); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			b, faults, closeB := enginetest.DurableFaults(t, dir, engine.Config{AutoCreate: true})
			conn, err := b.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := conn.CreateSession(engine.ClientAcknowledge)
			p, _ := s.CreateProducer(q)
			if err := p.Send(context.Background(), &message.Message{Body: message.TextBody("m"), DeliveryMode: message.Persistent}, engine.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			c, _ := s.CreateConsumer(q, engine.ConsumerOptions{})
			_ = conn.Start()
			d, ok, err := c.ReceiveTimeout(5 * time.Second)
			if err != nil || !ok {
				t.Fatalf("receive: %v %v", ok, err)
			}

			faults.Fail(true)
			if err := s.Acknowledge(context.Background(), d.Tag); !errors.Is(err, enginetest.ErrInjected) {
				t.Fatalf("acknowledgement with the store refusing writes: %v, want the store's error", err)
			}
			faults.Fail(false)
			tt.after(t, s, c, d.Tag)
			if _, ok, _ := c.ReceiveTimeout(50 * time.Millisecond); ok {
				t.Fatal("a message arrived after the acknowledgement")
			}
			_ = conn.Close()
			closeB()

			b2, closeB2 := enginetest.Durable(t, dir, engine.Config{AutoCreate: true})
			defer closeB2()
			if in, err := b2.DestinationInfo(q); err != nil || in.Messages != 0 {
				t.Fatalf("after restart: %+v %v, want an empty queue", in, err)
			}
		})
	}
}
