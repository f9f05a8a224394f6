package amqp091_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// rawConn is a hand-driven 0-9-1 client for malformed input.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	rd *spec.FrameReader
}

func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, nc: nc, rd: spec.NewFrameReader(bufio.NewReader(nc), 1<<20)}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) method(ch uint16, m spec.Method) { r.write(spec.AppendMethodFrame(nil, ch, m)) }

// expect reads frames (skipping heart-beats) until a method, and returns
// it.
func (r *rawConn) expect() spec.Method {
	r.t.Helper()
	for range 100 {
		f, err := r.rd.ReadFrame()
		if err != nil {
			r.t.Fatalf("read: %v", err)
		}
		if f.Type != spec.FrameMethod {
			continue
		}
		m, err := spec.DecodeMethod(f.Payload)
		if err != nil {
			r.t.Fatalf("decode: %v", err)
		}
		return m
	}
	r.t.Fatal("no method in 100 frames")
	return nil
}

// open runs the handshake and opens channel 1.
func (r *rawConn) open() {
	r.t.Helper()
	r.write([]byte(spec.ProtocolHeader))
	if _, ok := r.expect().(*spec.ConnectionStart); !ok {
		r.t.Fatal("no connection.start")
	}
	r.method(0, &spec.ConnectionStartOk{ClientProperties: spec.Table{}, Mechanism: "PLAIN", Response: []byte("\x00guest\x00guest"), Locale: "en_US"})
	tune, ok := r.expect().(*spec.ConnectionTune)
	if !ok {
		r.t.Fatal("no connection.tune")
	}
	r.method(0, &spec.ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax, Heartbeat: 0})
	r.method(0, &spec.ConnectionOpen{VirtualHost: "/"})
	if _, ok := r.expect().(*spec.ConnectionOpenOk); !ok {
		r.t.Fatal("no connection.open-ok")
	}
	r.method(1, &spec.ChannelOpen{})
	if _, ok := r.expect().(*spec.ChannelOpenOk); !ok {
		r.t.Fatal("no channel.open-ok")
	}
}

// closed reads until the connection or a channel is closed and returns
// the reply code and whether it was the connection.
func (r *rawConn) closed() (code uint16, connection bool) {
	r.t.Helper()
	for range 100 {
		switch m := r.expect().(type) {
		case *spec.ConnectionClose:
			return m.ReplyCode, true
		case *spec.ChannelClose:
			return m.ReplyCode, false
		}
	}
	r.t.Fatal("no close")
	return 0, false
}

func TestMalformedInput(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{MaxFrameSize: 8192})
	publish := spec.AppendMethodFrame(nil, 1, &spec.BasicPublish{RoutingKey: "q"})
	header := spec.AppendHeaderFrame(nil, 1, &spec.ContentHeader{ClassID: spec.ClassBasic, BodySize: 3})
	tests := []struct {
		name       string
		send       []byte
		code       uint16
		connection bool
	}{
		{"oversize frame", spec.AppendFrame(nil, spec.FrameBody, 1, make([]byte, 9000)), spec.FrameError, true},
		{"unknown frame type", []byte{9, 0, 1, 0, 0, 0, 0, spec.FrameEnd}, spec.FrameError, true},
		{"missing frame end", []byte{spec.FrameMethod, 0, 1, 0, 0, 0, 4, 0, 60, 0, 10, 0}, spec.FrameError, true},
		{"unknown method", spec.AppendFrame(nil, spec.FrameMethod, 1, []byte{0, 60, 0, 99}), spec.NotImplemented, true},
		{"truncated arguments", spec.AppendFrame(nil, spec.FrameMethod, 1, []byte{0, 50, 0, 10, 0}), spec.SyntaxError, true},
		{"content without publish", header, spec.UnexpectedFrame, true},
		{"body without header", append(publish, spec.AppendFrame(nil, spec.FrameBody, 1, []byte("abc"))...), spec.UnexpectedFrame, true},
		{"method inside content", append(append([]byte{}, publish...), spec.AppendMethodFrame(nil, 1, &spec.BasicQos{})...), spec.UnexpectedFrame, true},
		{"body longer than its header", append(append(append([]byte{}, publish...), header...), spec.AppendFrame(nil, spec.FrameBody, 1, []byte("abcdef"))...), spec.FrameError, true},
		{"channel not open", spec.AppendMethodFrame(nil, 7, &spec.BasicQos{}), spec.ChannelError, true},
		{"second channel.open", spec.AppendMethodFrame(nil, 1, &spec.ChannelOpen{}), spec.ChannelError, true},
		{"heart-beat on a channel", spec.AppendFrame(nil, spec.FrameHeartbeat, 1, nil), spec.FrameError, true},
		{"server method from the client", spec.AppendMethodFrame(nil, 1, &spec.BasicDeliver{}), spec.CommandInvalid, true},
		{"channel method on channel 0", spec.AppendMethodFrame(nil, 0, &spec.BasicQos{}), spec.CommandInvalid, true},
		{"consume from a missing queue", spec.AppendMethodFrame(nil, 1, &spec.BasicConsume{Queue: "missing"}), spec.NotFound, false},
		{"unknown exchange", append(spec.AppendMethodFrame(nil, 1, &spec.BasicPublish{Exchange: "nope"}), spec.AppendHeaderFrame(nil, 1, &spec.ContentHeader{ClassID: spec.ClassBasic})...), spec.NotFound, false},
		{"immediate publish", spec.AppendMethodFrame(nil, 1, &spec.BasicPublish{RoutingKey: "q", Immediate: true}), spec.NotImplemented, true},
		{"reserved queue name", spec.AppendMethodFrame(nil, 1, &spec.QueueDeclare{Queue: "amq.mine"}), spec.AccessRefused, false},
		{"exclusive declare of a shared queue", spec.AppendMethodFrame(spec.AppendMethodFrame(nil, 1, &spec.QueueDeclare{Queue: "shared"}), 1, &spec.QueueDeclare{Queue: "shared", Exclusive: true}), spec.ResourceLocked, false},
		{"unknown delivery tag", spec.AppendMethodFrame(nil, 1, &spec.BasicAck{DeliveryTag: 5}), spec.PreconditionFailed, false},
		{"bad selector", spec.AppendMethodFrame(nil, 1, &spec.BasicConsume{Queue: "sel", Arguments: spec.Table{"x-selector": "a = "}}), spec.PreconditionFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawDial(t, addr)
			r.open()
			if tt.name == "bad selector" {
				r.method(1, &spec.QueueDeclare{Queue: "sel"})
				if _, ok := r.expect().(*spec.QueueDeclareOk); !ok {
					t.Fatal("no declare-ok")
				}
			}
			r.write(tt.send)
			code, conn := r.closed()
			if code != tt.code || conn != tt.connection {
				t.Fatalf("closed with %d (connection %v), want %d (connection %v)", code, conn, tt.code, tt.connection)
			}
			if conn {
				// After connection.close the server closes the socket.
				r.method(0, &spec.ConnectionCloseOk{})
				_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadAll(r.nc); err != nil {
					t.Fatalf("socket not closed cleanly: %v", err)
				}
			} else {
				// The channel is closed, the connection is not: answer
				// close-ok and reopen the channel.
				r.method(1, &spec.ChannelCloseOk{})
				r.method(1, &spec.ChannelOpen{})
				if _, ok := r.expect().(*spec.ChannelOpenOk); !ok {
					t.Fatal("channel not reopened")
				}
			}
			// Other connections keep working.
			other := rawDial(t, addr)
			other.open()
		})
	}
}

func TestBadProtocolHeader(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	r := rawDial(t, addr)
	r.write([]byte("HTTP/1.1"))
	got, err := io.ReadAll(r.nc)
	if err != nil || string(got) != spec.ProtocolHeader {
		t.Fatalf("answered %q (%v), want the 0-9-1 header then the end", got, err)
	}
}

func TestTuneBounds(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{MaxFrameSize: 8192, MaxChannels: 4})
	for _, tc := range []struct {
		name string
		ok   spec.ConnectionTuneOk
	}{
		{"frame-max too large", spec.ConnectionTuneOk{ChannelMax: 4, FrameMax: 1 << 20}},
		{"frame-max too small", spec.ConnectionTuneOk{ChannelMax: 4, FrameMax: 100}},
		{"channel-max too large", spec.ConnectionTuneOk{ChannelMax: 100, FrameMax: 8192}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawDial(t, addr)
			r.write([]byte(spec.ProtocolHeader))
			r.expect()
			r.method(0, &spec.ConnectionStartOk{ClientProperties: spec.Table{}, Mechanism: "PLAIN", Response: []byte("\x00u\x00p"), Locale: "en_US"})
			r.expect()
			r.method(0, &tc.ok)
			if code, conn := r.closed(); code != spec.NotAllowed || !conn {
				t.Fatalf("closed with %d (connection %v), want 530", code, conn)
			}
		})
	}
	t.Run("channel beyond channel-max", func(t *testing.T) {
		r := rawDial(t, addr)
		r.open()
		r.method(5, &spec.ChannelOpen{})
		if code, conn := r.closed(); code != spec.NotAllowed || !conn {
			t.Fatalf("closed with %d (connection %v), want 530", code, conn)
		}
	})
}

// The server beats when the client asked for heart-beats, and drops a
// client that sends nothing for twice the interval.
func TestHeartBeats(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{HeartBeat: time.Second})
	r := rawDial(t, addr)
	r.write([]byte(spec.ProtocolHeader))
	r.expect()
	r.method(0, &spec.ConnectionStartOk{ClientProperties: spec.Table{}, Mechanism: "PLAIN", Response: []byte("\x00u\x00p"), Locale: "en_US"})
	tune := r.expect().(*spec.ConnectionTune)
	if tune.Heartbeat != 1 {
		t.Fatalf("tune heartbeat %d", tune.Heartbeat)
	}
	r.method(0, &spec.ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax, Heartbeat: 1})
	r.method(0, &spec.ConnectionOpen{VirtualHost: "/"})
	r.expect()
	start := time.Now()
	beats := 0
	for time.Since(start) < 10*time.Second {
		f, err := r.rd.ReadFrame()
		if err != nil {
			break // dropped
		}
		if f.Type == spec.FrameHeartbeat {
			beats++
		}
	}
	took := time.Since(start)
	if beats < 1 {
		t.Fatalf("%d heart-beats before the end", beats)
	}
	if took < 2*time.Second || took > 8*time.Second {
		t.Fatalf("a silent client was dropped after %s, want about 3s", took)
	}
}
