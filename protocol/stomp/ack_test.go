package stomp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// fillPersistent sends n persistent messages m0000… to queue without
// receipts and DISCONNECTs with one: once it returns they are durable.
func fillPersistent(t *testing.T, addr, queue string, n int) {
	t.Helper()
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read() // CONNECTED
	var frames strings.Builder
	for i := range n {
		fmt.Fprintf(&frames, "SEND\ndestination:/queue/%s\npersistent:true\n\nm%04d\x00", queue, i)
	}
	frames.WriteString("DISCONNECT\nreceipt:filled\n\n\x00")
	r.write(frames.String())
	if f := r.read(); f.Command != frame.CmdReceipt {
		t.Fatalf("got %s %q, want the DISCONNECT receipt", f.Command, f.Body)
	}
}

// A client-individual consumer that ACKs each message without a receipt
// drains a persistent queue; nothing comes back while the broker runs, nor
// after a clean restart.
func TestIndividualAcksWithoutReceiptsDrainDurably(t *testing.T) {
	const n, prefetch = 2000, 200
	dir := t.TempDir()
	addr, stop := startDurable(t, dir)
	fillPersistent(t, addr, "drain", n)

	// go-stomp blocks its reader when its channels are smaller than the
	// messages in flight.
	c := dial(t, addr, gostomp.ConnOpt.ReadChannelCapacity(2*prefetch), gostomp.ConnOpt.WriteChannelCapacity(2*prefetch))
	sub, err := c.Subscribe("/queue/drain", gostomp.AckClientIndividual,
		gostomp.SubscribeOpt.Header("activemq.prefetchSize", fmt.Sprint(prefetch)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := next(t, sub)
		if want := fmt.Sprintf("m%04d", i); string(m.Body) != want {
			t.Fatalf("message %d is %q, want %s", i, m.Body, want)
		}
		if err := c.Ack(m); err != nil {
			t.Fatalf("ACK %d: %v", i, err)
		}
	}
	none(t, sub, 200*time.Millisecond)
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	stop()

	addr2, _ := startDurable(t, dir)
	c2 := dial(t, addr2)
	sub2, err := c2.Subscribe("/queue/drain", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	none(t, sub2, 200*time.Millisecond)
}

// An ACK with a receipt is answered once the acknowledgement is durable, in
// order with the connection's other receipts: ACKs pipelined with and
// without receipts get their RECEIPTs in frame order, and after a restart
// the acknowledged messages are gone and the one left unacknowledged comes
// back flagged redelivered.
func TestAckReceiptsAreDurableAndOrdered(t *testing.T) {
	const n = 50
	dir := t.TempDir()
	addr, stop := startDurable(t, dir)
	fillPersistent(t, addr, "receipted", n)

	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read() // CONNECTED
	r.write("SUBSCRIBE\nid:0\ndestination:/queue/receipted\nack:client-individual\nactivemq.prefetchSize:100\n\n\x00")
	acks := make([]string, 0, n)
	for i := range n {
		f := r.read()
		if f.Command != frame.CmdMessage {
			t.Fatalf("got %s %q, want MESSAGE %d", f.Command, f.Body, i)
		}
		acks = append(acks, ackHeader(f))
	}
	// Acknowledge all but the last, a receipt on every third ACK, in one
	// write so the ACKs are read while earlier ones are still being stored.
	var frames strings.Builder
	var want []string
	for i, id := range acks[:n-1] {
		receipt := ""
		if i%3 == 0 {
			receipt = fmt.Sprintf("receipt:a%d\n", i)
			want = append(want, fmt.Sprintf("a%d", i))
		}
		fmt.Fprintf(&frames, "ACK\nid:%s\n%s\n\x00", id, receipt)
	}
	r.write(frames.String())
	for i, w := range want {
		f := r.read()
		if f.Command != frame.CmdReceipt {
			t.Fatalf("frame %d: %s %q, want RECEIPT %s", i, f.Command, f.Body, w)
		}
		if got, _ := f.Get(frame.HeaderReceiptID); got != w {
			t.Fatalf("receipt %d is %s, want %s: receipts out of order", i, got, w)
		}
	}
	stop()

	addr2, _ := startDurable(t, dir)
	c := dial(t, addr2)
	sub, err := c.Subscribe("/queue/receipted", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	m := next(t, sub)
	if want := fmt.Sprintf("m%04d", n-1); string(m.Body) != want {
		t.Fatalf("after restart got %q, want only the unacknowledged %s", m.Body, want)
	}
	if m.Header.Get("redelivered") != "true" {
		t.Fatalf("the unacknowledged message came back without redelivered:true (headers %v)", m.Header)
	}
	none(t, sub, 200*time.Millisecond)
}

// An ACK with a receipt whose write fails gets an ERROR naming the receipt
// and the connection closes; the messages are not lost: after a restart
// they come back, flagged redelivered. The ACK may be alone (answered by the
// reader) or followed by more frames (answered by the confirmer).
func TestAckReceiptStoreFailure(t *testing.T) {
	cases := []struct {
		name string
		acks int // ACKs in one write, with receipts a1, a2…
	}{
		{"alone", 1},
		{"pipelined", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			eng, faults, closeEng := enginetest.DurableFaults(t, dir, engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
			addr, stop := serveEngine(t, eng, closeEng)
			fillPersistent(t, addr, "ackfail", tc.acks)

			r := dialRaw(t, addr)
			r.write("CONNECT\naccept-version:1.2\n\n\x00")
			r.read() // CONNECTED
			r.write("SUBSCRIBE\nid:0\ndestination:/queue/ackfail\nack:client-individual\n\n\x00")
			var frames strings.Builder
			for i := range tc.acks {
				m := r.read()
				if m.Command != frame.CmdMessage {
					t.Fatalf("got %s %q, want MESSAGE", m.Command, m.Body)
				}
				fmt.Fprintf(&frames, "ACK\nid:%s\nreceipt:a%d\n\n\x00", ackHeader(m), i+1)
			}
			faults.FailAfter(20 * time.Millisecond)
			r.write(frames.String())
			f := r.read()
			if f.Command != frame.CmdError {
				t.Fatalf("got %s, want an ERROR for the failed acknowledgement", f.Command)
			}
			if id, _ := f.Get(frame.HeaderReceiptID); id != "a1" {
				t.Fatalf("ERROR receipt-id %q, want a1 (the first ACK whose write failed)", id)
			}
			if msg, _ := f.Get(frame.HeaderMessage); !strings.Contains(string(f.Body)+msg, "injected store failure") {
				t.Fatalf("ERROR does not say what failed: %q %q", msg, f.Body)
			}
			r.closed()
			faults.Fail(false)
			stop()

			addr2, _ := startDurable(t, dir)
			c := dial(t, addr2)
			sub, err := c.Subscribe("/queue/ackfail", gostomp.AckAuto)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.acks {
				got := next(t, sub)
				if want := fmt.Sprintf("m%04d", i); string(got.Body) != want {
					t.Fatalf("after restart got %q, want %s", got.Body, want)
				}
				if got.Header.Get("redelivered") != "true" {
					t.Fatalf("%s, whose acknowledgement failed, came back without redelivered:true (headers %v)", got.Body, got.Header)
				}
			}
			none(t, sub, 100*time.Millisecond)
		})
	}
}

// ackHeader is a MESSAGE frame's ack header, the id a STOMP 1.2 ACK names.
func ackHeader(f *frame.Frame) string {
	v, _ := f.Get("ack")
	return v
}
