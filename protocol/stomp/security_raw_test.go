package stomp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// connectAs opens a raw connection and logs in as user.
func connectAs(t *testing.T, addr, user string) *raw {
	t.Helper()
	pw := map[string]string{"alice": alicePW, "bob": bobPW}[user]
	r := dialRaw(t, addr)
	r.write("CONNECT\naccept-version:1.2\nheart-beat:0,0\nlogin:" + user + "\npasscode:" + pw + "\n\n\x00")
	if f := r.read(); f.Command != frame.CmdConnected {
		msg, _ := f.Get("message")
		t.Fatalf("login as %s: %s %q", user, f.Command, msg)
	}
	r.rd.SetVersion(frame.V12) // header values are escaped from here on
	return r
}

// expect reads the next frame and checks its command, its receipt-id
// (when want names one) and that its message header contains msg.
func (r *raw) expect(cmd frame.Command, receiptID, msg string) *frame.Frame {
	r.t.Helper()
	f := r.read()
	got, _ := f.Get("message")
	if f.Command != cmd {
		r.t.Fatalf("got %s %q, want %s", f.Command, got, cmd)
	}
	if id, _ := f.Get("receipt-id"); receiptID != "" && id != receiptID {
		r.t.Fatalf("%s receipt-id %q, want %q", cmd, id, receiptID)
	}
	if !strings.Contains(got, msg) {
		r.t.Fatalf("%s message %q, want it to contain %q", cmd, got, msg)
	}
	return f
}

// A denied SEND or SUBSCRIBE is answered with an ERROR carrying its
// receipt-id and the engine's reason; nothing of the denied message is
// stored, and the connection stays open: its other subscription keeps
// receiving, and it can subscribe and send again.
func TestDeniedFrameLeavesTheConnectionOpen(t *testing.T) {
	addr, eng := startSecured(t, engine.Config{AutoCreate: true}, newRealm(t, realmOptions(t)))
	r := connectAs(t, addr, "alice")
	r.write("SUBSCRIBE\nid:keep\ndestination:/queue/orders.a\nreceipt:s0\n\n\x00")
	r.expect(frame.CmdReceipt, "s0", "")

	r.write("SEND\ndestination:/queue/billing.a\npersistent:true\nreceipt:r1\n\nsecret\x00")
	ef := r.expect(frame.CmdError, "r1", "user alice may not send to /queue/billing.a")
	if !strings.Contains(string(ef.Body), "JMSSecurityException") {
		t.Fatalf("ERROR body %q does not name JMSSecurityException", ef.Body)
	}
	info, err := eng.DestinationInfo(billingA)
	if err != nil {
		t.Fatal(err)
	}
	if info.Messages != 0 || info.Enqueued != 0 {
		t.Fatalf("billing.a after a denied SEND: %d messages, %d enqueued", info.Messages, info.Enqueued)
	}

	r.write("SUBSCRIBE\nid:2\ndestination:/queue/billing.a\nreceipt:r2\n\n\x00")
	r.expect(frame.CmdError, "r2", "user alice may not consume from /queue/billing.a")

	// The connection carries on: the first subscription receives, and the
	// denied subscription's id is free again.
	r.write("SEND\ndestination:/queue/orders.a\nreceipt:r3\n\nafter\x00")
	var gotReceipt, gotMessage bool
	for range 2 {
		f := r.read()
		switch f.Command {
		case frame.CmdReceipt:
			gotReceipt = true
		case frame.CmdMessage:
			if sub, _ := f.Get("subscription"); sub != "keep" || string(f.Body) != "after" {
				t.Fatalf("MESSAGE %q on subscription %q", f.Body, sub)
			}
			gotMessage = true
		default:
			msg, _ := f.Get("message")
			t.Fatalf("got %s %q", f.Command, msg)
		}
	}
	if !gotReceipt || !gotMessage {
		t.Fatalf("receipt %v, message %v", gotReceipt, gotMessage)
	}
	r.write("SUBSCRIBE\nid:2\ndestination:/queue/orders.b\nreceipt:r4\n\n\x00")
	r.expect(frame.CmdReceipt, "r4", "")
	r.write("DISCONNECT\nreceipt:bye\n\n\x00")
	r.expect(frame.CmdReceipt, "bye", "")
	r.closed()
}

// A SEND denied inside a transaction is refused at once; the transaction
// stays open for its other frames, but its COMMIT rolls it back, so that
// none of it is committed; the connection stays usable for the next one.
func TestDeniedSendInTransactionCommitsNothing(t *testing.T) {
	addr, eng := startSecured(t, engine.Config{AutoCreate: true}, newRealm(t, realmOptions(t)))
	r := connectAs(t, addr, "alice")
	r.write("BEGIN\ntransaction:t1\n\n\x00" +
		"SEND\ndestination:/queue/orders.a\ntransaction:t1\n\nbefore\x00" +
		"SEND\ndestination:/queue/billing.a\ntransaction:t1\nreceipt:d\n\ndenied\x00" +
		"SEND\ndestination:/queue/orders.a\ntransaction:t1\n\nafter\x00" +
		"COMMIT\ntransaction:t1\nreceipt:c1\n\n\x00")
	r.expect(frame.CmdError, "d", "user alice may not send to /queue/billing.a")
	r.expect(frame.CmdError, "c1", "transaction t1 rolled back: a SEND in it was refused")
	for _, d := range []message.Destination{ordersA, billingA} {
		if n := messages(t, eng, d); n != 0 {
			t.Fatalf("%s holds %d messages after the rolled-back transaction", d, n)
		}
	}
	r.write("BEGIN\ntransaction:t2\n\n\x00" +
		"SEND\ndestination:/queue/orders.a\ntransaction:t2\n\nkept\x00" +
		"COMMIT\ntransaction:t2\nreceipt:c2\n\n\x00")
	r.expect(frame.CmdReceipt, "c2", "")
	if n := messages(t, eng, ordersA); n != 1 {
		t.Fatalf("orders.a holds %d messages after the second transaction, want 1", n)
	}
	// ABORT of a transaction with a denied SEND is an ordinary abort.
	r.write("BEGIN\ntransaction:t3\n\n\x00" +
		"SEND\ndestination:/queue/billing.a\ntransaction:t3\n\n\x00" +
		"ABORT\ntransaction:t3\nreceipt:a3\n\n\x00")
	r.expect(frame.CmdError, "", "may not send")
	r.expect(frame.CmdReceipt, "a3", "")
}

// Among pipelined persistent SENDs, a denied one's ERROR comes in the
// order of its frame: after the receipts of the frames before it, before
// those after it.
func TestDeniedSendAmongPipelinedSendsKeepsReceiptOrder(t *testing.T) {
	eng, closeEng := enginetest.Durable(t, t.TempDir(), engine.Config{AutoCreate: true})
	for _, d := range []message.Destination{ordersA, billingA} {
		if _, err := eng.CreateDestination(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	addr := serveWith(t, eng, closeEng, stomp.Options{Realm: newRealm(t, realmOptions(t))})
	r := connectAs(t, addr, "alice")
	const n = 40
	var frames strings.Builder
	for i := range n {
		dest := "/queue/orders.a"
		if i == n/2 {
			dest = "/queue/billing.a"
		}
		fmt.Fprintf(&frames, "SEND\ndestination:%s\npersistent:true\nreceipt:s%d\n\nm%d\x00", dest, i, i)
	}
	r.write(frames.String())
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		if i == n/2 {
			r.expect(frame.CmdError, id, "may not send to /queue/billing.a")
			continue
		}
		r.expect(frame.CmdReceipt, id, "")
	}
	if got := messages(t, eng, ordersA); got != n-1 {
		t.Fatalf("orders.a holds %d messages, want %d", got, n-1)
	}
	if got := messages(t, eng, billingA); got != 0 {
		t.Fatalf("billing.a holds %d messages, want 0", got)
	}
}
