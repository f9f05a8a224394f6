package netserve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// A batch's deliveries are acknowledged only when it was written; its
// budget comes back and its waiters go either way.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantAcked bool
	}{
		{"written", nil, true},
		{"write failed", errors.New("broken pipe"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			q := message.Destination{Kind: message.Queue, Name: "settle"}
			conn, _ := b.Connect(engine.ConnectionOptions{})
			sess, _ := conn.CreateSession(engine.ClientAcknowledge)
			p, _ := sess.CreateProducer(q)
			if err := p.Send(context.Background(), &message.Message{}, engine.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			c, _ := sess.CreateConsumer(q, engine.ConsumerOptions{})
			_ = conn.Start()
			d, ok, err := c.ReceiveTimeout(5 * time.Second)
			if err != nil || !ok {
				t.Fatalf("receive: ok=%v err=%v", ok, err)
			}
			budget := NewBudget(1 << 20)
			if !budget.Take(1000, nil) {
				t.Fatal("budget refused 1000 bytes")
			}
			done := make(chan struct{})
			s := Settle{Budget: budget}
			s.AckOnWrite(sess, d.Tag)
			s.Add(1000, done)
			s.Flushed(tc.err)
			select {
			case <-done:
			default:
				t.Fatal("the batch's waiter was not released")
			}
			if used := budget.Used(); used != 0 {
				t.Fatalf("budget still has %d bytes taken", used)
			}
			_ = sess.Recover(context.Background()) // what was not acknowledged comes back
			_, again, _ := c.ReceiveTimeout(200 * time.Millisecond)
			if again == tc.wantAcked {
				t.Fatalf("redelivered after Recover: %v, want %v", again, !tc.wantAcked)
			}
		})
	}
}
