package amqp

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// benchInbound is the payload of a durable 1 KiB transfer as the load
// generator's clients send it: a header, three application properties
// and one data section.
func benchInbound(tb testing.TB) []byte {
	am := &types.Message{
		Header: &types.Header{Durable: types.Some(true)},
		ApplicationProperties: types.ApplicationProperties{
			{Key: "sluicebench-run", Value: "run-0123456789"},
			{Key: "sluicebench-seq", Value: "0.123456"},
			{Key: "sluicebench-ts", Value: int64(1700000000000000000)},
		},
		Data: []types.Data{bytes.Repeat([]byte("x"), 1024)},
	}
	b, err := am.AppendAMQP(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkInboundTransfer measures what the reader does with a complete
// incoming message before it hands it to the engine: decode and map.
func BenchmarkInboundTransfer(b *testing.B) {
	data := benchInbound(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		am, err := types.DecodeMessage(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := toEngine(am, cap(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDelivery is the message of benchInbound as the engine delivers it.
func benchDelivery(tb testing.TB) message.Delivery {
	am, err := types.DecodeMessage(benchInbound(tb))
	if err != nil {
		tb.Fatal(err)
	}
	in, err := toEngine(am, 0)
	if err != nil {
		tb.Fatal(err)
	}
	m := in.msg
	m.ID = "ID:sluice-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-1234"
	m.Destination = message.Destination{Kind: message.Queue, Name: "sluicebench-persistent-0123456789"}
	m.DeliveryMode = message.Persistent
	m.Priority = 4
	m.Timestamp = time.Now().UnixMilli()
	return message.Delivery{Msg: m, DeliveryCount: 1}
}

// BenchmarkOutboundDelivery measures what a consumer link does with a
// delivery before it queues its transfer: map and encode.
func BenchmarkOutboundDelivery(b *testing.B) {
	d := benchDelivery(b)
	now := time.Now().UnixMilli()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		payload, err := fromEngine(d, now).AppendAMQP(make([]byte, 0, encodedSizeHint(d.Msg)))
		if err != nil {
			b.Fatal(err)
		}
		n = len(payload)
	}
	b.SetBytes(int64(n))
}
