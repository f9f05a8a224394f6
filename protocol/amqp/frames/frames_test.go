package frames_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// cat concatenates byte slices (to write golden vectors piece by piece).
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func reader(b []byte, max uint32) *frames.Reader {
	return frames.NewReader(bufio.NewReader(bytes.NewReader(b)), max)
}

// Golden vectors, written by hand from the encoding rules of the
// specification (part 1 types, part 2 framing), not by this codec.

// An open frame: container-id "c1", hostname "h", max-frame-size 65536,
// channel-max 255, in the most compact encoding.
var goldenOpen = cat(
	[]byte{0x00, 0x00, 0x00, 0x1d, 0x02, 0x00, 0x00, 0x00}, // size 29, doff 2, AMQP, channel 0
	[]byte{0x00, 0x53, 0x10},                               // described, smallulong 0x10 (open)
	[]byte{0xc0, 0x10, 0x04},                               // list8, size 16, 4 fields
	[]byte{0xa1, 0x02, 'c', '1'},                           // str8 "c1"
	[]byte{0xa1, 0x01, 'h'},                                // str8 "h"
	[]byte{0x70, 0x00, 0x01, 0x00, 0x00},                   // uint 65536
	[]byte{0x60, 0x00, 0xff},                               // ushort 255
)

func TestGoldenOpen(t *testing.T) {
	f, err := reader(goldenOpen, 512).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	open, ok := f.Body.(*types.Open)
	if !ok || f.Type != frames.TypeAMQP || f.Channel != 0 {
		t.Fatalf("got %+v", f)
	}
	want := types.NewOpen()
	want.ContainerID, want.Hostname, want.MaxFrameSize, want.ChannelMax = "c1", "h", 65536, 255
	if !reflect.DeepEqual(open, want) {
		t.Fatalf("open = %+v, want %+v", open, want)
	}
	b, err := frames.AppendFrame(nil, frames.Frame{Type: frames.TypeAMQP, Body: want})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, goldenOpen) {
		t.Fatalf("encoded\n% x\nwant\n% x", b, goldenOpen)
	}
}

// An attach frame on channel 3 in a deliberately non-compact encoding: a
// symbolic descriptor, list32, a full-width uint, boolean 0x56, a source
// with a symbolic descriptor too, and an explicit null.
var goldenAttach = func() []byte {
	source := cat(
		[]byte{0x00, 0xa3, byte(len("amqp:source:list"))}, []byte("amqp:source:list"),
		[]byte{0xc0, 0x0d, 0x03},               // list8, size 13, 3 fields
		[]byte{0xa1, 0x03, 'q', '/', '1'},      // address "q/1"
		[]byte{0x43},                           // durable: uint0 (none)
		[]byte{0xa3, 0x04, 'n', 'e', 'v', 'r'}, // expiry-policy "nevr" (any symbol decodes)
	)
	fields := cat(
		[]byte{0xb1, 0x00, 0x00, 0x00, 0x04, 'l', 'i', 'n', 'k'}, // name: str32 "link"
		[]byte{0x70, 0x00, 0x00, 0x00, 0x07},                     // handle: uint 7
		[]byte{0x56, 0x01},                                       // role: boolean true (receiver)
		[]byte{0x50, 0x01},                                       // snd-settle-mode: ubyte 1 (settled)
		[]byte{0x40},                                             // rcv-settle-mode: null → default first
		source,
	)
	body := cat(
		[]byte{0x00, 0xa3, byte(len("amqp:attach:list"))}, []byte("amqp:attach:list"),
		[]byte{0xd0}, be32(uint32(len(fields)+4)), be32(6),
		fields,
	)
	return cat(be32(uint32(8+len(body))), []byte{0x02, 0x00, 0x00, 0x03}, body)
}()

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

func TestGoldenAttach(t *testing.T) {
	f, err := reader(goldenAttach, 512).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	a, ok := f.Body.(*types.Attach)
	if !ok || f.Channel != 3 {
		t.Fatalf("got %+v", f)
	}
	if a.Name != "link" || a.Handle != 7 || a.Role != types.RoleReceiver || a.SndSettleMode != types.SenderSettleModeSettled ||
		a.RcvSettleMode != types.ReceiverSettleModeFirst || a.Target != nil {
		t.Fatalf("attach = %+v", a)
	}
	s := a.Source
	if s == nil || s.Address != "q/1" || s.Durable != types.TerminusDurabilityNone || s.ExpiryPolicy != "nevr" ||
		s.Timeout != 0 || s.Dynamic || s.Outcomes != nil {
		t.Fatalf("source = %+v", s)
	}
}

// A transfer with a message: properties (message-id "m1", to "q"),
// application-properties {"k": int 7, "l": long 1}, data "hi".
var goldenTransfer = func() []byte {
	perf := cat(
		[]byte{0x00, 0x53, 0x14},       // transfer
		[]byte{0xc0, 0x0a, 0x05},       // list8, size 10, 5 fields
		[]byte{0x43},                   // handle 0
		[]byte{0x52, 0x05},             // delivery-id smalluint 5
		[]byte{0xa0, 0x02, 0x00, 0x01}, // delivery-tag vbin8 00 01
		[]byte{0x43},                   // message-format 0
		[]byte{0x42},                   // settled false
	)
	props := cat(
		[]byte{0x00, 0x53, 0x73},     // properties
		[]byte{0xc0, 0x09, 0x03},     // list8, size 9, 3 fields
		[]byte{0xa1, 0x02, 'm', '1'}, // message-id "m1"
		[]byte{0x40},                 // user-id null
		[]byte{0xa1, 0x01, 'q'},      // to "q"
	)
	app := cat(
		[]byte{0x00, 0x53, 0x74},                                      // application-properties
		[]byte{0xc1, 0x0e, 0x04},                                      // map8, size 14, 4 elements
		[]byte{0xa1, 0x01, 'k'}, []byte{0x71, 0x00, 0x00, 0x00, 0x07}, // "k": int 7 (full width)
		[]byte{0xa1, 0x01, 'l'}, []byte{0x55, 0x01}, // "l": smalllong 1
	)
	data := cat([]byte{0x00, 0x53, 0x75}, []byte{0xa0, 0x02, 'h', 'i'})
	body := cat(perf, props, app, data)
	return cat(be32(uint32(8+len(body))), []byte{0x02, 0x00, 0x00, 0x01}, body)
}()

func TestGoldenTransfer(t *testing.T) {
	f, err := reader(goldenTransfer, 512).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := f.Body.(*types.Transfer)
	if !ok || f.Channel != 1 {
		t.Fatalf("got %+v", f)
	}
	want := &types.Transfer{Handle: 0, DeliveryID: types.Some(types.DeliveryNumber(5)), DeliveryTag: types.DeliveryTag{0, 1},
		MessageFormat: types.Some(types.MessageFormat(0)), Settled: types.Some(false)}
	if !reflect.DeepEqual(tr, want) {
		t.Fatalf("transfer = %+v", tr)
	}
	m, err := types.DecodeMessage(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if m.Properties.MessageID != "m1" || m.Properties.To != "q" || m.Properties.UserID != nil {
		t.Fatalf("properties %+v", m.Properties)
	}
	wantApp := types.ApplicationProperties{{Key: "k", Value: int32(7)}, {Key: "l", Value: int64(1)}}
	if !reflect.DeepEqual(m.ApplicationProperties, wantApp) {
		t.Fatalf("application-properties %#v", m.ApplicationProperties)
	}
	if len(m.Data) != 1 || string(m.Data[0]) != "hi" || m.BodyKind() != types.BodyData {
		t.Fatalf("data %q", m.Data)
	}
}

func TestProtocolHeaders(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want frames.ProtocolHeader
		v10  bool
	}{
		{"AMQP\x00\x01\x00\x00", frames.NewProtocolHeader(frames.ProtocolAMQP), true},
		{"AMQP\x03\x01\x00\x00", frames.NewProtocolHeader(frames.ProtocolSASL), true},
		{"AMQP\x02\x01\x00\x00", frames.NewProtocolHeader(frames.ProtocolTLS), true},
		{"AMQP\x00\x00\x09\x01", frames.ProtocolHeader{ID: 0, Major: 0, Minor: 9, Revision: 1}, false}, // an AMQP 0-9-1 client
	} {
		h, err := reader([]byte(tc.in), 512).ReadProtocolHeader()
		if err != nil || h != tc.want || h.IsAMQP10() != tc.v10 {
			t.Errorf("%q: %v, %v", tc.in, h, err)
		}
		if b := h.Bytes(); string(b[:]) != tc.in {
			t.Errorf("%q: bytes %q", tc.in, b)
		}
	}
	if _, err := reader([]byte("HTTP/1.1"), 512).ReadProtocolHeader(); !errors.Is(err, frames.ErrBadProtocolHeader) {
		t.Errorf("HTTP: %v", err)
	}
	if _, err := reader([]byte("AMQ"), 512).ReadProtocolHeader(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short: %v", err)
	}
	var buf bytes.Buffer
	if err := frames.NewWriter(&buf, 512).WriteProtocolHeader(frames.NewProtocolHeader(frames.ProtocolSASL)); err != nil || buf.String() != "AMQP\x03\x01\x00\x00" {
		t.Errorf("write: %q %v", buf.String(), err)
	}
}

func TestEmptyFrame(t *testing.T) {
	heartbeat := []byte{0, 0, 0, 8, 2, 0, 0, 0}
	f, err := reader(heartbeat, 512).ReadFrame()
	if err != nil || !f.IsEmpty() || f.Payload != nil {
		t.Fatalf("%+v %v", f, err)
	}
	var buf bytes.Buffer
	if err := frames.NewWriter(&buf, 512).WriteEmptyFrame(); err != nil || !bytes.Equal(buf.Bytes(), heartbeat) {
		t.Fatalf("% x %v", buf.Bytes(), err)
	}
	// An empty frame with an extended header is still empty.
	f, err = reader([]byte{0, 0, 0, 12, 3, 0, 0, 9, 0xde, 0xad, 0xbe, 0xef}, 512).ReadFrame()
	if err != nil || !f.IsEmpty() || f.Channel != 9 {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestExtendedHeaderSkipped(t *testing.T) {
	in := cat([]byte{0, 0, 0, 0x1d + 8, 0x04, 0x00, 0x00, 0x00}, bytes.Repeat([]byte{0xee}, 8), goldenOpen[8:])
	f, err := reader(in, 512).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := f.Body.(*types.Open); !ok || o.ContainerID != "c1" {
		t.Fatalf("%+v", f)
	}
}

func TestFrameTooLarge(t *testing.T) {
	// The header claims 2 GiB; only the header is there. The reader must
	// refuse before trying to read (or allocate) the body.
	_, err := reader([]byte{0x80, 0, 0, 0, 2, 0, 0, 0}, 65536).ReadFrame()
	if !errors.Is(err, frames.ErrFrameTooLarge) {
		t.Fatalf("got %v", err)
	}
	// Exactly the limit is fine.
	if _, err := reader(goldenOpen, uint32(len(goldenOpen))).ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if _, err := reader(goldenOpen, uint32(len(goldenOpen)-1)).ReadFrame(); !errors.Is(err, frames.ErrFrameTooLarge) {
		t.Fatalf("got %v", err)
	}
	// The writer refuses too, and writes nothing.
	var buf bytes.Buffer
	w := frames.NewWriter(&buf, 512)
	err = w.WriteFrame(frames.Frame{Body: &types.Transfer{Handle: 1}, Payload: make([]byte, 600)})
	if !errors.Is(err, frames.ErrFrameTooLarge) || buf.Len() != 0 {
		t.Fatalf("got %v, %d bytes", err, buf.Len())
	}
	w.SetMaxFrameSize(1024)
	if err := w.WriteFrame(frames.Frame{Body: &types.Transfer{Handle: 1}, Payload: make([]byte, 600)}); err != nil {
		t.Fatal(err)
	}
}

func TestBadHeaders(t *testing.T) {
	for _, in := range [][]byte{
		{0, 0, 0, 7, 2, 0, 0, 0}, // size below 8
		{0, 0, 0, 8, 1, 0, 0, 0}, // doff below 2
		{0, 0, 0, 8, 3, 0, 0, 0}, // doff past the frame
		{0, 0, 0, 8, 2, 9, 0, 0}, // unknown type
		{0, 0, 0, 12, 2, 0x42, 0, 0, 0, 0, 0, 0},
	} {
		if _, err := reader(in, 512).ReadFrame(); !errors.Is(err, frames.ErrBadHeader) {
			t.Errorf("% x: %v", in, err)
		}
	}
}

func TestTruncatedStream(t *testing.T) {
	if _, err := reader(nil, 512).ReadFrame(); err != io.EOF {
		t.Errorf("empty: %v", err)
	}
	for _, n := range []int{3, 8, 20} {
		if _, err := reader(goldenOpen[:n], 512).ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func TestUnexpectedBodies(t *testing.T) {
	// A SASL frame body in an AMQP frame.
	sasl, _ := frames.AppendFrame(nil, frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeAuth}})
	sasl[5] = byte(frames.TypeAMQP)
	var de *types.DecodeError
	if _, err := reader(sasl, 512).ReadFrame(); !errors.As(err, &de) || !errors.Is(err, types.ErrDescriptor) {
		t.Errorf("SASL body in AMQP frame: %v", err)
	}
	// Bytes after an open.
	extra := cat(goldenOpen, []byte{0x40})
	extra[3]++
	if _, err := reader(extra, 512).ReadFrame(); !errors.Is(err, frames.ErrUnexpectedBody) {
		t.Errorf("payload after open: %v", err)
	}
	// The writer checks the same.
	if _, err := frames.AppendFrame(nil, frames.Frame{Type: frames.TypeSASL, Body: &types.Open{}}); !errors.Is(err, frames.ErrUnexpectedBody) {
		t.Errorf("open in SASL frame: %v", err)
	}
	if _, err := frames.AppendFrame(nil, frames.Frame{Body: &types.Flow{}, Payload: []byte{1}}); !errors.Is(err, frames.ErrUnexpectedBody) {
		t.Errorf("payload with flow: %v", err)
	}
	// A body that is not a described value.
	bad := []byte{0, 0, 0, 10, 2, 0, 0, 0, 0xa1, 0x00}
	if _, err := reader(bad, 512).ReadFrame(); !errors.Is(err, types.ErrFormatCode) {
		t.Errorf("string body: %v", err)
	}
}

// TestEveryPerformativeThroughFrames writes every performative and SASL
// frame and reads it back.
func TestEveryPerformativeThroughFrames(t *testing.T) {
	bodies := []frames.Frame{
		{Body: &types.Open{ContainerID: "x", MaxFrameSize: 1024, ChannelMax: 3, IdleTimeOut: types.Some(types.Milliseconds(0))}},
		{Channel: 2, Body: &types.Begin{RemoteChannel: types.Some(uint16(0)), NextOutgoingID: 1, IncomingWindow: 2, OutgoingWindow: 3, HandleMax: 4}},
		{Channel: 2, Body: &types.Attach{Name: "l", Handle: 0, Role: types.RoleSender, SndSettleMode: types.SenderSettleModeMixed,
			Target: &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}}, InitialDeliveryCount: types.Some(types.SequenceNo(0))}},
		{Channel: 2, Body: &types.Flow{IncomingWindow: 1, NextOutgoingID: 2, OutgoingWindow: 3, Handle: types.Some(types.Handle(0)), LinkCredit: types.Some(uint32(0)), Drain: true, Echo: true}},
		{Channel: 2, Body: &types.Transfer{Handle: 0, DeliveryID: types.Some(types.DeliveryNumber(0)), More: true, State: &types.TransactionalState{TxnID: []byte("tx"), Outcome: &types.Accepted{}}}, Payload: []byte{0x00, 0x53, 0x75, 0xa0, 0x00}},
		{Channel: 2, Body: &types.Disposition{Role: types.RoleReceiver, First: 0, Last: types.Some(types.DeliveryNumber(9)), Settled: true,
			State: &types.Rejected{Error: &types.Error{Condition: types.AMQPErrorNotFound, Description: "gone", Info: types.Fields{{Key: types.Symbol("a"), Value: int32(1)}}}}}},
		{Channel: 2, Body: &types.Disposition{Role: types.RoleReceiver, First: 1, State: &types.Modified{DeliveryFailed: types.Some(true), MessageAnnotations: types.Fields{}}}},
		{Channel: 2, Body: &types.Disposition{Role: types.RoleReceiver, First: 2, State: &types.Released{}}},
		{Channel: 2, Body: &types.Disposition{Role: types.RoleReceiver, First: 3, State: &types.Received{SectionNumber: 1, SectionOffset: 2}}},
		{Channel: 2, Body: &types.Disposition{Role: types.RoleSender, First: 4, State: &types.Declared{TxnID: []byte{1, 2}}}},
		{Channel: 2, Body: &types.Detach{Handle: 0, Closed: true, Error: &types.Error{Condition: types.LinkErrorDetachForced}}},
		{Channel: 2, Body: &types.End{Error: &types.Error{Condition: types.SessionErrorUnattachedHandle}}},
		{Body: &types.Close{Error: &types.Error{Condition: types.ConnectionErrorFramingError, Description: "bad"}}},
		{Type: frames.TypeSASL, Body: &types.SASLMechanisms{SASLServerMechanisms: []types.Symbol{"PLAIN", "ANONYMOUS"}}},
		{Type: frames.TypeSASL, Body: &types.SASLInit{Mechanism: "PLAIN", InitialResponse: []byte("\x00u\x00p"), Hostname: "h"}},
		{Type: frames.TypeSASL, Body: &types.SASLChallenge{Challenge: []byte{}}},
		{Type: frames.TypeSASL, Body: &types.SASLResponse{Response: []byte("r")}},
		{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeSysPerm, AdditionalData: []byte("d")}},
		{},
	}
	var buf bytes.Buffer
	w := frames.NewWriter(&buf, 4096)
	for _, f := range bodies {
		if err := w.WriteFrame(f); err != nil {
			t.Fatalf("%T: %v", f.Body, err)
		}
	}
	r := reader(buf.Bytes(), 4096)
	for _, want := range bodies {
		got, err := r.ReadFrame()
		if err != nil {
			t.Fatalf("%T: %v", want.Body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got  %#v\nwant %#v", got, want)
		}
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
}
