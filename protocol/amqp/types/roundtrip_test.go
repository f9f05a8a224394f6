package types

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// filler sets every field of a generated type to a value that differs from
// the field's XML default, so that a round trip exercises every field.
type filler struct {
	pick int // rotates the concrete type chosen for interface fields
}

func (f *filler) fill(t *testing.T, v reflect.Value, name string, depth int) {
	t.Helper()
	if depth > 6 {
		return
	}
	typ := v.Type()
	if strings.HasPrefix(typ.Name(), "Optional[") {
		f.fill(t, v.Field(0), name, depth+1)
		v.Field(1).SetBool(true)
		return
	}
	switch typ {
	case reflect.TypeOf(Map(nil)):
		v.Set(reflect.ValueOf(Map{
			{Key: Symbol("k-" + name), Value: int32(-5)},
			{Key: uint64(7), Value: "v"},
			{Key: "str", Value: []any{int64(1), Symbol("s"), nil, true}},
		}))
		return
	case reflect.TypeOf([]any(nil)):
		v.Set(reflect.ValueOf([]any{uint16(9), "x", Map{{Key: Symbol("a"), Value: UUID{1}}}}))
		return
	}
	switch typ.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(7 + depth))
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-7 - int64(depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.String:
		v.SetString("v-" + name)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			v.Index(i).SetUint(uint64(i + 1))
		}
	case reflect.Slice:
		switch typ.Elem().Kind() {
		case reflect.Uint8:
			v.SetBytes([]byte("b-" + name))
		case reflect.String:
			s := reflect.MakeSlice(typ, 2, 2)
			s.Index(0).SetString("a-" + name)
			s.Index(1).SetString(strings.Repeat("z", 300)) // forces sym32
			v.Set(s)
		case reflect.Interface:
			v.Set(reflect.ValueOf([]any{int32(1), "x"}).Convert(typ))
		case reflect.Struct: // a map type restricted from Map
			m := reflect.New(reflect.TypeOf(Map(nil))).Elem()
			f.fill(t, m, name, depth)
			v.Set(m.Convert(typ))
		default:
			t.Fatalf("no filler for slice %v (%s)", typ, name)
		}
	case reflect.Pointer:
		p := reflect.New(typ.Elem())
		f.fill(t, p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f.fill(t, v.Field(i), typ.Field(i).Name, depth+1)
		}
	case reflect.Interface:
		if typ.NumMethod() == 0 {
			v.Set(reflect.ValueOf("any-" + name))
			return
		}
		var cands []reflect.Value
		for _, code := range describedCodes() {
			c := reflect.ValueOf(newDescribed(code))
			if c.Type().Implements(typ) {
				cands = append(cands, c)
			}
		}
		if len(cands) == 0 {
			t.Fatalf("no type implements %v", typ)
		}
		c := cands[f.pick%len(cands)]
		f.pick++
		f.fill(t, c.Elem(), name, depth+1)
		v.Set(c)
	default:
		t.Fatalf("no filler for %v (%s)", typ, name)
	}
}

// TestRoundTripEveryDescribedType encodes every composite and described
// restricted type with every field set to a non-default value, decodes
// it, and compares. It repeats with interface fields cycling through the
// types that provide them.
func TestRoundTripEveryDescribedType(t *testing.T) {
	for round := 0; round < 7; round++ {
		f := &filler{pick: round}
		for _, code := range describedCodes() {
			in := newDescribed(code)
			name, _ := in.Descriptor()
			f.fill(t, reflect.ValueOf(in).Elem(), string(name), 0)
			b, err := in.AppendAMQP(nil)
			if err != nil {
				t.Fatalf("%s: encode: %v", name, err)
			}
			out := newDescribed(code)
			n, err := out.UnmarshalAMQP(b)
			if err != nil {
				t.Fatalf("%s: decode: %v\n% x", name, err, b)
			}
			if n != len(b) {
				t.Fatalf("%s: decoded %d of %d bytes", name, n, len(b))
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("%s: round trip differs\n in: %#v\nout: %#v", name, in, out)
			}
			// The generic dispatcher agrees.
			k, _, err := DecodeKnown(b)
			if err != nil || !reflect.DeepEqual(k, in) {
				t.Fatalf("%s: DecodeKnown: %v", name, err)
			}
			// Re-encoding gives the same bytes.
			b2, err := out.AppendAMQP(nil)
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("%s: re-encoding differs: %v", name, err)
			}
		}
	}
}

// TestZeroAndDefaultValues round-trips every type as returned by its NewX
// constructor (mandatory fields zero, defaults set): defaults must not be
// encoded and must come back.
func TestDefaultsRoundTrip(t *testing.T) {
	for _, code := range describedCodes() {
		in := newDescribed(code)
		name, _ := in.Descriptor()
		if ctor := reflect.ValueOf(in).MethodByName("Descriptor"); !ctor.IsValid() {
			t.Fatal("no Descriptor")
		}
		// Mandatory "*" and described fields must be set to encode.
		b, err := in.AppendAMQP(nil)
		if errors.Is(err, ErrMissingField) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := newDescribed(code)
		if _, err := out.UnmarshalAMQP(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
