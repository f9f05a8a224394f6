package frame

import (
	"bytes"
	"io"
	"testing"
)

// benchSend is a SEND frame with six headers and a 1 KiB body.
func benchSend() *Frame {
	f := &Frame{Command: CmdSend, Body: bytes.Repeat([]byte("0123456789abcdef"), 64)}
	f.Add("destination", "/queue/orders.eu")
	f.Add("content-type", "application/json")
	f.Add("content-length", "1024")
	f.Add("receipt", "receipt-000123")
	f.Add("persistent", "true")
	f.Add("x-correlation", "3f2a9c1e-7b44-4d1a-9a2e-0c6d1b2f8e55")
	return f
}

func benchWire(b *testing.B, f *Frame) []byte {
	wire, err := AppendFrame(nil, f, V12, EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return wire
}

// BenchmarkParseSend feeds one whole SEND frame per iteration.
func BenchmarkParseSend(b *testing.B) {
	wire := benchWire(b, benchSend())
	p := NewParser(Limits{})
	p.SetVersion(V12)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		n, ev, err := p.Feed(wire)
		if err != nil || n != len(wire) || ev.Frame == nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkParseSendNoLength is BenchmarkParseSend without content-length,
// so the body is scanned for its NUL.
func BenchmarkParseSendNoLength(b *testing.B) {
	f := benchSend()
	f.Del(HeaderContentLength)
	wire := benchWire(b, f)
	p := NewParser(Limits{})
	p.SetVersion(V12)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ev, err := p.Feed(wire); err != nil || ev.Frame == nil {
			b.Fatal(err)
		}
	}
}

// loopReader serves the same data forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// BenchmarkReaderSend reads SEND frames from a stream through a Reader, as
// a server reads a connection.
func BenchmarkReaderSend(b *testing.B) {
	wire := benchWire(b, benchSend())
	r := NewReader(&loopReader{data: bytes.Repeat(wire, 64)}, Limits{})
	r.SetVersion(V12)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendSend encodes one SEND frame per iteration into a reused
// buffer.
func BenchmarkAppendSend(b *testing.B) {
	f := benchSend()
	buf := benchWire(b, f)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendFrame(buf[:0], f, V12, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterSend writes SEND frames through a Writer, flushing every 16
// frames.
func BenchmarkWriterSend(b *testing.B) {
	f := benchSend()
	w := NewWriter(io.Discard, EncodeOptions{ContentLength: true})
	w.SetVersion(V12)
	b.SetBytes(int64(len(benchWire(b, f))))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := w.WriteFrame(f); err != nil {
			b.Fatal(err)
		}
		if i++; i%16 == 0 {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
