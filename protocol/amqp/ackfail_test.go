package amqp_test

import (
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// TestFailedAcknowledgementIsNotAccepted: a client that accepts a delivery
// unsettled and waits for the server's settlement is not told "accepted"
// when the store refuses the acknowledgement: the server settles it as
// released, the message is delivered again on the same link once the disk
// is back, and that acceptance is the one that counts.
func TestFailedAcknowledgementIsNotAccepted(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true})
	ds := serveEngine(t, eng, closeEng)
	ts := &testServer{addr: ds.addr, eng: eng}
	m := text("once")
	m.Header = &amqp.MessageHeader{Durable: true}
	send(t, sender(t, session(t, ts.dial(t, nil)), "ack.fail", nil), m)

	rc := rawDial(t, ds.addr)
	rc.open(t, 0)
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1<<20, 1<<20
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)
	src := types.NewSource()
	src.Address = "ack.fail"
	rc.write(t, 0, &types.Attach{Name: "r", Handle: 1, Role: types.RoleReceiver,
		RcvSettleMode: types.ReceiverSettleModeSecond, Source: src, Target: types.NewTarget()}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	credit := func(deliveryCount uint32) { rc.flow(t, 1, deliveryCount, deliveryCount, 1) }
	receive := func() types.DeliveryNumber {
		t.Helper()
		tf := rc.expect(t, "amqp:transfer:list", 5*time.Second)
		var msg types.Message
		if err := msg.Decode(tf.Payload); err != nil {
			t.Fatal(err)
		}
		if msg.Value == nil || msg.Value.Value != "once" {
			t.Fatalf("received %#v, want the message sent", msg.Value)
		}
		id, _ := tf.Body.(*types.Transfer).DeliveryID.Get()
		return id
	}
	accept := func(id types.DeliveryNumber) types.DeliveryState {
		t.Helper()
		rc.write(t, 0, &types.Disposition{Role: types.RoleReceiver, First: id, Settled: false, State: &types.Accepted{}}, nil)
		f := rc.expect(t, "amqp:disposition:list", 5*time.Second)
		if d := f.Body.(*types.Disposition); !d.Settled || d.First != id {
			t.Fatalf("server disposition %+v, want delivery %d settled", d, id)
		}
		return dispositionState(t, f)
	}

	credit(0)
	first := receive()
	faults.Fail(true)
	st := accept(first)
	if _, ok := st.(*types.Released); !ok {
		t.Fatalf("the store refused the acknowledgement, yet the server settled the delivery as %#v; want released", st)
	}
	if n := queueCount(t, ts, "ack.fail"); n != 1 {
		t.Fatalf("queue holds %d messages after the failed acknowledgement, want 1", n)
	}

	faults.Fail(false)
	credit(1)
	again := receive()
	if st := accept(again); st == nil {
		t.Fatal("no outcome")
	} else if _, ok := st.(*types.Accepted); !ok {
		t.Fatalf("second acceptance settled as %#v, want accepted", st)
	}
	if n := queueCount(t, ts, "ack.fail"); n != 0 {
		t.Fatalf("queue holds %d messages after the acknowledgement, want 0", n)
	}
}
