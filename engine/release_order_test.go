package engine_test

import (
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// A released message goes back in its place at once: the next delivery is
// it, not the message behind it, even while its record is being written.
func TestReleasedMessageKeepsItsPlace(t *testing.T) {
	h := newPersistent(t, "", engine.Config{})
	q := message.Destination{Kind: message.Queue, Name: "release.order"}
	c := h.conn(engine.ConnectionOptions{})
	s := h.session(c, engine.AutoAcknowledge)
	sendN(t, s, q, 5, nil, nil)
	cs := h.session(c, engine.IndividualAcknowledge)
	// Credit given by hand, one at a time, as an AMQP 1.0 receiver does.
	cons := consumer(t, cs, q, engine.ConsumerOptions{CreditMode: engine.CreditManual})
	_ = c.Start()
	for round := range 20 {
		cons.Flow(1)
		d := recv(t, cons)
		if body(d) != "0" {
			t.Fatalf("round %d: got %s, want the released 0 again", round, body(d))
		}
		if _, err := cs.SettleConfirm(d.Tag, engine.Released); err != nil {
			t.Fatal(err)
		}
	}
}
