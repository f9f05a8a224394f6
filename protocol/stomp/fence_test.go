package stomp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// A persistent SEND whose write has an unknown outcome (the store lost its
// leadership) gets an ERROR that says so, not that the send failed: the
// message may have been stored. The engine is fenced.
func TestPersistentSendOutcomeUnknown(t *testing.T) {
	for _, cbs := range []bool{false, true} {
		name := "store first"
		if cbs {
			name = "consume before store"
		}
		t.Run(name, func(t *testing.T) {
			eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true, ConsumeBeforeStore: cbs})
			addr, _ := serveEngine(t, eng, closeEng)
			if _, err := eng.CreateDestination(context.Background(), message.Destination{Kind: message.Queue, Name: "unsure"}); err != nil {
				t.Fatal(err)
			}
			faults.Unsure(true)
			r := dialRaw(t, addr)
			r.write("CONNECT\naccept-version:1.2\n\n\x00")
			r.read() // CONNECTED
			r.write("SEND\ndestination:/queue/unsure\npersistent:true\nreceipt:s1\n\nmaybe\x00")
			f := r.read()
			if f.Command != frame.CmdError {
				t.Fatalf("got %s, want an ERROR for the unknown outcome", f.Command)
			}
			if id, _ := f.Get(frame.HeaderReceiptID); id != "s1" {
				t.Fatalf("ERROR receipt-id %q, want s1", id)
			}
			msg, _ := f.Get(frame.HeaderMessage)
			msg = strings.ReplaceAll(msg, `\c`, ":") // the raw reader leaves header escapes
			if !strings.HasPrefix(msg, "outcome unknown: ") || !strings.Contains(msg, "may have been stored") {
				t.Fatalf("ERROR message %q does not say the outcome is unknown", msg)
			}
			select {
			case <-eng.Fenced():
			case <-time.After(5 * time.Second):
				t.Fatal("engine not fenced after an unknown outcome")
			}
		})
	}
}
