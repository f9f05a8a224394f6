package frames_test

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

func benchTransferFrame(b *testing.B) frames.Frame {
	m := &types.Message{
		Header:     &types.Header{Durable: types.Some(true)},
		Properties: &types.Properties{MessageID: "ID:1", To: "queue://orders"},
		ApplicationProperties: types.ApplicationProperties{
			{Key: "a", Value: int32(1)}, {Key: "b", Value: int64(2)}, {Key: "c", Value: "three"},
			{Key: "d", Value: true}, {Key: "e", Value: 5.5}, {Key: "f", Value: "six"},
		},
		Data: []types.Data{bytes.Repeat([]byte("x"), 1024)},
	}
	payload, err := m.AppendAMQP(nil)
	if err != nil {
		b.Fatal(err)
	}
	return frames.Frame{Channel: 1, Body: &types.Transfer{
		Handle: 3, DeliveryID: types.Some(types.DeliveryNumber(99)), DeliveryTag: types.DeliveryTag("tag-1"),
		MessageFormat: types.Some(types.MessageFormat(0)), Settled: types.Some(false),
	}, Payload: payload}
}

// BenchmarkWriteTransferFrame: a transfer frame with a 1 KiB message.
func BenchmarkWriteTransferFrame(b *testing.B) {
	f := benchTransferFrame(b)
	w := frames.NewWriter(io.Discard, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteFrame(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTransferFrame reads and decodes the same frame (not the
// message sections: see types.BenchmarkMessageDecode).
func BenchmarkReadTransferFrame(b *testing.B) {
	enc, err := frames.AppendFrame(nil, benchTransferFrame(b))
	if err != nil {
		b.Fatal(err)
	}
	src := bytes.NewReader(enc)
	br := bufio.NewReader(src)
	r := frames.NewReader(br, 1<<16)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(enc)
		br.Reset(src)
		if _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}
