package message

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// everyValue returns one or more values of every type, extremes included.
func everyValue() []Value {
	return []Value{
		NullValue(),
		BoolValue(true), BoolValue(false),
		ByteValue(math.MinInt8), ByteValue(math.MaxInt8), ByteValue(0),
		ShortValue(math.MinInt16), ShortValue(math.MaxInt16),
		IntValue(math.MinInt32), IntValue(math.MaxInt32), IntValue(-1),
		LongValue(math.MinInt64), LongValue(math.MaxInt64), LongValue(1<<53 + 1),
		FloatValue(1.1), FloatValue(float32(math.Inf(-1))), FloatValue(float32(math.NaN())), FloatValue(math.SmallestNonzeroFloat32),
		DoubleValue(math.Copysign(0, -1)), DoubleValue(math.NaN()), DoubleValue(math.MaxFloat64), DoubleValue(1e-310),
		StringValue(""), StringValue("héllo, 世界 \x00"), StringValue(strings.Repeat("s", 300)),
		BytesValue(nil), BytesValue([]byte{0, 0xff, 0x80}),
		CharValue('A'), CharValue(0xD800), CharValue(0xFFFF),
	}
}

// bodies returns a body of every kind.
func bodies(t testing.TB) []Body {
	fields := []Field{}
	for i, v := range everyValue() {
		fields = append(fields, Field{Name: "k" + string(rune('a'+i)), Value: v})
	}
	m, err := MapBody(fields...)
	if err != nil {
		t.Fatal(err)
	}
	return []Body{
		{},
		TextBody(""),
		TextBody("hello"),
		XMLBody("<order id='1'/>"),
		BytesBody([]byte{0, 1, 2, 0xff}),
		BytesBody(make([]byte, 70000)),
		m,
		{Kind: BodyMap},
		StreamBody(everyValue()...),
		StreamBody(),
	}
}

func roundTrip(t *testing.T, m *Message) *Message {
	t.Helper()
	enc, err := m.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	var got Message
	if err := got.UnmarshalBinary(enc); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	if !got.Equal(m) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, *m)
	}
	return &got
}

func TestCodecRoundTripBodies(t *testing.T) {
	for _, b := range bodies(t) {
		t.Run(b.Kind.String(), func(t *testing.T) {
			m := sample()
			m.Body = b
			roundTrip(t, m)
		})
	}
}

func TestCodecRoundTripValues(t *testing.T) {
	for _, v := range everyValue() {
		t.Run(v.Type.String(), func(t *testing.T) {
			m := &Message{}
			m.Props.SetUnchecked("p", v)
			got := roundTrip(t, m)
			if gv, _ := got.Props.Get("p"); gv.Type == Double && math.Float64bits(gv.F) != math.Float64bits(v.F) {
				t.Errorf("double bits changed: %x -> %x", math.Float64bits(v.F), math.Float64bits(gv.F))
			}
		})
	}
}

func TestCodecRoundTripHeaders(t *testing.T) {
	tests := []*Message{
		{},
		sample(),
		{
			ID: "ID:x", Destination: Destination{Kind: TempTopic, Name: "t/é"},
			DeliveryMode: NonPersistent, Priority: 0,
			Timestamp: math.MinInt64, Expiration: math.MaxInt64, DeliveryTime: -1,
			RedeliveryLimit: math.MinInt32, Producer: math.MaxUint64,
		},
		{RedeliveryLimit: math.MaxInt32, Priority: 255, DeliveryMode: 77, Destination: Destination{Kind: 200}},
	}
	for i, m := range tests {
		t.Run(string(rune('0'+i)), func(t *testing.T) { roundTrip(t, m) })
	}
}

func TestCodecDoesNotAlias(t *testing.T) {
	m := sample()
	enc, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	must(t, got.UnmarshalBinary(enc))
	for i := range enc {
		enc[i] = 0
	}
	if !got.Equal(m) {
		t.Error("the decoded message changed when the input was overwritten")
	}
}

func TestAppendBinary(t *testing.T) {
	m := sample()
	enc, _ := m.MarshalBinary()
	prefix := []byte("prefix")
	out, err := m.AppendBinary(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" || string(out[6:]) != string(enc) {
		t.Error("AppendBinary did not append the encoding")
	}
	allocs := testing.AllocsPerRun(100, func() {
		buf := make([]byte, 0, 4096)
		_, _ = m.AppendBinary(buf)
	})
	if allocs > 1 {
		t.Errorf("AppendBinary into a large enough buffer allocates %v times", allocs)
	}

	bad := sample()
	bad.Props[2].Value.Type = 99
	if out, err := bad.AppendBinary(prefix); err == nil || string(out) != "prefix" {
		t.Errorf("unknown type: %q, %v; want an error and dst unchanged", out, err)
	}
	bad = sample()
	bad.Body.Kind = 99
	if _, err := bad.MarshalBinary(); err == nil {
		t.Error("unknown body kind encoded")
	}
}

func TestUnmarshalBinaryErrors(t *testing.T) {
	good, err := sample().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// A message whose header is just an ID "a" and no properties, and
	// whose body is given separately.
	hdr := []byte{1, 'a', 0, 0, 0, 0, 0, 0, 2, 4, 0, 0, 0, 1, 0, 0}
	msg := func(header []byte, body ...byte) []byte {
		out := []byte{formatV1, byte(len(header))}
		out = append(out, header...)
		return append(out, body...)
	}
	withProp := func(value ...byte) []byte {
		h := append([]byte{}, hdr[:len(hdr)-1]...)
		h = append(h, 1, 1, 'p')
		return msg(append(h, value...), 0)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no data"},
		{"version 0", []byte{0}, "unsupported encoding version 0"},
		{"version 2", append([]byte{2}, good[1:]...), "unsupported encoding version 2"},
		{"no header length", []byte{1}, "header length"},
		{"header too long", []byte{1, 100, 0}, "exceeds"},
		{"huge header length", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "exceeds"},
		{"header short", msg(hdr[:5], 0), "unexpected end"},
		{"header long", msg(append(append([]byte{}, hdr...), 9), 0), "unexpected bytes"},
		{"no body", msg(hdr), "body kind"},
		{"unknown body kind", msg(hdr, 9), "unknown kind 9"},
		{"body too long", msg(hdr, 1, 5, 'a'), "exceeds"},
		{"trailing bytes", msg(hdr, 0, 0), "after the body"},
		{"string too long", msg(append([]byte{200, 1}, hdr[2:]...), 0), "exceeds"},
		{"varint overflow", msg(append(append([]byte{}, hdr[:11]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), 0), "overflows"},
		{"too many props", msg(append(append([]byte{}, hdr[:len(hdr)-1]...), 100), 0), "cannot fit"},
		{"bad bool", withProp(byte(Bool), 2), "not 0 or 1"},
		{"unknown type", withProp(99), "unknown value type"},
		{"int range", withProp(byte(Int), 0x80, 0x80, 0x80, 0x80, 0x20), "out of range"},
		{"short truncated", withProp(byte(Short), 1), "unexpected end"},
		{"float truncated", withProp(byte(Float), 1, 2, 3), "unexpected end"},
		{"double truncated", withProp(byte(Double), 1, 2, 3), "unexpected end"},
		{"bytes too long", withProp(byte(Bytes), 9, 1), "exceeds"},
		{"redelivery limit range", msg(append(append(append([]byte{}, hdr[:13]...), 0x80, 0x80, 0x80, 0x80, 0x20), 0, 0), 0), "redelivery limit"},
		{"map count", msg(hdr, byte(BodyMap), 1, 50), "cannot fit"},
		{"map trailing", msg(hdr, byte(BodyMap), 2, 0, 0), "unexpected bytes"},
		{"map entry", msg(hdr, byte(BodyMap), 3, 1, 1, 'k'), "unexpected end"},
		{"stream value", msg(hdr, byte(BodyStream), 2, 1, 99), "unknown value type"},
		{"stream truncated block", msg(hdr, byte(BodyStream), 9, 1), "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sample()
			err := m.UnmarshalBinary(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, tt.want)
			}
			if !m.Equal(sample()) {
				t.Error("a failed decode changed the message")
			}
		})
	}
	var ve *UnsupportedVersionError
	if err := new(Message).UnmarshalBinary([]byte{7}); !errors.As(err, &ve) || ve.Version != 7 {
		t.Errorf("version error = %v", err)
	}
	var de *DecodeError
	if err := new(Message).UnmarshalBinary(msg(hdr, 9)); !errors.As(err, &de) || de.Offset != len(msg(hdr)) {
		t.Errorf("decode error = %#v", err)
	}
	// The sanity of the helper itself: hdr with an empty body decodes.
	if err := new(Message).UnmarshalBinary(msg(hdr, 0)); err != nil {
		t.Fatalf("the test's base message does not decode: %v", err)
	}
	if err := new(Message).UnmarshalBinary(withProp(byte(Int), 10)); err != nil {
		t.Fatalf("the test's property message does not decode: %v", err)
	}
}

// TestUnmarshalBinaryPrefixes checks that every strict prefix of valid
// encodings is refused, and that no byte change panics.
func TestUnmarshalBinaryPrefixes(t *testing.T) {
	for _, b := range bodies(t) {
		m := sample()
		m.Body = b
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > 5000 {
			continue
		}
		for i := 0; i < len(enc); i++ {
			if err := new(Message).UnmarshalBinary(enc[:i]); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes decoded", b.Kind, i, len(enc))
			}
			c := append([]byte{}, enc...)
			c[i] ^= 0x5a
			var got Message
			_ = got.UnmarshalBinary(c) // must not panic
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, b := range bodies(f) {
		m := sample()
		m.Body = b
		if len(m.Body.Data) > 1000 {
			continue
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := m.UnmarshalBinary(data); err != nil {
			return
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v", err)
		}
		if len(enc) != m.Size() {
			t.Fatalf("Size %d, encoded %d bytes", m.Size(), len(enc))
		}
		var again Message
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if !again.Equal(&m) {
			t.Fatalf("re-encoding decodes differently:\n%+v\n%+v", m, again)
		}
		if len(enc) > len(data) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(data), len(enc))
		}
	})
}

func BenchmarkMarshalBinary(b *testing.B) {
	m := sample()
	b.ReportAllocs()
	b.SetBytes(int64(m.Size()))
	for b.Loop() {
		if _, err := m.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendBinary(b *testing.B) {
	m := sample()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(m.Size()))
	for b.Loop() {
		if _, err := m.AppendBinary(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalBinary(b *testing.B) {
	enc, err := sample().MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	var m Message
	for b.Loop() {
		if err := m.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
	}
}
