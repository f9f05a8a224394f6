package frame

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzReader checks, for arbitrary input and version, that the parser never
// panics, that every way of splitting the input gives the same frames and
// the same error, and that every frame it accepts is written back by the
// writer in a form that parses to the very same frame. Seeds live in
// testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	f.Add(uint8(2), []byte("CONNECT\r\naccept-version:1.2\r\nhost:h\r\n\r\n\x00\nSEND\ndestination:/q\ncontent-length:3\n\na\x00b\x00"))
	f.Add(uint8(1), []byte("SEND\nk\\c:v\\n\\\\\n\nbody\x00\n\n"))
	f.Add(uint8(0), []byte("MESSAGE\nfoo:World\nfoo:Hello\nx:a:b\\c\n\n\x00"))
	f.Fuzz(func(t *testing.T, version uint8, data []byte) {
		v := Version(version%3) + V10
		frames, _ := parseEverySplit(t, Limits{}, v, data, nil)

		// Tight limits exercise the limit paths; only agreement and
		// absence of panics are checked there.
		tight := Limits{MaxLineLength: 12, MaxHeaders: 3, MaxHeaderBytes: 24, MaxBodySize: 16}
		parseEverySplit(t, tight, v, data, nil)

		// Escaping can lengthen header lines, so re-parsing allows more.
		loose := Limits{MaxLineLength: 4 * DefaultMaxLineLength, MaxHeaderBytes: 4 * DefaultMaxHeaderBytes}
		for _, want := range frames {
			if want == nil {
				continue // heart-beat
			}
			wire, err := AppendFrame(nil, want, v, EncodeOptions{})
			if err != nil {
				t.Fatalf("parsed frame %s cannot be written in %s: %v", dump(want), v, err)
			}
			p := NewParser(loose)
			p.SetVersion(v)
			n, ev, err := p.Feed(wire)
			if err != nil || n != len(wire) || ev.Frame == nil {
				t.Fatalf("re-parse of %q: n=%d/%d ev=%+v err=%v", wire, n, len(wire), ev, err)
			}
			if !frameEqual(ev.Frame, want) {
				t.Fatalf("round trip in %s changed\n%s\ninto\n%s\nvia %q", v, dump(want), dump(ev.Frame), wire)
			}

			// With content-length forced, the body and all other
			// headers survive and content-length is right.
			wire, err = AppendFrame(nil, want, v, EncodeOptions{ContentLength: true})
			if err != nil {
				t.Fatal(err)
			}
			p = NewParser(loose)
			p.SetVersion(v)
			n, ev, err = p.Feed(wire)
			if err != nil || n != len(wire) || ev.Frame == nil {
				t.Fatalf("re-parse with content-length of %q: n=%d ev=%+v err=%v", wire, n, ev, err)
			}
			if !bytes.Equal(ev.Frame.Body, want.Body) || ev.Frame.Command != want.Command {
				t.Fatalf("content-length round trip changed %s into %s", dump(want), dump(ev.Frame))
			}
			if cl, ok := ev.Frame.Get(HeaderContentLength); len(want.Body) > 0 && (!ok || cl != strconv.Itoa(len(want.Body))) {
				t.Fatalf("content-length %q for a body of %d", cl, len(want.Body))
			}
		}
	})
}
