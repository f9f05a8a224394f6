package amqp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
)

// TestDurableSendOutcomeUnknown: a durable transfer whose write has an
// unknown outcome (the store lost its leadership) is settled with an error
// whose description says the outcome is unknown and that the message may
// have been stored, not that it failed; the engine is fenced.
func TestDurableSendOutcomeUnknown(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true})
	ds := serveEngine(t, eng, closeEng)
	ts := &testServer{addr: ds.addr}
	snd := sender(t, session(t, ts.dial(t, nil)), "unsure", nil)
	m := text("before")
	m.Header = &amqp.MessageHeader{Durable: true}
	send(t, snd, m) // the queue exists: its creation is not the unsure write

	faults.Unsure(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m = text("maybe")
	m.Header = &amqp.MessageHeader{Durable: true}
	r, err := snd.SendWithReceipt(ctx, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(ctx)
	if err != nil {
		t.Fatalf("settlement: %v", err)
	}
	rej, ok := st.(*amqp.StateRejected)
	if !ok || rej.Error == nil {
		t.Fatalf("settlement %#v, want an error that tells the outcome", st)
	}
	if d := rej.Error.Description; !strings.HasPrefix(d, "outcome unknown: ") || !strings.Contains(d, "may have been stored") {
		t.Fatalf("error description %q does not say the outcome is unknown", d)
	}
	select {
	case <-eng.Fenced():
	case <-time.After(5 * time.Second):
		t.Fatal("engine not fenced after an unknown outcome")
	}
}
