package types

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Marshaler is implemented by every generated type: AppendAMQP appends the
// value's AMQP encoding to dst.
type Marshaler interface {
	AppendAMQP(dst []byte) ([]byte, error)
}

// Unmarshaler is implemented by pointers to generated described types:
// UnmarshalAMQP decodes one value from the start of src and reports how
// many bytes it used.
type Unmarshaler interface {
	UnmarshalAMQP(src []byte) (int, error)
}

// DescribedType is a described type of the specification: a composite
// (performative, delivery state, terminus, ...) or a described restricted
// type (a message section).
type DescribedType interface {
	Marshaler
	Unmarshaler
	// Descriptor returns the type's symbolic and numeric descriptor.
	Descriptor() (name Symbol, code uint64)
}

// Marshal returns the encoding of v.
func Marshal(v Marshaler) ([]byte, error) { return v.AppendAMQP(nil) }

// Unmarshal decodes src, which must hold exactly one value, into v.
func Unmarshal(src []byte, v Unmarshaler) error {
	n, err := v.UnmarshalAMQP(src)
	if err != nil {
		return err
	}
	if n != len(src) {
		return &DecodeError{Type: "value", Offset: n, Err: ErrTrailingBytes}
	}
	return nil
}

func appendNull(b []byte) []byte { return append(b, byte(CodeNull)) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, byte(CodeTrue))
	}
	return append(b, byte(CodeFalse))
}

func appendUint8(b []byte, v uint8) []byte { return append(b, byte(CodeUbyte), v) }

func appendUint16(b []byte, v uint16) []byte {
	return binary.BigEndian.AppendUint16(append(b, byte(CodeUshort)), v)
}

func appendUint32(b []byte, v uint32) []byte {
	switch {
	case v == 0:
		return append(b, byte(CodeUint0))
	case v < 256:
		return append(b, byte(CodeSmalluint), byte(v))
	}
	return binary.BigEndian.AppendUint32(append(b, byte(CodeUint)), v)
}

func appendUint64(b []byte, v uint64) []byte {
	switch {
	case v == 0:
		return append(b, byte(CodeUlong0))
	case v < 256:
		return append(b, byte(CodeSmallulong), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, byte(CodeUlong)), v)
}

func appendInt8(b []byte, v int8) []byte { return append(b, byte(CodeByte), byte(v)) }

func appendInt16(b []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(append(b, byte(CodeShort)), uint16(v))
}

func appendInt32(b []byte, v int32) []byte {
	if v >= math.MinInt8 && v <= math.MaxInt8 {
		return append(b, byte(CodeSmallint), byte(v))
	}
	return binary.BigEndian.AppendUint32(append(b, byte(CodeInt)), uint32(v))
}

func appendInt64(b []byte, v int64) []byte {
	if v >= math.MinInt8 && v <= math.MaxInt8 {
		return append(b, byte(CodeSmalllong), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, byte(CodeLong)), uint64(v))
}

func appendFloat32(b []byte, v float32) []byte {
	return binary.BigEndian.AppendUint32(append(b, byte(CodeFloat)), math.Float32bits(v))
}

func appendFloat64(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, byte(CodeDouble)), math.Float64bits(v))
}

func appendDecimal32(b []byte, v Decimal32) []byte {
	return append(append(b, byte(CodeDecimal32)), v[:]...)
}

func appendDecimal64(b []byte, v Decimal64) []byte {
	return append(append(b, byte(CodeDecimal64)), v[:]...)
}

func appendDecimal128(b []byte, v Decimal128) []byte {
	return append(append(b, byte(CodeDecimal128)), v[:]...)
}

func appendChar(b []byte, v Char) []byte {
	return binary.BigEndian.AppendUint32(append(b, byte(CodeChar)), uint32(v))
}

func appendTimestamp(b []byte, v Timestamp) []byte {
	return binary.BigEndian.AppendUint64(append(b, byte(CodeTimestamp)), uint64(v))
}

func appendUUID(b []byte, v UUID) []byte { return append(append(b, byte(CodeUUID)), v[:]...) }

// appendVariable appends data with a one-byte length under c8 if it fits,
// else with a four-byte length under c32.
func appendVariable[T ~string | ~[]byte](b []byte, c8, c32 FormatCode, v T) ([]byte, error) {
	n := len(v)
	if n < 256 {
		return append(append(b, byte(c8), byte(n)), v...), nil
	}
	if uint64(n) > math.MaxUint32 {
		return b, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	b = binary.BigEndian.AppendUint32(append(b, byte(c32)), uint32(n))
	return append(b, v...), nil
}

func appendBinary(b []byte, v []byte) ([]byte, error) {
	return appendVariable(b, CodeVbin8, CodeVbin32, v)
}

func appendString(b []byte, v string) ([]byte, error) {
	return appendVariable(b, CodeStr8UTF8, CodeStr32UTF8, v)
}

func appendSymbol(b []byte, v Symbol) ([]byte, error) {
	return appendVariable(b, CodeSym8, CodeSym32, v)
}

// appendDescriptor appends the 0x00 constructor and a numeric descriptor.
func appendDescriptor(b []byte, code uint64) []byte {
	return appendUint64(append(b, byte(codeDescribed)), code)
}

// sized is a list, map or array being appended: its header starts at
// start and its body (what the size counts after the count) at body.
// It is first written with 8-bit size and count and widened when the
// body turns out too long, or written wide from the start.
type sized struct {
	start, body int
	wide, code  bool
}

// beginSized appends the header of a compound or array: the format code
// c (unless c is 0, for an element of an array) and room for size and
// count.
func beginSized(b []byte, c FormatCode, wide bool) ([]byte, sized) {
	s := sized{start: len(b), wide: wide, code: c != 0}
	if c != 0 {
		b = append(b, byte(c))
	}
	if wide {
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	} else {
		b = append(b, 0, 0)
	}
	s.body = len(b)
	return b, s
}

// end fills in size and count, widening the header (and changing the
// format code to c32, if there is one) when it does not fit in 8 bits.
func (s sized) end(b []byte, count int, c32 FormatCode) ([]byte, error) {
	n := len(b) - s.body
	if !s.wide && n+1 <= math.MaxUint8 && count <= math.MaxUint8 {
		b[s.body-2] = byte(n + 1)
		b[s.body-1] = byte(count)
		return b, nil
	}
	if uint64(n)+4 > math.MaxUint32 || uint64(count) > math.MaxUint32 {
		return b, fmt.Errorf("%w: %d bytes, %d elements", ErrTooLarge, n, count)
	}
	if !s.wide {
		b = append(b, 0, 0, 0, 0, 0, 0)
		copy(b[s.body+6:], b[s.body:s.body+n])
		s.body += 6
		if s.code {
			b[s.start] = byte(c32)
		}
	}
	binary.BigEndian.PutUint32(b[s.body-8:], uint32(n+4))
	binary.BigEndian.PutUint32(b[s.body-4:], uint32(count))
	return b, nil
}

// fieldList is a composite's field list being appended. Fields that are
// absent are written as null and dropped when no present field follows.
type fieldList struct {
	sized
	last  int // end of the last present field
	count int // number of fields up to the last present one
}

func beginFields(b []byte) ([]byte, fieldList) {
	b, s := beginSized(b, CodeList8, false)
	return b, fieldList{sized: s, last: s.body}
}

// present records that field i (0-based) ends at len(b).
func (l *fieldList) present(b []byte, i int) {
	l.last = len(b)
	l.count = i + 1
}

// finish drops trailing absent fields and completes the list, as list0
// when no field is present.
func (l *fieldList) finish(b []byte) ([]byte, error) {
	b = b[:l.last]
	if l.count == 0 {
		return append(b[:l.start], byte(CodeList0)), nil
	}
	return l.end(b, l.count, CodeList32)
}

func appendList(b []byte, v []any) ([]byte, error) {
	if len(v) == 0 {
		return append(b, byte(CodeList0)), nil
	}
	b, s := beginSized(b, CodeList8, false)
	var err error
	for i, e := range v {
		if b, err = appendAny(b, e); err != nil {
			return b, &EncodeError{Type: "list", Field: fmt.Sprintf("[%d]", i), Err: err}
		}
	}
	return s.end(b, len(v), CodeList32)
}

func appendMap(b []byte, m Map) ([]byte, error) {
	b, s := beginSized(b, CodeMap8, false)
	var err error
	for _, e := range m {
		if b, err = appendAny(b, e.Key); err != nil {
			return b, &EncodeError{Type: "map", Field: "key", Err: err}
		}
		if b, err = appendAny(b, e.Value); err != nil {
			return b, &EncodeError{Type: "map", Field: fmt.Sprintf("[%v]", e.Key), Err: err}
		}
	}
	return s.end(b, 2*len(m), CodeMap32)
}

// appendSymbols appends a multiple="true" field of symbols as an array.
func appendSymbols[T ~string](b []byte, v []T) ([]byte, error) {
	elem := CodeSym8
	for _, s := range v {
		if len(s) > math.MaxUint8 {
			elem = CodeSym32
			break
		}
	}
	b, s := beginSized(b, CodeArray8, false)
	b = append(b, byte(elem))
	for _, e := range v {
		if elem == CodeSym8 {
			b = append(append(b, byte(len(e))), e...)
		} else {
			if uint64(len(e)) > math.MaxUint32 {
				return b, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(e))
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
			b = append(b, e...)
		}
	}
	return s.end(b, len(v), CodeArray32)
}

// AppendValue appends the encoding of a generic value: any of the Go types
// that decoding produces (see the package documentation), a time.Time (as
// a timestamp), a []Symbol (as an array of symbols), or a value of a
// generated type.
func AppendValue(b []byte, v any) ([]byte, error) { return appendAny(b, v) }

func appendAny(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return appendNull(b), nil
	case bool:
		return appendBool(b, v), nil
	case uint8:
		return appendUint8(b, v), nil
	case uint16:
		return appendUint16(b, v), nil
	case uint32:
		return appendUint32(b, v), nil
	case uint64:
		return appendUint64(b, v), nil
	case int8:
		return appendInt8(b, v), nil
	case int16:
		return appendInt16(b, v), nil
	case int32:
		return appendInt32(b, v), nil
	case int64:
		return appendInt64(b, v), nil
	case float32:
		return appendFloat32(b, v), nil
	case float64:
		return appendFloat64(b, v), nil
	case Decimal32:
		return appendDecimal32(b, v), nil
	case Decimal64:
		return appendDecimal64(b, v), nil
	case Decimal128:
		return appendDecimal128(b, v), nil
	case Char:
		return appendChar(b, v), nil
	case Timestamp:
		return appendTimestamp(b, v), nil
	case time.Time:
		return appendTimestamp(b, TimestampOf(v)), nil
	case UUID:
		return appendUUID(b, v), nil
	case []byte:
		return appendBinary(b, v)
	case string:
		return appendString(b, v)
	case Symbol:
		return appendSymbol(b, v)
	case []any:
		return appendList(b, v)
	case Map:
		return appendMap(b, v)
	case Array:
		return appendArray(b, v)
	case []Symbol:
		return appendSymbols(b, v)
	case Described:
		b = append(b, byte(codeDescribed))
		b, err := appendAny(b, v.Descriptor)
		if err != nil {
			return b, &EncodeError{Type: "described", Field: "descriptor", Err: err}
		}
		return appendAny(b, v.Value)
	case *Described:
		if v == nil {
			return appendNull(b), nil
		}
		return appendAny(b, *v)
	case Marshaler:
		return v.AppendAMQP(b)
	}
	return b, fmt.Errorf("%w: %T", ErrUnsupported, v)
}

// arrayElem returns the element constructor for values of v's dynamic type
// and whether an array can hold it; narrow tells whether every element of
// a variable-width type fits a one-byte length.
func arrayElem(v any, narrow bool) (FormatCode, bool) {
	switch v.(type) {
	case nil:
		return CodeNull, true
	case bool:
		return CodeBoolean, true
	case uint8:
		return CodeUbyte, true
	case uint16:
		return CodeUshort, true
	case uint32:
		return CodeUint, true
	case uint64:
		return CodeUlong, true
	case int8:
		return CodeByte, true
	case int16:
		return CodeShort, true
	case int32:
		return CodeInt, true
	case int64:
		return CodeLong, true
	case float32:
		return CodeFloat, true
	case float64:
		return CodeDouble, true
	case Decimal32:
		return CodeDecimal32, true
	case Decimal64:
		return CodeDecimal64, true
	case Decimal128:
		return CodeDecimal128, true
	case Char:
		return CodeChar, true
	case Timestamp, time.Time:
		return CodeTimestamp, true
	case UUID:
		return CodeUUID, true
	case []byte:
		if narrow {
			return CodeVbin8, true
		}
		return CodeVbin32, true
	case string:
		if narrow {
			return CodeStr8UTF8, true
		}
		return CodeStr32UTF8, true
	case Symbol:
		if narrow {
			return CodeSym8, true
		}
		return CodeSym32, true
	case []any:
		return CodeList32, true
	case Map:
		return CodeMap32, true
	case Array:
		return CodeArray32, true
	}
	return 0, false
}

func sameGoType(a, b any) bool {
	switch a.(type) {
	case nil:
		return b == nil
	case bool:
		_, ok := b.(bool)
		return ok
	case uint8:
		_, ok := b.(uint8)
		return ok
	case uint16:
		_, ok := b.(uint16)
		return ok
	case uint32:
		_, ok := b.(uint32)
		return ok
	case uint64:
		_, ok := b.(uint64)
		return ok
	case int8:
		_, ok := b.(int8)
		return ok
	case int16:
		_, ok := b.(int16)
		return ok
	case int32:
		_, ok := b.(int32)
		return ok
	case int64:
		_, ok := b.(int64)
		return ok
	case float32:
		_, ok := b.(float32)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case Decimal32:
		_, ok := b.(Decimal32)
		return ok
	case Decimal64:
		_, ok := b.(Decimal64)
		return ok
	case Decimal128:
		_, ok := b.(Decimal128)
		return ok
	case Char:
		_, ok := b.(Char)
		return ok
	case Timestamp, time.Time:
		switch b.(type) {
		case Timestamp, time.Time:
			return true
		}
		return false
	case UUID:
		_, ok := b.(UUID)
		return ok
	case []byte:
		_, ok := b.([]byte)
		return ok
	case string:
		_, ok := b.(string)
		return ok
	case Symbol:
		_, ok := b.(Symbol)
		return ok
	case []any:
		_, ok := b.([]any)
		return ok
	case Map:
		_, ok := b.(Map)
		return ok
	case Array:
		_, ok := b.(Array)
		return ok
	}
	return false
}

func varLen(v any) int {
	switch v := v.(type) {
	case []byte:
		return len(v)
	case string:
		return len(v)
	case Symbol:
		return len(v)
	}
	return 0
}

func appendArray(b []byte, a Array) ([]byte, error) {
	return appendArrayBody(b, a, CodeArray8, false)
}

// appendArrayBody appends an array: with format code c (0 for an element of
// another array, which then is wide), size, count, element constructor and
// the elements without their constructors.
func appendArrayBody(b []byte, a Array, c FormatCode, wide bool) ([]byte, error) {
	values := []any(a)
	var desc any
	described := false
	if len(a) > 0 {
		if d0, ok := a[0].(Described); ok {
			described, desc = true, d0.Descriptor
			values = make([]any, len(a))
			for i, e := range a {
				d, ok := e.(Described)
				if !ok || !valueEqual(d.Descriptor, desc) {
					return b, fmt.Errorf("%w: array element %d is not described like element 0", ErrUnsupported, i)
				}
				values[i] = d.Value
			}
		}
	}
	elem := CodeNull
	if len(values) > 0 {
		narrow := true
		for i, e := range values {
			if !sameGoType(values[0], e) {
				return b, fmt.Errorf("%w: array of mixed types (%T at 0, %T at %d)", ErrUnsupported, values[0], e, i)
			}
			if varLen(e) > math.MaxUint8 {
				narrow = false
			}
		}
		var ok bool
		if elem, ok = arrayElem(values[0], narrow); !ok {
			return b, fmt.Errorf("%w: array of %T", ErrUnsupported, values[0])
		}
	}
	b, s := beginSized(b, c, wide)
	var err error
	if described {
		b = append(b, byte(codeDescribed))
		if b, err = appendAny(b, desc); err != nil {
			return b, err
		}
	}
	b = append(b, byte(elem))
	for i, e := range values {
		if b, err = appendElem(b, elem, e); err != nil {
			return b, &EncodeError{Type: "array", Field: fmt.Sprintf("[%d]", i), Err: err}
		}
	}
	return s.end(b, len(values), CodeArray32)
}

// appendElem appends an array element's encoding under constructor elem,
// without the constructor.
func appendElem(b []byte, elem FormatCode, v any) ([]byte, error) {
	switch elem {
	case CodeNull:
		return b, nil
	case CodeList32:
		l := v.([]any)
		b, s := beginSized(b, 0, true)
		var err error
		for _, e := range l {
			if b, err = appendAny(b, e); err != nil {
				return b, err
			}
		}
		return s.end(b, len(l), 0)
	case CodeMap32:
		m := v.(Map)
		b, s := beginSized(b, 0, true)
		var err error
		for _, e := range m {
			if b, err = appendAny(b, e.Key); err != nil {
				return b, err
			}
			if b, err = appendAny(b, e.Value); err != nil {
				return b, err
			}
		}
		return s.end(b, 2*len(m), 0)
	case CodeArray32:
		return appendArrayBody(b, v.(Array), 0, true)
	case CodeVbin8, CodeStr8UTF8, CodeSym8:
		var data []byte
		switch v := v.(type) {
		case []byte:
			data = v
		case string:
			data = []byte(v)
		case Symbol:
			data = []byte(v)
		}
		return append(append(b, byte(len(data))), data...), nil
	case CodeVbin32, CodeStr32UTF8, CodeSym32:
		var data []byte
		switch v := v.(type) {
		case []byte:
			data = v
		case string:
			data = []byte(v)
		case Symbol:
			data = []byte(v)
		}
		if uint64(len(data)) > math.MaxUint32 {
			return b, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
		}
		return append(binary.BigEndian.AppendUint32(b, uint32(len(data))), data...), nil
	case CodeBoolean:
		if v.(bool) {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	}
	// Fixed-width scalars: encode in full width and drop the constructor.
	n := len(b)
	var err error
	switch v := v.(type) {
	case uint32:
		b = binary.BigEndian.AppendUint32(b, v)
	case uint64:
		b = binary.BigEndian.AppendUint64(b, v)
	case int32:
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	case int64:
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	default:
		if b, err = appendAny(b, v); err != nil {
			return b, err
		}
		copy(b[n:], b[n+1:])
		b = b[:len(b)-1]
	}
	return b, nil
}
