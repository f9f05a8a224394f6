package frame

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	stompframe "github.com/go-stomp/stomp/v3/frame"
)

// These tests use go-stomp, an independent client implementation, as a
// check on both halves of the codec: frames written by its writer must parse
// here to the same frames, and frames written here must parse there.

// fromGoStomp converts a go-stomp frame to ours.
func fromGoStomp(t *testing.T, g *stompframe.Frame) *Frame {
	t.Helper()
	c, ok := ParseCommand(g.Command)
	if !ok {
		t.Fatalf("go-stomp command %q unknown here", g.Command)
	}
	f := &Frame{Command: c}
	if g.Header != nil {
		for i := range g.Header.Len() {
			k, v := g.Header.GetAt(i)
			f.Add(k, v)
		}
	}
	if len(g.Body) > 0 {
		f.Body = g.Body
	}
	return f
}

func TestGoStompWriterToOurReader(t *testing.T) {
	// go-stomp escapes every frame, CONNECT included (the specification
	// says CONNECT is never escaped), so its CONNECT frame holds nothing
	// that escaping would change.
	connect := stompframe.New(stompframe.CONNECT,
		"accept-version", "1.1,1.2", "host", "vhost", "login", "guest", "passcode", "guest", "heart-beat", "0,10000")
	send := stompframe.New(stompframe.SEND,
		"destination", "/queue/a:b", "content-type", "text/plain", "receipt", "r\\1", "x-multi", "l1\nl2")
	send.Body = []byte("hello\nworld")
	binary := stompframe.New(stompframe.SEND, "destination", "/queue/bin", "content-length", "4")
	binary.Body = []byte{0, 1, 0, 2}
	crlf := stompframe.New(stompframe.SEND, "destination", "/queue/cr", "k", "a\rb")
	sub := stompframe.New(stompframe.SUBSCRIBE, "id", "0", "destination", "/topic/t", "ack", "client-individual",
		"selector", "colour = 'red'")
	ack := stompframe.New(stompframe.ACK, "id", "msg:1", "transaction", "tx1")
	nack := stompframe.New(stompframe.NACK, "id", "msg:2")
	begin := stompframe.New(stompframe.BEGIN, "transaction", "tx1")
	commit := stompframe.New(stompframe.COMMIT, "transaction", "tx1")
	abort := stompframe.New(stompframe.ABORT, "transaction", "tx1")
	unsub := stompframe.New(stompframe.UNSUBSCRIBE, "id", "0")
	disc := stompframe.New(stompframe.DISCONNECT, "receipt", "bye")

	for _, v := range []Version{V11, V12} {
		t.Run(v.String(), func(t *testing.T) {
			frames := []*stompframe.Frame{connect, send, binary, sub, ack, nack, begin, commit, abort, unsub, disc}
			if v == V12 {
				frames = append(frames, crlf) // go-stomp writes \r, defined only in 1.2
			}
			var wire bytes.Buffer
			w := stompframe.NewWriter(&wire)
			for _, g := range frames {
				if err := w.Write(g); err != nil {
					t.Fatal(err)
				}
				if err := w.Write(nil); err != nil { // a heart-beat
					t.Fatal(err)
				}
			}
			var want []*Frame
			for _, g := range frames {
				want = append(want, fromGoStomp(t, g), hb)
			}
			switchVersion := func(p *Parser, f *Frame) {
				if f.Command == CmdConnect {
					p.SetVersion(v)
				}
			}
			got, err := parseEverySplit(t, Limits{}, V10, wire.Bytes(), switchVersion)
			if err != nil {
				t.Fatal(err)
			}
			if !eventsEqual(got, want) {
				t.Fatalf("got  %s\nwant %s", dumpAll(got), dumpAll(want))
			}
		})
	}
}

func TestOurWriterToGoStompReader(t *testing.T) {
	frames := []*Frame{
		fr(CmdConnected, "", "version", "1.2", "heart-beat", "10000,10000", "session", "s-1", "server", "sluice/0.1"),
		fr(CmdMessage, "hello\nworld", "destination", "/queue/a:b", "message-id", "m\\1", "subscription", "0",
			"x-multi", "l1\nl2\r"),
		fr(CmdMessage, "\x00bin\x00", "destination", "/queue/bin", "subscription", "0", "message-id", "2"),
		fr(CmdReceipt, "", "receipt-id", "r-1"),
		fr(CmdError, "details", "message", "something failed", "content-type", "text/plain"),
	}
	var wire bytes.Buffer
	w := NewWriter(&wire, EncodeOptions{ContentLength: true})
	w.SetVersion(V12)
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteHeartBeat(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := stompframe.NewReader(&wire)
	for _, f := range frames {
		g, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		want := f.Clone()
		if len(want.Body) > 0 {
			want.Set(HeaderContentLength, strconv.Itoa(len(want.Body)))
		}
		if got := fromGoStomp(t, g); !frameEqual(got, want) {
			t.Fatalf("go-stomp read %s\nwant %s", dump(got), dump(want))
		}
		if hbf, err := r.Read(); err != nil || hbf != nil {
			t.Fatalf("heart-beat read as %v, %v", hbf, err)
		}
	}
	if _, err := r.Read(); err != io.EOF {
		t.Fatalf("got %v at the end", err)
	}
}
