package amqp_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

func queueInfo(t *testing.T, ts *testServer, name string) engine.DestinationInfo {
	t.Helper()
	in, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// smallBuffers is a listener whose connections have a small, fixed socket
// send buffer, so that what a client does not read stays in the broker,
// where the test can see it, not in the kernel.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return nc, err
}

// startSmallBuffers is startServer on a smallBuffers listener.
func startSmallBuffers(t *testing.T, opts sluiceamqp.Options) *testServer {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluiceamqp.NewServer(eng, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(smallBuffers{ln}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})
	return &testServer{eng: eng, srv: srv, addr: ln.Addr().String()}
}

// TestSlowConsumerIsBounded: a client attaches a receiving link, gives it
// a million credit and never reads its socket, while a producer sends
// 32 MiB. The producer is not held by it, the broker keeps at most its
// link window (and the output buffer's few transfers) in flight for that
// link, and the rest waits in the queue. Pre-settled and unsettled links
// alike.
func TestSlowConsumerIsBounded(t *testing.T) {
	for _, mode := range []struct {
		name string
		snd  types.SenderSettleMode
	}{{"presettled", types.SenderSettleModeSettled}, {"unsettled", types.SenderSettleModeUnsettled}} {
		t.Run(mode.name, func(t *testing.T) {
			const window = 100
			ts := startSmallBuffers(t, sluiceamqp.Options{LinkWindow: window, OutputBuffer: 256 << 10})
			q := "slow." + mode.name
			rc := rawDial(t, ts.addr)
			_ = rc.nc.(*net.TCPConn).SetReadBuffer(16 << 10)
			rc.open(t, 0)
			b := types.NewBegin()
			b.IncomingWindow, b.OutgoingWindow = 1<<30, 1<<20
			rc.write(t, 0, b, nil)
			rc.expect(t, "amqp:begin:list", 5*time.Second)
			src := types.NewSource()
			src.Address = q
			rc.write(t, 0, &types.Attach{Name: "slow", Handle: 1, Role: types.RoleReceiver,
				SndSettleMode: mode.snd, Source: src, Target: types.NewTarget()}, nil)
			rc.expect(t, "amqp:attach:list", 5*time.Second)
			rc.flow(t, 1, 0, 0, 1_000_000) // and from now on it reads nothing

			const n, size = 2048, 16 << 10
			snd := sender(t, session(t, ts.dial(t, nil)), q, nil)
			body := bytes.Repeat([]byte("x"), size)
			for i := range n {
				send(t, snd, &amqp.Message{Data: [][]byte{body}})
				if i%256 == 0 {
					if in := queueInfo(t, ts, q); in.InFlight > window+64 {
						t.Fatalf("after %d sends, %d messages in flight to a link that reads nothing (window %d)", i, in.InFlight, window)
					}
				}
			}
			in := queueInfo(t, ts, q)
			if in.InFlight > window+64 {
				t.Fatalf("%d messages in flight to a link that reads nothing (window %d)", in.InFlight, window)
			}
			if in.Ready < n/2 {
				t.Fatalf("only %d of %d messages wait in the queue", in.Ready, n)
			}
			if got := in.Messages + int64(in.Dequeued); got != n {
				t.Fatalf("depth %d + dequeued %d = %d, want %d", in.Messages, in.Dequeued, got, n)
			}
		})
	}
}

// TestProducerHeldByMemoryBudget: while the broker's memory is at its
// limit, an AMQP producer gets no more link credit: what it had is used,
// then its next send waits, while a consumer on another connection drains
// the queue. Once the memory falls below the release mark the credit
// comes back by itself and every message arrives.
func TestProducerHeldByMemoryBudget(t *testing.T) {
	var used atomic.Int64
	ts := startServer(t, sluiceamqp.Options{LinkCredit: 10}, engine.Config{
		MemoryLimit: 1 << 20, MemoryUsage: used.Load, MemoryCheckInterval: time.Millisecond,
	})
	snd := sender(t, session(t, ts.dial(t, nil)), "held", nil)
	used.Store(1 << 20)
	waitBlocked(t, ts.eng.Flow(), true)
	// The credit granted before (10) is used; the top-up at half is
	// withheld.
	for i := range 10 {
		send(t, snd, text(fmt.Sprint(i)))
	}
	sent := make(chan error, 1)
	go func() { sent <- snd.Send(context.Background(), text("10"), nil) }()

	r := receiver(t, session(t, ts.dial(t, nil)), "held", &amqp.ReceiverOptions{Credit: 5})
	for i := range 10 {
		m := recv(t, r)
		if m.Value != fmt.Sprint(i) {
			t.Fatalf("message %d: %v", i, m.Value)
		}
		accept(t, r, m)
	}
	select {
	case err := <-sent:
		t.Fatalf("a send beyond the credit completed while the memory budget is exhausted (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if in := queueInfo(t, ts, "held"); in.Messages != 0 || in.Dequeued != 10 {
		t.Fatalf("the held send reached the queue, or the consumer did not drain it: %+v", in)
	}

	used.Store(0)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer got no credit after the release")
	}
	if m := recv(t, r); m.Value != "10" {
		t.Fatalf("got %v after the release", m.Value)
	}
	// A link attached while producers are held gets its credit on release.
	used.Store(1 << 20)
	waitBlocked(t, ts.eng.Flow(), true)
	late := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := session(t, ts.dial(t, nil)).NewSender(ctx, "held", nil)
		if err == nil {
			err = s.Send(ctx, text("late"), nil)
		}
		late <- err
	}()
	select {
	case err := <-late:
		t.Fatalf("a link attached while held sent (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	used.Store(0)
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	if m := recv(t, r); m.Value != "late" {
		t.Fatalf("got %v", m.Value)
	}
}

// waitBlocked waits (boundedly) until the gate's blocked state is want.
func waitBlocked(t *testing.T, f *engine.Flow, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ch := f.Changed()
		if blocked, _ := f.Blocked(); blocked == want {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("flow gate never became blocked=%v", want)
		}
	}
}
