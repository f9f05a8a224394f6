package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
)

// TestAcknowledgeConfirm: an acknowledgement that does not wait for the
// store takes effect at once (a recover or a closed session does not bring
// the message back), acknowledges cumulatively in CLIENT_ACKNOWLEDGE, and
// its confirmation says when it is durable: after a restart the
// acknowledged messages are gone and the others are there.
func TestAcknowledgeConfirm(t *testing.T) {
	q := message.Destination{Kind: message.Queue, Name: "ack.confirm"}
	tests := []struct {
		name     string
		mode     engine.AckMode
		ackIndex int // the delivery (of 4) acknowledged
		left     int // messages left after the restart
	}{
		{"individual", engine.IndividualAcknowledge, 1, 3},
		{"client, cumulative", engine.ClientAcknowledge, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			b, closeB := enginetest.Durable(t, dir, engine.Config{AutoCreate: true})
			conn, _ := b.Connect(engine.ConnectionOptions{})
			ps, _ := conn.CreateSession(engine.AutoAcknowledge)
			p, _ := ps.CreateProducer(q)
			for i := range 4 {
				m := &message.Message{Body: message.TextBody(fmt.Sprint(i)), DeliveryMode: message.Persistent}
				if err := p.Send(ctx, m, engine.SendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := conn.CreateSession(tt.mode)
			c, _ := s.CreateConsumer(q, engine.ConsumerOptions{})
			_ = conn.Start()
			var tags []uint64
			for range 4 {
				d, ok, err := c.ReceiveTimeout(5 * time.Second)
				if err != nil || !ok {
					t.Fatalf("receive: %v %v", ok, err)
				}
				tags = append(tags, d.Tag)
			}
			conf, err := s.AcknowledgeConfirm(tags[tt.ackIndex])
			if err != nil {
				t.Fatal(err)
			}
			// In effect before it is durable: recover gives back only the
			// others.
			if err := s.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			for range tt.left {
				d, ok, err := c.ReceiveTimeout(5 * time.Second)
				if err != nil || !ok {
					t.Fatalf("redelivery after recover: %v %v", ok, err)
				}
				var i int
				if _, err := fmt.Sscan(string(d.Msg.Body.Data), &i); err != nil {
					t.Fatal(err)
				}
				if i == tt.ackIndex || (tt.mode == engine.ClientAcknowledge && i < tt.ackIndex) {
					t.Fatalf("the acknowledged message %d came back on recover", i)
				}
			}
			if d, ok, _ := c.ReceiveTimeout(50 * time.Millisecond); ok {
				t.Fatalf("message %s delivered after the acknowledged ones were recovered", d.Msg.Body.Data)
			}
			if err := conf.Wait(ctx); err != nil {
				t.Fatalf("confirmation: %v", err)
			}
			_ = conn.Close()
			closeB()

			b2, _ := enginetest.Durable(t, dir, engine.Config{AutoCreate: true})
			if in, err := b2.DestinationInfo(q); err != nil || in.Messages != int64(tt.left) {
				t.Fatalf("after restart: %+v %v, want %d messages", in, err, tt.left)
			}
		})
	}
}
