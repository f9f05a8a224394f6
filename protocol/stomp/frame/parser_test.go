package frame

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParserFrames(t *testing.T) {
	tests := []struct {
		name string
		v    Version
		in   string
		want []*Frame
	}{
		{"send LF", V12,
			"SEND\ndestination:/queue/a\n\nhello\x00",
			[]*Frame{fr(CmdSend, "hello", "destination", "/queue/a")}},
		{"send CRLF", V12,
			"SEND\r\ndestination:/queue/a\r\nreceipt:r1\r\n\r\nhello\x00",
			[]*Frame{fr(CmdSend, "hello", "destination", "/queue/a", "receipt", "r1")}},
		{"CRLF accepted before version negotiation", V10,
			"CONNECT\r\naccept-version:1.0,1.1,1.2\r\nhost:h\r\n\r\n\x00",
			[]*Frame{fr(CmdConnect, "", "accept-version", "1.0,1.1,1.2", "host", "h")}},
		{"no headers no body", V12, "DISCONNECT\n\n\x00",
			[]*Frame{fr(CmdDisconnect, "")}},
		{"heart-beats between frames", V12,
			"\n\r\nBEGIN\ntransaction:t\n\n\x00\n\n\r\nCOMMIT\ntransaction:t\n\n\x00\r\n",
			[]*Frame{hb, hb, fr(CmdBegin, "", "transaction", "t"), hb, hb, hb,
				fr(CmdCommit, "", "transaction", "t"), hb}},
		{"heart-beats only", V11, "\n\n\r\n", []*Frame{hb, hb, hb}},
		{"content-length body with NUL and LF", V12,
			"SEND\ndestination:q\ncontent-length:5\n\na\x00b\nc\x00",
			[]*Frame{fr(CmdSend, "a\x00b\nc", "destination", "q", "content-length", "5")}},
		{"content-length zero", V12, "SEND\ndestination:q\ncontent-length:0\n\n\x00",
			[]*Frame{fr(CmdSend, "", "destination", "q", "content-length", "0")}},
		{"content-length leading zeros", V12, "SEND\ncontent-length:003\n\nabc\x00",
			[]*Frame{fr(CmdSend, "abc", "content-length", "003")}},
		{"first content-length wins", V12,
			"MESSAGE\ncontent-length:2\ncontent-length:5\ncontent-length:junk\n\nab\x00",
			[]*Frame{fr(CmdMessage, "ab", "content-length", "2", "content-length", "5", "content-length", "junk")}},
		{"body up to NUL without content-length", V12, "SEND\ndestination:q\n\nline1\r\nline2\x00\n",
			[]*Frame{fr(CmdSend, "line1\r\nline2", "destination", "q"), hb}},
		{"repeated headers kept in order", V12, "MESSAGE\nfoo:World\nfoo:Hello\nbar:x\n\n\x00",
			[]*Frame{fr(CmdMessage, "", "foo", "World", "foo", "Hello", "bar", "x")}},
		{"empty value and spaces kept", V12, "SEND\na:\n b : c \n\n\x00",
			[]*Frame{fr(CmdSend, "", "a", "", " b ", " c ")}},
		{"1.0 values raw", V10, "SEND\ndestination:/q/a\\n\\c\\t\\\nx:a:b:c\n\n\x00",
			[]*Frame{fr(CmdSend, "", "destination", `/q/a\n\c\t\`, "x", "a:b:c")}},
		{"1.1 escapes", V11, "SEND\nk\\cey:a\\nb\\cc\\\\d\n\n\x00",
			[]*Frame{fr(CmdSend, "", "k:ey", "a\nb:c\\d")}},
		{"1.2 escapes include CR", V12, "SEND\nk:a\\rb\\n\\c\\\\\n\n\x00",
			[]*Frame{fr(CmdSend, "", "k", "a\rb\n:\\")}},
		{"1.2 raw colon in value tolerated", V12, "SEND\nid:ID:host-1:2\n\n\x00",
			[]*Frame{fr(CmdSend, "", "id", "ID:host-1:2")}},
		{"raw CR inside a value kept", V11, "SEND\nk:a\rb\n\n\x00",
			[]*Frame{fr(CmdSend, "", "k", "a\rb")}},
		{"CONNECT never unescaped", V12, "CONNECT\nlogin:a\\b\npasscode:x\\cy\n\n\x00",
			[]*Frame{fr(CmdConnect, "", "login", `a\b`, "passcode", `x\cy`)}},
		{"STOMP never unescaped", V12, "STOMP\nlogin:a\\b\n\n\x00",
			[]*Frame{fr(CmdStomp, "", "login", `a\b`)}},
		{"CONNECTED never unescaped", V11, "CONNECTED\nserver:x\\y\n\n\x00",
			[]*Frame{fr(CmdConnected, "", "server", `x\y`)}},
		{"UTF-8 headers", V12, "SEND\nkey-\u00e9:\u65e5\u672c\n\n\x00",
			[]*Frame{fr(CmdSend, "", "key-\u00e9", "\u65e5\u672c")}},
		{"two frames back to back", V12, "ACK\nid:1\n\n\x00NACK\nid:2\n\n\x00",
			[]*Frame{fr(CmdAck, "", "id", "1"), fr(CmdNack, "", "id", "2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEverySplit(t, Limits{}, tt.v, []byte(tt.in), nil)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !eventsEqual(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", dumpAll(got), dumpAll(tt.want))
			}
		})
	}
}

func TestParserAllCommands(t *testing.T) {
	for c := CmdConnect; c < numCommands; c++ {
		for _, v := range AllVersions() {
			in := c.String() + "\nk:v\n\n\x00"
			got, err := parseEverySplit(t, Limits{}, v, []byte(in), nil)
			if err != nil || len(got) != 1 || got[0].Command != c {
				t.Errorf("%s in %s: got %s, %v", c, v, dumpAll(got), err)
			}
		}
	}
}

func TestParserErrors(t *testing.T) {
	small := Limits{MaxLineLength: 16, MaxHeaders: 3, MaxHeaderBytes: 40, MaxBodySize: 10}
	tests := []struct {
		name   string
		v      Version
		lim    Limits
		in     string
		kind   ErrorKind
		reason string // substring of the reason, if not empty
		frames int    // frames parsed before the error
	}{
		{"unknown command", V12, Limits{}, "FOO\n\n\x00", ErrUnknownCommand, `unknown command "FOO"`, 0},
		{"lower-case command", V12, Limits{}, "send\n\n\x00", ErrUnknownCommand, "", 0},
		{"command with trailing blank", V12, Limits{}, "SEND \n\n\x00", ErrUnknownCommand, "", 0},
		{"error after good frame", V12, Limits{}, "SEND\n\n\x00\nXX\n", ErrUnknownCommand, "", 2},
		{"escape \\t in 1.2", V12, Limits{}, "SEND\nk:a\\tb\n\n\x00", ErrInvalidEscape, `undefined escape sequence \t`, 0},
		{"escape \\t in 1.1", V11, Limits{}, "SEND\nk:a\\tb\n\n\x00", ErrInvalidEscape, "", 0},
		{"escape \\r in 1.1", V11, Limits{}, "SEND\nk:a\\rb\n\n\x00", ErrInvalidEscape, `\r`, 0},
		{"escape in name", V12, Limits{}, "SEND\nk\\x:v\n\n\x00", ErrInvalidEscape, "header name", 0},
		{"trailing backslash", V12, Limits{}, "SEND\nk:v\\\n\n\x00", ErrInvalidEscape, "end of a header value", 0},
		{"backslash before control octet", V12, Limits{}, "SEND\nk:\\\x01\n\n\x00", ErrInvalidEscape, "0x1", 0},
		{"header without colon", V12, Limits{}, "SEND\nnocolon\n\n\x00", ErrMalformedHeader, "without a colon", 0},
		{"empty header name", V12, Limits{}, "SEND\n:v\n\n\x00", ErrMalformedHeader, "empty name", 0},
		{"missing blank line", V12, Limits{}, "DISCONNECT\n\x00", ErrMalformedFrame, "NUL octet", 0},
		{"NUL in header", V12, Limits{}, "SEND\nk:a\x00b\n\n\x00", ErrMalformedFrame, "NUL octet", 0},
		{"NUL in command line", V12, Limits{}, "SE\x00ND\n", ErrMalformedFrame, "command line", 0},
		{"bare CR between frames", V12, Limits{}, "\rSEND\n", ErrMalformedFrame, "carriage return", 0},
		{"CR CR LF line end", V12, Limits{}, "SEND\nk:v\r\r\n\n\x00", ErrMalformedFrame, "bare carriage return", 0},
		{"content-length letters", V12, Limits{}, "SEND\ncontent-length:abc\n\n\x00", ErrInvalidContentLength, `"abc"`, 0},
		{"content-length negative", V12, Limits{}, "SEND\ncontent-length:-1\n\n\x00", ErrInvalidContentLength, "", 0},
		{"content-length plus", V12, Limits{}, "SEND\ncontent-length:+1\n\nx\x00", ErrInvalidContentLength, "", 0},
		{"content-length blank", V12, Limits{}, "SEND\ncontent-length: 1\n\nx\x00", ErrInvalidContentLength, "", 0},
		{"content-length empty", V12, Limits{}, "SEND\ncontent-length:\n\n\x00", ErrInvalidContentLength, "empty", 0},
		{"content-length hex", V12, Limits{}, "SEND\ncontent-length:0x10\n\n\x00", ErrInvalidContentLength, "", 0},
		{"content-length huge", V12, Limits{}, "SEND\ncontent-length:99999999999999999999999999\n\n", ErrBodyTooLarge, "limit 16777216", 0},
		{"content-length over limit", V12, Limits{MaxBodySize: 10}, "SEND\ncontent-length:11\n\n", ErrBodyTooLarge, "(limit 10)", 0},
		{"body longer than content-length", V12, Limits{}, "SEND\ncontent-length:2\n\nabc\x00", ErrMissingNUL, "content-length 2", 0},
		{"body without content-length over limit", V12, small, "SEND\n\n01234567890", ErrBodyTooLarge, "without content-length", 0},
		{"command line too long", V12, small, "SENDSENDSENDSENDSEND\n", ErrLineTooLong, "command line too long (limit 16)", 0},
		{"header line too long", V12, small, "SEND\nk:0123456789abcdef\n", ErrLineTooLong, "header line too long (limit 16)", 0},
		{"endless header line", V12, small, "SEND\nk:" + strings.Repeat("x", 100), ErrLineTooLong, "", 0},
		{"header line too long with CR", V12, small, "SEND\nk:0123456789abcd\r\r\n", ErrLineTooLong, "", 0},
		{"too many headers", V12, small, "SEND\na:1\nb:2\nc:3\nd:4\n\n\x00", ErrTooManyHeaders, "too many headers (limit 3)", 0},
		{"headers too large", V12, small, "SEND\na:0123456789ab\nb:0123456789ab\nc:0123456789ab\n\n\x00", ErrHeadersTooLarge, "(limit 40)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEverySplit(t, tt.lim, tt.v, []byte(tt.in), nil)
			if err == nil {
				t.Fatalf("no error; frames %s", dumpAll(got))
			}
			if !errors.Is(err, tt.kind) {
				t.Fatalf("error %v (kind %v), want kind %v", err, kindOf(err), tt.kind)
			}
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not *Error", err)
			}
			if !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", fe.Reason, tt.reason)
			}
			for _, c := range []byte(fe.Reason) {
				if c < ' ' || c > '~' {
					t.Errorf("reason %q holds octet %#x", fe.Reason, c)
				}
			}
			if len(got) != tt.frames {
				t.Errorf("%d events before the error, want %d", len(got), tt.frames)
			}
		})
	}
}

// TestParserLimitBoundaries checks that input exactly at each limit passes
// and one octet more fails.
func TestParserLimitBoundaries(t *testing.T) {
	lim := Limits{MaxLineLength: 8, MaxHeaders: 2, MaxHeaderBytes: 14, MaxBodySize: 4}
	tests := []struct {
		name string
		in   string
		kind ErrorKind // 0: must parse
	}{
		{"line at limit LF", "SEND\nabc:defg\n\n\x00", 0},
		{"line at limit CRLF", "SEND\r\nabc:defg\r\n\r\n\x00", 0},
		{"line over limit", "SEND\nabc:defgh\n\n\x00", ErrLineTooLong},
		{"line over limit CRLF", "SEND\r\nabc:defgh\r\n\r\n\x00", ErrLineTooLong},
		{"headers at limit", "SEND\na:1\nb:2\n\n\x00", 0},
		{"headers over limit", "SEND\na:1\nb:2\nc:3\n\n\x00", ErrTooManyHeaders},
		{"header bytes at limit", "SEND\nabc:defg\nab:def\n\n\x00", 0},
		{"header bytes over limit", "SEND\nabc:defg\nab:defg\n\n\x00", ErrHeadersTooLarge},
		{"body at limit", "SEND\n\nabcd\x00", 0},
		{"body over limit", "SEND\n\nabcde\x00", ErrBodyTooLarge},
		{"body with other header at limit", "SEND\ncl:1\n\nabcd\x00", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseEverySplit(t, lim, V12, []byte(tt.in), nil)
			if tt.kind == 0 && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.kind != 0 && !errors.Is(err, tt.kind) {
				t.Fatalf("error %v, want kind %v", err, tt.kind)
			}
		})
	}
	// content-length exactly at the body limit.
	big := Limits{MaxBodySize: 4}
	if _, err := parseEverySplit(t, big, V12, []byte("SEND\ncontent-length:4\n\nabcd\x00"), nil); err != nil {
		t.Fatalf("content-length at limit: %v", err)
	}
	if _, err := parseEverySplit(t, big, V12, []byte("SEND\ncontent-length:5\n\n"), nil); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("content-length over limit: %v", err)
	}
}

// TestParserVersionAfterConnect feeds CONNECT and SEND in one buffer and
// switches to 1.2 after CONNECT, as a server does.
func TestParserVersionAfterConnect(t *testing.T) {
	in := "CONNECT\naccept-version:1.2\nlogin:a\\b\n\n\x00SEND\ndestination:a\\cb\n\n\x00"
	got, err := parseEverySplit(t, Limits{}, V10, []byte(in), func(p *Parser, f *Frame) {
		if f.Command == CmdConnect {
			p.SetVersion(V12)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []*Frame{
		fr(CmdConnect, "", "accept-version", "1.2", "login", `a\b`),
		fr(CmdSend, "", "destination", "a:b"),
	}
	if !eventsEqual(got, want) {
		t.Fatalf("got %s\nwant %s", dumpAll(got), dumpAll(want))
	}
}

func TestParserStickyErrorAndReset(t *testing.T) {
	p := NewParser(Limits{})
	_, _, err := p.Feed([]byte("BAD\n"))
	if !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("got %v", err)
	}
	n, _, err2 := p.Feed([]byte("SEND\n\n\x00"))
	if n != 0 || err2 != err || p.Err() != err {
		t.Fatalf("error not sticky: n=%d err=%v", n, err2)
	}
	p.Reset()
	n, ev, err := p.Feed([]byte("SEND\n\n\x00"))
	if err != nil || ev.Frame == nil || n != 7 {
		t.Fatalf("after Reset: n=%d ev=%+v err=%v", n, ev, err)
	}
}

// TestParserEndlessLineIsBounded feeds megabytes of a header line that never
// ends and checks that the parser stops at the limit without holding more.
func TestParserEndlessLineIsBounded(t *testing.T) {
	p := NewParser(Limits{MaxLineLength: 1024})
	if _, _, err := p.Feed([]byte("SEND\nk:")); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 100)
	total := 0
	for range 100000 {
		n, _, err := p.Feed(chunk)
		total += n
		if err != nil {
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("got %v", err)
			}
			if total > 1024+100 {
				t.Fatalf("consumed %d octets before refusing", total)
			}
			if cap(p.line) > 2048 {
				t.Fatalf("line buffer grew to %d", cap(p.line))
			}
			return
		}
	}
	t.Fatal("endless line accepted")
}

// TestParserContentLengthNotPreallocated checks that a large content-length
// within the limit does not make the parser allocate it up front.
func TestParserContentLengthNotPreallocated(t *testing.T) {
	p := NewParser(Limits{MaxBodySize: 1 << 30})
	n, ev, err := p.Feed([]byte("SEND\ncontent-length:1000000000\n\nab"))
	if err != nil || ev.Frame != nil || n != 34 {
		t.Fatalf("n=%d ev=%+v err=%v", n, ev, err)
	}
	if cap(p.body) > bodyPrealloc {
		t.Fatalf("body preallocated %d octets", cap(p.body))
	}
	// Growth follows the data.
	for range 10 {
		if _, _, err := p.Feed(make([]byte, 100000)); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.body) != 1000002 || cap(p.body) > 4*len(p.body) {
		t.Fatalf("len %d cap %d", len(p.body), cap(p.body))
	}
}

func TestParserFrameOwnsMemory(t *testing.T) {
	in := []byte("SEND\ndestination:/q\ncontent-length:3\n\nabc\x00")
	p := NewParser(Limits{})
	_, ev, err := p.Feed(in)
	if err != nil || ev.Frame == nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = '#'
	}
	want := fr(CmdSend, "abc", "destination", "/q", "content-length", "3")
	if !frameEqual(ev.Frame, want) {
		t.Fatalf("frame changed with its input: %s", dump(ev.Frame))
	}
	// The next frame does not reuse the first one's memory.
	_, ev2, err := p.Feed([]byte("SEND\nxxxxxxxxxxx:/yy\ncontent-length:3\n\nxyz\x00"))
	if err != nil || ev2.Frame == nil {
		t.Fatal(err)
	}
	if !frameEqual(ev.Frame, want) {
		t.Fatalf("frame changed by the next one: %s", dump(ev.Frame))
	}
	// Appending to a body does not reach into other memory.
	ev.Frame.Body = append(ev.Frame.Body, "more"...)
	if !frameEqual(ev2.Frame, fr(CmdSend, "xyz", "xxxxxxxxxxx", "/yy", "content-length", "3")) {
		t.Fatalf("second frame changed: %s", dump(ev2.Frame))
	}
}

func TestParserInFrame(t *testing.T) {
	p := NewParser(Limits{})
	steps := []struct {
		in      string
		inFrame bool
	}{
		{"", false}, {"\r", true}, {"\n", false}, {"SE", true}, {"ND\n\n", true}, {"x", true}, {"\x00", false},
	}
	for _, s := range steps {
		if _, _, err := p.Feed([]byte(s.in)); err != nil {
			t.Fatal(err)
		}
		if p.InFrame() != s.inFrame {
			t.Fatalf("after %q InFrame = %v", s.in, p.InFrame())
		}
	}
}

func TestParserSetVersionInvalid(t *testing.T) {
	p := NewParser(Limits{})
	p.SetVersion(Version(9))
	if p.Version() != V10 {
		t.Fatalf("got %v", p.Version())
	}
	if p.Limits() != DefaultLimits() {
		t.Fatalf("limits %+v", p.Limits())
	}
	if got := NewParser(Limits{MaxHeaders: -1, MaxBodySize: 5}).Limits(); got.MaxHeaders != DefaultMaxHeaders || got.MaxBodySize != 5 {
		t.Fatalf("limits %+v", got)
	}
}

func TestErrorMatching(t *testing.T) {
	err := error(newError(ErrTruncated, "x"))
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, ErrTruncated) || errors.Is(err, ErrBodyTooLarge) {
		t.Fatal("Is mismatch")
	}
	if errors.Is(newError(ErrBodyTooLarge, "x"), io.ErrUnexpectedEOF) {
		t.Fatal("only truncation matches io.ErrUnexpectedEOF")
	}
	if got := ErrLineTooLong.Error(); got != "stomp frame: line too long" {
		t.Fatalf("got %q", got)
	}
	if got := ErrorKind(200).String(); got != "ErrorKind(200)" {
		t.Fatalf("got %q", got)
	}
	if got := err.Error(); got != "stomp frame: x" {
		t.Fatalf("got %q", got)
	}
}

// TestParserHeaderCounts covers every way a parsed frame's headers are
// allocated, and that adding to them never disturbs memory they share.
func TestParserHeaderCounts(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 8, 9, 16, 17, 40} {
		var in strings.Builder
		in.WriteString("MESSAGE\n")
		want := &Frame{Command: CmdMessage}
		for i := range n {
			name := "h" + strings.Repeat("x", i)
			in.WriteString(name + ":v\n")
			want.Add(name, "v")
		}
		in.WriteString("\n\x00")
		got, err := parseEverySplit(t, Limits{}, V12, []byte(in.String()), nil)
		if err != nil || len(got) != 1 || !frameEqual(got[0], want) {
			t.Fatalf("%d headers: %v %s", n, err, dumpAll(got))
		}
		f := got[0]
		before := f.Clone()
		f.Add("extra", "1")
		if !slices.Equal(f.Headers[:n], before.Headers) || len(f.Headers) != n+1 {
			t.Fatalf("%d headers: Add disturbed them", n)
		}
	}
}

func TestParserHugeLimits(t *testing.T) {
	lim := Limits{MaxBodySize: math.MaxInt}
	_, err := parseEverySplit(t, lim, V12, []byte("SEND\ncontent-length:99999999999999999999999999\n\n"), nil)
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestReasonQuotingIsBounded(t *testing.T) {
	_, err := parseEverySplit(t, Limits{}, V12, []byte(strings.Repeat("\x01Z", 1000)+"\n"), nil)
	var fe *Error
	if !errors.As(err, &fe) || fe.Kind != ErrUnknownCommand || len(fe.Reason) > 200 || !strings.HasSuffix(fe.Reason, "...") {
		t.Fatalf("got %v", err)
	}
}
