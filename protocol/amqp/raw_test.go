package amqp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
	"github.com/sluicemq/sluice/protocol/stomp"
)

var rawSeq atomic.Int64

// rawClient speaks AMQP frame by frame, for what go-amqp cannot do
// (transactions) and for hostile input.
type rawClient struct {
	nc net.Conn
	r  *frames.Reader
	w  *frames.Writer
}

func rawDial(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawClient{nc: nc, r: frames.NewReader(bufio.NewReader(nc), 1<<20), w: frames.NewWriter(nc, 1<<20)}
}

// open sends the AMQP header and an open (idle time-out in ms, 0 none),
// and reads the server's header and open.
func (rc *rawClient) open(t *testing.T, idle uint32) {
	t.Helper()
	rc.openAs(t, idle, fmt.Sprintf("raw-%d", rawSeq.Add(1)))
}

// openAs is open with the given container-id.
func (rc *rawClient) openAs(t *testing.T, idle uint32, containerID string) {
	t.Helper()
	if err := rc.w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP)); err != nil {
		t.Fatal(err)
	}
	o := types.NewOpen()
	o.ContainerID = containerID
	o.MaxFrameSize = 1 << 20
	if idle > 0 {
		o.IdleTimeOut = types.Some(types.Milliseconds(idle))
	}
	rc.write(t, 0, o, nil)
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.r.ReadProtocolHeader(); err != nil {
		t.Fatal(err)
	}
	rc.expect(t, "amqp:open:list", 5*time.Second)
}

func (rc *rawClient) write(t *testing.T, ch uint16, body frames.Body, payload []byte) {
	t.Helper()
	if err := rc.w.WriteFrame(frames.Frame{Type: frames.TypeAMQP, Channel: ch, Body: body, Payload: payload}); err != nil {
		t.Fatal(err)
	}
}

// expect reads frames until one with the descriptor name arrives.
// flow gives a receiving link credit: the session's next incoming
// transfer number, the link's delivery count and the credit.
func (rc *rawClient) flow(t *testing.T, handle, nextIncoming, deliveryCount, credit uint32) {
	t.Helper()
	fl := types.NewFlow()
	fl.NextIncomingID = types.Some(types.TransferNumber(nextIncoming))
	fl.IncomingWindow, fl.OutgoingWindow = 1<<20, 1<<20
	fl.Handle = types.Some(types.Handle(handle))
	fl.DeliveryCount = types.Some(types.SequenceNo(deliveryCount))
	fl.LinkCredit = types.Some(credit)
	rc.write(t, 0, fl, nil)
}

func (rc *rawClient) expect(t *testing.T, name string, d time.Duration) frames.Frame {
	t.Helper()
	_ = rc.nc.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := rc.r.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for %s: %v", name, err)
		}
		if f.Body == nil {
			continue
		}
		if n, _ := f.Body.Descriptor(); string(n) == name {
			return f
		}
		if n, _ := f.Body.Descriptor(); n == types.CloseDescriptorName {
			t.Fatalf("waiting for %s: closed: %v", name, f.Body.(*types.Close).Error)
		}
	}
}

// expectClose reads frames until the server's close.
func (rc *rawClient) expectClose(t *testing.T, d time.Duration) frames.Frame {
	t.Helper()
	_ = rc.nc.SetReadDeadline(time.Now().Add(d))
	for {
		f, err := rc.r.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for close: %v", err)
		}
		if _, ok := f.Body.(*types.Close); ok {
			return f
		}
	}
}

func closeErr(f frames.Frame) *types.Error {
	if c, ok := f.Body.(*types.Close); ok {
		return c.Error
	}
	return nil
}

func serveStomp(t *testing.T, srv *stomp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String()
}

func valueMessage(t *testing.T, v any) []byte {
	t.Helper()
	m := &types.Message{Value: &types.AMQPValue{Value: v}}
	b, err := m.AppendAMQP(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func transfer(handle uint32, id uint32, state types.DeliveryState) *types.Transfer {
	return &types.Transfer{Handle: types.Handle(handle), DeliveryID: types.Some(types.DeliveryNumber(id)),
		DeliveryTag: []byte{byte(id)}, MessageFormat: types.Some(types.MessageFormat(0)), State: state}
}

func dispositionState(t *testing.T, f frames.Frame) types.DeliveryState {
	t.Helper()
	return f.Body.(*types.Disposition).State
}

func queueCount(t *testing.T, ts *testServer, name string) int64 {
	t.Helper()
	info, err := ts.eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: name})
	if err != nil {
		return 0
	}
	return info.Messages
}

// TestTransactions receives and sends in one transaction with raw frames
// (go-amqp has no transactions): nothing shows before the commit, both
// take effect at once on commit, and a rollback undoes a send.
func TestTransactions(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	gc := ts.dial(t, nil)
	send(t, sender(t, session(t, gc), "in", nil), text("job"))

	rc := rawDial(t, ts.addr)
	rc.open(t, 0)
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1000, 1000
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)

	// The coordinator link.
	rc.write(t, 0, &types.Attach{Name: "txn", Handle: 0, Role: types.RoleSender, Source: types.NewSource(),
		Target:               &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}},
		InitialDeliveryCount: types.Some(types.SequenceNo(0))}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.expect(t, "amqp:flow:list", 5*time.Second)
	nextID := uint32(0)
	declare := func() []byte {
		rc.write(t, 0, transfer(0, nextID, nil), valueMessage(t, &types.Declare{}))
		nextID++
		st := dispositionState(t, rc.expect(t, "amqp:disposition:list", 5*time.Second))
		d, ok := st.(*types.Declared)
		if !ok {
			t.Fatalf("declare answered with %#v", st)
		}
		return d.TxnID.([]byte)
	}
	discharge := func(txn []byte, fail bool) types.DeliveryState {
		rc.write(t, 0, transfer(0, nextID, nil), valueMessage(t, &types.Discharge{TxnID: txn, Fail: types.Some(fail)}))
		nextID++
		return dispositionState(t, rc.expect(t, "amqp:disposition:list", 5*time.Second))
	}
	txn := declare()

	// A consumer on "in" and a producer on "out".
	src := types.NewSource()
	src.Address = "in"
	rc.write(t, 0, &types.Attach{Name: "c", Handle: 1, Role: types.RoleReceiver, Source: src, Target: types.NewTarget()}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.flow(t, 1, 0, 0, 1)
	tf := rc.expect(t, "amqp:transfer:list", 5*time.Second)
	inID := tf.Body.(*types.Transfer).DeliveryID.Value

	tgt := types.NewTarget()
	tgt.Address = "out"
	rc.write(t, 0, &types.Attach{Name: "p", Handle: 2, Role: types.RoleSender, Source: types.NewSource(), Target: tgt,
		InitialDeliveryCount: types.Some(types.SequenceNo(0))}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.write(t, 0, transfer(2, nextID, &types.TransactionalState{TxnID: txn}), valueMessage(t, "result"))
	nextID++
	st := dispositionState(t, rc.expect(t, "amqp:disposition:list", 5*time.Second))
	if ts, ok := st.(*types.TransactionalState); !ok || ts.Outcome == nil {
		t.Fatalf("transactional send answered with %#v", st)
	}
	rc.write(t, 0, &types.Disposition{Role: types.RoleReceiver, First: inID, Settled: true,
		State: &types.TransactionalState{TxnID: txn, Outcome: &types.Accepted{}}}, nil)

	time.Sleep(100 * time.Millisecond)
	if n := queueCount(t, ts, "out"); n != 0 {
		t.Fatalf("a transactional send is visible before the commit (%d)", n)
	}
	if n := queueCount(t, ts, "in"); n != 1 {
		t.Fatalf("a transactional acknowledgement took effect before the commit (%d)", n)
	}
	if st := discharge(txn, false); func() bool { _, ok := st.(*types.Accepted); return !ok }() {
		t.Fatalf("commit answered with %#v", st)
	}
	waitFor(t, func() bool { return queueCount(t, ts, "out") == 1 && queueCount(t, ts, "in") == 0 },
		"after commit: out=%d in=%d", queueCount(t, ts, "out"), queueCount(t, ts, "in"))

	// A rollback discards the send.
	txn2 := declare()
	rc.write(t, 0, transfer(2, nextID, &types.TransactionalState{TxnID: txn2}), valueMessage(t, "discarded"))
	nextID++
	rc.expect(t, "amqp:disposition:list", 5*time.Second)
	if st := discharge(txn2, true); func() bool { _, ok := st.(*types.Accepted); return !ok }() {
		t.Fatalf("rollback answered with %#v", st)
	}
	time.Sleep(100 * time.Millisecond)
	if n := queueCount(t, ts, "out"); n != 1 {
		t.Fatalf("after rollback: out=%d, want 1", n)
	}
	// An unknown transaction is refused.
	if st := discharge([]byte("nope"), false); func() bool {
		r, ok := st.(*types.Rejected)
		return !ok || r.Error == nil || r.Error.Condition != types.TransactionErrorUnknownID
	}() {
		t.Fatalf("discharge of an unknown transaction answered with %#v", st)
	}
}

// TestMalformedInput closes a connection that sends garbage with an error
// condition while another connection carries on.
func TestMalformedInput(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	good := ts.dial(t, nil)
	gs := session(t, good)
	snd := sender(t, gs, "ok", nil)

	cases := []struct {
		name  string
		bytes []byte
		cond  types.ErrorCondition
	}{
		{"bad frame header", []byte{0, 0, 0, 8, 1, 0, 0, 0}, types.ConnectionErrorFramingError},
		{"huge frame", []byte{0x7f, 0xff, 0xff, 0xff, 2, 0, 0, 0}, types.ConnectionErrorFramingError},
		{"garbage performative", []byte{0, 0, 0, 12, 2, 0, 0, 0, 0x00, 0x53, 0x10, 0xff}, types.AMQPErrorDecodeError},
		{"transfer without session", func() []byte {
			b, _ := frames.AppendFrame(nil, frames.Frame{Type: frames.TypeAMQP, Channel: 7, Body: transfer(0, 0, nil)})
			return b
		}(), types.ConnectionErrorFramingError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := rawDial(t, ts.addr)
			rc.open(t, 0)
			if _, err := rc.nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				f, err := rc.r.ReadFrame()
				if err != nil {
					t.Fatalf("connection ended without a close: %v", err)
				}
				if e := closeErr(f); f.Body != nil && e != nil {
					if e.Condition != tc.cond {
						t.Fatalf("closed with %s (%s), want %s", e.Condition, e.Description, tc.cond)
					}
					break
				}
			}
			// The connection is gone afterwards.
			if _, err := rc.r.ReadFrame(); err == nil {
				t.Fatal("connection still open after the close")
			}
			send(t, snd, text("the other connection works"))
		})
	}

	// A wrong protocol header is answered with the server's and closed.
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("HTTP/1.1 200\r\n"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(nc)
	if string(got) != "AMQP\x00\x01\x00\x00" {
		t.Fatalf("answer to a wrong protocol header: %q", got)
	}
	send(t, snd, text("still works"))
}

// TestConnectionCapabilities checks the offered connection
// capabilities JMS clients look for.
func TestConnectionCapabilities(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	rc := rawDial(t, ts.addr)
	if err := rc.w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP)); err != nil {
		t.Fatal(err)
	}
	o := types.NewOpen()
	o.ContainerID = "caps"
	rc.write(t, 0, o, nil)
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.r.ReadProtocolHeader(); err != nil {
		t.Fatal(err)
	}
	f := rc.expect(t, "amqp:open:list", 5*time.Second)
	caps := map[types.Symbol]bool{}
	for _, c := range f.Body.(*types.Open).OfferedCapabilities {
		caps[c] = true
	}
	for _, want := range []types.Symbol{"DELAYED_DELIVERY", "SHARED-SUBS", "ANONYMOUS-RELAY"} {
		if !caps[want] {
			t.Errorf("capability %s not offered: %v", want, caps)
		}
	}
}

// TestAnonymousRelay sends on a link without a target address, naming the
// destination in properties.to.
func TestAnonymousRelay(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "", nil)
	send(t, snd, &amqp.Message{Properties: &amqp.MessageProperties{To: ptr("relayed")}, Value: "via relay"})
	r := receiver(t, s, "relayed", nil)
	if m := recv(t, r); m.Value != "via relay" {
		t.Fatalf("got %v", m.Value)
	}
	// Without "to" the message is rejected.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := snd.Send(ctx, text("nowhere"), nil); err == nil {
		t.Fatal("a message without a destination was accepted")
	}
}

// TestBrowse reads a queue with distribution-mode copy without consuming.
func TestBrowse(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "browsed", nil)
	send(t, snd, text("x"))
	send(t, snd, text("y"))
	br := receiver(t, s, "browsed", &amqp.ReceiverOptions{SourceDistributionMode: amqp.SourceDistributionModeCopy, Credit: -1})
	if err := br.IssueCredit(10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x", "y"} {
		m := recv(t, br)
		if m.Value != want {
			t.Fatalf("browsed %v", m.Value)
		}
		accept(t, br, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := br.DrainCredit(ctx, nil); err != nil {
		t.Fatalf("drain of a browser: %v", err)
	}
	if n := queueCount(t, ts, "browsed"); n != 2 {
		t.Fatalf("browsing consumed: %d left", n)
	}
}

// TestPreSettledDetachRace receives pre-settled deliveries and detaches the
// moment each arrives: a delivery on the wire is consumed, so none comes
// back to a later link (the server acknowledges it once flushed and, on
// detach, waits for that before it takes back what is unacknowledged).
func TestPreSettledDetachRace(t *testing.T) {
	const n = 150
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	gc := ts.dial(t, nil)
	snd := sender(t, session(t, gc), "presettled.race", nil)
	for i := range n {
		send(t, snd, text(fmt.Sprintf("m%d", i)))
	}

	rc := rawDial(t, ts.addr)
	rc.open(t, 0)
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1<<20, 1<<20
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)
	seen := map[string]bool{}
	for i := range n {
		src := types.NewSource()
		src.Address = "presettled.race"
		rc.write(t, 0, &types.Attach{Name: fmt.Sprintf("r%d", i), Handle: 1, Role: types.RoleReceiver,
			SndSettleMode: types.SenderSettleModeSettled, Source: src, Target: types.NewTarget()}, nil)
		rc.expect(t, "amqp:attach:list", 5*time.Second)
		rc.flow(t, 1, uint32(i), 0, 1)
		tf := rc.expect(t, "amqp:transfer:list", 5*time.Second)
		rc.write(t, 0, &types.Detach{Handle: 1, Closed: true}, nil)
		var m types.Message
		if err := m.Decode(tf.Payload); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		v := m.Value
		if v == nil {
			t.Fatalf("delivery %d: no value: %#v", i, m)
		}
		body := fmt.Sprint(v.Value)
		if seen[body] {
			t.Fatalf("delivery %d: %s arrived a second time after a pre-settled delivery and a detach", i, body)
		}
		seen[body] = true
		rc.expect(t, "amqp:detach:list", 5*time.Second)
	}
	if got := queueCount(t, ts, "presettled.race"); got != 0 {
		t.Fatalf("%d messages left on the queue after %d pre-settled deliveries", got, n)
	}
}

// A broker shutting down ends a connection that has not exchanged open
// frames yet without a frame: a close before the open would not be AMQP.
func TestShutdownBeforeOpenSendsNoFrame(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	rc := rawDial(t, ts.addr)
	if err := rc.w.WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolAMQP)); err != nil {
		t.Fatal(err)
	}
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.r.ReadProtocolHeader(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := rc.r.ReadFrame()
	if err == nil {
		name, _ := f.Body.Descriptor()
		t.Fatalf("got %s before any open; want the connection closed", name)
	}
}

// TestTransactionLimit: with the default limit of 100, the 101st declare
// on a connection is rejected with amqp:resource-limit-exceeded naming the
// limit; the connection stays usable, and a discharge makes room again.
func TestTransactionLimit(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	rc := rawDial(t, ts.addr)
	rc.open(t, 0)
	b := types.NewBegin()
	b.IncomingWindow, b.OutgoingWindow = 1000, 1000
	rc.write(t, 0, b, nil)
	rc.expect(t, "amqp:begin:list", 5*time.Second)
	rc.write(t, 0, &types.Attach{Name: "txn", Handle: 0, Role: types.RoleSender, Source: types.NewSource(),
		Target:               &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}},
		InitialDeliveryCount: types.Some(types.SequenceNo(0))}, nil)
	rc.expect(t, "amqp:attach:list", 5*time.Second)
	rc.expect(t, "amqp:flow:list", 5*time.Second)
	nextID := uint32(0)
	coordinate := func(v any) types.DeliveryState {
		rc.write(t, 0, transfer(0, nextID, nil), valueMessage(t, v))
		nextID++
		return dispositionState(t, rc.expect(t, "amqp:disposition:list", 5*time.Second))
	}
	var first []byte
	for i := range 100 {
		d, ok := coordinate(&types.Declare{}).(*types.Declared)
		if !ok {
			t.Fatalf("declare %d refused", i+1)
		}
		if i == 0 {
			first = d.TxnID.([]byte)
		}
	}
	st := coordinate(&types.Declare{})
	if r, ok := st.(*types.Rejected); !ok || r.Error == nil || r.Error.Condition != types.AMQPErrorResourceLimitExceeded ||
		!strings.Contains(r.Error.Description, "limit 100") {
		t.Fatalf("declare 101 answered with %#v, want rejected with resource-limit-exceeded naming the limit", st)
	}
	if _, ok := coordinate(&types.Discharge{TxnID: first, Fail: types.Some(true)}).(*types.Accepted); !ok {
		t.Fatal("discharge refused after the limit was hit")
	}
	if _, ok := coordinate(&types.Declare{}).(*types.Declared); !ok {
		t.Fatal("no room for a declare after a discharge")
	}
}
