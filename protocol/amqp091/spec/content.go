package spec

import "encoding/binary"

// ContentHeader is the payload of a content header frame, which follows a
// method that carries content (basic.publish, basic.deliver, basic.return,
// basic.get-ok): the class, the weight (always 0 in 0-9-1), the size of the
// body that the body frames carry, and the properties.
type ContentHeader struct {
	ClassID    uint16
	Weight     uint16
	BodySize   uint64
	Properties BasicProperties
}

// DecodeContentHeader decodes a content header frame's payload.
func DecodeContentHeader(payload []byte) (ContentHeader, error) {
	var h ContentHeader
	if err := h.Decode(payload); err != nil {
		return ContentHeader{}, err
	}
	return h, nil
}

// Decode decodes a content header frame's payload into h, reusing what h
// holds (see the package comment). Only the basic class has content.
func (h *ContentHeader) Decode(payload []byte) error {
	d := decoder{buf: payload, what: "content header"}
	h.ClassID = d.short("class-id")
	if d.err == nil && h.ClassID != propertiesClassID {
		d.failf("class-id", "class %d has no content", h.ClassID)
	}
	h.Weight = d.short("weight")
	h.BodySize = d.longlong("body-size")
	h.Properties.decodeProperties(&d)
	return d.finish()
}

// AppendContentHeader appends the payload of a content header frame.
func AppendContentHeader(b []byte, h *ContentHeader) []byte {
	b = binary.BigEndian.AppendUint16(b, h.ClassID)
	b = binary.BigEndian.AppendUint16(b, h.Weight)
	b = binary.BigEndian.AppendUint64(b, h.BodySize)
	return h.Properties.appendProperties(b)
}
