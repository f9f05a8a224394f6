package spec

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"
)

// allMethods returns a zero value of every method NewMethod knows, found by
// asking it for every class and method id the XML could use.
func allMethods() []Method {
	var ms []Method
	for c := 0; c < 256; c++ {
		for m := 0; m < 256; m++ {
			if v := NewMethod(uint16(c), uint16(m)); v != nil {
				ms = append(ms, v)
			}
		}
	}
	return ms
}

// filler sets values of every Go type the generated structs use.
type filler struct{ r *rand.Rand }

func newFiller(seed uint64) *filler {
	return &filler{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (f *filler) str(max int) string {
	n := f.r.IntN(max + 1)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + f.r.IntN(26))
	}
	return string(b)
}

func (f *filler) time() time.Time { return time.Unix(f.r.Int64N(1<<40)+1, 0).UTC() }

// table returns a table holding a value of every field type, nested once.
func (f *filler) table(depth int) Table {
	t := Table{
		"bool": f.r.IntN(2) == 1, "int8": int8(f.r.Int()), "uint8": uint8(f.r.Int()),
		"int16": int16(f.r.Int()), "uint16": uint16(f.r.Int()), "int32": int32(f.r.Int()),
		"uint32": f.r.Uint32(), "int64": int64(f.r.Uint64()), "float32": f.r.Float32(),
		"float64": f.r.Float64(), "decimal": Decimal{Scale: 2, Value: int32(f.r.Int())},
		"string": f.str(30), "bytes": []byte(f.str(10) + "x"), "time": f.time(), "void": nil,
		"array": []any{int32(1), "two", []any{}, nil},
	}
	if depth > 0 {
		t["table"] = f.table(depth - 1)
	}
	return t
}

// fill sets every field of the struct v points to.
func (f *filler) fill(v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		fv := rv.Field(i)
		switch fv.Interface().(type) {
		case bool:
			fv.SetBool(f.r.IntN(2) == 1)
		case uint8, uint16, uint32, uint64:
			fv.SetUint(f.r.Uint64())
		case string:
			fv.SetString(f.str(40))
		case []byte:
			fv.SetBytes([]byte(f.str(40) + "!"))
		case Table:
			fv.Set(reflect.ValueOf(f.table(1)))
		case time.Time:
			fv.Set(reflect.ValueOf(f.time()))
		default:
			panic(fmt.Sprintf("filler: field %s of %T has type %s", rv.Type().Field(i).Name, v, fv.Type()))
		}
	}
}
