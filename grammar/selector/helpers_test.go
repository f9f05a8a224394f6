package selector

import "math"

// testMsg is a Message for tests: headers and properties in maps.
type testMsg struct {
	headers map[Header]Value
	props   map[string]Value
	body    *string
}

func (m testMsg) Header(h Header) Value      { return m.headers[h] }
func (m testMsg) Property(name string) Value { return m.props[name] }
func (m testMsg) Body() ([]byte, bool) {
	if m.body == nil {
		return nil, false
	}
	return []byte(*m.body), true
}

// props builds a message with the given properties and no headers.
func props(kv ...any) testMsg {
	m := testMsg{headers: map[Header]Value{}, props: map[string]Value{}}
	for i := 0; i < len(kv); i += 2 {
		m.props[kv[i].(string)] = val(kv[i+1])
	}
	return m
}

// withHeader returns m with one more header field.
func (m testMsg) withHeader(h Header, v any) testMsg {
	m.headers[h] = val(v)
	return m
}

// withBody returns m with a body.
func (m testMsg) withBody(b string) testMsg {
	m.body = &b
	return m
}

// val makes a Value from a Go value: int and int64 are Long, float64 is
// Double, nil is Null.
func val(x any) Value {
	switch v := x.(type) {
	case nil:
		return Value{}
	case bool:
		return Value{Kind: Bool, Bool: v}
	case int:
		return Value{Kind: Long, Long: int64(v)}
	case int64:
		return Value{Kind: Long, Long: v}
	case float64:
		return Value{Kind: Double, Double: v}
	case string:
		return Value{Kind: String, Str: v}
	case Value:
		return v
	}
	panic("val: unsupported type")
}

var nan = math.NaN()
