package ws

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// encode is what the STOMP writer writes for frames (nil: a heart-beat).
func encode(t testing.TB, frames ...*frame.Frame) (stream []byte, units [][]byte) {
	t.Helper()
	for _, f := range frames {
		var u []byte
		if f == nil {
			u = frame.AppendHeartBeat(nil)
		} else {
			var err error
			if u, err = frame.AppendFrame(nil, f, frame.V12, frame.EncodeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		units = append(units, u)
		stream = append(stream, u...)
	}
	return stream, units
}

func message(body string, headers ...string) *frame.Frame {
	f := &frame.Frame{Command: frame.CmdMessage, Body: []byte(body)}
	for i := 0; i+1 < len(headers); i += 2 {
		f.Add(headers[i], headers[i+1])
	}
	return f
}

// cutAll feeds stream to a splitter in pieces of the given sizes (the rest
// in one last piece) and returns the units it emits.
func cutAll(t testing.TB, stream []byte, sizes ...int) [][]byte {
	t.Helper()
	var s splitter
	var got [][]byte
	emit := func(u []byte) error {
		got = append(got, bytes.Clone(u))
		return nil
	}
	for _, n := range sizes {
		n = min(n, len(stream))
		// A copy, overwritten after the call: the splitter must keep none of it.
		p := bytes.Clone(stream[:n])
		if err := s.write(p, emit); err != nil {
			t.Fatal(err)
		}
		clear(p)
		stream = stream[n:]
	}
	if err := s.write(stream, emit); err != nil {
		t.Fatal(err)
	}
	if len(s.pend) != 0 {
		t.Fatalf("%d octets left incomplete: %q", len(s.pend), s.pend)
	}
	return got
}

// Whatever pieces the STOMP writer writes, every heart-beat and every frame
// comes out whole, one at a time: the WebSocket messages a client gets.
func TestSplitterCutsFramesAndHeartBeats(t *testing.T) {
	nul := "a\x00b\x00"
	tests := []struct {
		name   string
		frames []*frame.Frame
	}{
		{"one frame", []*frame.Frame{message("hello", "destination", "/queue/a")}},
		{"no headers, no body", []*frame.Frame{{Command: frame.CmdReceipt}}},
		{"heart-beats around frames", []*frame.Frame{nil, message("x"), nil, nil, message("y"), nil}},
		{"NUL in the body (content-length)", []*frame.Frame{message(nul, "destination", "/queue/a"), message("after")}},
		{"blank lines in the body", []*frame.Frame{message("line\n\nline\n\n"), message("\n\n")}},
		{"content-length given with text", []*frame.Frame{message("abc", "content-length", "99"), message("")}},
		{"header named like content-length", []*frame.Frame{message("b\x00dy", "x-content-length", "1"), message("z")}},
		{"large body", []*frame.Frame{message(string(bytes.Repeat([]byte("0123456789"), 10000))), nil}},
		{"large binary body", []*frame.Frame{message(string(bytes.Repeat([]byte{0, 0xff, '\n'}, 30000))), message("tail")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, want := encode(t, tt.frames...)
			pieces := [][]int{
				nil,                 // all at once
				{1, 1, 1, 1, 1, 1},  // a byte at a time at the start
				{len(stream) / 2},   // halves
				{len(want[0]) - 1},  // the first frame short of its NUL
				{len(want[0]), 0},   // exactly the first unit, then an empty write
				{7, 3, 1000, 65536}, // odd sizes
			}
			for _, sizes := range pieces {
				got := cutAll(t, stream, sizes...)
				if len(got) != len(want) {
					t.Fatalf("pieces %v: %d units, want %d: %q", sizes, len(got), len(want), got)
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("pieces %v: unit %d = %.80q, want %.80q", sizes, i, got[i], want[i])
					}
				}
			}
			// One octet at a time, the hardest case for the search state.
			if got := cutAll(t, stream, ones(len(stream))...); len(got) != len(want) {
				t.Fatalf("one octet at a time: %d units, want %d", len(got), len(want))
			}
		})
	}
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// An error of the message writer stops the splitter and is returned.
func TestSplitterStopsAtAnEmitError(t *testing.T) {
	stream, _ := encode(t, message("a"), message("b"))
	boom := errors.New("connection gone")
	calls := 0
	var s splitter
	err := s.write(stream, func([]byte) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("write = %v after %d messages, want %v after 1", err, calls, boom)
	}
}

// Frames of any content, cut anywhere, come out as they went in.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("hello"), []byte("h:v"), uint16(3), uint8(2))
	f.Add([]byte("a\x00b"), []byte("content-length:5"), uint16(1), uint8(1))
	f.Add([]byte("\n\n\x00"), []byte(""), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, body, header []byte, cut uint16, beats uint8) {
		fr := &frame.Frame{Command: frame.CmdMessage, Body: body}
		if name, value, ok := bytes.Cut(header, []byte(":")); ok && len(name) > 0 {
			fr.Add(string(name), string(value))
		}
		frames := []*frame.Frame{fr}
		for range beats % 4 {
			frames = append(frames, nil)
		}
		frames = append(frames, fr)
		var stream []byte
		var want [][]byte
		for _, f := range frames {
			var u []byte
			if f == nil {
				u = frame.AppendHeartBeat(nil)
			} else {
				var err error
				if u, err = frame.AppendFrame(nil, f, frame.V12, frame.EncodeOptions{}); err != nil {
					return // a header the writer refuses never reaches the splitter
				}
			}
			want = append(want, u)
			stream = append(stream, u...)
		}
		got := cutAll(t, stream, int(cut)%(len(stream)+1), 1, int(cut)%7)
		if len(got) != len(want) {
			t.Fatalf("%d units, want %d: %q", len(got), len(want), got)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("unit %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}
