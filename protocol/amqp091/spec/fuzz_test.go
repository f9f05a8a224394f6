package spec

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// seedMethodPayloads returns method payloads for the fuzz corpus: the
// golden frames' and one of every method with random fields.
func seedMethodPayloads(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, g := range goldenFrames(t) {
		seeds = append(seeds, g.frame[7:len(g.frame)-1])
	}
	f := newFiller(7)
	for _, m := range allMethods() {
		f.fill(m)
		seeds = append(seeds, AppendMethod(nil, m))
	}
	return seeds
}

// same reports whether two decoded values are equal, printing them with
// %#v so that NaN floats in tables compare equal to themselves and map
// keys come sorted.
func same(a, b any) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) }

func FuzzDecodeMethod(f *testing.F) {
	for _, s := range seedMethodPayloads(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, err := DecodeMethod(payload)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			return
		}
		b1 := AppendMethod(nil, m)
		m2, err := DecodeMethod(b1)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v\n% x", m.Name(), err, b1)
		}
		if !same(m, m2) {
			t.Fatalf("%s changed:\n%#v\n%#v", m.Name(), m, m2)
		}
		if b2 := AppendMethod(nil, m2); !bytes.Equal(b1, b2) {
			t.Fatalf("%s encodes differently:\n% x\n% x", m.Name(), b1, b2)
		}
	})
}

func FuzzContentHeader(f *testing.F) {
	f.Add([]byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0x90, 0x40, 10, 't', 'e', 'x', 't', '/', 'p', 'l', 'a', 'i', 'n', 2, 0, 0, 0, 0, 0x65, 0x53, 0xf1, 0})
	full := ContentHeader{ClassID: ClassBasic, BodySize: 1 << 40}
	newFiller(8).fill(&full.Properties)
	full.Properties.Flags = BasicPropertiesFlagMask
	f.Add(AppendContentHeader(nil, &full))
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, err := DecodeContentHeader(payload)
		if err != nil {
			return
		}
		b1 := AppendContentHeader(nil, &h)
		h2, err := DecodeContentHeader(b1)
		if err != nil {
			t.Fatalf("re-encoded header does not decode: %v", err)
		}
		if !same(h, h2) {
			t.Fatalf("header changed:\n%#v\n%#v", h, h2)
		}
		if b2 := AppendContentHeader(nil, &h2); !bytes.Equal(b1, b2) {
			t.Fatalf("encodes differently:\n% x\n% x", b1, b2)
		}
	})
}

func FuzzTable(f *testing.F) {
	f.Add(AppendTable(nil, newFiller(9).table(2)))
	f.Add(AppendTable(nil, Table{"t": time.Unix(1, 0), "a": []any{[]any{Table{}}}, "v": nil}))
	f.Add([]byte{0, 0, 0, 5, 1, 'u', 'U', 0xff, 0xfe})
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, n, err := DecodeTable(b)
		if err != nil {
			return
		}
		if n < 4 || n > len(b) {
			t.Fatalf("used %d of %d bytes", n, len(b))
		}
		b1 := AppendTable(nil, tab)
		tab2, n2, err := DecodeTable(b1)
		if err != nil || n2 != len(b1) {
			t.Fatalf("re-encoded table does not decode: %v (%d of %d bytes)", err, n2, len(b1))
		}
		if !same(tab, tab2) {
			t.Fatalf("table changed:\n%#v\n%#v", tab, tab2)
		}
		if err := tab.Validate(); err != nil {
			t.Fatalf("a decoded table does not validate: %v", err)
		}
	})
}

func FuzzFrameReader(f *testing.F) {
	var all []byte
	for _, g := range goldenFrames(f) {
		f.Add(g.frame)
		all = append(all, g.frame...)
	}
	f.Add(all)
	f.Add(AppendHeartbeat(AppendFrame(nil, FrameBody, 9, make([]byte, 5000))))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := NewFrameReader(bytes.NewReader(in), FrameMinSize)
		var again []byte
		for range len(in)/8 + 1 {
			fm, err := fr.ReadFrame()
			if err != nil {
				break
			}
			if len(fm.Payload)+8 > FrameMinSize {
				t.Fatalf("a frame of %d bytes passed frame-max %d", len(fm.Payload)+8, FrameMinSize)
			}
			again = AppendFrame(again, fm.Type, fm.Channel, fm.Payload)
			switch fm.Type {
			case FrameMethod:
				_, _ = DecodeMethod(fm.Payload)
			case FrameHeader:
				_, _ = DecodeContentHeader(fm.Payload)
			}
		}
		if !bytes.HasPrefix(in, again) {
			t.Fatalf("the frames read, re-encoded, are not the input's prefix:\n% x\n% x", again, in)
		}
	})
}
