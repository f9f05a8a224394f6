package frames_test

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// FuzzFrameDecode reads frames from arbitrary bytes with the frame reader
// and decodes their performatives. Whatever decodes must re-encode, and
// the re-encoding must decode to a frame that encodes the same way.
// Seeds: the golden vectors here, and under testdata the frames a go-amqp
// client sent in TestInteropGoAMQP.
func FuzzFrameDecode(f *testing.F) {
	f.Add(goldenOpen)
	f.Add(goldenAttach)
	f.Add(goldenTransfer)
	f.Add(cat(goldenOpen, []byte{0, 0, 0, 8, 2, 0, 0, 0}, goldenTransfer))
	f.Add([]byte{0x80, 0, 0, 0, 2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := frames.NewReader(bufio.NewReaderSize(bytes.NewReader(b), 64), 1<<16)
		for range 64 {
			fr, err := r.ReadFrame()
			if err != nil {
				return
			}
			if _, transfer := fr.Body.(*types.Transfer); fr.Payload != nil && !transfer {
				t.Fatalf("payload with %T", fr.Body)
			}
			enc, err := frames.AppendFrame(nil, fr)
			if err != nil {
				t.Fatalf("re-encoding %#v: %v", fr, err)
			}
			fr2, err := frames.NewReader(bufio.NewReaderSize(bytes.NewReader(enc), 64), 1<<24).ReadFrame()
			if err != nil {
				t.Fatalf("decoding the re-encoding % x: %v", enc, err)
			}
			enc2, err := frames.AppendFrame(nil, fr2)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("encodings differ (%v)\n% x\n% x", err, enc, enc2)
			}
		}
	})
}
