package frame

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll drains a Reader, collecting events (nil for heart-beats), and
// returns them with the error that ended the stream.
func readAll(r *Reader) ([]*Frame, error) {
	var out []*Frame
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		if (ev.Frame != nil) == ev.HeartBeat {
			return out, errors.New("Next returned an event that is neither or both")
		}
		out = append(out, ev.Frame)
	}
}

// chunkReader returns its data in reads of the given sizes, cycling.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestReaderMatchesParser(t *testing.T) {
	body := strings.Repeat("0123456789", 300) // larger than the small buffer
	var wire []byte
	frames := []*Frame{
		fr(CmdConnect, "", "accept-version", "1.2", "host", "h"),
		fr(CmdSend, body, "destination", "/q", "content-length", "3000"),
		fr(CmdSend, body, "destination", "/q"), // no content-length: scanned
		fr(CmdSend, "x", "destination", "a:b\nc"),
		fr(CmdDisconnect, ""),
	}
	for _, f := range frames {
		var err error
		if wire, err = AppendFrame(wire, f, V12, EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
		wire = append(wire, "\r\n"...)
	}
	switchVersion := func(p *Parser, f *Frame) {
		if f.Command == CmdConnect {
			p.SetVersion(V12)
		}
	}
	want, err := parseEverySplit(t, Limits{}, V10, wire, switchVersion)
	if err != nil || len(want) != 10 {
		t.Fatalf("parser: %d events, %v", len(want), err)
	}
	readers := map[string]func() io.Reader{
		"bytes":    func() io.Reader { return bytes.NewReader(wire) },
		"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(wire)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(wire)) },
		"data-err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(wire)) },
		"chunks":   func() io.Reader { return &chunkReader{data: wire, sizes: []int{1, 7, 100, 4096, 3}} },
	}
	for name, mk := range readers {
		for _, size := range []int{16, 64, 1000, DefaultReadBufferSize} {
			r := NewReaderSize(mk(), Limits{}, size)
			var got []*Frame
			for {
				ev, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s/%d: %v", name, size, err)
				}
				got = append(got, ev.Frame)
				if ev.Frame != nil && ev.Frame.Command == CmdConnect {
					r.SetVersion(V12)
				}
			}
			if !eventsEqual(got, want) {
				t.Fatalf("%s/%d: got %s\nwant %s", name, size, dumpAll(got), dumpAll(want))
			}
			if r.Version() != V12 || r.Buffered() != 0 {
				t.Fatalf("%s/%d: version %v buffered %d", name, size, r.Version(), r.Buffered())
			}
		}
	}
}

func TestReaderEOF(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		events    int
		truncated bool
	}{
		{"empty", "", 0, false},
		{"clean end", "SEND\n\n\x00\n", 2, false},
		{"in command", "SEND\n\n\x00SEN", 1, true},
		{"in headers", "SEND\nk:v", 0, true},
		{"in body", "SEND\ncontent-length:10\n\nabc", 0, true},
		{"before NUL", "SEND\ncontent-length:3\n\nabc", 0, true},
		{"in scanned body", "SEND\n\nabc", 0, true},
		{"after CR", "SEND\n\n\x00\r", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{16, 4096} {
				r := NewReaderSize(iotest.OneByteReader(strings.NewReader(tt.in)), Limits{}, size)
				got, err := readAll(r)
				if len(got) != tt.events {
					t.Fatalf("%d events, want %d", len(got), tt.events)
				}
				if tt.truncated {
					if !errors.Is(err, ErrTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("got %v, want truncation", err)
					}
				} else if err != io.EOF {
					t.Fatalf("got %v, want io.EOF", err)
				}
				if _, err2 := r.Next(); kindOf(err2) != kindOf(err) || (err == io.EOF) != (err2 == io.EOF) {
					t.Fatalf("second call gives %v after %v", err2, err)
				}
			}
		})
	}
}

// flakyReader fails once with a timeout-like error after a given number of
// octets, then goes on.
type flakyReader struct {
	r      io.Reader
	after  int
	failed bool
}

type timeoutError struct{}

func (timeoutError) Error() string { return "i/o timeout" }
func (timeoutError) Timeout() bool { return true }

func (f *flakyReader) Read(p []byte) (int, error) {
	if !f.failed && f.after <= 0 {
		f.failed = true
		return 0, timeoutError{}
	}
	if !f.failed {
		p = p[:min(len(p), f.after)]
	}
	n, err := f.r.Read(p)
	f.after -= n
	return n, err
}

func TestReaderTransientErrorKeepsState(t *testing.T) {
	wire := "SEND\ndestination:/q\ncontent-length:100\n\n" + strings.Repeat("b", 100) + "\x00"
	for _, after := range []int{0, 3, 20, 50, 120, len(wire) - 1} {
		for _, size := range []int{16, 4096} {
			r := NewReaderSize(&flakyReader{r: strings.NewReader(wire), after: after}, Limits{}, size)
			_, err := r.Next()
			var te timeoutError
			if !errors.As(err, &te) {
				t.Fatalf("after %d: got %v, want the timeout", after, err)
			}
			f, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("after %d/%d: %v", after, size, err)
			}
			if len(f.Body) != 100 {
				t.Fatalf("body of %d", len(f.Body))
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("got %v", err)
			}
		}
	}
}

func TestReaderProtocolErrorSticky(t *testing.T) {
	r := NewReader(strings.NewReader("SEND\n\n\x00BOGUS\n\n\x00SEND\n\n\x00"), Limits{})
	if _, err := r.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	_, err := r.ReadFrame()
	if !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("got %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("got %v", err2)
	}
}

// emptyReader returns nothing, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// liarReader claims more than it read.
type liarReader struct{}

func (liarReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReaderBadUnderlyingReaders(t *testing.T) {
	if _, err := NewReader(emptyReader{}, Limits{}).Next(); err != io.ErrNoProgress {
		t.Fatalf("got %v", err)
	}
	if _, err := NewReader(liarReader{}, Limits{}).Next(); err == nil || !strings.Contains(err.Error(), "returned") {
		t.Fatalf("got %v", err)
	}
}

func TestReaderReadFrameSkipsHeartBeats(t *testing.T) {
	r := NewReader(strings.NewReader("\n\n\r\nACK\nid:1\n\n\x00\n"), Limits{})
	f, err := r.ReadFrame()
	if err != nil || !frameEqual(f, fr(CmdAck, "", "id", "1")) {
		t.Fatalf("got %v, %v", f, err)
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("got %v", err)
	}
}

// TestReaderLargeBodyDirect checks the path that reads a large body of known
// length straight into the frame, with limits enforced.
func TestReaderLargeBodyDirect(t *testing.T) {
	body := bytes.Repeat([]byte{0, 1, 2, 3, 255}, 100000)
	wire, err := AppendFrame(nil, &Frame{Command: CmdSend, Body: body}, V12, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewReaderSize(&chunkReader{data: wire, sizes: []int{100000, 7, 65536}}, Limits{}, 4096)
	f, err := r.ReadFrame()
	if err != nil || !bytes.Equal(f.Body, body) {
		t.Fatalf("err %v, body equal %v", err, f != nil && bytes.Equal(f.Body, body))
	}
	// A missing NUL after a directly read body is still caught.
	bad := append(wire[:len(wire)-1:len(wire)-1], 'X')
	r = NewReaderSize(bytes.NewReader(bad), Limits{}, 4096)
	if _, err := r.ReadFrame(); !errors.Is(err, ErrMissingNUL) {
		t.Fatalf("got %v", err)
	}
	// So is a body over the limit.
	r = NewReaderSize(bytes.NewReader(wire), Limits{MaxBodySize: len(body) - 1}, 4096)
	if _, err := r.ReadFrame(); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestReaderProtocolErrorAtEndOfInputSticky(t *testing.T) {
	r := NewReader(strings.NewReader("BOGUS\n"), Limits{})
	_, err := r.Next()
	if !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("got %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("got %v", err2)
	}
}
