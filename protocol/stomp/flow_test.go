package stomp_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp"
)

// queueInfo reads a queue's depth and counts from the engine.
func queueInfo(t *testing.T, eng *engine.Broker, name string) engine.DestinationInfo {
	t.Helper()
	in, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestSlowConsumerIsBounded: a subscriber that subscribes with ack:auto
// and never reads its socket, while a producer sends 32 MiB: the producer
// is not held by it (every SEND gets its receipt), the broker keeps at
// most the subscription's window in flight for it, and the rest waits in
// the queue, nothing lost.
func TestSlowConsumerIsBounded(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, stomp.Options{OutputBuffer: 256 << 10})
	slow := dialRaw(t, addr)
	slow.write("CONNECT\naccept-version:1.2\nheart-beat:0,0\n\n\x00")
	slow.read() // CONNECTED
	slow.write("SUBSCRIBE\nid:1\ndestination:/queue/slow\nack:auto\nreceipt:s\n\n\x00")
	slow.read() // RECEIPT: from now on it reads nothing

	const n, size = 2048, 16 << 10
	prod := dial(t, addr)
	body := bytes.Repeat([]byte("x"), size)
	for i := range n {
		if err := prod.Send("/queue/slow", "text/plain", body, gostomp.SendOpt.Receipt,
			gostomp.SendOpt.Header("persistent", "false")); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if i%256 == 0 {
			if in := queueInfo(t, eng, "slow"); in.InFlight > 64 {
				t.Fatalf("after %d sends, %d messages in flight to a consumer that reads nothing (window 64)", i, in.InFlight)
			}
		}
	}
	in := queueInfo(t, eng, "slow")
	if in.InFlight > 64 {
		t.Fatalf("%d messages in flight to a consumer that reads nothing (window 64)", in.InFlight)
	}
	if in.Ready < n/2 {
		t.Fatalf("only %d of %d messages wait in the queue: the rest went to a connection that reads nothing", in.Ready, n)
	}
	if got := in.Messages + int64(in.Dequeued); got != n {
		t.Fatalf("depth %d + dequeued %d = %d, want %d", in.Messages, in.Dequeued, got, n)
	}
}

// TestProducerHeldByMemoryBudget: while the broker's memory is at its
// limit, a STOMP producer gets no receipt and its next SEND is not taken,
// while a consumer on another connection drains the queue; once the
// memory falls below the release mark the producer resumes by itself, and
// every message arrives.
func TestProducerHeldByMemoryBudget(t *testing.T) {
	var used atomic.Int64
	addr, eng := startServer(t, engine.Config{
		MemoryLimit: 1 << 20, MemoryUsage: used.Load, MemoryCheckInterval: time.Millisecond,
	}, stomp.Options{})
	prod := dial(t, addr)
	for i := range 10 {
		if err := prod.Send("/queue/held", "text/plain", []byte(strconv.Itoa(i)), gostomp.SendOpt.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	used.Store(1 << 20)
	waitBlocked(t, eng.Flow(), true)

	sent := make(chan error, 1)
	go func() {
		sent <- prod.Send("/queue/held", "text/plain", []byte("10"), gostomp.SendOpt.Receipt)
	}()
	// The consumer, on its own connection, drains what was sent before.
	cons := dial(t, addr)
	sub, err := cons.Subscribe("/queue/held", gostomp.AckClientIndividual)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		m := next(t, sub)
		if string(m.Body) != strconv.Itoa(i) {
			t.Fatalf("message %d: %q", i, m.Body)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-sent:
		t.Fatalf("SEND answered while the memory budget is exhausted (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if in := queueInfo(t, eng, "held"); in.Messages != 0 || in.Dequeued != 10 {
		t.Fatalf("the held SEND reached the queue, or the consumer did not drain it: %+v", in)
	}

	used.Store(0)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer was not released")
	}
	if m := next(t, sub); string(m.Body) != "10" {
		t.Fatalf("got %q after the release", m.Body)
	}
}

// TestDiskAlarmHoldsProducer: the disk alarm holds producers the same way.
func TestDiskAlarmHoldsProducer(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, stomp.Options{})
	prod := dial(t, addr)
	eng.Flow().SetDiskAlarm(true, 1, 2)
	sent := make(chan error, 1)
	go func() { sent <- prod.Send("/queue/disk", "text/plain", []byte("x"), gostomp.SendOpt.Receipt) }()
	select {
	case err := <-sent:
		t.Fatalf("SEND answered while the disk alarm is on (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	eng.Flow().SetDiskAlarm(false, 3, 2)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the producer was not released")
	}
	if in := queueInfo(t, eng, "disk"); in.Messages != 1 {
		t.Fatalf("depth %d, want 1", in.Messages)
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
			t.Fatal(fmt.Sprintf("flow gate never became blocked=%v", want))
		}
	}
}
