package spec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// asError returns err as an *Error, failing the test if it is not one.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not an *Error", err, err)
	}
	return e
}

// TestTruncatedAndOverlongMethods cuts every method's encoding at every
// length and adds a byte: each must fail with a frame-error naming the
// method.
func TestTruncatedAndOverlongMethods(t *testing.T) {
	f := newFiller(4)
	for _, m := range allMethods() {
		f.fill(m)
		payload := AppendMethod(nil, m)
		for n := 0; n < len(payload); n++ {
			_, err := DecodeMethod(payload[:n])
			if err == nil {
				t.Fatalf("%s cut to %d of %d bytes decoded", m.Name(), n, len(payload))
			}
			if e := asError(t, err); e.Code != FrameError || (n >= 4 && !strings.Contains(e.Msg, m.Name())) {
				t.Fatalf("%s cut to %d: %v", m.Name(), n, err)
			}
		}
		_, err := DecodeMethod(append(bytes.Clone(payload), 0))
		if e := asError(t, err); e.Code != FrameError || !strings.Contains(e.Msg, m.Name()+": 1 bytes after the last field") {
			t.Fatalf("%s with a byte more: %v", m.Name(), err)
		}
	}
	_, err := DecodeMethod([]byte{0, 60, 0, 99})
	if e := asError(t, err); e.Code != CommandInvalid || !strings.Contains(e.Msg, "class 60, method 99") {
		t.Fatalf("unknown method: %v", err)
	}
}

// TestFieldNamedInError checks that a decoding error says which field.
func TestFieldNamedInError(t *testing.T) {
	payload := AppendMethod(nil, &BasicPublish{Exchange: "x", RoutingKey: "rk"})
	payload = payload[:len(payload)-2] // into the routing key
	_, err := DecodeMethod(payload)
	if err == nil || !strings.Contains(err.Error(), "basic.publish: routing-key: truncated") {
		t.Fatalf("got %v", err)
	}
	// A long string claiming more than is there fails before allocating.
	bad := AppendMethod(nil, &ConnectionSecureOk{})
	bad = append(bad[:4], 0xff, 0xff, 0xff, 0xf0, 'x')
	_, err = DecodeMethod(bad)
	if err == nil || !strings.Contains(err.Error(), "connection.secure-ok: response: long string of 4294967280 bytes, 1 left") {
		t.Fatalf("got %v", err)
	}
	// A table inside a method: the error names the method, field and key.
	tab := AppendTable(nil, Table{"k": "v"})
	tab[len(tab)-6] = '?' // the type letter of k
	bad = append(AppendMethod(nil, &ExchangeBind{Destination: "d"})[:len(AppendMethod(nil, &ExchangeBind{Destination: "d"}))-4], tab...)
	_, err = DecodeMethod(bad)
	if err == nil || !strings.Contains(err.Error(), `exchange.bind: arguments: field table key "k": unknown field type '?'`) {
		t.Fatalf("got %v", err)
	}
}

func TestGarbageNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 64)
	ms := allMethods()
	for range 20000 {
		n := r.IntN(len(buf))
		for i := range buf[:n] {
			buf[i] = byte(r.Uint32())
		}
		if n >= 4 && r.IntN(2) == 0 { // a real method's ids, garbage arguments
			m := ms[r.IntN(len(ms))]
			buf[0], buf[1], buf[2], buf[3] = byte(m.ClassID()>>8), byte(m.ClassID()), byte(m.MethodID()>>8), byte(m.MethodID())
		}
		_, _ = DecodeMethod(buf[:n])
		_, _ = DecodeContentHeader(buf[:n])
		_, _, _ = DecodeTable(buf[:n])
	}
}

func TestContentHeaderErrors(t *testing.T) {
	h := ContentHeader{ClassID: ClassBasic, BodySize: 1, Properties: BasicProperties{Flags: FlagHeaders | FlagAppID, Headers: Table{"a": int64(1)}, AppID: "app"}}
	payload := AppendContentHeader(nil, &h)
	for n := 0; n < len(payload); n++ {
		if _, err := DecodeContentHeader(payload[:n]); err == nil {
			t.Fatalf("cut to %d of %d bytes decoded", n, len(payload))
		}
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"other class", append([]byte{0, 50}, payload[2:]...), "class 50 has no content"},
		{"continuation flag", append(bytes.Clone(payload[:12]), 0x00, 0x01), "flags 0x0001 name properties that class basic lacks"},
		{"trailing byte", append(bytes.Clone(payload), 0), "1 bytes after the last field"},
	} {
		_, err := DecodeContentHeader(tc.payload)
		if e := asError(t, err); e.Code != FrameError || !strings.Contains(e.Msg, tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// Decoding into a used header clears the properties now absent.
	var reuse ContentHeader
	if err := reuse.Decode(payload); err != nil {
		t.Fatal(err)
	}
	plain := ContentHeader{ClassID: ClassBasic, Properties: BasicProperties{Flags: FlagAppID, AppID: "other"}}
	if err := reuse.Decode(AppendContentHeader(nil, &plain)); err != nil {
		t.Fatal(err)
	}
	if reuse.Properties.Headers != nil || reuse.Properties.AppID != "other" || reuse.BodySize != 0 {
		t.Fatalf("reused header %+v", reuse)
	}
}

func TestTableDecoding(t *testing.T) {
	entry := func(key string, typ byte, v ...byte) []byte {
		return append(append(append([]byte{byte(len(key))}, key...), typ), v...)
	}
	table := func(entries ...[]byte) []byte {
		body := bytes.Join(entries, nil)
		return append([]byte{byte(len(body) >> 24), byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	}
	// The 0-9-1 PDF's letters that RabbitMQ does not use.
	got, _, err := DecodeTable(table(entry("u", 'U', 0xff, 0xfe), entry("l", 'L', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)))
	if err != nil || got["u"] != int16(-2) || got["l"] != int64(-1) {
		t.Fatalf("'U' and 'L': %#v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown type", table(entry("k", 'Z')), `field table key "k": unknown field type 'Z'`},
		{"size past the end", []byte{0, 0, 0, 9, 1}, "field table of 9 bytes, 1 left"},
		{"key past the table", table([]byte{5, 'a'}), "key of 5 bytes, 1 left"},
		{"value past the table", table(entry("k", 'I', 0, 0)), "truncated: 4 bytes needed, 2 left"},
		{"string past the table", table(entry("k", 'S', 0, 0, 0, 9, 'x')), "9 bytes, 1 left"},
		{"array element", table(entry("k", 'A', 0, 0, 0, 1, '?')), "field array element 0: unknown field type '?'"},
		{"no size", []byte{0, 0}, "the size needs 4"},
	} {
		_, _, err := DecodeTable(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// Nesting: MaxDepth-1 tables inside the top one decode, one more fails.
	nested := func(depth int) []byte {
		b := table()
		for range depth {
			b = table(append(append([]byte{1, 'n'}, 'F'), b...))
		}
		return b
	}
	if _, _, err := DecodeTable(nested(MaxDepth - 1)); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth-1, err)
	}
	if _, _, err := DecodeTable(nested(MaxDepth)); err == nil || !strings.Contains(err.Error(), "nested more than 32 deep") {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
	// Arrays count too: 31 arrays inside one another decode, 32 fail.
	arrays := func(n int) []byte {
		v := []byte{'V'}
		for range n {
			v = append([]byte{'A', byte(len(v) >> 24), byte(len(v) >> 16), byte(len(v) >> 8), byte(len(v))}, v...)
		}
		return table(append([]byte{1, 'a'}, v...))
	}
	if _, _, err := DecodeTable(arrays(MaxDepth - 1)); err != nil {
		t.Fatalf("%d arrays: %v", MaxDepth-1, err)
	}
	if _, _, err := DecodeTable(arrays(MaxDepth)); err == nil || !strings.Contains(err.Error(), "field array nested more than 32 deep") {
		t.Fatalf("%d arrays: %v", MaxDepth, err)
	}
}

func TestTableEncodingEdges(t *testing.T) {
	// An unsupported Go type is written as void, and Validate names it.
	tab := Table{"ok": "x", "bad": struct{}{}, "big": uint64(1)}
	got, _, err := DecodeTable(AppendTable(nil, tab))
	if err != nil || got["bad"] != nil || got["big"] != nil || got["ok"] != "x" || len(got) != 3 {
		t.Fatalf("decoded %#v, %v", got, err)
	}
	if err := tab.Validate(); err == nil || !strings.Contains(err.Error(), "table value bad: Go type struct {} has no AMQP field type") {
		t.Fatalf("Validate: %v", err)
	}
	if err := (Table{"a": Table{"b": []any{1, uint(2)}}}).Validate(); err == nil || !strings.Contains(err.Error(), "a.b[1]: Go type uint") {
		t.Fatalf("Validate nested: %v", err)
	}
	if err := (Table{strings.Repeat("k", 256): 1}).Validate(); err == nil || !strings.Contains(err.Error(), "longer than 255 bytes") {
		t.Fatalf("Validate long key: %v", err)
	}
	// int and map[string]any are accepted and come back as int64 and Table.
	got, _, err = DecodeTable(AppendTable(nil, Table{"i": 5, "m": map[string]any{"x": true}}))
	if err != nil || got["i"] != int64(5) || got["m"].(Table)["x"] != true {
		t.Fatalf("int and map: %#v, %v", got, err)
	}
	// A table that contains itself is encoded, cut at MaxDepth, and decodes.
	self := Table{}
	self["me"] = self
	if err := self.Validate(); err == nil || !strings.Contains(err.Error(), "nests more than") {
		t.Fatalf("Validate self: %v", err)
	}
	if _, _, err := DecodeTable(AppendTable(nil, self)); err != nil {
		t.Fatalf("self-containing table: %v", err)
	}
	arr := []any{nil}
	arr[0] = arr
	if _, _, err := DecodeTable(AppendTable(nil, Table{"a": arr})); err != nil {
		t.Fatalf("self-containing array: %v", err)
	}
}

func TestShortstrCut(t *testing.T) {
	// 254 ASCII bytes then a 3-byte character: the character does not fit
	// and is dropped whole.
	s := strings.Repeat("a", 254) + "€" + "tail"
	m := &BasicDeliver{ConsumerTag: s}
	var back BasicDeliver
	if err := back.Decode(m.Append(nil)); err != nil {
		t.Fatal(err)
	}
	if back.ConsumerTag != strings.Repeat("a", 254) || !utf8.ValidString(back.ConsumerTag) {
		t.Fatalf("cut to %d bytes: %q", len(back.ConsumerTag), back.ConsumerTag[250:])
	}
	exact := strings.Repeat("b", 255)
	if err := back.Decode((&BasicDeliver{ConsumerTag: exact}).Append(nil)); err != nil || back.ConsumerTag != exact {
		t.Fatalf("255 bytes: %v %d", err, len(back.ConsumerTag))
	}
}

func TestTimestamps(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Time
	}{
		{time.Time{}, time.Time{}},
		{time.Unix(1700000000, 999).In(time.FixedZone("x", 3600)), time.Unix(1700000000, 0).UTC()},
	} {
		h := ContentHeader{ClassID: ClassBasic, Properties: BasicProperties{Flags: FlagTimestamp, Timestamp: tc.in}}
		got, err := DecodeContentHeader(AppendContentHeader(nil, &h))
		if err != nil || !got.Properties.Timestamp.Equal(tc.want) || got.Properties.Timestamp.Location() != tc.want.Location() {
			t.Errorf("%v: got %v, %v", tc.in, got.Properties.Timestamp, err)
		}
	}
}
