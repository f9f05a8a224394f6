package amqp_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// A consumer in rcv-settle-mode second that accepts a burst of persistent
// deliveries, unsettled, gets each settled accepted by the server, in the
// order it sent them, and the queue is then empty.
func TestUnsettledAcceptsBurst(t *testing.T) {
	const n = 50
	eng, closeEng := enginetest.Durable(t, t.TempDir(), engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
	ds := serveEngine(t, eng, closeEng)
	ts := &testServer{addr: ds.addr, eng: eng}
	snd := sender(t, session(t, ts.dial(t, nil)), "accept.burst", nil)
	for i := range n {
		m := text(fmt.Sprintf("m%d", i))
		m.Header = &amqp.MessageHeader{Durable: true}
		send(t, snd, m)
	}

	rc := rawDial(t, ds.addr)
	rc.open(t, 0)
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1<<20, 1<<20
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)
	src := types.NewSource()
	src.Address = "accept.burst"
	rc.write(t, 0, &types.Attach{Name: "r", Handle: 1, Role: types.RoleReceiver,
		RcvSettleMode: types.ReceiverSettleModeSecond, Source: src, Target: types.NewTarget()}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.flow(t, 1, 0, 0, n)
	ids := make([]types.DeliveryNumber, 0, n)
	for range n {
		tf := rc.expect(t, "amqp:transfer:list", 5*time.Second)
		id, _ := tf.Body.(*types.Transfer).DeliveryID.Get()
		ids = append(ids, id)
	}
	for _, id := range ids {
		rc.write(t, 0, &types.Disposition{Role: types.RoleReceiver, First: id, Settled: false, State: &types.Accepted{}}, nil)
	}
	for i, id := range ids {
		f := rc.expect(t, "amqp:disposition:list", 5*time.Second)
		d := f.Body.(*types.Disposition)
		if !d.Settled || d.First != id || d.Role != types.RoleSender {
			t.Fatalf("server disposition %d: %+v, want delivery %d settled by the sender, in order", i, d, id)
		}
		if _, ok := dispositionState(t, f).(*types.Accepted); !ok {
			t.Fatalf("delivery %d settled as %#v, want accepted", id, dispositionState(t, f))
		}
	}
	if got := queueCount(t, ts, "accept.burst"); got != 0 {
		t.Fatalf("queue holds %d messages after every acceptance was settled, want 0", got)
	}
}
