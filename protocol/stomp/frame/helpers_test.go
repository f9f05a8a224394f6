package frame

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// hb is the heart-beat marker in expected event lists.
var hb = (*Frame)(nil)

// fr builds a frame from a command, header name/value pairs and a body.
func fr(c Command, body string, kv ...string) *Frame {
	f := &Frame{Command: c}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	if body != "" {
		f.Body = []byte(body)
	}
	return f
}

// frameEqual compares frames, treating nil and empty slices alike.
func frameEqual(a, b *Frame) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Command == b.Command &&
		slices.Equal(a.Headers, b.Headers) &&
		bytes.Equal(a.Body, b.Body)
}

// dump renders a frame for failure messages.
func dump(f *Frame) string {
	if f == nil {
		return "<heart-beat>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", f.Command)
	for _, h := range f.Headers {
		fmt.Fprintf(&b, " %q:%q", h.Name, h.Value)
	}
	fmt.Fprintf(&b, " body=%q", f.Body)
	return b.String()
}

// dumpAll renders an event list.
func dumpAll(fs []*Frame) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = dump(f)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// eventsEqual compares event lists (nil entries are heart-beats).
func eventsEqual(a, b []*Frame) bool {
	return slices.EqualFunc(a, b, frameEqual)
}

// chunker splits input into the slices fed to a parser.
type chunker struct {
	name  string
	split func(data []byte) [][]byte
}

// chunkers returns the splittings every parser test is run with: the whole
// buffer, one octet at a time, and random sizes.
func chunkers(seed uint64) []chunker {
	return []chunker{
		{"whole", func(d []byte) [][]byte { return [][]byte{d} }},
		{"bytewise", func(d []byte) [][]byte {
			out := make([][]byte, len(d))
			for i := range d {
				out[i] = d[i : i+1]
			}
			return out
		}},
		{"random", func(d []byte) [][]byte {
			rng := rand.New(rand.NewPCG(seed, 7))
			var out [][]byte
			for len(d) > 0 {
				n := min(len(d), 1+rng.IntN(13))
				out = append(out, d[:n])
				d = d[n:]
			}
			return out
		}},
	}
}

// parseChunks feeds chunks to a fresh parser and collects the events (nil
// for a heart-beat) until the input ends or an error occurs. setVersion, if
// not nil, is called after every frame, as a server would after CONNECT.
func parseChunks(lim Limits, v Version, chunks [][]byte, afterFrame func(p *Parser, f *Frame)) ([]*Frame, error) {
	p := NewParser(lim)
	p.SetVersion(v)
	var out []*Frame
	for _, c := range chunks {
		// Copy the chunk so that frames cannot alias the test data, and
		// scribble over the copy afterwards to catch any reference the
		// parser or a frame kept to its input.
		clone := bytes.Clone(c)
		buf := clone
		for len(buf) > 0 {
			n, ev, err := p.Feed(buf)
			if n < 0 || n > len(buf) {
				return out, fmt.Errorf("Feed consumed %d of %d", n, len(buf))
			}
			if err != nil {
				return out, err
			}
			if ev.Frame == nil && !ev.HeartBeat && n != len(buf) {
				return out, fmt.Errorf("Feed returned no event after %d of %d octets", n, len(buf))
			}
			if ev.Frame != nil && ev.HeartBeat {
				return out, errors.New("Feed returned a frame and a heart-beat at once")
			}
			buf = buf[n:]
			if ev.HeartBeat {
				out = append(out, nil)
			}
			if ev.Frame != nil {
				out = append(out, ev.Frame)
				if afterFrame != nil {
					afterFrame(p, ev.Frame)
				}
			}
		}
		for i := range clone {
			clone[i] = 0xAA
		}
	}
	return out, nil
}

// kindOf returns the ErrorKind of err, or 0.
func kindOf(err error) ErrorKind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return 0
}

// parseEverySplit parses data with every chunker and fails the test unless
// they all agree; it returns the common result.
func parseEverySplit(t *testing.T, lim Limits, v Version, data []byte, afterFrame func(*Parser, *Frame)) ([]*Frame, error) {
	t.Helper()
	var (
		first    []*Frame
		firstErr error
	)
	for i, c := range chunkers(uint64(len(data))) {
		got, err := parseChunks(lim, v, c.split(data), afterFrame)
		if i == 0 {
			first, firstErr = got, err
			continue
		}
		if !eventsEqual(got, first) {
			t.Fatalf("%s split gives %s, whole buffer gives %s", c.name, dumpAll(got), dumpAll(first))
		}
		if (err == nil) != (firstErr == nil) || kindOf(err) != kindOf(firstErr) ||
			(err != nil && err.Error() != firstErr.Error()) {
			t.Fatalf("%s split gives error %v, whole buffer gives %v", c.name, err, firstErr)
		}
	}
	return first, firstErr
}
