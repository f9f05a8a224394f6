package types

import (
	"bytes"
	"testing"
)

// benchTransfer is a typical transfer performative of a first frame.
func benchTransfer() *Transfer {
	return &Transfer{
		Handle: 3, DeliveryID: Some(DeliveryNumber(123456)), DeliveryTag: DeliveryTag("tag-0001"),
		MessageFormat: Some(MessageFormat(0)), Settled: Some(false),
	}
}

// benchMessage is a message with a header, properties, six
// application-properties and 1 KiB of data.
func benchMessage() *Message {
	return &Message{
		Header: &Header{Durable: Some(true), Priority: Some(uint8(4))},
		Properties: &Properties{
			MessageID: "ID:sluice-1234-5678", To: "queue://orders", ReplyTo: "queue://replies",
			CorrelationID: "corr-1", ContentType: "application/octet-stream", CreationTime: Some(Timestamp(1700000000000)),
		},
		ApplicationProperties: ApplicationProperties{
			{Key: "customer", Value: "acme"}, {Key: "priority", Value: int32(7)}, {Key: "amount", Value: int64(1234567890123)},
			{Key: "express", Value: true}, {Key: "weight", Value: 2.5}, {Key: "region", Value: "eu-west"},
		},
		Data: []Data{bytes.Repeat([]byte("x"), 1024)},
	}
}

func BenchmarkTransferEncode(b *testing.B) {
	tr := benchTransfer()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = tr.AppendAMQP(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkTransferDecode(b *testing.B) {
	enc, _ := benchTransfer().AppendAMQP(nil)
	var tr Transfer
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := tr.UnmarshalAMQP(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPerformativeDecode goes through the dispatcher, as the frame
// reader does.
func BenchmarkPerformativeDecode(b *testing.B) {
	enc, _ := benchTransfer().AppendAMQP(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, _, err := DecodePerformative(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessageEncode(b *testing.B) {
	m := benchMessage()
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = m.AppendAMQP(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkMessageDecode(b *testing.B) {
	enc, _ := benchMessage().AppendAMQP(nil)
	var m Message
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if err := m.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
