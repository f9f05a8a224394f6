package amqp_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// durableServer is an AMQP server over a broker with the journal and bbolt
// in dir; stop closes it cleanly so that another can open dir.
type durableServer struct {
	addr string
	stop func()
}

func startDurable(t *testing.T, dir string) *durableServer {
	t.Helper()
	return startDurableCfg(t, dir, engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
}

func startDurableCfg(t *testing.T, dir string, cfg engine.Config) *durableServer {
	t.Helper()
	eng, closeEng := enginetest.Durable(t, dir, cfg)
	return serveEngine(t, eng, closeEng)
}

// serveEngine serves AMQP on eng at 127.0.0.1:0; stop shuts the server
// down, then calls closeEng.
func serveEngine(t *testing.T, eng *engine.Broker, closeEng func()) *durableServer {
	t.Helper()
	srv := sluiceamqp.NewServer(eng, sluiceamqp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		closeEng()
	}
	t.Cleanup(stop)
	return &durableServer{addr: ln.Addr().String(), stop: stop}
}

// A producer keeps a window of unsettled durable transfers in flight: the
// server settles every one as accepted (once stored, or consumed), and all
// of them are there, in order, after a restart.
func TestPipelinedDurableSendsSurviveRestart(t *testing.T) {
	for _, cbs := range []bool{true, false} {
		t.Run(fmt.Sprintf("consume_before_store=%v", cbs), func(t *testing.T) {
			pipelinedDurableSends(t, engine.Config{AutoCreate: true, ConsumeBeforeStore: cbs})
		})
	}
}

func pipelinedDurableSends(t *testing.T, cfg engine.Config) {
	const n = 2000
	dir := t.TempDir()
	ds := startDurableCfg(t, dir, cfg)
	ts := &testServer{addr: ds.addr}
	c := ts.dial(t, nil)
	snd := sender(t, session(t, c), "pipelined", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	receipts := make([]amqp.SendReceipt, 0, n)
	for i := range n {
		m := text(fmt.Sprintf("m%04d", i))
		m.Header = &amqp.MessageHeader{Durable: true}
		r, err := snd.SendWithReceipt(ctx, m, nil)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		receipts = append(receipts, r)
	}
	for i, r := range receipts {
		st, err := r.Wait(ctx)
		if err != nil {
			t.Fatalf("settlement of %d: %v", i, err)
		}
		if _, ok := st.(*amqp.StateAccepted); !ok {
			t.Fatalf("settlement of %d: %T %v, want accepted", i, st, st)
		}
	}
	_ = c.Close()
	ds.stop()

	ds2 := startDurableCfg(t, dir, cfg)
	ts2 := &testServer{addr: ds2.addr}
	rcv := receiver(t, session(t, ts2.dial(t, nil)), "pipelined", &amqp.ReceiverOptions{Credit: 500})
	for i := range n {
		m := recv(t, rcv)
		if want := fmt.Sprintf("m%04d", i); m.Value != want {
			t.Fatalf("after restart message %d is %v, want %s", i, m.Value, want)
		}
		accept(t, rcv, m)
	}
	recvNone(t, rcv, 100*time.Millisecond)
}

// A client that ends its session while durable transfers wait for their
// settlement gets no disposition after the server's end: the channel is
// gone then, and a frame on it would be a protocol error.
func TestNoDispositionAfterEnd(t *testing.T) {
	ds := startDurable(t, t.TempDir())
	for round := range 20 {
		rc := rawDial(t, ds.addr)
		rc.open(t, 0)
		b := types.NewBegin()
		b.IncomingWindow, b.OutgoingWindow = 1<<20, 1<<20
		rc.write(t, 0, b, nil)
		rc.expect(t, "amqp:begin:list", 5*time.Second)
		tgt := types.NewTarget()
		tgt.Address = "ended"
		rc.write(t, 0, &types.Attach{Name: "p", Handle: 0, Role: types.RoleSender, Source: types.NewSource(), Target: tgt,
			InitialDeliveryCount: types.Some(types.SequenceNo(0))}, nil)
		rc.expect(t, "amqp:attach:list", 5*time.Second)
		rc.expect(t, "amqp:flow:list", 5*time.Second)
		m := &types.Message{Header: &types.Header{Durable: types.Some(true)}, Value: &types.AMQPValue{Value: "x"}}
		payload, err := m.AppendAMQP(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			rc.write(t, 0, transfer(0, uint32(i), nil), payload)
		}
		rc.write(t, 0, types.NewEnd(), nil)
		rc.expect(t, "amqp:end:list", 5*time.Second)
		_ = rc.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if f, err := rc.r.ReadFrame(); err == nil && f.Body != nil {
			name, _ := f.Body.Descriptor()
			t.Fatalf("round %d: %s on channel %d after the session ended", round, name, f.Channel)
		}
		_ = rc.nc.Close()
	}
}

// A durable message whose write fails is rejected with the store's error,
// whether the server settles it from the reader or from the confirmer (a
// window in flight); it is not delivered as well, and the link, the
// connection and the broker carry on once the disk is back.
func TestDurableSendWriteFailureRejected(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
	ds := serveEngine(t, eng, closeEng)
	ts := &testServer{addr: ds.addr}
	c := ts.dial(t, nil)
	snd := sender(t, session(t, c), "faulty", nil)
	durable := func(v string) *amqp.Message {
		m := text(v)
		m.Header = &amqp.MessageHeader{Durable: true}
		return m
	}
	send(t, snd, durable("before"))

	faults.FailAfter(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var receipts []amqp.SendReceipt
	for i := range 20 {
		r, err := snd.SendWithReceipt(ctx, durable(fmt.Sprint("lost-", i)), nil)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		receipts = append(receipts, r)
	}
	for i, r := range receipts {
		st, err := r.Wait(ctx)
		if err != nil {
			t.Fatalf("settlement of %d: %v", i, err)
		}
		rej, ok := st.(*amqp.StateRejected)
		if !ok || rej.Error == nil || !strings.Contains(rej.Error.Description, "injected store failure") {
			t.Fatalf("settlement of %d: %#v, want rejected with the store's error", i, st)
		}
	}

	faults.Fail(false)
	send(t, snd, durable("after"))
	rcv := receiver(t, session(t, ts.dial(t, nil)), "faulty", &amqp.ReceiverOptions{Credit: 10})
	for _, want := range []string{"before", "after"} {
		m := recv(t, rcv)
		if m.Value != want {
			t.Fatalf("got %v, want %s: a rejected message was delivered", m.Value, want)
		}
		accept(t, rcv, m)
	}
	recvNone(t, rcv, 100*time.Millisecond)
}
