package types

import (
	"encoding/binary"
	"fmt"
	"math"
)

// codeDescribed is the constructor that starts a described value: 0x00,
// then the descriptor, then the value (part 1, section 1.2 of the spec;
// the XML does not list it among the encodings).
const codeDescribed FormatCode = 0x00

// category is the layout of an encoding, from the category attribute of
// the encodings in types.xml.
type category uint8

const (
	catFixed    category = iota + 1 // width bytes of data
	catVariable                     // width-byte length, then data
	catCompound                     // width-byte size and count, then elements
	catArray                        // width-byte size and count, constructor, elements
)

// decoder reads AMQP values from buf starting at off. Inside a list, map
// or array buf is cut at the compound's end, so nothing inside can read
// past it.
type decoder struct {
	buf   []byte
	off   int
	depth int
}

func (d *decoder) fail(typ string, at int, err error) error {
	return &DecodeError{Type: typ, Offset: at, Err: err}
}

func (d *decoder) codeErr(typ string, at int, c FormatCode) error {
	return &DecodeError{Type: typ, Offset: at, Err: fmt.Errorf("%w 0x%02x (%s)", ErrFormatCode, byte(c), c)}
}

// readCode reads a constructor's format code.
func (d *decoder) readCode(typ string) (FormatCode, int, error) {
	at := d.off
	if at >= len(d.buf) {
		return 0, at, d.fail(typ, at, ErrTruncated)
	}
	d.off++
	return FormatCode(d.buf[at]), at, nil
}

// peekNull reports whether the next value is an encoded null, and skips it
// if so.
func (d *decoder) peekNull() bool {
	if d.off < len(d.buf) && d.buf[d.off] == byte(CodeNull) {
		d.off++
		return true
	}
	return false
}

// take returns the next n bytes, capped so that appending to them cannot
// overwrite the input.
func (d *decoder) take(typ string, at, n int) ([]byte, error) {
	if n < 0 || n > len(d.buf)-d.off {
		return nil, d.fail(typ, at, ErrTruncated)
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b, nil
}

// rank is the width class of an integer encoding: the size in bytes of the
// AMQP type it encodes (not of the encoding: smalluint has rank 4).
func unsignedRank(c FormatCode) (rank, width int) {
	switch c {
	case CodeUbyte:
		return 1, 1
	case CodeUshort:
		return 2, 2
	case CodeUint:
		return 4, 4
	case CodeSmalluint:
		return 4, 1
	case CodeUint0:
		return 4, 0
	case CodeUlong:
		return 8, 8
	case CodeSmallulong:
		return 8, 1
	case CodeUlong0:
		return 8, 0
	}
	return 0, 0
}

func signedRank(c FormatCode) (rank, width int) {
	switch c {
	case CodeByte:
		return 1, 1
	case CodeShort:
		return 2, 2
	case CodeInt:
		return 4, 4
	case CodeSmallint:
		return 4, 1
	case CodeLong:
		return 8, 8
	case CodeSmalllong:
		return 8, 1
	}
	return 0, 0
}

// unsignedBody reads an unsigned integer encoded with c. It accepts the
// encodings of the unsigned types up to maxRank bytes wide, so a ubyte or
// ushort decodes where a uint is expected.
func (d *decoder) unsignedBody(typ string, c FormatCode, at, maxRank int) (uint64, error) {
	rank, width := unsignedRank(c)
	if rank == 0 || rank > maxRank {
		return 0, d.codeErr(typ, at, c)
	}
	b, err := d.take(typ, at, width)
	if err != nil {
		return 0, err
	}
	switch width {
	case 0:
		return 0, nil
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	default:
		return binary.BigEndian.Uint64(b), nil
	}
}

// signedBody reads a signed integer encoded with c, accepting the signed
// types up to maxRank bytes wide.
func (d *decoder) signedBody(typ string, c FormatCode, at, maxRank int) (int64, error) {
	rank, width := signedRank(c)
	if rank == 0 || rank > maxRank {
		return 0, d.codeErr(typ, at, c)
	}
	b, err := d.take(typ, at, width)
	if err != nil {
		return 0, err
	}
	switch width {
	case 1:
		return int64(int8(b[0])), nil
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	default:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
}

func (d *decoder) boolBody(c FormatCode, at int) (bool, error) {
	switch c {
	case CodeTrue:
		return true, nil
	case CodeFalse:
		return false, nil
	case CodeBoolean:
		b, err := d.take("boolean", at, 1)
		if err != nil {
			return false, err
		}
		switch b[0] {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
		return false, d.fail("boolean", at, fmt.Errorf("%w: boolean byte 0x%02x", ErrMalformed, b[0]))
	}
	return false, d.codeErr("boolean", at, c)
}

// fixedBody reads the width bytes of a fixed-width encoding that must be
// want.
func (d *decoder) fixedBody(typ string, c FormatCode, at int, want FormatCode, width int) ([]byte, error) {
	if c != want {
		return nil, d.codeErr(typ, at, c)
	}
	return d.take(typ, at, width)
}

// variableBody reads the length-prefixed data of a variable-width encoding
// that must be c8 (one-byte length) or c32 (four-byte length).
func (d *decoder) variableBody(typ string, c FormatCode, at int, c8, c32 FormatCode) ([]byte, error) {
	var n int
	switch c {
	case c8:
		b, err := d.take(typ, at, 1)
		if err != nil {
			return nil, err
		}
		n = int(b[0])
	case c32:
		b, err := d.take(typ, at, 4)
		if err != nil {
			return nil, err
		}
		n64 := uint64(binary.BigEndian.Uint32(b))
		if n64 > uint64(len(d.buf)-d.off) {
			return nil, d.fail(typ, at, fmt.Errorf("%w: length %d, %d bytes remain", ErrLength, n64, len(d.buf)-d.off))
		}
		n = int(n64)
	default:
		return nil, d.codeErr(typ, at, c)
	}
	if n > len(d.buf)-d.off {
		return nil, d.fail(typ, at, fmt.Errorf("%w: length %d, %d bytes remain", ErrLength, n, len(d.buf)-d.off))
	}
	return d.take(typ, at, n)
}

// The typed readers used by the generated code. Each reads one value with
// its constructor; null is handled by the caller (a null field is absent).

func (d *decoder) readBool() (bool, error) {
	c, at, err := d.readCode("boolean")
	if err != nil {
		return false, err
	}
	return d.boolBody(c, at)
}

func (d *decoder) readUint8() (uint8, error) {
	c, at, err := d.readCode("ubyte")
	if err != nil {
		return 0, err
	}
	v, err := d.unsignedBody("ubyte", c, at, 1)
	return uint8(v), err
}

func (d *decoder) readUint16() (uint16, error) {
	c, at, err := d.readCode("ushort")
	if err != nil {
		return 0, err
	}
	v, err := d.unsignedBody("ushort", c, at, 2)
	return uint16(v), err
}

func (d *decoder) readUint32() (uint32, error) {
	c, at, err := d.readCode("uint")
	if err != nil {
		return 0, err
	}
	v, err := d.unsignedBody("uint", c, at, 4)
	return uint32(v), err
}

func (d *decoder) readUint64() (uint64, error) {
	c, at, err := d.readCode("ulong")
	if err != nil {
		return 0, err
	}
	return d.unsignedBody("ulong", c, at, 8)
}

func (d *decoder) readInt8() (int8, error) {
	c, at, err := d.readCode("byte")
	if err != nil {
		return 0, err
	}
	v, err := d.signedBody("byte", c, at, 1)
	return int8(v), err
}

func (d *decoder) readInt16() (int16, error) {
	c, at, err := d.readCode("short")
	if err != nil {
		return 0, err
	}
	v, err := d.signedBody("short", c, at, 2)
	return int16(v), err
}

func (d *decoder) readInt32() (int32, error) {
	c, at, err := d.readCode("int")
	if err != nil {
		return 0, err
	}
	v, err := d.signedBody("int", c, at, 4)
	return int32(v), err
}

func (d *decoder) readInt64() (int64, error) {
	c, at, err := d.readCode("long")
	if err != nil {
		return 0, err
	}
	return d.signedBody("long", c, at, 8)
}

func (d *decoder) float32Body(c FormatCode, at int) (float32, error) {
	b, err := d.fixedBody("float", c, at, CodeFloat, 4)
	if err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
}

func (d *decoder) readFloat32() (float32, error) {
	c, at, err := d.readCode("float")
	if err != nil {
		return 0, err
	}
	return d.float32Body(c, at)
}

func (d *decoder) float64Body(c FormatCode, at int) (float64, error) {
	b, err := d.fixedBody("double", c, at, CodeDouble, 8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

func (d *decoder) readFloat64() (float64, error) {
	c, at, err := d.readCode("double")
	if err != nil {
		return 0, err
	}
	return d.float64Body(c, at)
}

func (d *decoder) readDecimal32() (Decimal32, error) {
	c, at, err := d.readCode("decimal32")
	if err != nil {
		return Decimal32{}, err
	}
	b, err := d.fixedBody("decimal32", c, at, CodeDecimal32, 4)
	if err != nil {
		return Decimal32{}, err
	}
	return Decimal32(b), nil
}

func (d *decoder) readDecimal64() (Decimal64, error) {
	c, at, err := d.readCode("decimal64")
	if err != nil {
		return Decimal64{}, err
	}
	b, err := d.fixedBody("decimal64", c, at, CodeDecimal64, 8)
	if err != nil {
		return Decimal64{}, err
	}
	return Decimal64(b), nil
}

func (d *decoder) readDecimal128() (Decimal128, error) {
	c, at, err := d.readCode("decimal128")
	if err != nil {
		return Decimal128{}, err
	}
	b, err := d.fixedBody("decimal128", c, at, CodeDecimal128, 16)
	if err != nil {
		return Decimal128{}, err
	}
	return Decimal128(b), nil
}

func (d *decoder) readChar() (Char, error) {
	c, at, err := d.readCode("char")
	if err != nil {
		return 0, err
	}
	b, err := d.fixedBody("char", c, at, CodeChar, 4)
	if err != nil {
		return 0, err
	}
	return Char(binary.BigEndian.Uint32(b)), nil
}

func (d *decoder) readTimestamp() (Timestamp, error) {
	c, at, err := d.readCode("timestamp")
	if err != nil {
		return 0, err
	}
	b, err := d.fixedBody("timestamp", c, at, CodeTimestamp, 8)
	if err != nil {
		return 0, err
	}
	return Timestamp(binary.BigEndian.Uint64(b)), nil
}

func (d *decoder) readUUID() (UUID, error) {
	c, at, err := d.readCode("uuid")
	if err != nil {
		return UUID{}, err
	}
	b, err := d.fixedBody("uuid", c, at, CodeUUID, 16)
	if err != nil {
		return UUID{}, err
	}
	return UUID(b), nil
}

// readBinary returns the bytes of a binary, aliasing the input. An empty
// binary decodes as an empty, non-nil slice.
func (d *decoder) readBinary() ([]byte, error) {
	c, at, err := d.readCode("binary")
	if err != nil {
		return nil, err
	}
	return d.variableBody("binary", c, at, CodeVbin8, CodeVbin32)
}

func (d *decoder) readString() (string, error) {
	c, at, err := d.readCode("string")
	if err != nil {
		return "", err
	}
	b, err := d.variableBody("string", c, at, CodeStr8UTF8, CodeStr32UTF8)
	return string(b), err
}

func (d *decoder) readSymbol() (Symbol, error) {
	c, at, err := d.readCode("symbol")
	if err != nil {
		return "", err
	}
	b, err := d.variableBody("symbol", c, at, CodeSym8, CodeSym32)
	return Symbol(b), err
}

// compound is a list, map or array being read: count elements, ending at
// end, with the decoder's buffer cut there and the full buffer saved.
type compound struct {
	typ   string
	at    int
	count int
	i     int
	end   int
	saved []byte
}

// enter reads the size and count of a list, map or array whose format code
// c (at offset at) has a width-byte size and count, checks both against
// the remaining input, and limits the decoder to the compound's bytes.
func (d *decoder) enter(typ string, c FormatCode, at, width int) (compound, error) {
	if d.depth >= MaxDepth {
		return compound{}, d.fail(typ, at, ErrDepth)
	}
	b, err := d.take(typ, at, width)
	if err != nil {
		return compound{}, err
	}
	var size uint64
	if width == 1 {
		size = uint64(b[0])
	} else {
		size = uint64(binary.BigEndian.Uint32(b))
	}
	if size > uint64(len(d.buf)-d.off) {
		return compound{}, d.fail(typ, at, fmt.Errorf("%w: size %d, %d bytes remain", ErrLength, size, len(d.buf)-d.off))
	}
	if size < uint64(width) {
		return compound{}, d.fail(typ, at, fmt.Errorf("%w: size %d too small for its count", ErrMalformed, size))
	}
	end := d.off + int(size)
	b, _ = d.take(typ, at, width)
	var count uint64
	if width == 1 {
		count = uint64(b[0])
	} else {
		count = uint64(binary.BigEndian.Uint32(b))
	}
	if count > uint64(end-d.off) && !(c == CodeArray8 || c == CodeArray32) {
		// Every element of a list or map takes at least one byte.
		return compound{}, d.fail(typ, at, fmt.Errorf("%w: count %d, %d bytes remain", ErrLength, count, end-d.off))
	}
	if count > size {
		// Arrays of zero-width elements (null, true, uint0, ...) are
		// limited to one element per byte of the array.
		return compound{}, d.fail(typ, at, fmt.Errorf("%w: count %d, %d bytes remain", ErrLength, count, end-d.off))
	}
	cp := compound{typ: typ, at: at, count: int(count), end: end, saved: d.buf}
	d.buf = d.buf[:end]
	d.depth++
	return cp, nil
}

// enterList enters a list encoded with c, including list0.
func (d *decoder) enterList(typ string, c FormatCode, at int) (compound, error) {
	switch c {
	case CodeList0:
		if d.depth >= MaxDepth {
			return compound{}, d.fail(typ, at, ErrDepth)
		}
		cp := compound{typ: typ, at: at, end: d.off, saved: d.buf}
		d.buf = d.buf[:d.off]
		d.depth++
		return cp, nil
	case CodeList8:
		return d.enter(typ, c, at, 1)
	case CodeList32:
		return d.enter(typ, c, at, 4)
	}
	return compound{}, d.codeErr(typ, at, c)
}

// leave skips the elements of cp that were not read, checks that the
// elements fill the compound exactly and restores the decoder's buffer.
func (d *decoder) leave(cp *compound) error {
	for ; cp.i < cp.count; cp.i++ {
		if err := d.skip(); err != nil {
			return err
		}
	}
	if d.off != cp.end {
		return d.fail(cp.typ, cp.at, fmt.Errorf("%w: elements end %d bytes before the %s does", ErrMalformed, cp.end-d.off, cp.typ))
	}
	d.buf = cp.saved
	d.depth--
	return nil
}

// next advances to a composite's next field and reports whether it is
// present: false past the list's count and for an encoded null (which it
// skips).
func (cp *compound) next(d *decoder) bool {
	if cp.i >= cp.count {
		return false
	}
	cp.i++
	return !d.peekNull()
}

// beginList starts decoding a composite's list of fields.
func (d *decoder) beginList(typ string) (compound, error) {
	c, at, err := d.readCode(typ)
	if err != nil {
		return compound{}, err
	}
	return d.enterList(typ, c, at)
}

// readMap reads a map. An empty map decodes as an empty, non-nil Map.
func (d *decoder) readMap() (Map, error) {
	c, at, err := d.readCode("map")
	if err != nil {
		return nil, err
	}
	return d.mapBody(c, at)
}

func (d *decoder) mapBody(c FormatCode, at int) (Map, error) {
	var cp compound
	var err error
	switch c {
	case CodeMap8:
		cp, err = d.enter("map", c, at, 1)
	case CodeMap32:
		cp, err = d.enter("map", c, at, 4)
	default:
		return nil, d.codeErr("map", at, c)
	}
	if err != nil {
		return nil, err
	}
	if cp.count%2 != 0 {
		return nil, d.fail("map", at, fmt.Errorf("%w: map with %d elements, an odd number", ErrMalformed, cp.count))
	}
	m := make(Map, cp.count/2)
	for i := range m {
		if m[i].Key, err = d.readAny(); err != nil {
			return nil, err
		}
		if m[i].Value, err = d.readAny(); err != nil {
			return nil, err
		}
	}
	cp.i = cp.count
	if err := d.leave(&cp); err != nil {
		return nil, err
	}
	return m, nil
}

// readList reads a list of generic values. An empty list decodes as an
// empty, non-nil slice.
func (d *decoder) readList() ([]any, error) {
	c, at, err := d.readCode("list")
	if err != nil {
		return nil, err
	}
	return d.listBody(c, at)
}

func (d *decoder) listBody(c FormatCode, at int) ([]any, error) {
	cp, err := d.enterList("list", c, at)
	if err != nil {
		return nil, err
	}
	l := make([]any, cp.count)
	for i := range l {
		if l[i], err = d.readAny(); err != nil {
			return nil, err
		}
	}
	cp.i = cp.count
	if err := d.leave(&cp); err != nil {
		return nil, err
	}
	return l, nil
}

// enterArray enters an array encoded with c and reads its element
// constructor: a format code, or a described constructor whose descriptor
// is returned.
func (d *decoder) enterArray(typ string, c FormatCode, at int) (cp compound, elem FormatCode, desc any, described bool, err error) {
	switch c {
	case CodeArray8:
		cp, err = d.enter(typ, c, at, 1)
	case CodeArray32:
		cp, err = d.enter(typ, c, at, 4)
	default:
		return cp, 0, nil, false, d.codeErr(typ, at, c)
	}
	if err != nil {
		return cp, 0, nil, false, err
	}
	elemAt := d.off
	if elem, _, err = d.readCode(typ); err != nil {
		return cp, 0, nil, false, err
	}
	if elem == codeDescribed {
		described = true
		if desc, err = d.readAny(); err != nil {
			return cp, 0, nil, false, err
		}
		elemAt = d.off
		if elem, _, err = d.readCode(typ); err != nil {
			return cp, 0, nil, false, err
		}
	}
	_, width, ok := elem.layout()
	if !ok || elem == codeDescribed {
		return cp, 0, nil, false, d.codeErr(typ, elemAt, elem)
	}
	if width > 0 && cp.count > (cp.end-d.off)/width {
		return cp, 0, nil, false, d.fail(typ, at, fmt.Errorf("%w: %d elements of at least %d bytes, %d bytes remain", ErrLength, cp.count, width, cp.end-d.off))
	}
	return cp, elem, desc, described, nil
}

func (d *decoder) arrayBody(c FormatCode, at int) (Array, error) {
	cp, elem, desc, described, err := d.enterArray("array", c, at)
	if err != nil {
		return nil, err
	}
	a := make(Array, cp.count)
	for i := range a {
		v, err := d.anyBody(elem, d.off)
		if err != nil {
			return nil, err
		}
		if described {
			v = Described{Descriptor: desc, Value: v}
		}
		a[i] = v
	}
	cp.i = cp.count
	if err := d.leave(&cp); err != nil {
		return nil, err
	}
	return a, nil
}

// readSymbols reads a multiple="true" field of symbols (or of a type
// restricted from symbol): a single symbol or an array of symbols. An
// empty array decodes as an empty, non-nil slice.
func readSymbols[T ~string](d *decoder) ([]T, error) {
	c, at, err := d.readCode("symbol")
	if err != nil {
		return nil, err
	}
	switch c {
	case CodeSym8, CodeSym32:
		b, err := d.variableBody("symbol", c, at, CodeSym8, CodeSym32)
		if err != nil {
			return nil, err
		}
		return []T{T(b)}, nil
	case CodeArray8, CodeArray32:
		cp, elem, _, described, err := d.enterArray("symbol array", c, at)
		if err != nil {
			return nil, err
		}
		if described || (elem != CodeSym8 && elem != CodeSym32) {
			return nil, d.codeErr("symbol array", at, elem)
		}
		out := make([]T, cp.count)
		for i := range out {
			b, err := d.variableBody("symbol", elem, d.off, CodeSym8, CodeSym32)
			if err != nil {
				return nil, err
			}
			out[i] = T(b)
		}
		cp.i = cp.count
		if err := d.leave(&cp); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, d.codeErr("symbol", at, c)
}

// readAny reads one value of any type into its generic Go representation.
func (d *decoder) readAny() (any, error) {
	c, at, err := d.readCode("value")
	if err != nil {
		return nil, err
	}
	return d.anyBody(c, at)
}

// anyBody reads the rest of a value whose constructor c has been read.
// Inside an array, at is where the element starts (after the shared
// constructor).
func (d *decoder) anyBody(c FormatCode, at int) (any, error) {
	switch c {
	case CodeNull:
		return nil, nil
	case CodeTrue, CodeFalse, CodeBoolean:
		return d.boolBody(c, at)
	case CodeUbyte:
		v, err := d.unsignedBody("ubyte", c, at, 1)
		return uint8(v), err
	case CodeUshort:
		v, err := d.unsignedBody("ushort", c, at, 2)
		return uint16(v), err
	case CodeUint, CodeSmalluint, CodeUint0:
		v, err := d.unsignedBody("uint", c, at, 4)
		return uint32(v), err
	case CodeUlong, CodeSmallulong, CodeUlong0:
		return d.unsignedBody("ulong", c, at, 8)
	case CodeByte:
		v, err := d.signedBody("byte", c, at, 1)
		return int8(v), err
	case CodeShort:
		v, err := d.signedBody("short", c, at, 2)
		return int16(v), err
	case CodeInt, CodeSmallint:
		v, err := d.signedBody("int", c, at, 4)
		return int32(v), err
	case CodeLong, CodeSmalllong:
		return d.signedBody("long", c, at, 8)
	case CodeFloat:
		return d.float32Body(c, at)
	case CodeDouble:
		return d.float64Body(c, at)
	case CodeDecimal32:
		b, err := d.take("decimal32", at, 4)
		if err != nil {
			return nil, err
		}
		return Decimal32(b), nil
	case CodeDecimal64:
		b, err := d.take("decimal64", at, 8)
		if err != nil {
			return nil, err
		}
		return Decimal64(b), nil
	case CodeDecimal128:
		b, err := d.take("decimal128", at, 16)
		if err != nil {
			return nil, err
		}
		return Decimal128(b), nil
	case CodeChar:
		b, err := d.take("char", at, 4)
		if err != nil {
			return nil, err
		}
		return Char(binary.BigEndian.Uint32(b)), nil
	case CodeTimestamp:
		b, err := d.take("timestamp", at, 8)
		if err != nil {
			return nil, err
		}
		return Timestamp(binary.BigEndian.Uint64(b)), nil
	case CodeUUID:
		b, err := d.take("uuid", at, 16)
		if err != nil {
			return nil, err
		}
		return UUID(b), nil
	case CodeVbin8, CodeVbin32:
		return d.variableBody("binary", c, at, CodeVbin8, CodeVbin32)
	case CodeStr8UTF8, CodeStr32UTF8:
		b, err := d.variableBody("string", c, at, CodeStr8UTF8, CodeStr32UTF8)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case CodeSym8, CodeSym32:
		b, err := d.variableBody("symbol", c, at, CodeSym8, CodeSym32)
		if err != nil {
			return nil, err
		}
		return Symbol(b), nil
	case CodeList0, CodeList8, CodeList32:
		return d.listBody(c, at)
	case CodeMap8, CodeMap32:
		return d.mapBody(c, at)
	case CodeArray8, CodeArray32:
		return d.arrayBody(c, at)
	case codeDescribed:
		return d.describedBody(at)
	}
	return nil, d.codeErr("value", at, c)
}

// describedBody reads the descriptor and value of a described value whose
// 0x00 constructor has been read.
func (d *decoder) describedBody(at int) (Described, error) {
	if d.depth >= MaxDepth {
		return Described{}, d.fail("described", at, ErrDepth)
	}
	d.depth++
	desc, err := d.readAny()
	if err != nil {
		return Described{}, err
	}
	v, err := d.readAny()
	if err != nil {
		return Described{}, err
	}
	d.depth--
	return Described{Descriptor: desc, Value: v}, nil
}

// skip steps over one value without decoding it. Compounds are skipped by
// their size, so their contents are not checked.
func (d *decoder) skip() error {
	c, at, err := d.readCode("value")
	if err != nil {
		return err
	}
	if c == codeDescribed {
		if d.depth >= MaxDepth {
			return d.fail("described", at, ErrDepth)
		}
		d.depth++
		if err := d.skip(); err != nil {
			return err
		}
		if err := d.skip(); err != nil {
			return err
		}
		d.depth--
		return nil
	}
	cat, width, ok := c.layout()
	if !ok {
		return d.codeErr("value", at, c)
	}
	switch cat {
	case catFixed:
		_, err = d.take(c.String(), at, width)
		return err
	default: // variable, compound and array all start with a width-byte size
		b, err := d.take(c.String(), at, width)
		if err != nil {
			return err
		}
		var n uint64
		if width == 1 {
			n = uint64(b[0])
		} else {
			n = uint64(binary.BigEndian.Uint32(b))
		}
		if n > uint64(len(d.buf)-d.off) {
			return d.fail(c.String(), at, fmt.Errorf("%w: size %d, %d bytes remain", ErrLength, n, len(d.buf)-d.off))
		}
		d.off += int(n)
		return nil
	}
}

// readDescriptor reads the 0x00 constructor and a descriptor. A symbolic
// descriptor is translated to its numeric code when a known type has it;
// known is false otherwise (name then says what it was).
func (d *decoder) readDescriptor(typ string) (code uint64, name Symbol, known bool, at int, err error) {
	c, at, err := d.readCode(typ)
	if err != nil {
		return 0, "", false, at, err
	}
	if c != codeDescribed {
		return 0, "", false, at, d.codeErr(typ, at, c)
	}
	c, dat, err := d.readCode(typ)
	if err != nil {
		return 0, "", false, at, err
	}
	switch c {
	case CodeUlong, CodeSmallulong, CodeUlong0:
		code, err = d.unsignedBody(typ, c, dat, 8)
		return code, "", err == nil, at, err
	case CodeSym8, CodeSym32:
		b, err := d.variableBody(typ, c, dat, CodeSym8, CodeSym32)
		if err != nil {
			return 0, "", false, at, err
		}
		code, known = descriptorCodeOf(b)
		return code, Symbol(b), known, at, nil
	}
	return 0, "", false, at, d.fail(typ, dat, fmt.Errorf("%w 0x%02x (%s) for a descriptor", ErrFormatCode, byte(c), c))
}

// expectDescriptor reads a descriptor that must be want.
func (d *decoder) expectDescriptor(typ string, want uint64) error {
	code, name, known, at, err := d.readDescriptor(typ)
	if err != nil {
		return err
	}
	if !known || code != want {
		return d.fail(typ, at, fmt.Errorf("%w %s, want %#x", ErrDescriptor, descriptorString(code, name), want))
	}
	return nil
}

func descriptorString(code uint64, name Symbol) string {
	if name != "" {
		return string(name)
	}
	return fmt.Sprintf("%#x", code)
}

// notProvidedErr reports a descriptor that no type providing archetype
// has.
func notProvidedErr(code uint64, name Symbol, archetype string) error {
	return fmt.Errorf("%w %s: not a %s", ErrDescriptor, descriptorString(code, name), archetype)
}

// describedDecoder is implemented by every generated described type.
type describedDecoder interface {
	DescribedType
	decodeBody(d *decoder) error
}

// DecodeValue decodes one value of any AMQP type from the start of src into
// its generic Go representation (see the package documentation) and
// reports how many bytes it used. Described values of known types are
// returned as [Described] too; see [FromDescribed].
func DecodeValue(src []byte) (any, int, error) {
	d := decoder{buf: src}
	v, err := d.readAny()
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// DecodeKnown decodes one described value of any type this package knows
// (a performative, delivery state, section, ...) from the start of src
// and reports how many bytes it used.
func DecodeKnown(src []byte) (DescribedType, int, error) {
	d := decoder{buf: src}
	code, name, known, at, err := d.readDescriptor("described")
	if err != nil {
		return nil, 0, err
	}
	v := newDescribed(code)
	if !known || v == nil {
		return nil, 0, d.fail("described", at, notProvidedErr(code, name, "known described type"))
	}
	if err := v.decodeBody(&d); err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// FromDescribed converts a generic Described value whose descriptor is a
// known type's (such as the declare or discharge in the amqp-value body of
// a message to a transaction coordinator) into that type.
func FromDescribed(v Described) (DescribedType, error) {
	b, err := AppendValue(nil, v)
	if err != nil {
		return nil, err
	}
	t, _, err := DecodeKnown(b)
	return t, err
}

// readArray reads an array of generic values.
func (d *decoder) readArray() (Array, error) {
	c, at, err := d.readCode("array")
	if err != nil {
		return nil, err
	}
	return d.arrayBody(c, at)
}
