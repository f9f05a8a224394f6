package stomp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// A burst of NACKs with receipts from several consumers at once, each
// asking for a redelivery delay (so that each NACK writes a record): every
// connection gets its RECEIPTs in frame order, and once they are all in,
// the NACKs are durable: after a restart every message comes back flagged
// redelivered, with a delivery count of 2.
func TestNackBurstReceiptsInOrderAndDurable(t *testing.T) {
	const consumers, prefetch = 3, 20
	const n = consumers * prefetch
	dir := t.TempDir()
	addr, stop := startDurable(t, dir)
	fillPersistent(t, addr, "nacked", n)

	conns := make([]*raw, consumers)
	ids := make([][]string, consumers)
	for i := range conns {
		r := dialRaw(t, addr)
		r.write("CONNECT\naccept-version:1.2\n\n\x00")
		r.read() // CONNECTED
		fmt.Fprintf(r.nc, "SUBSCRIBE\nid:0\ndestination:/queue/nacked\nack:client-individual\nactivemq.prefetchSize:%d\n\n\x00", prefetch)
		for range prefetch {
			f := r.read()
			if f.Command != frame.CmdMessage {
				t.Fatalf("consumer %d: got %s %q, want MESSAGE", i, f.Command, f.Body)
			}
			ids[i] = append(ids[i], ackHeader(f))
		}
		conns[i] = r
	}
	// Every consumer NACKs all it has in one write, a receipt on each, the
	// redelivery delay long enough that nothing comes back meanwhile.
	for i, r := range conns {
		var frames strings.Builder
		for j, id := range ids[i] {
			fmt.Fprintf(&frames, "NACK\nid:%s\nsluice-redelivery-delay:3000\nreceipt:c%d-%d\n\n\x00", id, i, j)
		}
		r.write(frames.String())
	}
	for i, r := range conns {
		for j := range ids[i] {
			f := r.read()
			want := fmt.Sprintf("c%d-%d", i, j)
			if got, _ := f.Get(frame.HeaderReceiptID); f.Command != frame.CmdReceipt || got != want {
				t.Fatalf("consumer %d, frame %d: %s receipt-id %q %q, want RECEIPT %s in order", i, j, f.Command, got, f.Body, want)
			}
		}
		r.write("DISCONNECT\nreceipt:bye\n\n\x00")
		if f := r.read(); f.Command != frame.CmdReceipt {
			t.Fatalf("consumer %d: got %s %q, want the DISCONNECT receipt", i, f.Command, f.Body)
		}
	}
	stop()

	addr2, _ := startDurable(t, dir)
	r := dialRaw(t, addr2)
	r.write("CONNECT\naccept-version:1.2\n\n\x00")
	r.read() // CONNECTED
	r.write("SUBSCRIBE\nid:0\ndestination:/queue/nacked\nack:auto\n\n\x00")
	seen := map[string]bool{}
	for range n {
		f := r.read()
		if f.Command != frame.CmdMessage {
			t.Fatalf("after the restart: got %s %q, want MESSAGE", f.Command, f.Body)
		}
		red, _ := f.Get("redelivered")
		count, _ := f.Get("x-delivery-count")
		if red != "true" || count != "2" {
			t.Errorf("message %s after the restart: redelivered %q, x-delivery-count %q; want true and 2", f.Body, red, count)
		}
		seen[string(f.Body)] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct messages came back, want %d", len(seen), n)
	}
}
