package spec

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"
)

// unhex turns a spaced hex dump, with 'quoted' ASCII runs, into bytes.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for _, tok := range strings.Fields(s) {
		if strings.HasPrefix(tok, "'") && strings.HasSuffix(tok, "'") && len(tok) >= 2 {
			out = append(out, tok[1:len(tok)-1]...)
			continue
		}
		b, err := hex.DecodeString(tok)
		if err != nil {
			t.Fatalf("bad hex %q: %v", tok, err)
		}
		out = append(out, b...)
	}
	return out
}

// goldenFrames are frames worked out by hand from the 0-9-1 specification
// (sections 2.3.5 and 4.2: frame type, channel, size, payload, 0xCE; a
// method payload is class id, method id, arguments; bits pack from the
// low bit; a content header is class, weight, body size, property flags
// with the first property in the top bit, then the flagged properties).
func goldenFrames(t testing.TB) []struct {
	name  string
	frame []byte
	ch    uint16
	m     Method
} {
	return []struct {
		name  string
		frame []byte
		ch    uint16
		m     Method
	}{
		{"connection.tune", unhex(t, `01 0000 0000000c  000a 001e  07ff 00020000 003c  ce`), 0,
			&ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60}},
		{"connection.open", unhex(t, `01 0000 00000008  000a 0028  01 '/' 00 00  ce`), 0,
			&ConnectionOpen{VirtualHost: "/"}},
		{"basic.publish mandatory", unhex(t, `01 0001 00000015  003c 0028  0000 09 'amq.topic' 03 'a.b' 01  ce`), 1,
			&BasicPublish{Exchange: "amq.topic", RoutingKey: "a.b", Mandatory: true}},
		{"basic.publish mandatory immediate", unhex(t, `01 0001 0000000c  003c 0028  0000 00 03 'a.b' 03  ce`), 1,
			&BasicPublish{RoutingKey: "a.b", Mandatory: true, Immediate: true}},
		// passive 0, durable 1, exclusive 0, auto-delete 1, no-wait 1:
		// bits 1, 3 and 4 = 0x1a.
		{"queue.declare", unhex(t, `01 0002 0000001f  0032 000a  0000 01 'q' 1a  00000012 0c 'x-max-length' 49 0000000a  ce`), 2,
			&QueueDeclare{Queue: "q", Durable: true, AutoDelete: true, NoWait: true, Arguments: Table{"x-max-length": int32(10)}}},
		{"basic.deliver", unhex(t, `01 0001 0000001a  003c 003c  02 'c1' 0000000000000007 01 00 08 'q.orders'  ce`), 1,
			&BasicDeliver{ConsumerTag: "c1", DeliveryTag: 7, Redelivered: true, RoutingKey: "q.orders"}},
		{"basic.ack multiple", unhex(t, `01 0001 0000000d  003c 0050  0000000000000003 01  ce`), 1,
			&BasicAck{DeliveryTag: 3, Multiple: true}},
		{"channel.close", unhex(t, `01 0001 00000014  0014 0028  0194 09 'NOT_FOUND' 0032 000a  ce`), 1,
			&ChannelClose{ReplyCode: NotFound, ReplyText: "NOT_FOUND", FailingClassID: ClassQueue, FailingMethodID: 10}},
	}
}

func TestGoldenMethodFrames(t *testing.T) {
	for _, g := range goldenFrames(t) {
		t.Run(g.name, func(t *testing.T) {
			if got := AppendMethodFrame(nil, g.ch, g.m); !bytes.Equal(got, g.frame) {
				t.Fatalf("encoded\n got % x\nwant % x", got, g.frame)
			}
			f, err := NewFrameReader(bytes.NewReader(g.frame), 0).ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			m, err := DecodeMethod(f.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if f.Channel != g.ch || !reflect.DeepEqual(m, g.m) {
				t.Fatalf("decoded channel %d %+v, want %d %+v", f.Channel, m, g.ch, g.m)
			}
		})
	}
}

func TestGoldenContentHeader(t *testing.T) {
	// content-type (0x8000), delivery-mode (0x1000), timestamp (0x0040).
	payload := unhex(t, `003c 0000 0000000000000005  9040  0a 'text/plain' 02 000000006553f100`)
	h := ContentHeader{ClassID: ClassBasic, BodySize: 5, Properties: BasicProperties{
		Flags:       FlagContentType | FlagDeliveryMode | FlagTimestamp,
		ContentType: "text/plain", DeliveryMode: 2, Timestamp: time.Unix(1700000000, 0).UTC(),
	}}
	if got := AppendContentHeader(nil, &h); !bytes.Equal(got, payload) {
		t.Fatalf("encoded\n got % x\nwant % x", got, payload)
	}
	got, err := DecodeContentHeader(payload)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	frame := AppendHeaderFrame(nil, 5, &h)
	if want := append(append(unhex(t, `02 0005 00000022`), payload...), 0xce); !bytes.Equal(frame, want) {
		t.Fatalf("header frame\n got % x\nwant % x", frame, want)
	}
	// Append writes exactly the flagged properties: unflagged values are
	// not sent.
	h.Properties.MessageID = "not flagged"
	if got := AppendContentHeader(nil, &h); !bytes.Equal(got, payload) {
		t.Fatalf("an unflagged property was written: % x", got)
	}
}

func TestGoldenTable(t *testing.T) {
	tab := Table{
		"b": true, "i": int32(-2), "s": "hi", "x": []byte{1, 2}, "a": []any{uint8(7), nil},
		"d": Decimal{Scale: 2, Value: 314}, "n": int16(-1), "t": time.Unix(1, 0).UTC(), "f": Table{},
	}
	want := unhex(t, `00000046
		01 'a' 41 00000003 42 07 56
		01 'b' 74 01
		01 'd' 44 02 0000013a
		01 'f' 46 00000000
		01 'i' 49 fffffffe
		01 'n' 73 ffff
		01 's' 53 00000002 'hi'
		01 't' 54 0000000000000001
		01 'x' 78 00000002 0102`)
	if got := AppendTable(nil, tab); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n got % x\nwant % x", got, want)
	}
	got, n, err := DecodeTable(want)
	if err != nil || n != len(want) || !reflect.DeepEqual(got, tab) {
		t.Fatalf("decoded %#v, %d, %v", got, n, err)
	}
}
