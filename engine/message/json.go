package message

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON form of a message, for admin export and import and command-line
// tools:
//
//	{
//	  "id": "ID:1-2-3",
//	  "destination": "/queue/orders",      // Destination.String form; omitted when unset
//	  "replyTo": "/temp-queue/r1",         // omitted when unset
//	  "correlationId": "c-42",             // omitted when empty
//	  "type": "order",                     // JMSType, omitted when empty
//	  "deliveryMode": "PERSISTENT",        // or "NON_PERSISTENT"
//	  "priority": 4,
//	  "timestamp": 1700000000000,          // ms since the epoch; 0 = unset
//	  "expiration": 0,
//	  "deliveryTime": 0,
//	  "redeliveryLimit": -1,               // -1 = no limit
//	  "producer": 7,                       // engine bookkeeping; omitted when 0
//	  "properties": [ {"name": "qty", "type": "int", "value": 5}, … ],
//	  "body": {"kind": "text", "text": "hello"}
//	}
//
// Properties keep their order and their type (Type.String names). Values by
// type: boolean as true/false; byte, short and int as JSON numbers; long as a
// JSON string of decimal digits, so that values beyond 2^53 survive tools
// that read numbers as doubles (jq, JavaScript); float and double as JSON
// numbers in their shortest form, or the strings "NaN", "Infinity",
// "-Infinity"; string as a string; bytes as standard base64; char as a
// one-character string, or its UTF-16 code as a number for a lone
// surrogate; null as no "value" at all. On input, integer types also accept
// a string of decimal digits, float and double a numeric string, and char a
// number.
//
// Bodies: {"kind":"none"} (or no "body"); {"kind":"text"|"xml","text":"…"},
// or "data" in base64 instead of "text" when the bytes are not valid UTF-8;
// {"kind":"bytes","data":"base64"}; {"kind":"map","map":[{"name":…,
// "type":…,"value":…},…]}; {"kind":"stream","stream":[{"type":…,"value":…},…]}.
//
// Header times are JSON numbers: Go reads them exactly, and real times are
// far below 2^53. Strings must be valid UTF-8 to round-trip (JSON replaces
// invalid bytes with U+FFFD). On input, a missing deliveryMode is PERSISTENT,
// a missing priority 4 and a missing redeliveryLimit -1 (the JMS defaults);
// other missing fields are zero, unknown fields are an error, and the
// message must pass Message.Validate. MarshalJSON fails for a message that
// does not pass it, or whose destination has a kind but no name.

type jsonMessage struct {
	ID              string    `json:"id,omitempty"`
	Destination     string    `json:"destination,omitempty"`
	ReplyTo         string    `json:"replyTo,omitempty"`
	CorrelationID   string    `json:"correlationId,omitempty"`
	Type            string    `json:"type,omitempty"`
	DeliveryMode    string    `json:"deliveryMode,omitempty"`
	Priority        *int      `json:"priority,omitempty"`
	Timestamp       int64     `json:"timestamp"`
	Expiration      int64     `json:"expiration"`
	DeliveryTime    int64     `json:"deliveryTime"`
	RedeliveryLimit *int32    `json:"redeliveryLimit,omitempty"`
	Producer        uint64    `json:"producer,omitempty"`
	Properties      []Field   `json:"properties,omitempty"`
	Body            *jsonBody `json:"body,omitempty"`
}

type jsonBody struct {
	Kind   string  `json:"kind"`
	Text   *string `json:"text,omitempty"`
	Data   []byte  `json:"data,omitempty"`
	Map    []Field `json:"map,omitempty"`
	Stream []Value `json:"stream,omitempty"`
}

type jsonField struct {
	Name  *string         `json:"name,omitempty"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

// jsonDestination renders d for JSON, refusing what ParseDestination could
// not read back.
func jsonDestination(what string, d Destination) (string, error) {
	if d.Kind == NoDest {
		if d.Name != "" {
			return "", fmt.Errorf("message: %s %q has a name but no kind", what, d.Name)
		}
		return "", nil
	}
	if d.Name == "" {
		return "", fmt.Errorf("message: %s of kind %s has no name", what, d.Kind)
	}
	return d.String(), nil
}

// MarshalJSON returns m's JSON form (see the description above). It has a
// value receiver so that json.Marshal uses it for a Message as well as a
// *Message.
func (m Message) MarshalJSON() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	var j jsonMessage
	var err error
	if j.Destination, err = jsonDestination("destination", m.Destination); err != nil {
		return nil, err
	}
	if j.ReplyTo, err = jsonDestination("reply-to", m.ReplyTo); err != nil {
		return nil, err
	}
	prio := int(m.Priority)
	rl := m.RedeliveryLimit
	j.ID, j.CorrelationID, j.Type = m.ID, m.CorrelationID, m.Type
	j.DeliveryMode = m.DeliveryMode.String()
	j.Priority = &prio
	j.Timestamp, j.Expiration, j.DeliveryTime = m.Timestamp, m.Expiration, m.DeliveryTime
	j.RedeliveryLimit = &rl
	j.Producer = m.Producer
	j.Properties = m.Props
	if m.Body.Kind != BodyNone {
		b := &jsonBody{Kind: m.Body.Kind.String()}
		switch m.Body.Kind {
		case BodyText, BodyXML:
			if utf8.Valid(m.Body.Data) {
				s := string(m.Body.Data)
				b.Text = &s
			} else {
				b.Data = m.Body.Data
			}
		case BodyBytes:
			b.Data = m.Body.Data
		case BodyMap:
			b.Map = m.Body.Map
		case BodyStream:
			b.Stream = m.Body.Stream
		}
		j.Body = b
	}
	return json.Marshal(&j)
}

// UnmarshalJSON sets m from its JSON form (see MarshalJSON), replacing every
// field. On error m is unchanged.
func (m *Message) UnmarshalJSON(data []byte) error {
	var j jsonMessage
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("message: JSON message: %w", err)
	}
	out := Message{
		ID:              j.ID,
		CorrelationID:   j.CorrelationID,
		Type:            j.Type,
		DeliveryMode:    Persistent,
		Priority:        DefaultPriority,
		Timestamp:       j.Timestamp,
		Expiration:      j.Expiration,
		DeliveryTime:    j.DeliveryTime,
		RedeliveryLimit: NoRedeliveryLimit,
		Producer:        j.Producer,
		Props:           Properties(j.Properties),
	}
	var err error
	if j.Destination != "" {
		if out.Destination, err = ParseDestination(j.Destination); err != nil {
			return err
		}
	}
	if j.ReplyTo != "" {
		if out.ReplyTo, err = ParseDestination(j.ReplyTo); err != nil {
			return fmt.Errorf("message: replyTo: %w", err)
		}
	}
	switch j.DeliveryMode {
	case "", "PERSISTENT":
	case "NON_PERSISTENT":
		out.DeliveryMode = NonPersistent
	default:
		return fmt.Errorf("message: unknown deliveryMode %q (want PERSISTENT or NON_PERSISTENT)", j.DeliveryMode)
	}
	if j.Priority != nil {
		if err := ValidatePriority(*j.Priority); err != nil {
			return err
		}
		out.Priority = uint8(*j.Priority)
	}
	if j.RedeliveryLimit != nil {
		out.RedeliveryLimit = *j.RedeliveryLimit
	}
	if j.Body != nil {
		if out.Body, err = j.Body.body(); err != nil {
			return err
		}
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*m = out
	return nil
}

func (j *jsonBody) body() (Body, error) {
	var b Body
	switch j.Kind {
	case "none":
		if j.Text != nil || j.Data != nil || j.Map != nil || j.Stream != nil {
			return Body{}, fmt.Errorf("message: JSON body of kind none has content")
		}
		return b, nil
	case "text", "xml":
		b.Kind = BodyText
		if j.Kind == "xml" {
			b.Kind = BodyXML
		}
		switch {
		case j.Text != nil && j.Data != nil:
			return Body{}, fmt.Errorf("message: JSON %s body has both text and data", j.Kind)
		case j.Text != nil:
			b.Data = []byte(*j.Text)
		default:
			b.Data = j.Data
		}
	case "bytes":
		if j.Text != nil {
			return Body{}, fmt.Errorf("message: JSON bytes body has text (want data in base64)")
		}
		b = BytesBody(j.Data)
	case "map":
		return MapBody(j.Map...)
	case "stream":
		return StreamBody(j.Stream...), nil
	default:
		return Body{}, fmt.Errorf("message: unknown JSON body kind %q (want none, text, xml, bytes, map or stream)", j.Kind)
	}
	return b, nil
}

// strictUnmarshal decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictUnmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// MarshalJSON returns the field as {"name":…,"type":…,"value":…} (see the
// JSON form of Message).
func (f Field) MarshalJSON() ([]byte, error) {
	raw, err := f.Value.jsonValue()
	if err != nil {
		return nil, fmt.Errorf("message: field %q: %w", f.Name, err)
	}
	name := f.Name
	return json.Marshal(jsonField{Name: &name, Type: f.Value.Type.String(), Value: raw})
}

// UnmarshalJSON sets the field from {"name":…,"type":…,"value":…}; the name is
// required.
func (f *Field) UnmarshalJSON(data []byte) error {
	var j jsonField
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("message: JSON field: %w", err)
	}
	if j.Name == nil {
		return fmt.Errorf("message: JSON field has no name")
	}
	v, err := valueFromJSON(j.Type, j.Value)
	if err != nil {
		return fmt.Errorf("message: field %q: %w", *j.Name, err)
	}
	*f = Field{Name: *j.Name, Value: v}
	return nil
}

// MarshalJSON returns the value as {"type":…,"value":…} (see the JSON form of
// Message).
func (v Value) MarshalJSON() ([]byte, error) {
	raw, err := v.jsonValue()
	if err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	return json.Marshal(jsonField{Type: v.Type.String(), Value: raw})
}

// UnmarshalJSON sets the value from {"type":…,"value":…}.
func (v *Value) UnmarshalJSON(data []byte) error {
	var j jsonField
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("message: JSON value: %w", err)
	}
	if j.Name != nil {
		return fmt.Errorf("message: JSON value has a name")
	}
	x, err := valueFromJSON(j.Type, j.Value)
	if err != nil {
		return fmt.Errorf("message: %w", err)
	}
	*v = x
	return nil
}

// jsonFloat renders a float for JSON: a number, or a string for non-finite
// values, which JSON numbers cannot express.
func jsonFloat(f float64, bits int) json.RawMessage {
	switch {
	case math.IsNaN(f):
		return json.RawMessage(`"NaN"`)
	case math.IsInf(f, 1):
		return json.RawMessage(`"Infinity"`)
	case math.IsInf(f, -1):
		return json.RawMessage(`"-Infinity"`)
	}
	return json.RawMessage(strconv.FormatFloat(f, 'g', -1, bits))
}

// jsonValue renders the "value" member of v; nil for Null.
func (v Value) jsonValue() (json.RawMessage, error) {
	switch v.Type {
	case Null:
		return nil, nil
	case Bool:
		if v.N != 0 {
			return json.RawMessage("true"), nil
		}
		return json.RawMessage("false"), nil
	case Byte:
		return json.RawMessage(strconv.FormatInt(int64(int8(v.N)), 10)), nil
	case Short:
		return json.RawMessage(strconv.FormatInt(int64(int16(v.N)), 10)), nil
	case Int:
		return json.RawMessage(strconv.FormatInt(int64(int32(v.N)), 10)), nil
	case Long:
		return json.RawMessage(`"` + strconv.FormatInt(v.N, 10) + `"`), nil
	case Float:
		return jsonFloat(float64(float32(v.F)), 32), nil
	case Double:
		return jsonFloat(v.F, 64), nil
	case String:
		return json.Marshal(v.S)
	case Bytes:
		return json.Marshal(base64.StdEncoding.EncodeToString(v.B))
	case Char:
		c := uint16(v.N)
		if utf16.IsSurrogate(rune(c)) {
			return json.RawMessage(strconv.Itoa(int(c))), nil
		}
		return json.Marshal(string(rune(c)))
	}
	return nil, fmt.Errorf("unknown value type %d", uint8(v.Type))
}

// valueFromJSON reads a value of the named type from its "value" member.
func valueFromJSON(typ string, raw json.RawMessage) (Value, error) {
	t, err := ParseType(typ)
	if err != nil {
		return Value{}, err
	}
	null := len(raw) == 0 || string(raw) == "null"
	if t == Null {
		if !null {
			return Value{}, fmt.Errorf("a null value has a value %s", raw)
		}
		return Value{}, nil
	}
	if null {
		return Value{}, fmt.Errorf("a %s value needs a value", t)
	}
	bad := func(want string) (Value, error) {
		return Value{}, fmt.Errorf("%s value %s is not %s", t, raw, want)
	}
	// text is the number literal, or the content of a JSON string.
	text, quoted := string(raw), false
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return bad("a valid JSON string")
		}
		quoted = true
	}
	switch t {
	case Bool:
		switch text {
		case "true":
			if !quoted {
				return BoolValue(true), nil
			}
		case "false":
			if !quoted {
				return BoolValue(false), nil
			}
		}
		return bad("true or false")
	case Byte, Short, Int, Long:
		size := 64
		switch t {
		case Byte:
			size = 8
		case Short:
			size = 16
		case Int:
			size = 32
		}
		n, err := strconv.ParseInt(text, 10, size)
		if err != nil {
			return bad(fmt.Sprintf("a %d-bit integer", size))
		}
		return Value{Type: t, N: n}, nil
	case Float, Double:
		size := 64
		if t == Float {
			size = 32
		}
		var f float64
		switch text {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			// Refuse Go-only spellings ("inf", "0x1p3", "1_0") in strings.
			if strings.ContainsAny(strings.ToLower(text), "inx_") {
				return bad("a number")
			}
			f, err = strconv.ParseFloat(text, size)
			if err != nil {
				return bad("a number in range")
			}
		}
		if t == Float {
			return FloatValue(float32(f)), nil
		}
		return DoubleValue(f), nil
	case String:
		if !quoted {
			return bad("a string")
		}
		return StringValue(text), nil
	case Bytes:
		if !quoted {
			return bad("a base64 string")
		}
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return bad("standard base64")
		}
		return BytesValue(b), nil
	case Char:
		if !quoted {
			n, err := strconv.ParseUint(text, 10, 16)
			if err != nil {
				return bad("a UTF-16 code unit")
			}
			return CharValue(uint16(n)), nil
		}
		r, size := utf8.DecodeRuneInString(text)
		if size == 0 || size != len(text) || (r == utf8.RuneError && size == 1) || r > 0xFFFF {
			return bad("one character of the Basic Multilingual Plane")
		}
		return CharValue(uint16(r)), nil
	}
	return Value{}, fmt.Errorf("unknown value type %s", t)
}
