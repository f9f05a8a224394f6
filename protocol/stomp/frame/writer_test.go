package frame

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name string
		f    *Frame
		v    Version
		opts EncodeOptions
		want string
	}{
		{"plain", fr(CmdSend, "hi", "destination", "/q"), V12, EncodeOptions{},
			"SEND\ndestination:/q\n\nhi\x00"},
		{"no headers", fr(CmdDisconnect, ""), V10, EncodeOptions{}, "DISCONNECT\n\n\x00"},
		{"content-length asked", fr(CmdMessage, "hi", "destination", "/q"), V12, EncodeOptions{ContentLength: true},
			"MESSAGE\ndestination:/q\ncontent-length:2\n\nhi\x00"},
		{"content-length asked, empty body", fr(CmdReceipt, "", "receipt-id", "1"), V12, EncodeOptions{ContentLength: true},
			"RECEIPT\nreceipt-id:1\n\n\x00"},
		{"content-length for NUL in body", fr(CmdMessage, "a\x00b"), V11, EncodeOptions{},
			"MESSAGE\ncontent-length:3\n\na\x00b\x00"},
		{"content-length corrected in place", fr(CmdSend, "abc", "content-length", "99", "x", "y"), V12, EncodeOptions{ContentLength: true},
			"SEND\ncontent-length:3\nx:y\n\nabc\x00"},
		{"later content-length kept", fr(CmdSend, "abc", "content-length", "1", "content-length", "junk"), V12, EncodeOptions{},
			"SEND\ncontent-length:3\ncontent-length:junk\n\nabc\x00"},
		{"content-length present, empty body", fr(CmdSend, "", "content-length", "7"), V12, EncodeOptions{},
			"SEND\ncontent-length:0\n\n\x00"},
		{"1.2 escapes", fr(CmdMessage, "", "a:b", "c\\d\ne\rf:"), V12, EncodeOptions{},
			"MESSAGE\na\\cb:c\\\\d\\ne\\rf\\c\n\n\x00"},
		{"1.1 escapes, CR raw", fr(CmdMessage, "", "a:b", "c\\d\ne\rf:"), V11, EncodeOptions{},
			"MESSAGE\na\\cb:c\\\\d\\ne\rf\\c\n\n\x00"},
		{"1.0 raw", fr(CmdMessage, "", "id", `a\b:c`), V10, EncodeOptions{},
			"MESSAGE\nid:a\\b:c\n\n\x00"},
		{"CONNECTED not escaped in 1.2", fr(CmdConnected, "", "version", "1.2", "server", `sluice\1:0`), V12, EncodeOptions{},
			"CONNECTED\nversion:1.2\nserver:sluice\\1:0\n\n\x00"},
		{"order and duplicates kept", fr(CmdMessage, "", "foo", "World", "bar", "1", "foo", "Hello"), V12, EncodeOptions{},
			"MESSAGE\nfoo:World\nbar:1\nfoo:Hello\n\n\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("prefix")
			got, err := AppendFrame(prefix, tt.f, tt.v, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+tt.want {
				t.Fatalf("got  %q\nwant %q", got, "prefix"+tt.want)
			}
		})
	}
}

func TestAppendFrameUnencodable(t *testing.T) {
	tests := []struct {
		name   string
		f      *Frame
		v      Version
		reason string
	}{
		{"invalid command", &Frame{}, V12, "invalid command"},
		{"out of range command", &Frame{Command: numCommands}, V12, "invalid command"},
		{"invalid version", fr(CmdSend, ""), Version(0), "invalid version"},
		{"empty name", fr(CmdSend, "", "", "v"), V12, "empty name"},
		{"NUL in value", fr(CmdSend, "", "k", "a\x00"), V12, "NUL octet"},
		{"NUL in name", fr(CmdSend, "", "k\x00", "a"), V11, "NUL octet"},
		{"1.0 LF in value", fr(CmdSend, "", "k", "a\nb"), V10, "line feed"},
		{"1.0 colon in name", fr(CmdSend, "", "k:x", "v"), V10, "colon in the name"},
		{"1.0 LF in name", fr(CmdSend, "", "k\nx", "v"), V10, "line feed"},
		{"1.0 value ends in CR", fr(CmdSend, "", "k", "v\r"), V10, "carriage return"},
		{"1.1 value ends in CR", fr(CmdSend, "", "k", "v\r"), V11, "carriage return"},
		{"CONNECTED LF in value", fr(CmdConnected, "", "server", "a\nb"), V12, "line feed"},
		{"CONNECTED value ends in CR", fr(CmdConnected, "", "server", "a\r"), V12, "carriage return"},
		{"CONNECT colon in name", fr(CmdConnect, "", "a:b", "c"), V12, "colon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendFrame(dst, tt.f, tt.v, EncodeOptions{})
			if !errors.Is(err, ErrUnencodable) {
				t.Fatalf("err %v, want ErrUnencodable", err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q lacks %q", err, tt.reason)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed to %q", got)
			}
		})
	}
	// The same headers are fine where escaping represents them.
	for _, f := range []*Frame{
		fr(CmdSend, "", "k:x", "a\nb"),
		fr(CmdSend, "", "k", "v\r"),
	} {
		if _, err := AppendFrame(nil, f, V12, EncodeOptions{}); err != nil {
			t.Errorf("%s in 1.2: %v", dump(f), err)
		}
	}
}

func TestAppendHeartBeat(t *testing.T) {
	if got := AppendHeartBeat([]byte("x")); string(got) != "x\n" {
		t.Fatalf("got %q", got)
	}
}

// TestRoundTrip encodes tricky frames for each version and parses them back.
func TestRoundTrip(t *testing.T) {
	frames := []*Frame{
		fr(CmdConnect, "", "accept-version", "1.0,1.1,1.2", "host", "h", "login", `us\er`, "passcode", "p:w"),
		fr(CmdConnected, "", "version", "1.2", "heart-beat", "0,0", "server", "sluice/0.1 x:y"),
		fr(CmdSend, "hello", "destination", "/queue/a", "receipt", "r-1"),
		fr(CmdSend, "bin\x00ary\x00", "destination", "/q"),
		fr(CmdMessage, "x", "foo", "World", "foo", "Hello", "subscription", "0", "message-id", "m:1"),
		fr(CmdError, "detail\n", "message", "bad things"),
		fr(CmdAck, "", "id", "1"),
		fr(CmdSubscribe, "", "id", "0", "destination", "/topic/t", "selector", "a = 'b' AND c <> 'd'"),
		fr(CmdUnsubscribe, "", "id", "0"),
		fr(CmdBegin, "", "transaction", "t1"),
		fr(CmdCommit, "", "transaction", "t1"),
		fr(CmdAbort, "", "transaction", "t1"),
		fr(CmdNack, "", "id", "2"),
		fr(CmdReceipt, "", "receipt-id", "r-1"),
		fr(CmdDisconnect, "", "receipt", "bye"),
		fr(CmdStomp, "", "accept-version", "1.2", "host", "h"),
	}
	escapedOnly := []*Frame{
		fr(CmdMessage, "", "we:ird\\name", "line1\nline2:\\", "empty", ""),
		fr(CmdSend, "", "k", "a\rb"),
	}
	crOnly := []*Frame{fr(CmdSend, "", "k", "ends\r", "k\r", "v")}
	for _, v := range AllVersions() {
		for _, opts := range []EncodeOptions{{}, {ContentLength: true}} {
			t.Run(fmt.Sprintf("%s/%+v", v, opts), func(t *testing.T) {
				list := frames
				if v != V10 {
					list = append(list[:len(list):len(list)], escapedOnly...)
				}
				if v == V12 {
					list = append(list[:len(list):len(list)], crOnly...)
				}
				var wire []byte
				var want []*Frame
				for _, f := range list {
					var err error
					wire, err = AppendFrame(wire, f, v, opts)
					if err != nil {
						t.Fatalf("%s: %v", dump(f), err)
					}
					w := f.Clone()
					if _, ok := w.Get(HeaderContentLength); !ok && len(w.Body) > 0 &&
						(opts.ContentLength || bytes.IndexByte(w.Body, 0) >= 0) {
						w.Add(HeaderContentLength, fmt.Sprint(len(w.Body)))
					}
					want = append(want, w)
					wire = AppendHeartBeat(wire)
					want = append(want, hb)
				}
				got, err := parseEverySplit(t, Limits{}, v, wire, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !eventsEqual(got, want) {
					t.Fatalf("got  %s\nwant %s", dumpAll(got), dumpAll(want))
				}
			})
		}
	}
}

// countingWriter records every Write call.
type countingWriter struct {
	bytes.Buffer
	writes int
	fail   error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.fail != nil {
		return 0, w.fail
	}
	return w.Buffer.Write(p)
}

func TestWriterBatches(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriter(cw, EncodeOptions{ContentLength: true})
	w.SetVersion(V12)
	if w.Version() != V12 {
		t.Fatal("version not set")
	}
	var want []byte
	for i := range 100 {
		f := fr(CmdMessage, "body", "destination", "/q", "message-id", fmt.Sprint(i))
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		want, _ = AppendFrame(want, f, V12, EncodeOptions{ContentLength: true})
	}
	if err := w.WriteHeartBeat(); err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if cw.writes != 0 {
		t.Fatalf("%d writes before Flush", cw.writes)
	}
	if w.Buffered() != len(want) {
		t.Fatalf("Buffered %d, want %d", w.Buffered(), len(want))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if cw.writes != 1 || !bytes.Equal(cw.Bytes(), want) {
		t.Fatalf("%d writes, output equal: %v", cw.writes, bytes.Equal(cw.Bytes(), want))
	}
	if err := w.Flush(); err != nil || cw.writes != 1 {
		t.Fatal("empty Flush wrote")
	}
}

func TestWriterAutoFlushAndLargeBody(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriterSize(cw, 100, EncodeOptions{})
	w.SetVersion(V11)
	small := fr(CmdMessage, strings.Repeat("s", 30), "k", "v")
	large := fr(CmdMessage, strings.Repeat("L", 500), "k", "v")
	var want []byte
	for _, f := range []*Frame{small, small, small, large, small} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		want, _ = AppendFrame(want, f, V11, EncodeOptions{})
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cw.Bytes(), want) {
		t.Fatalf("got  %q\nwant %q", cw.Bytes(), want)
	}
	got, err := parseEverySplit(t, Limits{}, V11, cw.Bytes(), nil)
	if err != nil || len(got) != 5 {
		t.Fatalf("%d frames, %v", len(got), err)
	}
}

func TestWriterErrors(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriter(cw, EncodeOptions{})
	w.SetVersion(Version(42))
	if w.Version() != V10 {
		t.Fatal("invalid version accepted")
	}
	// An unencodable frame is refused and leaves the writer usable.
	if err := w.WriteFrame(fr(CmdSend, "", "k", "a\nb")); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("got %v", err)
	}
	if w.Buffered() != 0 {
		t.Fatal("partial frame buffered")
	}
	big := fr(CmdSend, strings.Repeat("x", DefaultWriteBufferSize), "k", "a\nb")
	if err := w.WriteFrame(big); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("got %v", err)
	}
	if err := w.WriteFrame(fr(CmdSend, "", "k", "v")); err != nil {
		t.Fatal(err)
	}
	// A write error is sticky.
	boom := errors.New("boom")
	cw.fail = boom
	if err := w.Flush(); err != boom {
		t.Fatalf("got %v", err)
	}
	if err := w.WriteFrame(fr(CmdSend, "")); err != boom {
		t.Fatalf("got %v", err)
	}
	if err := w.WriteHeartBeat(); err != boom {
		t.Fatalf("got %v", err)
	}
	if err := w.Flush(); err != boom {
		t.Fatalf("got %v", err)
	}
}

// shortWriter accepts less than it is given.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriterShortWrite(t *testing.T) {
	w := NewWriter(shortWriter{}, EncodeOptions{})
	if err := w.WriteFrame(fr(CmdSend, "abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "short write") {
		t.Fatalf("got %v", err)
	}
}

func TestWriterHeartBeatAutoFlush(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriterSize(cw, 10, EncodeOptions{})
	for range 64 {
		if err := w.WriteHeartBeat(); err != nil {
			t.Fatal(err)
		}
	}
	if cw.writes != 1 || cw.Len() != 64 || w.Buffered() != 0 {
		t.Fatalf("%d writes of %d octets, %d buffered", cw.writes, cw.Len(), w.Buffered())
	}
}
