package message

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The binary encoding (format version 1), as stored by the engine:
//
//	message  = version:byte(1) hlen:uvarint header(hlen bytes) body
//	header   = id:str destKind:byte dest:str replyKind:byte replyTo:str
//	           correlationID:str type:str deliveryMode:byte priority:byte
//	           timestamp:varint expiration:varint deliveryTime:varint
//	           redeliveryLimit:varint producer:uvarint
//	           nprops:uvarint { name:str value }*nprops
//	body     = kind:byte( 0 none
//	                    | 1 text, 2 bytes, 5 xml: len:uvarint data
//	                    | 3 map: blen:uvarint (n:uvarint {name:str value}*n)
//	                    | 4 stream: blen:uvarint (n:uvarint value*n) )
//	value    = type:byte payload
//	payload  = null: nothing | boolean: byte 0/1 | byte: byte
//	         | short, char: 2 bytes little-endian | int, long: varint
//	         | float: 4 bytes IEEE little-endian | double: 8 bytes
//	         | string, bytes: len:uvarint data
//	str      = len:uvarint UTF-8 bytes
//
// uvarint is encoding/binary's unsigned varint and varint its zig-zag signed
// one. Types and kinds are the numeric values of the Type and BodyKind
// constants. The header and map/stream blocks carry their length so that a
// decoder copies each block once and slices every string out of that copy.
// Nothing may follow the body. A decoder refuses any other version byte: a
// later format gets a new version number.
const formatV1 byte = 1

// UnsupportedVersionError is an encoding whose version byte this Sluice does
// not know, such as one written by a later release.
type UnsupportedVersionError struct {
	Version byte
}

// Error names the version found and the one this build reads.
func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("message: unsupported encoding version %d (this build reads version %d)", e.Version, formatV1)
}

// DecodeError is malformed binary input: truncated, a length beyond the data,
// an unknown type or kind, an out-of-range value, or trailing bytes.
type DecodeError struct {
	Offset int    // byte offset in the input where the problem was found
	What   string // the field being decoded
	Reason string
}

// Error gives the field, the byte offset and the reason.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("message: decode %s at byte %d: %s", e.What, e.Offset, e.Reason)
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func zigzag(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// valueLen is the encoded length of v; an unknown type counts one byte.
func valueLen(v *Value) int {
	switch v.Type {
	case Bool, Byte:
		return 2
	case Short, Char:
		return 3
	case Int:
		return 1 + uvarintLen(zigzag(int64(int32(v.N))))
	case Long:
		return 1 + uvarintLen(zigzag(v.N))
	case Float:
		return 5
	case Double:
		return 9
	case String:
		return 1 + strLen(v.S)
	case Bytes:
		return 1 + uvarintLen(uint64(len(v.B))) + len(v.B)
	}
	return 1
}

// headerLen is the length of the header block.
func headerLen(m *Message) int {
	n := strLen(m.ID) + 1 + strLen(m.Destination.Name) + 1 + strLen(m.ReplyTo.Name) +
		strLen(m.CorrelationID) + strLen(m.Type) + 2 +
		uvarintLen(zigzag(m.Timestamp)) + uvarintLen(zigzag(m.Expiration)) +
		uvarintLen(zigzag(m.DeliveryTime)) + uvarintLen(zigzag(int64(m.RedeliveryLimit))) +
		uvarintLen(m.Producer) + uvarintLen(uint64(len(m.Props)))
	for i := range m.Props {
		n += strLen(m.Props[i].Name) + valueLen(&m.Props[i].Value)
	}
	return n
}

// blockLen is the length of a map or stream body's block.
func blockLen(b *Body) int {
	if b.Kind == BodyMap {
		n := uvarintLen(uint64(len(b.Map)))
		for i := range b.Map {
			n += strLen(b.Map[i].Name) + valueLen(&b.Map[i].Value)
		}
		return n
	}
	n := uvarintLen(uint64(len(b.Stream)))
	for i := range b.Stream {
		n += valueLen(&b.Stream[i])
	}
	return n
}

// bodyLen is the encoded length of the body.
func bodyLen(b *Body) int {
	switch b.Kind {
	case BodyText, BodyBytes, BodyXML:
		return 1 + uvarintLen(uint64(len(b.Data))) + len(b.Data)
	case BodyMap, BodyStream:
		n := blockLen(b)
		return 1 + uvarintLen(uint64(n)) + n
	}
	return 1
}

// MarshalBinary returns m's binary encoding (format version 1). It fails only
// when a value type or the body kind is not one of the defined constants.
func (m *Message) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(nil)
}

// AppendBinary appends m's binary encoding to dst, growing it at most once,
// and returns the extended slice (encoding.BinaryAppender). It fails, leaving
// dst as it was, when a value type or the body kind is not one of the defined
// constants.
func (m *Message) AppendBinary(dst []byte) ([]byte, error) {
	if err := checkTypes(m); err != nil {
		return dst, err
	}
	h := headerLen(m)
	b := &m.Body
	var blen int
	if b.Kind == BodyMap || b.Kind == BodyStream {
		blen = blockLen(b)
	}
	total := 1 + uvarintLen(uint64(h)) + h + bodyLen(b)
	dst = slices.Grow(dst, total)

	dst = append(dst, formatV1)
	dst = binary.AppendUvarint(dst, uint64(h))
	dst = appendStr(dst, m.ID)
	dst = append(dst, byte(m.Destination.Kind))
	dst = appendStr(dst, m.Destination.Name)
	dst = append(dst, byte(m.ReplyTo.Kind))
	dst = appendStr(dst, m.ReplyTo.Name)
	dst = appendStr(dst, m.CorrelationID)
	dst = appendStr(dst, m.Type)
	dst = append(dst, byte(m.DeliveryMode), m.Priority)
	dst = binary.AppendUvarint(dst, zigzag(m.Timestamp))
	dst = binary.AppendUvarint(dst, zigzag(m.Expiration))
	dst = binary.AppendUvarint(dst, zigzag(m.DeliveryTime))
	dst = binary.AppendUvarint(dst, zigzag(int64(m.RedeliveryLimit)))
	dst = binary.AppendUvarint(dst, m.Producer)
	dst = binary.AppendUvarint(dst, uint64(len(m.Props)))
	for i := range m.Props {
		dst = appendStr(dst, m.Props[i].Name)
		dst = appendValue(dst, &m.Props[i].Value)
	}

	dst = append(dst, byte(b.Kind))
	switch b.Kind {
	case BodyText, BodyBytes, BodyXML:
		dst = binary.AppendUvarint(dst, uint64(len(b.Data)))
		dst = append(dst, b.Data...)
	case BodyMap:
		dst = binary.AppendUvarint(dst, uint64(blen))
		dst = binary.AppendUvarint(dst, uint64(len(b.Map)))
		for i := range b.Map {
			dst = appendStr(dst, b.Map[i].Name)
			dst = appendValue(dst, &b.Map[i].Value)
		}
	case BodyStream:
		dst = binary.AppendUvarint(dst, uint64(blen))
		dst = binary.AppendUvarint(dst, uint64(len(b.Stream)))
		for i := range b.Stream {
			dst = appendValue(dst, &b.Stream[i])
		}
	}
	return dst, nil
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendValue(dst []byte, v *Value) []byte {
	dst = append(dst, byte(v.Type))
	switch v.Type {
	case Bool:
		if v.N != 0 {
			return append(dst, 1)
		}
		return append(dst, 0)
	case Byte:
		return append(dst, byte(int8(v.N)))
	case Short, Char:
		return binary.LittleEndian.AppendUint16(dst, uint16(v.N))
	case Int:
		return binary.AppendUvarint(dst, zigzag(int64(int32(v.N))))
	case Long:
		return binary.AppendUvarint(dst, zigzag(v.N))
	case Float:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(v.F)))
	case Double:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.F))
	case String:
		return appendStr(dst, v.S)
	case Bytes:
		dst = binary.AppendUvarint(dst, uint64(len(v.B)))
		return append(dst, v.B...)
	}
	return dst
}

// UnmarshalBinary decodes data, as written by MarshalBinary, into m,
// replacing all of m's fields. On error m is unchanged. m does not keep data.
//
// Every string of the header and properties is a slice of one copy of the
// header block (and those of a map or stream body of one copy of its block),
// so holding any of them holds the whole block; the body data has its own
// copy. A length or count larger than the bytes left is an error, so decoding
// never allocates more than a small multiple of len(data).
func (m *Message) UnmarshalBinary(data []byte) error {
	if len(data) == 0 {
		return &DecodeError{Offset: 0, What: "version", Reason: "no data"}
	}
	if data[0] != formatV1 {
		return &UnsupportedVersionError{Version: data[0]}
	}
	hlen, n := binary.Uvarint(data[1:])
	if n <= 0 {
		return &DecodeError{Offset: 1, What: "header length", Reason: "bad varint"}
	}
	p := 1 + n
	if hlen > uint64(len(data)-p) {
		return &DecodeError{Offset: 1, What: "header length", Reason: fmt.Sprintf("%d exceeds the %d bytes left", hlen, len(data)-p)}
	}
	r := reader{s: string(data[p : p+int(hlen)]), base: p}
	var out Message
	out.ID = r.str("message id")
	out.Destination.Kind = DestKind(r.u8("destination kind"))
	out.Destination.Name = r.str("destination")
	out.ReplyTo.Kind = DestKind(r.u8("reply-to kind"))
	out.ReplyTo.Name = r.str("reply-to")
	out.CorrelationID = r.str("correlation id")
	out.Type = r.str("type")
	out.DeliveryMode = DeliveryMode(r.u8("delivery mode"))
	out.Priority = r.u8("priority")
	out.Timestamp = unzigzag(r.uvarint("timestamp"))
	out.Expiration = unzigzag(r.uvarint("expiration"))
	out.DeliveryTime = unzigzag(r.uvarint("delivery time"))
	rl := unzigzag(r.uvarint("redelivery limit"))
	if rl < math.MinInt32 || rl > math.MaxInt32 {
		r.fail("redelivery limit", fmt.Sprintf("%d is out of the int range", rl))
	}
	out.RedeliveryLimit = int32(rl)
	out.Producer = r.uvarint("producer")
	nprops := r.count("property count", 2)
	if nprops > 0 {
		out.Props = make(Properties, nprops)
		for i := range out.Props {
			out.Props[i].Name = r.str("property name")
			out.Props[i].Value = r.value("property value")
		}
	}
	if r.err == nil && r.off != len(r.s) {
		r.fail("header", fmt.Sprintf("%d unexpected bytes at its end", len(r.s)-r.off))
	}
	if r.err != nil {
		return r.err
	}

	p += int(hlen)
	if err := decodeBody(&out.Body, data, p); err != nil {
		return err
	}
	*m = out
	return nil
}

// decodeBody decodes the body that starts at data[p] and must end the data.
func decodeBody(b *Body, data []byte, p int) error {
	if p >= len(data) {
		return &DecodeError{Offset: p, What: "body kind", Reason: "unexpected end of data"}
	}
	kind := BodyKind(data[p])
	p++
	switch kind {
	case BodyNone:
	case BodyText, BodyBytes, BodyXML, BodyMap, BodyStream:
		l, n := binary.Uvarint(data[p:])
		if n <= 0 {
			return &DecodeError{Offset: p, What: "body length", Reason: "bad or truncated varint"}
		}
		if l > uint64(len(data)-p-n) {
			return &DecodeError{Offset: p, What: "body length", Reason: fmt.Sprintf("%d exceeds the %d bytes left", l, len(data)-p-n)}
		}
		p += n
		block := data[p : p+int(l)]
		p += int(l)
		switch kind {
		case BodyMap:
			r := reader{s: string(block), base: p - len(block)}
			cnt := r.count("map entry count", 2)
			if cnt > 0 {
				b.Map = make([]Field, cnt)
				for i := range b.Map {
					b.Map[i].Name = r.str("map entry name")
					b.Map[i].Value = r.value("map entry value")
				}
			}
			if err := r.finish("map body"); err != nil {
				return err
			}
		case BodyStream:
			r := reader{s: string(block), base: p - len(block)}
			cnt := r.count("stream value count", 1)
			if cnt > 0 {
				b.Stream = make([]Value, cnt)
				for i := range b.Stream {
					b.Stream[i] = r.value("stream value")
				}
			}
			if err := r.finish("stream body"); err != nil {
				return err
			}
		default:
			b.Data = make([]byte, len(block))
			copy(b.Data, block)
		}
	default:
		return &DecodeError{Offset: p - 1, What: "body kind", Reason: fmt.Sprintf("unknown kind %d", uint8(kind))}
	}
	b.Kind = kind
	if p != len(data) {
		return &DecodeError{Offset: p, What: "message", Reason: fmt.Sprintf("%d unexpected bytes after the body", len(data)-p)}
	}
	return nil
}

// reader decodes a block held in a string. The first error sticks: later
// reads return zero values, and err reports the first problem.
type reader struct {
	s    string
	off  int
	base int // offset of s in the whole input, for error offsets
	err  error
}

func (r *reader) fail(what, reason string) {
	if r.err == nil {
		r.err = &DecodeError{Offset: r.base + r.off, What: what, Reason: reason}
	}
	r.off = len(r.s)
}

func (r *reader) finish(what string) error {
	if r.err == nil && r.off != len(r.s) {
		r.fail(what, fmt.Sprintf("%d unexpected bytes at its end", len(r.s)-r.off))
	}
	return r.err
}

func (r *reader) u8(what string) byte {
	if r.off >= len(r.s) {
		r.fail(what, "unexpected end of data")
		return 0
	}
	c := r.s[r.off]
	r.off++
	return c
}

func (r *reader) uvarint(what string) uint64 {
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if r.off >= len(r.s) {
			r.fail(what, "unexpected end of data")
			return 0
		}
		c := r.s[r.off]
		r.off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.fail(what, "varint overflows 64 bits")
	return 0
}

// count reads a count of items that take at least min bytes each, refusing
// one the remaining bytes cannot hold.
func (r *reader) count(what string, min int) int {
	n := r.uvarint(what)
	if left := uint64(len(r.s) - r.off); n > left/uint64(min) {
		r.fail(what, fmt.Sprintf("%d items cannot fit in the %d bytes left", n, left))
		return 0
	}
	return int(n)
}

// fixed returns the next n bytes.
func (r *reader) fixed(what string, n int) string {
	if len(r.s)-r.off < n {
		r.fail(what, "unexpected end of data")
		return ""
	}
	s := r.s[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) str(what string) string {
	l := r.uvarint(what)
	if l > uint64(len(r.s)-r.off) {
		r.fail(what, fmt.Sprintf("length %d exceeds the %d bytes left", l, len(r.s)-r.off))
		return ""
	}
	s := r.s[r.off : r.off+int(l)]
	r.off += int(l)
	return s
}

func (r *reader) value(what string) Value {
	t := Type(r.u8(what))
	if r.err != nil {
		return Value{}
	}
	switch t {
	case Null:
		return Value{}
	case Bool:
		c := r.u8(what)
		if c > 1 {
			r.fail(what, fmt.Sprintf("boolean byte %d is not 0 or 1", c))
		}
		return Value{Type: Bool, N: int64(c)}
	case Byte:
		return Value{Type: Byte, N: int64(int8(r.u8(what)))}
	case Short, Char:
		s := r.fixed(what, 2)
		if len(s) < 2 {
			return Value{}
		}
		u := uint16(s[0]) | uint16(s[1])<<8
		if t == Short {
			return Value{Type: Short, N: int64(int16(u))}
		}
		return Value{Type: Char, N: int64(u)}
	case Int:
		n := unzigzag(r.uvarint(what))
		if n < math.MinInt32 || n > math.MaxInt32 {
			r.fail(what, fmt.Sprintf("int %d is out of range", n))
		}
		return Value{Type: Int, N: n}
	case Long:
		return Value{Type: Long, N: unzigzag(r.uvarint(what))}
	case Float:
		s := r.fixed(what, 4)
		if len(s) < 4 {
			return Value{}
		}
		u := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
		return Value{Type: Float, F: float64(math.Float32frombits(u))}
	case Double:
		s := r.fixed(what, 8)
		if len(s) < 8 {
			return Value{}
		}
		var u uint64
		for i := 7; i >= 0; i-- {
			u = u<<8 | uint64(s[i])
		}
		return Value{Type: Double, F: math.Float64frombits(u)}
	case String:
		return Value{Type: String, S: r.str(what)}
	case Bytes:
		s := r.str(what)
		if r.err != nil {
			return Value{}
		}
		return Value{Type: Bytes, B: []byte(s)}
	}
	r.fail(what, fmt.Sprintf("unknown value type %d", uint8(t)))
	return Value{}
}
