package spec

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestFrameReaderRoundTrip(t *testing.T) {
	var b []byte
	b = AppendMethodFrame(b, 1, &BasicPublish{Exchange: "amq.topic", RoutingKey: "a.b", Mandatory: true})
	h := ContentHeader{ClassID: ClassBasic, BodySize: 5, Properties: BasicProperties{Flags: FlagContentType | FlagDeliveryMode, ContentType: "text/plain", DeliveryMode: 2}}
	b = AppendHeaderFrame(b, 1, &h)
	b = AppendFrame(b, FrameBody, 1, []byte("hel"))
	b = AppendFrame(b, FrameBody, 1, []byte("lo"))
	b = AppendHeartbeat(b)

	// One byte at a time, as a slow network delivers it.
	fr := NewFrameReader(iotest.OneByteReader(bytes.NewReader(b)), 0)
	var frames []Frame
	for range 10 {
		f, err := fr.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Payload = bytes.Clone(f.Payload)
		frames = append(frames, f)
	}
	if len(frames) != 5 {
		t.Fatalf("%d frames, want 5", len(frames))
	}
	m, err := DecodeMethod(frames[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := m.(*BasicPublish); !ok || p.Exchange != "amq.topic" || p.RoutingKey != "a.b" || !p.Mandatory || p.Immediate || frames[0].Channel != 1 || frames[0].Type != FrameMethod {
		t.Fatalf("method frame %+v: %#v", frames[0], m)
	}
	gh, err := DecodeContentHeader(frames[1].Payload)
	if err != nil || !reflect.DeepEqual(gh, h) {
		t.Fatalf("header %+v, %v; want %+v", gh, err, h)
	}
	if string(frames[2].Payload)+string(frames[3].Payload) != "hello" || frames[4].Type != FrameHeartbeat || frames[4].Channel != 0 || len(frames[4].Payload) != 0 {
		t.Fatalf("frames %+v", frames[2:])
	}
}

func TestFrameReaderErrors(t *testing.T) {
	good := AppendFrame(nil, FrameBody, 3, []byte("abc"))
	big := AppendFrame(nil, FrameBody, 3, make([]byte, 5000))
	badEnd := bytes.Clone(good)
	badEnd[len(badEnd)-1] = 0
	for _, tc := range []struct {
		name     string
		in       []byte
		maxFrame uint32
		code     uint16 // 0: not an *Error
		want     string
		is       error
	}{
		{"frame-max", big, 4096, FrameError, "frame of 5008 bytes (payload 5000) on channel 3 exceeds frame-max 4096", nil},
		{"bad end", badEnd, 0, FrameError, "ends in 0x00", nil},
		{"unknown type", AppendFrame(nil, 9, 0, nil), 0, FrameError, "unknown frame type 9", nil},
		{"protocol header", []byte(ProtocolHeader), 0, FrameError, "protocol header", nil},
		{"truncated header", good[:3], 0, 0, "frame header", io.ErrUnexpectedEOF},
		{"truncated payload", good[:9], 0, 0, "3 bytes", io.ErrUnexpectedEOF},
		{"empty", nil, 0, 0, "EOF", io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFrameReader(bytes.NewReader(tc.in), tc.maxFrame).ReadFrame()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var pe *Error
			if tc.code != 0 && (!errors.As(err, &pe) || pe.Code != tc.code) {
				t.Fatalf("got %#v, want code %d", err, tc.code)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
		})
	}
	// A frame of exactly frame-max bytes passes, and SetMaxFrame raises it.
	fr := NewFrameReader(bytes.NewReader(append(AppendFrame(nil, FrameBody, 1, make([]byte, 4096-8)), big...)), 4096)
	if _, err := fr.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	fr.SetMaxFrame(8192)
	if f, err := fr.ReadFrame(); err != nil || len(f.Payload) != 5000 {
		t.Fatal(err)
	}
}
