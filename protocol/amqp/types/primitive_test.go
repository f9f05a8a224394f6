package types

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func hexBytes(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b = append(b, byte(p))
		case string:
			b = append(b, p...)
		case []byte:
			b = append(b, p...)
		}
	}
	return b
}

// TestPrimitiveEncodings checks that each value encodes to the compact
// encoding the specification defines and decodes back to the same Go type.
func TestPrimitiveEncodings(t *testing.T) {
	long := strings.Repeat("a", 256)
	for _, tc := range []struct {
		v    any
		want []byte
	}{
		{nil, hexBytes(0x40)},
		{true, hexBytes(0x41)},
		{false, hexBytes(0x42)},
		{uint8(0xfe), hexBytes(0x50, 0xfe)},
		{uint16(0x1234), hexBytes(0x60, 0x12, 0x34)},
		{uint32(0), hexBytes(0x43)},
		{uint32(255), hexBytes(0x52, 0xff)},
		{uint32(256), hexBytes(0x70, 0, 0, 1, 0)},
		{uint64(0), hexBytes(0x44)},
		{uint64(200), hexBytes(0x53, 200)},
		{uint64(math.MaxUint64), hexBytes(0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{int8(-2), hexBytes(0x51, 0xfe)},
		{int16(-2), hexBytes(0x61, 0xff, 0xfe)},
		{int32(-128), hexBytes(0x54, 0x80)},
		{int32(127), hexBytes(0x54, 0x7f)},
		{int32(128), hexBytes(0x71, 0, 0, 0, 0x80)},
		{int64(-1), hexBytes(0x55, 0xff)},
		{int64(math.MinInt64), hexBytes(0x81, 0x80, 0, 0, 0, 0, 0, 0, 0)},
		{float32(1), hexBytes(0x72, 0x3f, 0x80, 0, 0)},
		{float64(1), hexBytes(0x82, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0)},
		{Decimal32{1, 2, 3, 4}, hexBytes(0x74, 1, 2, 3, 4)},
		{Decimal64{1, 2, 3, 4, 5, 6, 7, 8}, hexBytes(0x84, 1, 2, 3, 4, 5, 6, 7, 8)},
		{Decimal128{15: 9}, hexBytes(0x94, make([]byte, 15), 9)},
		{Char('é'), hexBytes(0x73, 0, 0, 0, 0xe9)},
		{Timestamp(1), hexBytes(0x83, 0, 0, 0, 0, 0, 0, 0, 1)},
		{Timestamp(-1), hexBytes(0x83, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{UUID{0: 0xab, 15: 0xcd}, hexBytes(0x98, 0xab, make([]byte, 14), 0xcd)},
		{[]byte{}, hexBytes(0xa0, 0)},
		{[]byte{1, 2}, hexBytes(0xa0, 2, 1, 2)},
		{[]byte(long), hexBytes(0xb0, 0, 0, 1, 0, long)},
		{"", hexBytes(0xa1, 0)},
		{"hé", hexBytes(0xa1, 3, "hé")},
		{long, hexBytes(0xb1, 0, 0, 1, 0, long)},
		{Symbol("s"), hexBytes(0xa3, 1, "s")},
		{Symbol(long), hexBytes(0xb3, 0, 0, 1, 0, long)},
		{[]any{}, hexBytes(0x45)},
		{[]any{nil, true}, hexBytes(0xc0, 3, 2, 0x40, 0x41)},
		{Map{}, hexBytes(0xc1, 1, 0)},
		{Map{{Key: Symbol("k"), Value: uint32(1)}}, hexBytes(0xc1, 6, 2, 0xa3, 1, "k", 0x52, 1)},
		{Array{int32(1), int32(-1)}, hexBytes(0xe0, 10, 2, 0x71, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff)},
		{Array{Symbol("a"), Symbol("bc")}, hexBytes(0xe0, 7, 2, 0xa3, 1, "a", 2, "bc")},
		{Array{}, hexBytes(0xe0, 2, 0, 0x40)},
		{Array{true, false}, hexBytes(0xe0, 4, 2, 0x56, 1, 0)},
		{Described{Descriptor: uint64(0x75), Value: []byte{7}}, hexBytes(0x00, 0x53, 0x75, 0xa0, 1, 7)},
		{Described{Descriptor: Symbol("x:y"), Value: nil}, hexBytes(0x00, 0xa3, 3, "x:y", 0x40)},
	} {
		b, err := AppendValue(nil, tc.v)
		if err != nil {
			t.Errorf("%T %v: %v", tc.v, tc.v, err)
			continue
		}
		if !bytes.Equal(b, tc.want) {
			t.Errorf("%T %v: encoded % x, want % x", tc.v, tc.v, b, tc.want)
		}
		got, n, err := DecodeValue(b)
		if err != nil || n != len(b) {
			t.Errorf("%T %v: decode: %v (%d of %d bytes)", tc.v, tc.v, err, n, len(b))
			continue
		}
		if !reflect.DeepEqual(got, tc.v) {
			t.Errorf("%T %v: decoded %#v", tc.v, tc.v, got)
		}
	}
}

// TestWideEncodingsDecode decodes the non-compact encodings that other
// encoders may choose.
func TestWideEncodingsDecode(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want any
	}{
		{hexBytes(0x56, 0), false},
		{hexBytes(0x56, 1), true},
		{hexBytes(0x70, 0, 0, 0, 5), uint32(5)},
		{hexBytes(0x80, 0, 0, 0, 0, 0, 0, 0, 5), uint64(5)},
		{hexBytes(0x71, 0xff, 0xff, 0xff, 0xfb), int32(-5)},
		{hexBytes(0x81, 0, 0, 0, 0, 0, 0, 0, 5), int64(5)},
		{hexBytes(0xb1, 0, 0, 0, 1, "x"), "x"},
		{hexBytes(0xb3, 0, 0, 0, 1, "x"), Symbol("x")},
		{hexBytes(0xb0, 0, 0, 0, 0), []byte{}},
		{hexBytes(0xd0, 0, 0, 0, 5, 0, 0, 0, 1, 0x40), []any{nil}},
		{hexBytes(0xd1, 0, 0, 0, 4, 0, 0, 0, 0), Map{}},
		{hexBytes(0xf0, 0, 0, 0, 7, 0, 0, 0, 2, 0x52, 3, 4), Array{uint32(3), uint32(4)}},
		{hexBytes(0xe0, 2, 2, 0x43), Array{uint32(0), uint32(0)}},
		// An array of described values.
		{hexBytes(0xe0, 7, 2, 0x00, 0x53, 0x01, 0xa1, 0, 0), Array{Described{uint64(1), ""}, Described{uint64(1), ""}}},
	} {
		got, n, err := DecodeValue(tc.in)
		if err != nil || n != len(tc.in) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("% x: %#v, %d, %v; want %#v", tc.in, got, n, err, tc.want)
		}
	}
}

// TestTypedReadersWiden: a field of type uint accepts ubyte and ushort
// encodings; a uint field refuses a ulong or a signed int.
func TestTypedReadersWiden(t *testing.T) {
	d := decoder{buf: hexBytes(0x50, 7, 0x60, 1, 0, 0x52, 9)}
	for _, want := range []uint32{7, 256, 9} {
		if v, err := d.readUint32(); err != nil || v != want {
			t.Fatalf("%d: %v", v, err)
		}
	}
	for _, in := range [][]byte{hexBytes(0x53, 1), hexBytes(0x54, 1), hexBytes(0xa1, 0)} {
		d := decoder{buf: in}
		if _, err := d.readUint32(); !errors.Is(err, ErrFormatCode) {
			t.Errorf("% x: %v", in, err)
		}
	}
}

func TestMapKeepsOrderAndKeyTypes(t *testing.T) {
	m := Map{
		{Key: "b", Value: int32(1)},
		{Key: Symbol("b"), Value: int64(2)},
		{Key: uint64(3), Value: int8(3)},
		{Key: []byte("k"), Value: nil},
		{Key: "a", Value: Map{{Key: int32(1), Value: []any{int16(1)}}}},
	}
	b, err := AppendValue(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := DecodeValue(b)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("%#v %v", got, err)
	}
	if v, ok := m.Get(Symbol("b")); !ok || v != int64(2) {
		t.Errorf("Get(Symbol b) = %v", v)
	}
	if v, ok := m.Get("b"); !ok || v != int32(1) {
		t.Errorf("Get(b) = %v", v)
	}
	if _, ok := m.Get([]byte("k")); !ok {
		t.Error("Get([]byte) found nothing")
	}
	if _, ok := m.Get(struct{ X any }{X: []byte{1}}); ok {
		t.Error("Get(struct) found something")
	}
}

func TestEncodeUnsupported(t *testing.T) {
	for _, v := range []any{
		1, uint(1), []int{1}, map[string]any{},
		Array{int32(1), int64(1)},
		Array{Described{uint64(1), 1}, Described{uint64(2), 1}},
		Map{{Key: "k", Value: struct{}{}}},
	} {
		if _, err := AppendValue(nil, v); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%#v: %v", v, err)
		}
	}
	_, err := (&Open{Properties: Fields{{Key: Symbol("p"), Value: 5}}}).AppendAMQP(nil)
	var ee *EncodeError
	if !errors.As(err, &ee) || ee.Type != "open" || ee.Field != "properties" || !strings.Contains(err.Error(), "open.properties") {
		t.Errorf("got %v", err)
	}
}

func TestEncodeConveniences(t *testing.T) {
	ts := time.UnixMilli(1234).UTC()
	b, err := AppendValue(nil, ts)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := DecodeValue(b); v != Timestamp(1234) || v.(Timestamp).Time() != ts {
		t.Errorf("time.Time decoded as %v", v)
	}
	b, _ = AppendValue(nil, []Symbol{"a"})
	if v, _, _ := DecodeValue(b); !reflect.DeepEqual(v, Array{Symbol("a")}) {
		t.Errorf("[]Symbol decoded as %v", v)
	}
	b, _ = AppendValue(nil, RoleReceiver)
	if v, _, _ := DecodeValue(b); v != true {
		t.Errorf("Role decoded as %v", v)
	}
	b, _ = AppendValue(nil, Map{{Key: Symbol("policy"), Value: &DeleteOnClose{}}})
	if v, _, _ := DecodeValue(b); !reflect.DeepEqual(v, Map{{Key: Symbol("policy"), Value: Described{uint64(0x2b), []any{}}}}) {
		t.Errorf("lifetime policy decoded as %#v", v)
	}
	if (UUID{0x12, 0x34, 15: 0xff}).String() != "12340000-0000-0000-0000-0000000000ff" {
		t.Error("UUID.String")
	}
}

func TestLargeCompoundsWiden(t *testing.T) {
	// More than 255 elements, or more than 255 bytes, needs list32/map32/array32.
	l := make([]any, 300)
	a := make(Array, 300)
	m := make(Map, 130)
	for i := range l {
		l[i] = int32(i)
		a[i] = uint16(i)
	}
	for i := range m {
		m[i] = MapEntry{Key: int32(i), Value: nil}
	}
	for _, tc := range []struct {
		v    any
		code FormatCode
	}{{l, CodeList32}, {a, CodeArray32}, {m, CodeMap32}, {Array{[]any{int32(1)}, []any{}}, CodeArray8}} {
		b, err := AppendValue(nil, tc.v)
		if err != nil || FormatCode(b[0]) != tc.code {
			t.Fatalf("%T: code %v, %v", tc.v, FormatCode(b[0]), err)
		}
		got, n, err := DecodeValue(b)
		if err != nil || n != len(b) || !reflect.DeepEqual(got, tc.v) {
			t.Fatalf("%T: %v", tc.v, err)
		}
	}
	// A composite whose fields outgrow list8.
	p := &Properties{Subject: strings.Repeat("s", 300)}
	b, err := p.AppendAMQP(nil)
	if err != nil || FormatCode(b[3]) != CodeList32 {
		t.Fatalf("properties: % x %v", b[:4], err)
	}
	var q Properties
	if err := Unmarshal(b, &q); err != nil || q.Subject != p.Subject {
		t.Fatal(err)
	}
}
