package types

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"time"
)

// Symbol is an AMQP symbol: a short ASCII name such as a capability, an
// error condition or an annotation key.
type Symbol string

// Char is an AMQP char: one UTF-32 code point.
type Char rune

// Timestamp is an AMQP timestamp: milliseconds since the Unix epoch.
type Timestamp int64

// TimestampOf returns the Timestamp of t, truncated to milliseconds.
func TimestampOf(t time.Time) Timestamp { return Timestamp(t.UnixMilli()) }

// Time returns ts as a UTC time.Time.
func (ts Timestamp) Time() time.Time { return time.UnixMilli(int64(ts)).UTC() }

// UUID is an AMQP uuid: an RFC 4122 UUID in network byte order.
type UUID [16]byte

// String returns u in the canonical 8-4-4-4-12 hex form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// Decimal32 is an AMQP decimal32, kept as its IEEE 754 decimal bytes.
type Decimal32 [4]byte

// Decimal64 is an AMQP decimal64, kept as its IEEE 754 decimal bytes.
type Decimal64 [8]byte

// Decimal128 is an AMQP decimal128, kept as its IEEE 754 decimal bytes.
type Decimal128 [16]byte

// MapEntry is one key/value pair of a [Map].
type MapEntry struct {
	// Key is the entry's key, a generic value.
	Key any
	// Value is the entry's value, a generic value.
	Value any
}

// Map is an AMQP map. It keeps its entries in wire order and allows keys
// of any AMQP type (symbol keys for fields and annotations, string keys for
// application-properties, ulong keys in annotations). Duplicate keys are
// kept as decoded; [Map.Get] returns the first.
type Map []MapEntry

// Get returns the value of the first entry whose key equals key and
// whether there is one. Keys compare by AMQP type and value, so
// Symbol("a") and "a" are different keys.
func (m Map) Get(key any) (any, bool) {
	for _, e := range m {
		if valueEqual(e.Key, key) {
			return e.Value, true
		}
	}
	return nil, false
}

// Array is an AMQP array: values that all have the same AMQP type. Decoded
// elements have the Go types listed in the package documentation. An
// encoded array of described values has each element as a [Described]
// with the same descriptor. An empty Array encodes with the null element
// constructor, since it has no element to take a type from.
type Array []any

// Described is a described value whose descriptor is not a type this
// package knows (or one met where a generic value is expected, such as in
// a filter set or an amqp-value body). Descriptor is normally a uint64 or
// a Symbol. [FromDescribed] turns a Described of a known type into its Go
// type.
type Described struct {
	// Descriptor identifies the type: a uint64 code or a Symbol name.
	Descriptor any
	// Value is the described value, a generic value.
	Value any
}

// Optional is a field that may be absent and whose zero value is a valid
// value, such as the handle of a flow.
type Optional[T any] struct {
	// Value is the value; meaningful only when Present.
	Value T
	// Present tells whether the field was there.
	Present bool
}

// Some returns a present Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Present: true} }

// Get returns the value and whether it is present.
func (o Optional[T]) Get() (T, bool) { return o.Value, o.Present }

// Or returns the value if present, else def.
func (o Optional[T]) Or(def T) T {
	if o.Present {
		return o.Value
	}
	return def
}

// String formats the value, or "absent".
func (o Optional[T]) String() string {
	if !o.Present {
		return "absent"
	}
	return fmt.Sprint(o.Value)
}

// valueEqual reports whether two generic values are equal in type and
// value (floats by their bits). It never panics, even for uncomparable
// dynamic types.
func valueEqual(a, b any) bool {
	switch av := a.(type) {
	case []byte:
		bv, ok := b.([]byte)
		return ok && bytes.Equal(av, bv)
	case []any:
		bv, ok := b.([]any)
		return ok && sliceEqual(av, bv)
	case Array:
		bv, ok := b.(Array)
		return ok && sliceEqual(av, bv)
	case Map:
		bv, ok := b.(Map)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !valueEqual(av[i].Key, bv[i].Key) || !valueEqual(av[i].Value, bv[i].Value) {
				return false
			}
		}
		return true
	case Described:
		bv, ok := b.(Described)
		return ok && valueEqual(av.Descriptor, bv.Descriptor) && valueEqual(av.Value, bv.Value)
	case float32: // by bits: a NaN key equals itself
		bv, ok := b.(float32)
		return ok && math.Float32bits(av) == math.Float32bits(bv)
	case float64:
		bv, ok := b.(float64)
		return ok && math.Float64bits(av) == math.Float64bits(bv)
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false
	}
	if ta == nil {
		return true
	}
	switch ta.Kind() {
	case reflect.Struct, reflect.Array, reflect.Interface:
		// May hold uncomparable values; DeepEqual never panics.
		return reflect.DeepEqual(a, b)
	}
	if !ta.Comparable() {
		return reflect.DeepEqual(a, b)
	}
	return a == b
}

func sliceEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !valueEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}
