package frame

import (
	"bytes"
	"errors"
	"io"
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
		frames, perr := parseEverySplit(t, Limits{}, v, data, nil)

		// The buffered Reader, with a small buffer (so that bodies are
		// also read straight into frames) and ragged reads, agrees.
		checkReaderAgrees(t, v, data, frames, perr)

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

// checkReaderAgrees reads data through a Reader and compares the outcome
// with the parser's: the same events, then the same error, or at the end of
// the input io.EOF between frames and ErrTruncated inside one.
func checkReaderAgrees(t *testing.T, v Version, data []byte, want []*Frame, perr error) {
	t.Helper()
	p := NewParser(Limits{})
	p.SetVersion(v)
	for rest := data; len(rest) > 0 && p.Err() == nil; {
		n, _, _ := p.Feed(rest)
		rest = rest[n:]
	}
	r := NewReaderSize(&chunkReader{data: bytes.Clone(data), sizes: []int{1, 5, 64, 3}}, Limits{}, 16)
	r.SetVersion(v)
	got, rerr := readAll(r)
	if !eventsEqual(got, want) {
		t.Fatalf("Reader gives %s, Parser %s", dumpAll(got), dumpAll(want))
	}
	switch {
	case perr != nil:
		if rerr == nil || rerr.Error() != perr.Error() {
			t.Fatalf("Reader error %v, Parser error %v", rerr, perr)
		}
	case p.InFrame():
		if !errors.Is(rerr, ErrTruncated) {
			t.Fatalf("Reader error %v, want truncation", rerr)
		}
	default:
		if rerr != io.EOF {
			t.Fatalf("Reader error %v, want io.EOF", rerr)
		}
	}
}

// FuzzWriter checks that whatever the writer accepts parses back to the same
// frame, so that no header or body can smuggle in another frame or header.
func FuzzWriter(f *testing.F) {
	f.Add(uint8(2), uint8(4), "destination", "/q:a\nb", "x", "a\rb\r", []byte("body"), false)
	f.Add(uint8(0), uint8(3), "version", "1.0", "k", "v", []byte("a\x00b"), true)
	f.Add(uint8(1), uint8(13), "message", "bad\nthing", "content-length", "12", []byte(""), true)
	f.Fuzz(func(t *testing.T, version, cmd uint8, n1, v1, n2, v2 string, body []byte, forceLength bool) {
		v := Version(version%3) + V10
		in := &Frame{Command: Command(cmd % uint8(numCommands+1))}
		in.Add(n1, v1)
		in.Add(n2, v2)
		if len(body) > 0 {
			in.Body = body
		}
		wire, err := AppendFrame(nil, in, v, EncodeOptions{ContentLength: forceLength})
		if err != nil {
			if !errors.Is(err, ErrUnencodable) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Expect the first content-length to carry the real length, or
		// one to be appended when the options or a NUL call for it.
		want := in.Clone()
		hasLength := false
		for i, h := range want.Headers {
			if h.Name == HeaderContentLength {
				want.Headers[i].Value = strconv.Itoa(len(body))
				hasLength = true
				break
			}
		}
		if !hasLength && len(body) > 0 && (forceLength || bytes.IndexByte(body, 0) >= 0) {
			want.Add(HeaderContentLength, strconv.Itoa(len(body)))
		}
		p := NewParser(Limits{MaxLineLength: 1 << 20, MaxHeaderBytes: 1 << 20, MaxBodySize: 1 << 20})
		p.SetVersion(v)
		n, ev, err := p.Feed(wire)
		if err != nil || n != len(wire) || ev.Frame == nil {
			t.Fatalf("written frame %q does not parse: n=%d/%d ev=%+v err=%v", wire, n, len(wire), ev, err)
		}
		if !frameEqual(ev.Frame, want) {
			t.Fatalf("wrote %s\nread  %s\nwire %q", dump(want), dump(ev.Frame), wire)
		}
	})
}
