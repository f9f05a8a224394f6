package amqp1client

import (
	"encoding/binary"
	"errors"

	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// Symbols turns strings (terminus capabilities) into symbols; nil stays
// nil.
func Symbols(ss []string) []types.Symbol {
	if ss == nil {
		return nil
	}
	out := make([]types.Symbol, len(ss))
	for i, s := range ss {
		out[i] = types.Symbol(s)
	}
	return out
}

// Tag is the delivery tag of this side's delivery id: its four bytes, big
// endian, written over dst's contents (dst may be nil).
func Tag(dst []byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(dst[:0], id)
}

// Span is the range of delivery ids a disposition settles, first..last.
func Span(d *types.Disposition) (first, last uint32) {
	return uint32(d.First), uint32(d.Last.Or(d.First))
}

// SenderCredit is the credit a sending link has left after the broker's
// flow for it, with the link's delivery-count count: the broker's
// delivery-count plus its link-credit, less count (none when that would
// be negative).
func SenderCredit(fl *types.Flow, count uint32) uint32 {
	cr := uint32(fl.DeliveryCount.Or(0)) + fl.LinkCredit.Or(0) - count
	if cr > 1<<31 {
		return 0
	}
	return cr
}

// SessionRoom is how many transfers the broker's session still takes
// after its flow fl, with nextOut the id of this side's next transfer.
func SessionRoom(fl *types.Flow, nextOut uint32) uint32 {
	w := uint32(fl.NextIncomingID.Or(0)) + fl.IncomingWindow - nextOut
	if w > 1<<31 {
		return 0
	}
	return w
}

// Credit is a receiving link's credit: it grants Window deliveries, and
// again once half of them have arrived.
type Credit struct {
	Window uint32 // the credit each grant gives
	Left   uint32 // credit not used yet
	Count  uint32 // the link's delivery-count
}

// Delivered counts a delivery that ended (aborted ones too) and reports
// whether the credit has fallen to half the window: time for Grant.
func (c *Credit) Delivered() bool {
	c.Count++
	if c.Left > 0 {
		c.Left--
	}
	return c.Left <= c.Window/2
}

// Grant grants the whole window again: it fills fl, a flow for the link
// handle on a session with the given next transfer ids and window.
func (c *Credit) Grant(fl *types.Flow, handle, nextIncoming, nextOutgoing, window uint32) {
	c.Left = c.Window
	fl.NextIncomingID = types.Some(types.TransferNumber(nextIncoming))
	fl.IncomingWindow, fl.OutgoingWindow = window, window
	fl.NextOutgoingID = types.TransferNumber(nextOutgoing)
	fl.Handle = types.Some(types.Handle(handle))
	fl.DeliveryCount = types.Some(types.SequenceNo(c.Count))
	fl.LinkCredit = types.Some(c.Window)
}

// Assembler puts a receiving link's multi-frame deliveries back together.
// The zero value is ready.
type Assembler struct {
	partial []byte
	id      uint32
	active  bool // a delivery has more frames to come
}

// Delivery is a delivery that ended.
type Delivery struct {
	ID      uint32
	Settled bool // the broker sent it settled: nothing to answer
	Aborted bool // the broker aborted it: Payload is nil, nothing to answer
	// Payload is the message. A delivery of one frame's payload is that
	// frame's (the caller copies it to keep it past its next read); one
	// of several frames is a copy.
	Payload []byte
}

// errInterleaved is a delivery starting before the previous one ended.
var errInterleaved = errors.New("a new delivery in the middle of a multi-frame one")

// Add takes the next transfer frame t of the link, with its payload. It
// reports whether a delivery ended with it, and that delivery.
func (a *Assembler) Add(t *types.Transfer, payload []byte) (d Delivery, ended bool, err error) {
	id, hasID := t.DeliveryID.Get()
	if a.active {
		if hasID && uint32(id) != a.id {
			return Delivery{}, false, errInterleaved
		}
		id, payload = types.DeliveryNumber(a.id), append(a.partial, payload...)
	}
	if t.More && !t.Aborted {
		if !a.active {
			payload = append([]byte(nil), payload...)
		}
		a.partial, a.id, a.active = payload, uint32(id), true
		return Delivery{}, false, nil
	}
	a.partial, a.active = nil, false
	d = Delivery{ID: uint32(id), Settled: t.Settled.Or(false), Aborted: t.Aborted}
	if !t.Aborted {
		d.Payload = payload
	}
	return d, true, nil
}
