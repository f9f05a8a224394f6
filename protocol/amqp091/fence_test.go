package amqp091_test

import (
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// A confirmed publish whose write has an unknown outcome (the store lost
// its leadership) is not nacked, which would invite a second copy: the
// connection closes with 541 INTERNAL_ERROR saying the outcome is unknown,
// and the publish stays unconfirmed.
func TestConfirmOutcomeUnknownClosesConnection(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true})
	addr := serve(t, eng, closeEng, amqp091.Options{})
	conn := dial(t, addr)
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch := channel(t, conn)
	if _, err := ch.QueueDeclare("unsure", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 4))
	publish(t, ch, "", "unsure", amqp.Publishing{Body: []byte("kept"), DeliveryMode: amqp.Persistent})
	select {
	case c := <-confirms:
		if !c.Ack {
			t.Fatalf("first publish: %+v, want ack", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no confirmation of the first publish")
	}
	faults.Unsure(true)
	publish(t, ch, "", "unsure", amqp.Publishing{Body: []byte("maybe"), DeliveryMode: amqp.Persistent})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-closed:
			if e == nil || e.Code != amqp.InternalError || !strings.Contains(e.Reason, "outcome unknown") ||
				!strings.Contains(e.Reason, "may have been stored") {
				t.Fatalf("connection closed with %+v, want 541 saying the outcome is unknown", e)
			}
			return
		case c, ok := <-confirms:
			if ok {
				t.Fatalf("the publish whose outcome is unknown was answered %+v", c)
			}
			confirms = nil // closed by the library as the connection closes
		case <-deadline:
			t.Fatal("the connection was not closed")
		}
	}
}
