package engine_test

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store"
)

// A persistent message whose delivery attempt the store refuses to record
// is not delivered until the attempt is recorded. Delivered unrecorded, it
// came back after a restart — or, in a cluster, from the next leader, the
// old one's writes fenced — as a first delivery, not flagged redelivered
// (found by cmd/sluice TestClusterPartitionLeaderLosesNothingConfirmed).
// Once the store takes the mark, the message is delivered; not
// acknowledged, it comes back after a restart flagged, its count 2.
func TestDeliveryWaitsUntilItsAttemptIsRecorded(t *testing.T) {
	h, fs := newFaulty(t, "", engine.Config{})
	c := h.conn(engine.ConnectionOptions{})
	send(t, h.session(c, engine.AutoAcknowledge), errQueue, "m", engine.SendOptions{})
	fs.setRefuse(func([]store.Op) bool { return true })
	cons := consumer(t, h.session(c, engine.ClientAcknowledge), errQueue, engine.ConsumerOptions{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := cons.ReceiveTimeout(500 * time.Millisecond); err != nil || ok {
		t.Fatalf("while the store refuses the delivery mark: got %q (ok %v, err %v), want nothing", body(d), ok, err)
	}
	if fs.refusedUpdates() < 2 {
		t.Fatalf("the store refused %d updates: the mark was not tried again", fs.refusedUpdates())
	}
	fs.setRefuse(nil)
	d := recv(t, cons)
	if body(d) != "m" || d.Redelivered || d.DeliveryCount != 1 {
		t.Fatalf("once the store takes the mark: %q redelivered %v count %d, want m, a first delivery", body(d), d.Redelivered, d.DeliveryCount)
	}

	_ = c.Close()
	dir, cfg := h.dir, h.cfg
	h.close()
	h, _ = newFaulty(t, dir, cfg)
	c = h.conn(engine.ConnectionOptions{})
	cons = consumer(t, h.session(c, engine.AutoAcknowledge), errQueue, engine.ConsumerOptions{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d = recv(t, cons)
	if body(d) != "m" || !d.Redelivered || d.DeliveryCount != 2 {
		t.Fatalf("after a restart: %q redelivered %v count %d, want m redelivered, count 2", body(d), d.Redelivered, d.DeliveryCount)
	}
}
