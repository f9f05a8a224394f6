package types

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var writeCorpus = flag.Bool("write-corpus", false, "write the fuzz seed corpora under testdata/fuzz")

// seedMessages returns encoded messages for the section fuzzers.
func seedMessages(t testing.TB) [][]byte {
	msgs := []*Message{
		benchMessage(),
		{
			Header:              &Header{Durable: Some(true), TTL: Some(Milliseconds(1000))},
			DeliveryAnnotations: DeliveryAnnotations{{Key: Symbol("x-opt-lock"), Value: UUID{1, 2}}},
			MessageAnnotations:  MessageAnnotations{{Key: Symbol("x-opt-jms-msg-type"), Value: int8(5)}, {Key: uint64(9), Value: Array{Symbol("a"), Symbol("b")}}},
			Properties:          &Properties{MessageID: uint64(7), CorrelationID: UUID{3}, ReplyTo: "temp-queue://x", GroupSequence: Some(SequenceNo(1))},
			Value:               &AMQPValue{Value: Map{{Key: "k", Value: []any{float32(1.5), Char('x'), Decimal64{1}, Timestamp(5)}}}},
			Footer:              Footer{{Key: Symbol("x-sig"), Value: []byte{1}}},
		},
		{Sequence: []AMQPSequence{{int32(1)}, {"s", nil, true}}},
		{Value: &AMQPValue{Value: Described{Descriptor: DeclareDescriptorCode, Value: []any{}}}},
		{Data: []Data{{}, []byte("abc")}},
	}
	var out [][]byte
	for _, m := range msgs {
		b, err := m.AppendAMQP(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkReencode re-encodes a decoded value, decodes it again and
// re-encodes that: the two encodings must be equal (decode∘encode is
// idempotent after one round).
func checkReencode(t *testing.T, name string, v Marshaler, decode func([]byte) (Marshaler, error)) {
	t.Helper()
	enc, err := v.AppendAMQP(nil)
	if err != nil {
		t.Fatalf("%s: re-encoding a decoded value: %v", name, err)
	}
	v2, err := decode(enc)
	if err != nil {
		t.Fatalf("%s: decoding the re-encoding % x: %v", name, enc, err)
	}
	enc2, err := v2.AppendAMQP(nil)
	if err != nil {
		t.Fatalf("%s: second re-encoding: %v", name, err)
	}
	if !bytes.Equal(enc, enc2) {
		t.Fatalf("%s: encodings differ\n% x\n% x", name, enc, enc2)
	}
}

// FuzzSectionsDecode decodes a transfer payload into its sections.
func FuzzSectionsDecode(f *testing.F) {
	for _, b := range seedMessages(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		spans, serr := ScanSections(b)
		if err != nil {
			return
		}
		if serr != nil {
			t.Fatalf("DecodeMessage accepts what ScanSections refuses: %v", serr)
		}
		if len(spans) > 0 && spans[len(spans)-1].End != len(b) {
			t.Fatalf("spans %v do not cover %d bytes", spans, len(b))
		}
		checkReencode(t, "message", m, func(b []byte) (Marshaler, error) { return DecodeMessage(b) })
	})
}

// sectionCodes are the descriptors FuzzSectionDecode chooses from.
func sectionCodes() []uint64 {
	return []uint64{
		HeaderDescriptorCode, DeliveryAnnotationsDescriptorCode, MessageAnnotationsDescriptorCode,
		PropertiesDescriptorCode, ApplicationPropertiesDescriptorCode, DataDescriptorCode,
		AMQPSequenceDescriptorCode, AMQPValueDescriptorCode, FooterDescriptorCode,
	}
}

// FuzzSectionDecode decodes one section with the decoder that sel picks:
// one fuzz target for the nine section decoders.
func FuzzSectionDecode(f *testing.F) {
	for _, b := range seedMessages(f) {
		spans, err := ScanSections(b)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range spans {
			for i, c := range sectionCodes() {
				if c == s.Code {
					f.Add(uint8(i), b[s.Start:s.End])
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, b []byte) {
		codes := sectionCodes()
		code := codes[int(sel)%len(codes)]
		v := newDescribed(code)
		if _, err := v.UnmarshalAMQP(b); err != nil {
			return
		}
		name, _ := v.Descriptor()
		checkReencode(t, string(name), v, func(b []byte) (Marshaler, error) {
			v := newDescribed(code)
			_, err := v.UnmarshalAMQP(b)
			return v, err
		})
	})
}

type anyValue struct{ v any }

func (a anyValue) AppendAMQP(b []byte) ([]byte, error) { return AppendValue(b, a.v) }

// FuzzValueDecode decodes a generic value.
func FuzzValueDecode(f *testing.F) {
	for _, b := range seedMessages(f) {
		f.Add(b)
	}
	f.Add([]byte{0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := DecodeValue(b)
		if err != nil {
			return
		}
		checkReencode(t, "value", anyValue{v}, func(b []byte) (Marshaler, error) {
			v, _, err := DecodeValue(b)
			return anyValue{v}, err
		})
	})
}

// TestWriteFuzzCorpus writes the fuzz seed corpora to testdata/fuzz when run
// with -write-corpus; the files are checked in, so plain go test runs
// them as regression tests.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -write-corpus to rewrite testdata/fuzz")
	}
	write := func(target, name string, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, a := range args {
			switch a := a.(type) {
			case []byte:
				s += fmt.Sprintf("[]byte(%q)\n", a)
			case uint8:
				s += fmt.Sprintf("byte(%q)\n", a)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range seedMessages(t) {
		write("FuzzSectionsDecode", fmt.Sprintf("seed-message-%d", i), b)
		write("FuzzValueDecode", fmt.Sprintf("seed-message-%d", i), b)
		spans, _ := ScanSections(b)
		for j, s := range spans {
			for k, c := range sectionCodes() {
				if c == s.Code {
					write("FuzzSectionDecode", fmt.Sprintf("seed-message-%d-section-%d", i, j), uint8(k), b[s.Start:s.End])
				}
			}
		}
	}
}
