package types

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// described prefixes a list body with a smallulong descriptor.
func described(code byte, rest ...any) []byte {
	return hexBytes(append([]any{0x00, 0x53, int(code)}, rest...)...)
}

// list8 encodes a list8 of count elements, computing its size.
func list8(count int, elems ...any) []byte {
	body := hexBytes(elems...)
	return append([]byte{0xc0, byte(len(body) + 1), byte(count)}, body...)
}

// array8 encodes an array8 of count elements after the constructor ctor.
func array8(count int, ctor byte, elems ...any) []byte {
	body := hexBytes(elems...)
	return append([]byte{0xe0, byte(len(body) + 2), byte(count), ctor}, body...)
}

func TestMandatoryFieldMissing(t *testing.T) {
	for _, tc := range []struct {
		in          []byte
		v           Unmarshaler
		typ, field  string
		errContains string
	}{
		{described(0x10, 0x45), new(Open), "open", "container-id", "open.container-id"},
		{described(0x10, 0xc0, 1, 0), new(Open), "open", "container-id", "open.container-id"},
		{described(0x10, 0xc0, 2, 1, 0x40), new(Open), "open", "container-id", "open.container-id"}, // explicit null
		{described(0x12, list8(1, 0xa1, 1, "n")), new(Attach), "attach", "handle", "attach.handle"},
		{described(0x12, list8(2, 0xa1, 1, "n", 0x43)), new(Attach), "attach", "role", "attach.role"},
		{described(0x11, 0xc0, 3, 2, 0x40, 0x43), new(Begin), "begin", "incoming-window", "begin.incoming-window"},
		{described(0x14, 0x45), new(Transfer), "transfer", "handle", "transfer.handle"},
		{described(0x15, 0xc0, 2, 1, 0x41), new(Disposition), "disposition", "first", "disposition.first"},
		{described(0x16, 0x45), new(Detach), "detach", "handle", "detach.handle"},
		{described(0x1d, 0x45), new(Error), "error", "condition", "error.condition"},
		{described(0x23, 0xc0, 2, 1, 0x43), new(Received), "received", "section-offset", "received.section-offset"},
		{described(0x32, 0x45), new(Discharge), "discharge", "txn-id", "discharge.txn-id"},
		{described(0x40, 0x45), new(SASLMechanisms), "sasl-mechanisms", "sasl-server-mechanisms", "sasl-mechanisms.sasl-server-mechanisms"},
		{described(0x44, 0x45), new(SASLOutcome), "sasl-outcome", "code", "sasl-outcome.code"},
	} {
		_, err := tc.v.UnmarshalAMQP(tc.in)
		var de *DecodeError
		if !errors.Is(err, ErrMissingField) || !errors.As(err, &de) || de.Type != tc.typ {
			t.Errorf("% x: %v", tc.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.errContains) {
			t.Errorf("%q does not name %s", err, tc.errContains)
		}
	}
	// The nested path: transfer.state → rejected.error → error.condition.
	in := described(0x14, list8(8, 0x43, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, described(0x25, list8(1, described(0x1d, 0x45)))))
	_, err := new(Transfer).UnmarshalAMQP(in)
	if !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), "transfer.state at 13: rejected.error at 19: error.condition") {
		t.Errorf("nested: %v", err)
	}
	// Encoding refuses a missing mandatory "*" or described field.
	if _, err := (&Discharge{}).AppendAMQP(nil); !errors.Is(err, ErrMissingField) {
		t.Errorf("encode discharge without txn-id: %v", err)
	}
}

func TestDefaultsApplied(t *testing.T) {
	// attach with only its mandatory fields, and a source with no fields.
	in := described(0x12, list8(6, 0xa1, 1, "n", 0x43, 0x41, 0x40, 0x40, described(0x28, 0x45)))
	var a Attach
	if err := Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	want := &Attach{Name: "n", Role: RoleReceiver, SndSettleMode: SenderSettleModeMixed, RcvSettleMode: ReceiverSettleModeFirst,
		Source: &Source{Durable: TerminusDurabilityNone, ExpiryPolicy: TerminusExpiryPolicySessionEnd}}
	if !reflect.DeepEqual(&a, want) {
		t.Fatalf("got %+v, source %+v", a, a.Source)
	}
	var o Open
	if err := Unmarshal(described(0x10, 0xc0, 3, 1, 0xa1, 0), &o); err != nil {
		t.Fatal(err)
	}
	if o.MaxFrameSize != 4294967295 || o.ChannelMax != 65535 || o.IdleTimeOut.Present {
		t.Fatalf("open %+v", o)
	}
	if !reflect.DeepEqual(&o, &Open{MaxFrameSize: NewOpen().MaxFrameSize, ChannelMax: NewOpen().ChannelMax}) {
		t.Fatal("NewOpen disagrees with decoded defaults")
	}
	// Fields equal to their default are not encoded.
	b, _ := NewAttach().AppendAMQP(nil)
	if !bytes.Equal(b, described(0x12, list8(3, 0xa1, 0, 0x43, 0x42))) {
		t.Fatalf("NewAttach encodes as % x", b)
	}
	// Decoding into a used value resets absent fields.
	o.Hostname, o.IdleTimeOut, o.Properties = "h", Some(Milliseconds(1)), Fields{}
	if err := Unmarshal(described(0x10, 0xc0, 3, 1, 0xa1, 0), &o); err != nil || o.Hostname != "" || o.IdleTimeOut.Present || o.Properties != nil {
		t.Fatalf("reused: %+v %v", o, err)
	}
}

func TestMultipleFields(t *testing.T) {
	single := described(0x40, 0xc0, 8, 1, 0xa3, 5, "PLAIN")
	array := described(0x40, list8(1, array8(2, 0xa3, 5, "PLAIN", 4, "ANON")))
	array32 := described(0x40, 0xc0, 21, 1, 0xf0, 0, 0, 0, 15, 0, 0, 0, 2, 0xb3, 0, 0, 0, 1, "A", 0, 0, 0, 1, "B")
	empty := described(0x40, list8(1, array8(0, 0xa3)))
	for _, tc := range []struct {
		in   []byte
		want []Symbol
	}{
		{single, []Symbol{"PLAIN"}},
		{array, []Symbol{"PLAIN", "ANON"}},
		{array32, []Symbol{"A", "B"}},
		{empty, []Symbol{}},
	} {
		var m SASLMechanisms
		if err := Unmarshal(tc.in, &m); err != nil || !reflect.DeepEqual(m.SASLServerMechanisms, tc.want) {
			t.Errorf("% x: %#v %v", tc.in, m.SASLServerMechanisms, err)
		}
	}
	// Always encoded as an array.
	b, _ := (&SASLMechanisms{SASLServerMechanisms: []Symbol{"PLAIN"}}).AppendAMQP(nil)
	if !bytes.Equal(b, described(0x40, list8(1, array8(1, 0xa3, 5, "PLAIN")))) {
		t.Errorf("encoded % x", b)
	}
	// An array of another type is refused.
	bad := described(0x40, list8(1, array8(1, 0xa1, 1, "x")))
	if err := Unmarshal(bad, new(SASLMechanisms)); !errors.Is(err, ErrFormatCode) {
		t.Errorf("string array: %v", err)
	}
}

// TestHostileSizes: sizes and counts beyond the input are errors before
// any allocation; nothing panics.
func TestHostileSizes(t *testing.T) {
	for _, in := range [][]byte{
		hexBytes(0xb1, 0xff, 0xff, 0xff, 0xff, "x"),                                // str32 of 4 GiB
		hexBytes(0xb0, 0x7f, 0xff, 0xff, 0xff),                                     // vbin32 of 2 GiB
		hexBytes(0xa3, 200, "abc"),                                                 // sym8 longer than the input
		hexBytes(0xd0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),             // list32 of 4 GiB
		hexBytes(0xd0, 0, 0, 0, 8, 0x7f, 0xff, 0xff, 0xff, 0x40, 0x40, 0x40, 0x40), // count far beyond size
		hexBytes(0xd1, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0x40, 0x40, 0x40, 0x40),
		hexBytes(0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x40),                          // 4 G nulls in 5 bytes
		hexBytes(0xf0, 0, 0, 0, 5, 0x00, 0x10, 0x00, 0x00, 0x45),                          // 1 M empty lists in 5 bytes
		hexBytes(0xf0, 0, 0, 0, 13, 0x00, 0x10, 0x00, 0x00, 0x81, 1, 2, 3, 4, 5, 6, 7, 8), // 1 M longs, one present
		hexBytes(0xe0, 3, 200, 0xa1, 0),                                                   // 200 strings in 1 byte
		hexBytes(0xc0, 1, 0),                                                              // list8 of size 1: fine, count 0
		hexBytes(0xc0, 0),                                                                 // list8 of size 0: no room for the count
		hexBytes(0xc1, 3, 1, 0x40, 0x40),                                                  // map with an odd count
		hexBytes(0xc0, 3, 1, 0x40, 0x40),                                                  // list elements short of the size
		hexBytes(0x00, 0x00, 0x00, 0x00),                                                  // descriptors all the way down
		hexBytes(0xff),                                                                    // not a format code
		hexBytes(0x56, 2),                                                                 // boolean 2
		hexBytes(0xe0, 2, 1, 0x00),                                                        // described element constructor without descriptor
	} {
		v, _, err := DecodeValue(in)
		if in[0] == 0xc0 && len(in) == 3 && in[1] == 1 {
			if err != nil {
				t.Errorf("% x: %v", in, err)
			}
			continue
		}
		var de *DecodeError
		if err == nil || !errors.As(err, &de) {
			t.Errorf("% x: decoded %#v, err %v", in, v, err)
		}
	}
	// The same for typed fields: a delivery-tag of 4 GiB in a transfer.
	in := described(0x14, 0xc0, 8, 3, 0x43, 0x43, 0xb0, 0xff, 0xff, 0xff, 0xff)
	if _, err := new(Transfer).UnmarshalAMQP(in); !errors.Is(err, ErrLength) {
		t.Errorf("delivery-tag: %v", err)
	}
	// And an allocation check: decoding an array that claims 16 M elements
	// must not allocate for them.
	huge := hexBytes(0xf0, 0, 0, 0, 5, 0x01, 0x00, 0x00, 0x00, 0x40)
	allocs := testing.AllocsPerRun(10, func() { _, _, _ = DecodeValue(huge) })
	if allocs > 10 {
		t.Errorf("%v allocations", allocs)
	}
}

func TestNestingDepth(t *testing.T) {
	nest := func(n int, open ...byte) []byte {
		var b []byte
		for i := 0; i < n; i++ {
			b = append(b, open...)
		}
		return append(b, 0x40)
	}
	// Described values carry no size to check against the input: deep
	// nesting fails on depth, not on a stack overflow.
	for _, in := range [][]byte{
		nest(100000, 0x00, 0x40), // described values
		nest(MaxDepth+1, 0x00, 0x40),
	} {
		if _, _, err := DecodeValue(in); !errors.Is(err, ErrDepth) {
			t.Errorf("%d bytes: %v", len(in), err)
		}
	}
	deep := func(n int) []byte { // n nested list8s, each holding the next
		b := []byte{0x40}
		for i := 0; i < n; i++ {
			b = append([]byte{0xc0, byte(len(b) + 1), 1}, b...)
		}
		return b
	}
	if _, _, err := DecodeValue(deep(MaxDepth)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	if _, _, err := DecodeValue(deep(MaxDepth + 1)); !errors.Is(err, ErrDepth) {
		t.Errorf("depth %d: %v", MaxDepth+1, err)
	}
}

func TestDescriptorChecks(t *testing.T) {
	// A begin where an open is expected.
	if err := Unmarshal(described(0x11, 0x45), new(Open)); !errors.Is(err, ErrDescriptor) {
		t.Errorf("begin as open: %v", err)
	}
	// A delivery state that is not one.
	in := described(0x15, 0xc0, 8, 5, 0x41, 0x43, 0x40, 0x40, 0x00, 0x53, 0x10, 0x45)
	if err := Unmarshal(in, new(Disposition)); !errors.Is(err, ErrDescriptor) || !strings.Contains(err.Error(), "not a delivery-state") {
		t.Errorf("open as state: %v", err)
	}
	// Unknown descriptors: numeric and symbolic.
	if _, _, err := DecodePerformative(described(0x99, 0x45)); !errors.Is(err, ErrDescriptor) {
		t.Errorf("0x99: %v", err)
	}
	if _, _, err := DecodeKnown(hexBytes(0x00, 0xa3, 3, "a:b", 0x45)); !errors.Is(err, ErrDescriptor) || !strings.Contains(err.Error(), "a:b") {
		t.Errorf("a:b: %v", err)
	}
	// Symbolic descriptors of known types decode.
	p, _, err := DecodePerformative(hexBytes(0x00, 0xa3, 15, "amqp:close:list", 0x45))
	if _, ok := p.(*Close); !ok || err != nil {
		t.Errorf("symbolic close: %T %v", p, err)
	}
	// A descriptor that is neither ulong nor symbol.
	if _, _, err := DecodePerformative(hexBytes(0x00, 0xa1, 1, "x", 0x45)); !errors.Is(err, ErrFormatCode) {
		t.Errorf("string descriptor: %v", err)
	}
	// Generic Described of a known type converts.
	v, err := FromDescribed(Described{Descriptor: uint64(DeclareDescriptorCode), Value: []any{}})
	if _, ok := v.(*Declare); !ok || err != nil {
		t.Errorf("FromDescribed: %T %v", v, err)
	}
}

func TestExtraFieldsIgnored(t *testing.T) {
	// A close with two fields (the second unknown) decodes; the extra is
	// skipped, including a nested compound.
	in := described(0x18, 0xc0, 7, 2, 0x40, 0xc0, 3, 1, 0xa1, 0)
	var c Close
	if err := Unmarshal(in, &c); err != nil || c.Error != nil {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestMessageSections(t *testing.T) {
	m := &Message{
		Header:                &Header{Durable: Some(true), Priority: Some(uint8(9)), TTL: Some(Milliseconds(100)), FirstAcquirer: Some(false), DeliveryCount: Some(uint32(2))},
		DeliveryAnnotations:   DeliveryAnnotations{{Key: Symbol("x-da"), Value: uint64(1)}},
		MessageAnnotations:    MessageAnnotations{{Key: Symbol("x-opt-to"), Value: "q"}, {Key: uint64(5), Value: Array{int64(1)}}},
		Properties:            &Properties{MessageID: UUID{1}, UserID: []byte("u"), CorrelationID: []byte{9}, AbsoluteExpiryTime: Some(Timestamp(7)), ReplyToGroupID: "g"},
		ApplicationProperties: ApplicationProperties{{Key: "a", Value: int32(1)}},
		Sequence:              []AMQPSequence{{int32(1), "two"}, {}},
		Footer:                Footer{{Key: Symbol("x-hash"), Value: []byte{1, 2}}},
	}
	b, err := m.AppendAMQP(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMessage(b)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("%v\n got %#v\nwant %#v", err, got, m)
	}
	if got.BodyKind() != BodySequence {
		t.Errorf("body kind %v", got.BodyKind())
	}
	spans, err := ScanSections(b)
	if err != nil || len(spans) != 8 || spans[0].Start != 0 || spans[7].End != len(b) || spans[3].Code != PropertiesDescriptorCode {
		t.Fatalf("spans %v %v", spans, err)
	}
	for i := 1; i < len(spans); i++ {
		if spans[i].Start != spans[i-1].End {
			t.Fatalf("spans %v", spans)
		}
	}
	// The body kinds.
	for _, tc := range []struct {
		m    Message
		kind BodyKind
	}{
		{Message{Value: &AMQPValue{Value: nil}}, BodyValue},
		{Message{Data: []Data{{}, {1}}}, BodyData},
		{Message{}, BodyNone},
	} {
		b, err := tc.m.AppendAMQP(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessage(b)
		if err != nil || got.BodyKind() != tc.kind || !reflect.DeepEqual(*got, tc.m) {
			t.Errorf("%v: %#v %v", tc.kind, got, err)
		}
	}
	if _, err := (&Message{Data: []Data{{}}, Value: &AMQPValue{}}).AppendAMQP(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("two bodies: %v", err)
	}
}

func TestMessageSectionOrder(t *testing.T) {
	enc := func(vs ...Marshaler) []byte {
		var b []byte
		for _, v := range vs {
			b, _ = v.AppendAMQP(b)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"properties before header", enc(&Properties{}, &Header{})},
		{"two headers", enc(&Header{}, &Header{})},
		{"data then value", enc(Data{1}, AMQPValue{})},
		{"two values", enc(AMQPValue{}, AMQPValue{})},
		{"sequence then data", enc(AMQPSequence{}, Data{})},
		{"footer then data", enc(Footer{}, Data{})},
		{"a performative", enc(&Open{})},
		{"trailing garbage", append(enc(Data{1}), 0x40)},
		{"truncated", enc(Data{1, 2, 3})[:6]},
	} {
		if _, err := DecodeMessage(tc.in); err == nil {
			t.Errorf("%s: no error", tc.name)
		} else if _, err2 := ScanSections(tc.in); err2 == nil {
			t.Errorf("%s: ScanSections: no error", tc.name)
		}
	}
	if _, err := DecodeMessage(enc(Data{1}, Data{2}, Footer{})); err != nil {
		t.Errorf("data, data, footer: %v", err)
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := new(Attach).UnmarshalAMQP(described(0x12, 0xc0, 5, 2, 0xa1, 1, "n", 0xa1))
	want := "amqp: decode attach.handle at 9: uint at 9: unexpected format code 0xa1 (str8-utf8)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
