package amqp1client

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/sluicemq/sluice/internal/clientio"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

func transfer(id int, more, aborted, settled bool) *types.Transfer {
	t := &types.Transfer{More: more, Aborted: aborted, Settled: types.Some(settled)}
	if id >= 0 {
		t.DeliveryID = types.Some(types.DeliveryNumber(id))
	}
	return t
}

func TestAssembler(t *testing.T) {
	type frame struct {
		t       *types.Transfer
		payload string
	}
	tests := []struct {
		name    string
		frames  []frame
		want    []Delivery // the deliveries that ended, in order
		wantErr error
	}{
		{"one frame", []frame{{transfer(7, false, false, false), "abc"}},
			[]Delivery{{ID: 7, Payload: []byte("abc")}}, nil},
		{"settled", []frame{{transfer(7, false, false, true), "abc"}},
			[]Delivery{{ID: 7, Settled: true, Payload: []byte("abc")}}, nil},
		{"three frames, later ones without an id", []frame{
			{transfer(3, true, false, false), "ab"}, {transfer(-1, true, false, false), "cd"}, {transfer(3, false, false, false), "e"}},
			[]Delivery{{ID: 3, Payload: []byte("abcde")}}, nil},
		{"aborted", []frame{{transfer(3, true, false, false), "ab"}, {transfer(-1, false, true, false), ""}, {transfer(4, false, false, false), "x"}},
			[]Delivery{{ID: 3, Aborted: true}, {ID: 4, Payload: []byte("x")}}, nil},
		{"interleaved", []frame{{transfer(3, true, false, false), "ab"}, {transfer(4, false, false, false), "x"}},
			nil, errInterleaved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			var got []Delivery
			var err error
			for _, f := range tt.frames {
				buf := []byte(f.payload)
				var d Delivery
				var ended bool
				several := a.active // the delivery had frames before this one
				d, ended, err = a.Add(f.t, buf)
				if ended && !several && d.Payload != nil {
					d.Payload = append([]byte(nil), d.Payload...) // one frame: the payload is the frame's
				}
				copy(buf, "!!!!!!!!") // the frame's buffer is reused: deliveries of several frames keep theirs
				if err != nil {
					break
				}
				if ended {
					got = append(got, d)
				}
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d deliveries %+v, want %+v", len(got), got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.ID != w.ID || g.Settled != w.Settled || g.Aborted != w.Aborted || !bytes.Equal(g.Payload, w.Payload) {
					t.Fatalf("delivery %d: got %+v (%q), want %+v (%q)", i, g, g.Payload, w, w.Payload)
				}
			}
		})
	}
}

func TestCredit(t *testing.T) {
	c := Credit{Window: 4}
	var fl types.Flow
	c.Grant(&fl, 2, 10, 20, 100)
	if fl.LinkCredit.Or(0) != 4 || fl.DeliveryCount.Or(99) != 0 || fl.Handle.Or(0) != 2 ||
		fl.NextIncomingID.Or(0) != 10 || fl.NextOutgoingID != 20 || fl.IncomingWindow != 100 || fl.OutgoingWindow != 100 {
		t.Fatalf("first grant: %+v", fl)
	}
	var refills []bool
	for range 4 {
		refills = append(refills, c.Delivered())
	}
	if want := []bool{false, true, true, true}; !equalBools(refills, want) {
		t.Fatalf("refill after each delivery: %v, want %v", refills, want)
	}
	c.Grant(&fl, 2, 14, 20, 100)
	if fl.DeliveryCount.Or(0) != 4 || fl.LinkCredit.Or(0) != 4 || c.Left != 4 {
		t.Fatalf("second grant: %+v, left %d", fl, c.Left)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSenderCreditAndSessionRoom(t *testing.T) {
	tests := []struct {
		name                 string
		fl                   types.Flow
		count, nextOut       uint32
		wantCredit, wantRoom uint32
	}{
		{"fresh", types.Flow{DeliveryCount: types.Some(types.SequenceNo(0)), LinkCredit: types.Some(uint32(100)),
			NextIncomingID: types.Some(types.TransferNumber(0)), IncomingWindow: 50}, 0, 0, 100, 50},
		{"some used", types.Flow{DeliveryCount: types.Some(types.SequenceNo(10)), LinkCredit: types.Some(uint32(100)),
			NextIncomingID: types.Some(types.TransferNumber(10)), IncomingWindow: 50}, 30, 30, 80, 30},
		{"flow older than what was sent", types.Flow{DeliveryCount: types.Some(types.SequenceNo(0)), LinkCredit: types.Some(uint32(5)),
			NextIncomingID: types.Some(types.TransferNumber(0)), IncomingWindow: 5}, 9, 9, 0, 0},
		{"counts wrap", types.Flow{DeliveryCount: types.Some(types.SequenceNo(1<<32 - 2)), LinkCredit: types.Some(uint32(10)),
			NextIncomingID: types.Some(types.TransferNumber(1<<32 - 2)), IncomingWindow: 10}, 2, 2, 6, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SenderCredit(&tt.fl, tt.count); got != tt.wantCredit {
				t.Errorf("credit %d, want %d", got, tt.wantCredit)
			}
			if got := SessionRoom(&tt.fl, tt.nextOut); got != tt.wantRoom {
				t.Errorf("room %d, want %d", got, tt.wantRoom)
			}
		})
	}
}

// pipeConn is a Conn whose writer writes to a pipe that a goroutine
// drains.
func pipeConn(t testing.TB) *Conn {
	a, b := net.Pipe()
	c := &Conn{nc: a, maxFrame: DefaultMaxFrameSize, w: clientio.New(a, 0, nil, 0)}
	go func() { _, _ = io.Copy(io.Discard, b) }()
	go c.w.Run()
	t.Cleanup(func() { c.Close(); _ = b.Close() })
	return c
}

// Queueing a transfer, the lean load generator's hot path, allocates
// nothing once the buffers have grown.
func TestQueueAllocatesNothing(t *testing.T) {
	c := pipeConn(t)
	tr := &types.Transfer{DeliveryID: types.Some(types.DeliveryNumber(1)), DeliveryTag: []byte{0, 0, 0, 1},
		MessageFormat: types.Some(types.MessageFormat(0))}
	payload := bytes.Repeat([]byte("x"), 256)
	for range 100 {
		if err := c.Queue(tr, payload); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { _ = c.Queue(tr, payload) }); n >= 1 {
		t.Fatalf("%.1f allocations per queued transfer, want 0", n)
	}
}

func BenchmarkQueueTransfer(b *testing.B) {
	c := pipeConn(b)
	tr := &types.Transfer{DeliveryID: types.Some(types.DeliveryNumber(1)), DeliveryTag: []byte{0, 0, 0, 1},
		MessageFormat: types.Some(types.MessageFormat(0))}
	payload := bytes.Repeat([]byte("x"), 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.Queue(tr, payload); err != nil {
			b.Fatal(err)
		}
	}
}
