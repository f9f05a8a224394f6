package stomp_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// startDurable runs a STOMP server over a broker with the durable store in
// dir; stop ends both, so that another can open dir.
func startDurable(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	eng, closeEng := enginetest.Durable(t, dir, engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
	return serveEngine(t, eng, closeEng)
}

// serveEngine serves STOMP on eng at 127.0.0.1:0; stop shuts the server
// down, then calls closeEng.
func serveEngine(t *testing.T, eng *engine.Broker, closeEng func()) (addr string, stop func()) {
	t.Helper()
	srv := stomp.NewServer(eng, stomp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		closeEng()
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// A client that pipelines persistent SENDs (with receipts on some, and a
// SUBSCRIBE with a receipt among them) gets its receipts in the order of
// its frames; one that sends without receipts and then DISCONNECTs with
// one finds every message there after a restart.
func TestPipelinedPersistentSends(t *testing.T) {
	const n = 500
	dir := t.TempDir()
	addr, stop := startDurable(t, dir)
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read() // CONNECTED
	var frames strings.Builder
	var want []string
	for i := range n {
		receipt := ""
		if i%3 == 0 {
			receipt = fmt.Sprintf("receipt:s%d\n", i)
			want = append(want, fmt.Sprintf("s%d", i))
		}
		fmt.Fprintf(&frames, "SEND\ndestination:/queue/piped\npersistent:true\n%s\nm%03d\x00", receipt, i)
		if i == n/2 {
			frames.WriteString("SUBSCRIBE\nid:0\ndestination:/queue/elsewhere\nreceipt:sub\n\n\x00")
			want = append(want, "sub")
		}
	}
	frames.WriteString("DISCONNECT\nreceipt:bye\n\n\x00")
	want = append(want, "bye")
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
	sub, err := c.Subscribe("/queue/piped", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if m := next(t, sub); string(m.Body) != fmt.Sprintf("m%03d", i) {
			t.Fatalf("after restart message %d is %q", i, m.Body)
		}
	}
	none(t, sub, 100*time.Millisecond)
}

// A persistent SEND whose write fails gets an ERROR naming its receipt, and
// its connection closes; the message is not delivered, and other
// connections and the broker carry on.
func TestPersistentSendWriteFailure(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true, ConsumeBeforeStore: true})
	addr, _ := serveEngine(t, eng, closeEng)
	other := dial(t, addr)
	if err := other.Send("/queue/faulty", "text/plain", []byte("before"), gostomp.SendOpt.Receipt,
		gostomp.SendOpt.Header("persistent", "true")); err != nil {
		t.Fatal(err)
	}

	faults.FailAfter(20 * time.Millisecond)
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read() // CONNECTED
	r.write("SEND\ndestination:/queue/faulty\npersistent:true\nreceipt:s1\n\nlost-1\x00" +
		"SEND\ndestination:/queue/faulty\npersistent:true\nreceipt:s2\n\nlost-2\x00")
	f := r.read()
	if f.Command != frame.CmdError {
		t.Fatalf("got %s, want an ERROR for the failed write", f.Command)
	}
	if id, _ := f.Get(frame.HeaderReceiptID); id != "s1" {
		t.Fatalf("ERROR receipt-id %q, want s1 (the first SEND whose write failed)", id)
	}
	if msg, _ := f.Get(frame.HeaderMessage); !strings.Contains(string(f.Body)+msg, "injected store failure") {
		t.Fatalf("ERROR does not say what failed: %q %q", msg, f.Body)
	}
	r.closed()
	// Both failed messages leave the queue: "before" alone is left.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "faulty"})
		if err != nil {
			t.Fatal(err)
		}
		if info.Messages == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages on the queue 5s after the failed writes, want 1", info.Messages)
		}
	}

	faults.Fail(false)
	if err := other.Send("/queue/faulty", "text/plain", []byte("after"), gostomp.SendOpt.Receipt,
		gostomp.SendOpt.Header("persistent", "true")); err != nil {
		t.Fatalf("another connection after the failure: %v", err)
	}
	sub, err := other.Subscribe("/queue/faulty", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before", "after"} {
		if m := next(t, sub); string(m.Body) != want {
			t.Fatalf("got %q, want %s: a message whose write failed was delivered", m.Body, want)
		}
	}
	none(t, sub, 100*time.Millisecond)
}
