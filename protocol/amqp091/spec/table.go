package spec

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// MaxDepth is how deeply tables and arrays may nest, in decoding and in
// encoding: a deeper value is an error when decoded and void when encoded.
const MaxDepth = 32

// Table is an AMQP field table: the arguments of declare, bind and consume,
// the peer properties of connection.start and start-ok, the headers
// property.
//
// The field types are RabbitMQ's reading of AMQP 0-9-1 (its errata to the
// 0-9-1 specification, which every client in use follows), with these Go
// types:
//
//	't' bool      'b' int8      'B' uint8     's' int16     'u' uint16
//	'I' int32     'i' uint32    'l' int64     'f' float32   'd' float64
//	'D' Decimal   'S' string    'x' []byte    'A' []any     'T' time.Time
//	'F' Table     'V' nil
//
// This differs from the table in the 0-9-1 PDF (section 4.2.5.5), where 's'
// is a short string, 'U' a signed 16-bit integer, 'L' a signed and 'l' an
// unsigned 64-bit integer, and 'x' does not exist. Decoding also accepts
// the PDF's letters that RabbitMQ's do not use — 'U' as int16 and 'L' as
// int64, the reading of the Rust client library lapin (amq-protocol-types),
// so that a client built from the PDF is understood; they are re-encoded as
// 's' and 'l'. (amqp091-go and the RabbitMQ Java client send neither.) A long string 'S' decodes as a Go string
// (copied); a byte array 'x' as []byte (copied).
//
// Encoding also takes int (as 'l') and map[string]any (as 'F'). A value of
// any other Go type is written as void 'V': encoding never fails, and
// [Table.Validate] finds such values for a caller that wants to check.
// Keys are written in sorted order, so that one table always encodes to
// the same bytes.
type Table map[string]any

// Decimal is the AMQP decimal field type: Value / 10^Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Validate returns an error naming the first key (in sorted order; nested
// keys as a path) whose value AppendTable cannot encode as given: a Go type
// with no field type, a key or nesting that does not fit.
func (t Table) Validate() error {
	return validateTable(t, "", 0)
}

func validateTable(t map[string]any, path string, depth int) error {
	if depth >= MaxDepth {
		return fmt.Errorf("table %s nests more than %d deep", path, MaxDepth)
	}
	for _, k := range sortedKeys(t) {
		p := k
		if path != "" {
			p = path + "." + k
		}
		if len(k) > 255 {
			return fmt.Errorf("table key %.40q...: longer than 255 bytes", k)
		}
		if err := validateValue(t[k], p, depth); err != nil {
			return err
		}
	}
	return nil
}

func validateValue(v any, path string, depth int) error {
	switch v := v.(type) {
	case nil, bool, int8, uint8, int16, uint16, int32, uint32, int64, int, float32, float64, Decimal, string, []byte, time.Time:
		return nil
	case Table:
		return validateTable(v, path, depth+1)
	case map[string]any:
		return validateTable(v, path, depth+1)
	case []any:
		if depth+1 >= MaxDepth {
			return fmt.Errorf("array %s nests more than %d deep", path, MaxDepth)
		}
		for i, e := range v {
			if err := validateValue(e, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("table value %s: Go type %T has no AMQP field type", path, v)
}

func sortedKeys(t map[string]any) []string {
	return appendSortedKeys(make([]string, 0, len(t)), t)
}

// appendSortedKeys appends t's keys to keys, sorted.
func appendSortedKeys(keys []string, t map[string]any) []string {
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AppendTable appends t as a field table: its size in bytes, then each
// key (sorted) with its type letter and value.
func AppendTable(b []byte, t Table) []byte {
	return appendTable(b, t, 0)
}

func appendTable(b []byte, t map[string]any, depth int) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	if depth < MaxDepth {
		var small [8]string // no allocation for the keys of a small table
		for _, k := range appendSortedKeys(small[:0], t) {
			b = appendShortstr(b, k)
			b = appendValue(b, t[k], depth)
		}
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func appendValue(b []byte, v any, depth int) []byte {
	switch v := v.(type) {
	case bool:
		if v {
			return append(b, 't', 1)
		}
		return append(b, 't', 0)
	case int8:
		return append(b, 'b', byte(v))
	case uint8:
		return append(b, 'B', v)
	case int16:
		return binary.BigEndian.AppendUint16(append(b, 's'), uint16(v))
	case uint16:
		return binary.BigEndian.AppendUint16(append(b, 'u'), v)
	case int32:
		return binary.BigEndian.AppendUint32(append(b, 'I'), uint32(v))
	case uint32:
		return binary.BigEndian.AppendUint32(append(b, 'i'), v)
	case int64:
		return binary.BigEndian.AppendUint64(append(b, 'l'), uint64(v))
	case int:
		return binary.BigEndian.AppendUint64(append(b, 'l'), uint64(v))
	case float32:
		return binary.BigEndian.AppendUint32(append(b, 'f'), math.Float32bits(v))
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 'd'), math.Float64bits(v))
	case Decimal:
		return binary.BigEndian.AppendUint32(append(b, 'D', v.Scale), uint32(v.Value))
	case string:
		b = binary.BigEndian.AppendUint32(append(b, 'S'), uint32(len(v)))
		return append(b, v...)
	case []byte:
		return appendLongstr(append(b, 'x'), v)
	case time.Time:
		return appendTimestamp(append(b, 'T'), v)
	case Table:
		if depth+1 < MaxDepth {
			return appendTable(append(b, 'F'), v, depth+1)
		}
	case map[string]any:
		if depth+1 < MaxDepth {
			return appendTable(append(b, 'F'), v, depth+1)
		}
	case []any:
		if depth+1 < MaxDepth {
			b = append(b, 'A')
			at := len(b)
			b = append(b, 0, 0, 0, 0)
			for _, e := range v {
				b = appendValue(b, e, depth+1)
			}
			binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
			return b
		}
	}
	return append(b, 'V')
}

// DecodeTable decodes a field table (its size, then its entries) from the
// start of b and reports how many bytes it used.
func DecodeTable(b []byte) (Table, int, error) {
	t, n, err := decodeTable(b, 0)
	if err != nil {
		return nil, 0, err
	}
	return t, n, nil
}

// decodeTable decodes a table at nesting depth depth. A table's entries
// never extend past its size, and the size never past b.
func decodeTable(b []byte, depth int) (Table, int, *Error) {
	if depth >= MaxDepth {
		return nil, 0, errorf(FrameError, "field table nested more than %d deep", MaxDepth)
	}
	if len(b) < 4 {
		return nil, 0, errorf(FrameError, "field table truncated: %d bytes, the size needs 4", len(b))
	}
	size := binary.BigEndian.Uint32(b)
	if uint64(size) > uint64(len(b)-4) {
		return nil, 0, errorf(FrameError, "field table of %d bytes, %d left", size, len(b)-4)
	}
	body := b[4 : 4+int(size)]
	t := Table{}
	for off := 0; off < len(body); {
		kl := int(body[off])
		off++
		if kl > len(body)-off {
			return nil, 0, errorf(FrameError, "field table key of %d bytes, %d left in the table", kl, len(body)-off)
		}
		key := string(body[off : off+kl])
		off += kl
		v, n, err := decodeValue(body[off:], depth)
		if err != nil {
			err.Msg = fmt.Sprintf("field table key %q: %s", key, err.Msg)
			return nil, 0, err
		}
		off += n
		t[key] = v
	}
	return t, 4 + int(size), nil
}

// decodeValue decodes a type letter and its value from the start of b.
func decodeValue(b []byte, depth int) (any, int, *Error) {
	if len(b) < 1 {
		return nil, 0, errorf(FrameError, "field value truncated: no type letter")
	}
	typ, v := b[0], b[1:]
	need := func(n int) *Error {
		if len(v) < n {
			return errorf(FrameError, "field value of type %q truncated: %d bytes needed, %d left", typ, n, len(v))
		}
		return nil
	}
	width := 0
	switch typ {
	case 't', 'b', 'B':
		width = 1
	case 's', 'u', 'U':
		width = 2
	case 'I', 'i', 'f':
		width = 4
	case 'l', 'L', 'd', 'T':
		width = 8
	case 'D':
		width = 5
	case 'S', 'x', 'A', 'F':
		width = 4 // the size; the contents are checked below
	case 'V':
		return nil, 1, nil
	default:
		return nil, 0, errorf(FrameError, "unknown field type %q", typ)
	}
	if err := need(width); err != nil {
		return nil, 0, err
	}
	switch typ {
	case 't':
		return v[0] != 0, 2, nil
	case 'b':
		return int8(v[0]), 2, nil
	case 'B':
		return v[0], 2, nil
	case 's', 'U':
		return int16(binary.BigEndian.Uint16(v)), 3, nil
	case 'u':
		return binary.BigEndian.Uint16(v), 3, nil
	case 'I':
		return int32(binary.BigEndian.Uint32(v)), 5, nil
	case 'i':
		return binary.BigEndian.Uint32(v), 5, nil
	case 'f':
		return math.Float32frombits(binary.BigEndian.Uint32(v)), 5, nil
	case 'l', 'L':
		return int64(binary.BigEndian.Uint64(v)), 9, nil
	case 'd':
		return math.Float64frombits(binary.BigEndian.Uint64(v)), 9, nil
	case 'T':
		return timestampTime(binary.BigEndian.Uint64(v)), 9, nil
	case 'D':
		return Decimal{Scale: v[0], Value: int32(binary.BigEndian.Uint32(v[1:]))}, 6, nil
	case 'F':
		t, n, err := decodeTable(v, depth+1)
		if err != nil {
			return nil, 0, err
		}
		return t, 1 + n, nil
	}
	size := binary.BigEndian.Uint32(v)
	if uint64(size) > uint64(len(v)-4) {
		return nil, 0, errorf(FrameError, "field value of type %q: %d bytes, %d left", typ, size, len(v)-4)
	}
	body := v[4 : 4+int(size)]
	n := 5 + int(size)
	switch typ {
	case 'S':
		return string(body), n, nil
	case 'x':
		return append([]byte{}, body...), n, nil
	}
	// 'A'
	if depth+1 >= MaxDepth {
		return nil, 0, errorf(FrameError, "field array nested more than %d deep", MaxDepth)
	}
	arr := []any{}
	for off := 0; off < len(body); {
		e, en, err := decodeValue(body[off:], depth+1)
		if err != nil {
			err.Msg = fmt.Sprintf("field array element %d: %s", len(arr), err.Msg)
			return nil, 0, err
		}
		arr = append(arr, e)
		off += en
	}
	return arr, n, nil
}
