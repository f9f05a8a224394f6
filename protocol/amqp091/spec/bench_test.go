package spec

import (
	"bytes"
	"testing"
	"time"
)

// publishFrames returns a basic.publish, its content header (the
// properties a JMS-style client sets) and a body of size bytes, as frames.
func publishFrames(size int) []byte {
	b := AppendMethodFrame(nil, 1, &BasicPublish{Exchange: "amq.topic", RoutingKey: "orders.eu.created", Mandatory: true})
	h := ContentHeader{ClassID: ClassBasic, BodySize: uint64(size), Properties: BasicProperties{
		Flags:       FlagContentType | FlagDeliveryMode | FlagPriority | FlagMessageID | FlagTimestamp,
		ContentType: "application/json", DeliveryMode: 2, Priority: 4, MessageID: "ID:sluice-1-2-3", Timestamp: time.Unix(1700000000, 0),
	}}
	b = AppendHeaderFrame(b, 1, &h)
	return AppendFrame(b, FrameBody, 1, make([]byte, size))
}

// BenchmarkDecodePublish reads a basic.publish, its content header and body
// with a FrameReader and decodes them into structs kept across messages, as
// a server's channel would.
func BenchmarkDecodePublish(b *testing.B) {
	frames := publishFrames(256)
	r := bytes.NewReader(frames)
	fr := NewFrameReader(r, 131072)
	var pub BasicPublish
	var h ContentHeader
	b.SetBytes(int64(len(frames)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frames)
		f, err := fr.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if err := pub.Decode(f.Payload[4:]); err != nil {
			b.Fatal(err)
		}
		if f, err = fr.ReadFrame(); err != nil {
			b.Fatal(err)
		}
		if err := h.Decode(f.Payload); err != nil {
			b.Fatal(err)
		}
		if f, err = fr.ReadFrame(); err != nil || len(f.Payload) != 256 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeMethodPublish decodes basic.publish through DecodeMethod,
// which returns a new struct each time.
func BenchmarkDecodeMethodPublish(b *testing.B) {
	payload := AppendMethod(nil, &BasicPublish{Exchange: "amq.topic", RoutingKey: "orders.eu.created"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMethod(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDeliver encodes a basic.deliver, its content header and a
// body frame into one reused buffer, as a connection's writer would.
func BenchmarkEncodeDeliver(b *testing.B) {
	body := make([]byte, 256)
	d := BasicDeliver{ConsumerTag: "amq.ctag-1", Exchange: "amq.topic", RoutingKey: "orders.eu.created"}
	h := ContentHeader{ClassID: ClassBasic, BodySize: uint64(len(body)), Properties: BasicProperties{
		Flags:       FlagContentType | FlagDeliveryMode | FlagPriority | FlagMessageID | FlagTimestamp,
		ContentType: "application/json", DeliveryMode: 2, Priority: 4, MessageID: "ID:sluice-1-2-3", Timestamp: time.Unix(1700000000, 0),
	}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		d.DeliveryTag++
		buf = AppendMethodFrame(buf[:0], 1, &d)
		buf = AppendHeaderFrame(buf, 1, &h)
		buf = AppendFrame(buf, FrameBody, 1, body)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkEncodeDeliverHeaders is BenchmarkEncodeDeliver with a headers
// table of three application properties.
func BenchmarkEncodeDeliverHeaders(b *testing.B) {
	d := BasicDeliver{ConsumerTag: "amq.ctag-1", Exchange: "amq.topic", RoutingKey: "orders.eu.created"}
	h := ContentHeader{ClassID: ClassBasic, BodySize: 256, Properties: BasicProperties{
		Flags:   FlagContentType | FlagHeaders | FlagDeliveryMode,
		Headers: Table{"region": "eu", "amount": int64(1200), "JMSXDeliveryCount": int32(1)}, ContentType: "application/json", DeliveryMode: 2,
	}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		d.DeliveryTag++
		buf = AppendMethodFrame(buf[:0], 1, &d)
		buf = AppendHeaderFrame(buf, 1, &h)
	}
}
