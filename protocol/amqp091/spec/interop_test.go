package spec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// fakeServer is the broker side of one connection, scripted by the test
// and speaking only through the codec.
type fakeServer struct {
	conn net.Conn
	fr   *spec.FrameReader
	out  []byte
}

func (s *fakeServer) write(b []byte) error {
	_, err := s.conn.Write(b)
	return err
}

func (s *fakeServer) send(ch uint16, m spec.Method) error {
	s.out = spec.AppendMethodFrame(s.out[:0], ch, m)
	return s.write(s.out)
}

// sendContent sends a method with content: the method frame, the content
// header, and the body cut into frames of at most chunk bytes.
func (s *fakeServer) sendContent(ch uint16, m spec.Method, props spec.BasicProperties, body []byte, chunk int) error {
	s.out = spec.AppendMethodFrame(s.out[:0], ch, m)
	h := spec.ContentHeader{ClassID: spec.ClassBasic, BodySize: uint64(len(body)), Properties: props}
	s.out = spec.AppendHeaderFrame(s.out, ch, &h)
	for len(body) > 0 {
		n := min(chunk, len(body))
		s.out = spec.AppendFrame(s.out, spec.FrameBody, ch, body[:n])
		body = body[n:]
	}
	return s.write(s.out)
}

// next returns the next frame that is not a heartbeat.
func (s *fakeServer) next() (spec.Frame, error) {
	for range 100 {
		f, err := s.fr.ReadFrame()
		if err != nil || f.Type != spec.FrameHeartbeat {
			return f, err
		}
	}
	return spec.Frame{}, fmt.Errorf("only heartbeats")
}

// expect reads the next method, which must be on channel ch and of the
// type of want, and decodes it into want.
func (s *fakeServer) expect(ch uint16, want spec.Method) error {
	f, err := s.next()
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", want.Name(), err)
	}
	if f.Type != spec.FrameMethod {
		return fmt.Errorf("waiting for %s: a frame of type %d", want.Name(), f.Type)
	}
	m, err := spec.DecodeMethod(f.Payload)
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", want.Name(), err)
	}
	if m.Name() != want.Name() || f.Channel != ch {
		return fmt.Errorf("got %s on channel %d, want %s on channel %d", m.Name(), f.Channel, want.Name(), ch)
	}
	reflect.ValueOf(want).Elem().Set(reflect.ValueOf(m).Elem())
	return nil
}

// content reads a content header and the body frames that complete it.
func (s *fakeServer) content(ch uint16) (spec.ContentHeader, []byte, int, error) {
	f, err := s.next()
	if err != nil {
		return spec.ContentHeader{}, nil, 0, err
	}
	if f.Type != spec.FrameHeader || f.Channel != ch {
		return spec.ContentHeader{}, nil, 0, fmt.Errorf("frame type %d on channel %d, want a content header on %d", f.Type, f.Channel, ch)
	}
	h, err := spec.DecodeContentHeader(f.Payload)
	if err != nil {
		return h, nil, 0, err
	}
	var body []byte
	frames := 0
	for uint64(len(body)) < h.BodySize {
		f, err := s.next()
		if err != nil {
			return h, nil, 0, err
		}
		if f.Type != spec.FrameBody || f.Channel != ch {
			return h, nil, 0, fmt.Errorf("frame type %d on channel %d, want a body frame on %d", f.Type, f.Channel, ch)
		}
		if len(f.Payload) > 4096-8 {
			return h, nil, 0, fmt.Errorf("a body frame of %d bytes exceeds frame-max 4096", len(f.Payload))
		}
		body = append(body, f.Payload...)
		frames++
	}
	return h, body, frames, nil
}

func check(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

var publishedBody = bytes.Repeat([]byte("0123456789"), 1000)

// script is the server's half of TestAMQP091GoClient.
func (s *fakeServer) script() error {
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(s.conn, hdr); err != nil || string(hdr) != spec.ProtocolHeader {
		return fmt.Errorf("protocol header %q, %v", hdr, err)
	}
	if err := s.send(0, &spec.ConnectionStart{
		VersionMajor: 0, VersionMinor: 9,
		ServerProperties: spec.Table{"product": "fake", "capabilities": spec.Table{
			"publisher_confirms": true, "basic.nack": true, "connection.blocked": true, "consumer_cancel_notify": true,
		}},
		Mechanisms: []byte("PLAIN AMQPLAIN"), Locales: []byte("en_US"),
	}); err != nil {
		return err
	}
	var startOk spec.ConnectionStartOk
	if err := s.expect(0, &startOk); err != nil {
		return err
	}
	caps, _ := startOk.ClientProperties["capabilities"].(spec.Table)
	if err := check(startOk.Mechanism == "PLAIN" && string(startOk.Response) == "\x00guest\x00guest" && caps["connection.blocked"] == true,
		"start-ok %+v", startOk); err != nil {
		return err
	}
	if _, ok := startOk.ClientProperties["product"].(string); !ok {
		return fmt.Errorf("client properties %#v", startOk.ClientProperties)
	}
	if err := s.send(0, &spec.ConnectionTune{ChannelMax: 16, FrameMax: 4096, Heartbeat: 60}); err != nil {
		return err
	}
	var tuneOk spec.ConnectionTuneOk
	if err := s.expect(0, &tuneOk); err != nil {
		return err
	}
	if err := check(tuneOk == spec.ConnectionTuneOk{ChannelMax: 16, FrameMax: 4096, Heartbeat: 60}, "tune-ok %+v", tuneOk); err != nil {
		return err
	}
	s.fr.SetMaxFrame(tuneOk.FrameMax)
	var open spec.ConnectionOpen
	if err := s.expect(0, &open); err != nil {
		return err
	}
	if err := check(open.VirtualHost == "/", "open %+v", open); err != nil {
		return err
	}
	if err := s.send(0, &spec.ConnectionOpenOk{}); err != nil {
		return err
	}

	if err := s.expect(1, &spec.ChannelOpen{}); err != nil {
		return err
	}
	// The extras the XML lacks, in the client's dialect.
	if err := s.send(0, &spec.ConnectionBlocked{Reason: "low on memory"}); err != nil {
		return err
	}
	if err := s.send(0, &spec.ConnectionUnblocked{}); err != nil {
		return err
	}
	if err := s.send(1, &spec.ChannelOpenOk{}); err != nil {
		return err
	}

	var declare spec.QueueDeclare
	if err := s.expect(1, &declare); err != nil {
		return err
	}
	if err := check(declare.Queue == "q1" && declare.Durable && !declare.AutoDelete && !declare.Exclusive && !declare.NoWait && !declare.Passive &&
		declare.Arguments["x-max-length"] == int32(10) && declare.Arguments["x-queue-type"] == "classic", "queue.declare %+v", declare); err != nil {
		return err
	}
	if err := s.send(1, &spec.QueueDeclareOk{Queue: "q1", MessageCount: 3, ConsumerCount: 1}); err != nil {
		return err
	}
	if err := s.expect(1, &spec.ConfirmSelect{}); err != nil {
		return err
	}
	if err := s.send(1, &spec.ConfirmSelectOk{}); err != nil {
		return err
	}

	var pub spec.BasicPublish
	if err := s.expect(1, &pub); err != nil {
		return err
	}
	if err := check(pub.Exchange == "amq.topic" && pub.RoutingKey == "a.b" && pub.Mandatory && !pub.Immediate, "basic.publish %+v", pub); err != nil {
		return err
	}
	h, body, frames, err := s.content(1)
	if err != nil {
		return err
	}
	p := h.Properties
	wantFlags := spec.FlagContentType | spec.FlagHeaders | spec.FlagDeliveryMode | spec.FlagMessageID | spec.FlagTimestamp
	if err := check(h.ClassID == spec.ClassBasic && h.BodySize == uint64(len(publishedBody)) && p.Flags == wantFlags &&
		p.ContentType == "text/plain" && p.DeliveryMode == 2 && p.MessageID == "m1" && p.Timestamp.Equal(time.Unix(1700000000, 0)) &&
		p.Headers["k"] == "v" && p.Headers["n"] == int64(5), "content header %+v", h); err != nil {
		return err
	}
	if err := check(bytes.Equal(body, publishedBody) && frames == 3, "body of %d bytes in %d frames", len(body), frames); err != nil {
		return err
	}
	// Mandatory and unroutable: the message comes back before its confirm.
	if err := s.sendContent(1, &spec.BasicReturn{ReplyCode: spec.NoRoute, ReplyText: "NO_ROUTE", Exchange: "amq.topic", RoutingKey: "a.b"},
		h.Properties, body, 4096-8); err != nil {
		return err
	}
	if err := s.send(1, &spec.BasicAck{DeliveryTag: 1}); err != nil {
		return err
	}

	var consume spec.BasicConsume
	if err := s.expect(1, &consume); err != nil {
		return err
	}
	if err := check(consume.Queue == "q1" && consume.ConsumerTag == "ctag" && !consume.NoAck, "basic.consume %+v", consume); err != nil {
		return err
	}
	if err := s.send(1, &spec.BasicConsumeOk{ConsumerTag: "ctag"}); err != nil {
		return err
	}
	if err := s.sendContent(1, &spec.BasicDeliver{ConsumerTag: "ctag", DeliveryTag: 1, Redelivered: true, Exchange: "amq.topic", RoutingKey: "a.b"},
		spec.BasicProperties{
			Flags:       spec.FlagContentType | spec.FlagHeaders | spec.FlagPriority | spec.FlagCorrelationID | spec.FlagTimestamp,
			ContentType: "application/json", Headers: spec.Table{"x": int32(1), "nested": spec.Table{"y": []any{"z"}}}, Priority: 4,
			CorrelationID: "c1", Timestamp: time.Unix(1700000001, 0),
		}, []byte(`{"a":1}`), 5); err != nil {
		return err
	}
	var ack spec.BasicAck
	if err := s.expect(1, &ack); err != nil {
		return err
	}
	if err := check(ack == spec.BasicAck{DeliveryTag: 1}, "basic.ack %+v", ack); err != nil {
		return err
	}
	// A soft error closes the channel, naming the method that failed.
	var passive spec.QueueDeclare
	if err := s.expect(1, &passive); err != nil {
		return err
	}
	if err := check(passive.Passive && passive.Queue == "missing", "passive queue.declare %+v", passive); err != nil {
		return err
	}
	if err := s.send(1, &spec.ChannelClose{ReplyCode: spec.NotFound, ReplyText: "NOT_FOUND - no queue 'missing'",
		FailingClassID: spec.ClassQueue, FailingMethodID: spec.MethodQueueDeclare}); err != nil {
		return err
	}
	if err := s.expect(1, &spec.ChannelCloseOk{}); err != nil {
		return err
	}
	var closing spec.ConnectionClose
	if err := s.expect(0, &closing); err != nil {
		return err
	}
	if err := check(closing.ReplyCode == spec.ReplySuccess, "connection.close %+v", closing); err != nil {
		return err
	}
	return s.send(0, &spec.ConnectionCloseOk{})
}

// TestAMQP091GoClient runs a real amqp091-go client against a fake server
// that speaks only through this codec: the handshake, channel.open, the
// connection.blocked/unblocked extras, queue.declare with arguments,
// confirm.select, a publish whose body the client cuts into three frames,
// its return (mandatory, no route) and confirm, a consume and a delivery
// the server cuts into two frames, the client's ack, a channel.close for a
// failed passive queue.declare, and connection.close.
func TestAMQP091GoClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverDone := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverDone <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		s := &fakeServer{conn: c, fr: spec.NewFrameReader(c, spec.FrameMinSize)}
		serverDone <- s.script()
	}()

	conn, err := amqp.DialConfig("amqp://guest:guest@"+ln.Addr().String()+"/", amqp.Config{Heartbeat: 60 * time.Second, Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		t.Fatalf("dial: %v (server: %v)", err, serverErr(serverDone))
	}
	defer conn.Close()
	blocked := conn.NotifyBlocked(make(chan amqp.Blocking, 2))
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v (server: %v)", err, serverErr(serverDone))
	}
	for _, want := range []amqp.Blocking{{Active: true, Reason: "low on memory"}, {Active: false}} {
		select {
		case b := <-blocked:
			if b != want {
				t.Fatalf("blocking %+v, want %+v", b, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no connection.blocked notification")
		}
	}
	q, err := ch.QueueDeclare("q1", true, false, false, false, amqp.Table{"x-max-length": int32(10), "x-queue-type": "classic"})
	if err != nil || q.Name != "q1" || q.Messages != 3 || q.Consumers != 1 {
		t.Fatalf("queue.declare: %+v, %v", q, err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "amq.topic", "a.b", true, false, amqp.Publishing{
		ContentType: "text/plain", DeliveryMode: amqp.Persistent, MessageId: "m1", Timestamp: time.Unix(1700000000, 0),
		Headers: amqp.Table{"k": "v", "n": int64(5)}, Body: publishedBody,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dc.WaitContext(ctx); !ok || err != nil {
		t.Fatalf("confirm: %v %v (server: %v)", ok, err, serverErr(serverDone))
	}
	select {
	case r := <-returns:
		if r.ReplyCode != spec.NoRoute || r.ReplyText != "NO_ROUTE" || r.Exchange != "amq.topic" || r.RoutingKey != "a.b" ||
			r.MessageId != "m1" || r.Headers["k"] != "v" || !bytes.Equal(r.Body, publishedBody) {
			t.Fatalf("return %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no basic.return")
	}
	deliveries, err := ch.Consume("q1", "ctag", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-deliveries:
		nested, _ := d.Headers["nested"].(amqp.Table)
		if string(d.Body) != `{"a":1}` || d.ContentType != "application/json" || d.CorrelationId != "c1" || d.Priority != 4 ||
			!d.Redelivered || d.DeliveryTag != 1 || d.RoutingKey != "a.b" || d.Exchange != "amq.topic" || d.ConsumerTag != "ctag" ||
			d.Headers["x"] != int32(1) || !reflect.DeepEqual(nested["y"], []any{"z"}) || !d.Timestamp.Equal(time.Unix(1700000001, 0)) {
			t.Fatalf("delivery %+v", d)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no delivery (server: %v)", serverErr(serverDone))
	}
	_, err = ch.QueueDeclarePassive("missing", false, false, false, false, nil)
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != spec.NotFound || ae.Reason != "NOT_FOUND - no queue 'missing'" || ae.Server != true {
		t.Fatalf("passive declare of a missing queue: %#v", err)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case err := <-serverDone:
		if err != nil {
			t.Fatalf("server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server script did not finish")
	}
}

// serverErr returns the server script's error if it has finished.
func serverErr(done chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
