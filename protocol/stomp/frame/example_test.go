package frame_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// A server's read loop: negotiate on CONNECT, then read frames and
// heart-beats, answering through a buffered Writer.
func ExampleReader() {
	in := strings.NewReader("CONNECT\naccept-version:1.1,1.2\nhost:h\nheart-beat:0,5000\n\n\x00" +
		"SEND\ndestination:/queue/a\\cb\ncontent-length:5\n\nhello\x00\n" +
		"DISCONNECT\nreceipt:bye\n\n\x00")
	var out bytes.Buffer
	r := frame.NewReader(in, frame.Limits{})
	w := frame.NewWriter(&out, frame.EncodeOptions{ContentLength: true})
	server := frame.HeartBeat{Send: 10 * time.Second, Receive: 10 * time.Second}
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var fe *frame.Error
		if errors.As(err, &fe) {
			// A real server sends ERROR with message:fe.Reason and closes.
			fmt.Println("protocol error:", fe.Reason)
			return
		}
		if err != nil {
			fmt.Println("read error:", err) // connection lost, deadline passed...
			return
		}
		if ev.HeartBeat {
			fmt.Println("heart-beat")
			continue
		}
		f := ev.Frame
		switch f.Command {
		case frame.CmdConnect, frame.CmdStomp:
			accept, ok := f.Get(frame.HeaderAcceptVersion)
			v, err := frame.NegotiateVersion(accept, ok, nil)
			if err != nil {
				fmt.Println(err)
				return
			}
			hb, hbOK := f.Get(frame.HeaderHeartBeat)
			send, recv, err := frame.NegotiateHeartBeat(hb, hbOK, server)
			if err != nil {
				fmt.Println(err)
				return
			}
			r.SetVersion(v)
			w.SetVersion(v)
			fmt.Printf("connected %s, send every %v, expect every %v\n", v, send, recv)
			connected := &frame.Frame{Command: frame.CmdConnected}
			connected.Add(frame.HeaderVersion, v.String())
			connected.Add(frame.HeaderHeartBeat, server.String())
			_ = w.WriteFrame(connected)
		case frame.CmdSend:
			dest, _ := f.Get("destination")
			fmt.Printf("SEND to %s: %s\n", dest, f.Body)
		case frame.CmdDisconnect:
			receipt, _ := f.Get(frame.HeaderReceipt)
			rf := &frame.Frame{Command: frame.CmdReceipt}
			rf.Add(frame.HeaderReceiptID, receipt)
			_ = w.WriteFrame(rf)
		}
	}
	_ = w.Flush()
	fmt.Printf("%q\n", out.String())
	// Output:
	// connected 1.2, send every 10s, expect every 0s
	// SEND to /queue/a:b: hello
	// heart-beat
	// "CONNECTED\nversion:1.2\nheart-beat:10000,10000\n\n\x00RECEIPT\nreceipt-id:bye\n\n\x00"
}

// The Parser can be fed input in pieces of any size, here one octet at a
// time; it reports each frame and heart-beat as it completes.
func ExampleParser() {
	input := []byte("\nACK\nid:7\n\n\x00\r\n")
	p := frame.NewParser(frame.Limits{})
	p.SetVersion(frame.V12)
	for i := 0; i < len(input); {
		n, ev, err := p.Feed(input[i : i+1])
		if err != nil {
			fmt.Println(err)
			return
		}
		i += n
		switch {
		case ev.Frame != nil:
			id, _ := ev.Frame.Get("id")
			fmt.Println(ev.Frame.Command, id)
		case ev.HeartBeat:
			fmt.Println("heart-beat")
		}
	}
	// Output:
	// heart-beat
	// ACK 7
	// heart-beat
}

// Limits are enforced as the input arrives, with reasons fit for an ERROR
// frame.
func ExampleLimits() {
	p := frame.NewParser(frame.Limits{MaxLineLength: 16})
	_, _, err := p.Feed([]byte("SEND\ndestination:/queue/far-too-long\n"))
	fmt.Println(err, errors.Is(err, frame.ErrLineTooLong))
	// Output:
	// stomp frame: header line too long (limit 16) true
}
