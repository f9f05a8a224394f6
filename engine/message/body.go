package message

import (
	"bytes"
	"fmt"
	"strconv"
)

// TextBody returns a TextMessage body holding s.
func TextBody(s string) Body { return Body{Kind: BodyText, Data: []byte(s)} }

// XMLBody returns a WebLogic XMLMessage body holding the XML document s.
func XMLBody(s string) Body { return Body{Kind: BodyXML, Data: []byte(s)} }

// BytesBody returns a BytesMessage body holding b. The body keeps b: the
// caller must not modify it afterwards.
func BytesBody(b []byte) Body { return Body{Kind: BodyBytes, Data: b} }

// StreamBody returns a StreamMessage body holding values in order. Any value
// type is allowed, Null included (writeString(null)). The body keeps the
// slice.
func StreamBody(values ...Value) Body { return Body{Kind: BodyStream, Stream: values} }

// MapBody returns a MapMessage body holding fields in the order given. As in
// JMS, names must be non-empty, and any value type is allowed, Null included;
// a duplicate name is an error. The body keeps the slice.
func MapBody(fields ...Field) (Body, error) {
	for i := range fields {
		if err := checkMapField(fields[i]); err != nil {
			return Body{}, err
		}
	}
	if len(fields) <= 32 {
		for i := 1; i < len(fields); i++ {
			for j := 0; j < i; j++ {
				if fields[i].Name == fields[j].Name {
					return Body{}, fmt.Errorf("message: map body: duplicate name %q", fields[i].Name)
				}
			}
		}
	} else {
		seen := make(map[string]struct{}, len(fields))
		for i := range fields {
			if _, dup := seen[fields[i].Name]; dup {
				return Body{}, fmt.Errorf("message: map body: duplicate name %q", fields[i].Name)
			}
			seen[fields[i].Name] = struct{}{}
		}
	}
	return Body{Kind: BodyMap, Map: fields}, nil
}

func checkMapField(f Field) error {
	if f.Name == "" {
		return fmt.Errorf("message: map body: an entry name must not be empty")
	}
	if !f.Value.Type.valid() {
		return fmt.Errorf("message: map body: entry %q has unknown value type %d", f.Name, uint8(f.Value.Type))
	}
	return nil
}

// BodyKindError is a body read the body's kind does not allow, such as Text
// on a bytes body or a map getter on a text body.
type BodyKindError struct {
	Kind BodyKind // the body's kind
	Want string   // what the read needs: "text or xml", "map"
}

// Error names the body's kind and the kind the read needs.
func (e *BodyKindError) Error() string {
	return "message: the body is " + e.Kind.String() + ", not " + e.Want
}

// Text returns the text of a text or XML body (TextMessage.getText); any other
// kind is a *BodyKindError.
func (b Body) Text() (string, error) {
	if b.Kind != BodyText && b.Kind != BodyXML {
		return "", &BodyKindError{Kind: b.Kind, Want: "text or xml"}
	}
	return string(b.Data), nil
}

// MapValue returns the map entry called name; ok is false when there is none
// or b is not a map body (MapMessage.itemExists, getObject).
func (b Body) MapValue(name string) (v Value, ok bool) {
	if b.Kind != BodyMap {
		return Value{}, false
	}
	for i := range b.Map {
		if b.Map[i].Name == name {
			return b.Map[i].Value, true
		}
	}
	return Value{}, false
}

// MapNames returns the entry names of a map body in order
// (MapMessage.getMapNames); nil for other kinds. The slice is new.
func (b Body) MapNames() []string {
	if b.Kind != BodyMap || len(b.Map) == 0 {
		return nil
	}
	names := make([]string, len(b.Map))
	for i := range b.Map {
		names[i] = b.Map[i].Name
	}
	return names
}

// MapSet sets the map entry called name to v, in place if it exists, else
// last (MapMessage.setXxx). b must be a map body (start from MapBody()); the
// name must be non-empty. Like Properties.Set, it modifies b's backing array.
func (b *Body) MapSet(name string, v Value) error {
	if b.Kind != BodyMap {
		return &BodyKindError{Kind: b.Kind, Want: "map"}
	}
	if err := checkMapField(Field{Name: name, Value: v}); err != nil {
		return err
	}
	for i := range b.Map {
		if b.Map[i].Name == name {
			b.Map[i].Value = v
			return nil
		}
	}
	b.Map = append(b.Map, Field{Name: name, Value: v})
	return nil
}

// mapGet returns the entry for a typed map getter: Null when missing, an
// error when b is not a map.
func (b Body) mapGet(name string) (Value, error) {
	if b.Kind != BodyMap {
		return Value{}, &BodyKindError{Kind: b.Kind, Want: "map"}
	}
	v, _ := b.MapValue(name)
	return v, nil
}

func mapErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return describe(err, "map entry "+strconv.Quote(name))
}

// Typed map getters (MapMessage.getXxx). Each reads the entry through the
// conversion chart, char and bytes included (see Value.AsBool and the chart
// above it). A missing entry reads as Null: MapBool gives false, MapString ""
// and MapBytes nil, and the others a *NullError. A body that is not a map
// gives a *BodyKindError.

// MapBool returns the entry as MapMessage.getBoolean does.
func (b Body) MapBool(name string) (bool, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return false, err
	}
	x, err := v.AsBool()
	return x, mapErr(name, err)
}

// MapByte returns the entry as MapMessage.getByte does.
func (b Body) MapByte(name string) (int8, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsByte()
	return x, mapErr(name, err)
}

// MapShort returns the entry as MapMessage.getShort does.
func (b Body) MapShort(name string) (int16, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsShort()
	return x, mapErr(name, err)
}

// MapChar returns the entry as MapMessage.getChar does.
func (b Body) MapChar(name string) (uint16, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsChar()
	return x, mapErr(name, err)
}

// MapInt returns the entry as MapMessage.getInt does.
func (b Body) MapInt(name string) (int32, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsInt()
	return x, mapErr(name, err)
}

// MapLong returns the entry as MapMessage.getLong does.
func (b Body) MapLong(name string) (int64, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsLong()
	return x, mapErr(name, err)
}

// MapFloat returns the entry as MapMessage.getFloat does.
func (b Body) MapFloat(name string) (float32, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsFloat()
	return x, mapErr(name, err)
}

// MapDouble returns the entry as MapMessage.getDouble does.
func (b Body) MapDouble(name string) (float64, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return 0, err
	}
	x, err := v.AsDouble()
	return x, mapErr(name, err)
}

// MapString returns the entry as MapMessage.getString does.
func (b Body) MapString(name string) (string, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return "", err
	}
	x, err := v.AsString()
	return x, mapErr(name, err)
}

// MapBytes returns the entry as MapMessage.getBytes does; the slice is the
// body's own: do not modify it.
func (b Body) MapBytes(name string) ([]byte, error) {
	v, err := b.mapGet(name)
	if err != nil {
		return nil, err
	}
	x, err := v.AsBytes()
	return x, mapErr(name, err)
}

// Size returns the body's size in bytes as the binary encoding stores it: the
// data length, or the encoded entries of a map or stream, plus a few bytes of
// framing. Byte quotas count it.
func (b Body) Size() int { return bodyLen(&b) }

// Clone returns a deep copy of b. Only the part b's kind uses is copied.
func (b Body) Clone() Body {
	c := Body{Kind: b.Kind}
	switch b.Kind {
	case BodyText, BodyXML, BodyBytes:
		if b.Data != nil {
			c.Data = bytes.Clone(b.Data)
		}
	case BodyMap:
		c.Map = Properties(b.Map).Clone()
	case BodyStream:
		if b.Stream != nil {
			c.Stream = make([]Value, len(b.Stream))
			for i, v := range b.Stream {
				c.Stream[i] = v.clone()
			}
		}
	}
	return c
}

// Equal reports whether b and o are the same kind with equal content. Only
// the part the kind uses is compared; nil equals empty.
func (b Body) Equal(o Body) bool {
	if b.Kind != o.Kind {
		return false
	}
	switch b.Kind {
	case BodyText, BodyXML, BodyBytes:
		return bytes.Equal(b.Data, o.Data)
	case BodyMap:
		return Properties(b.Map).Equal(o.Map)
	case BodyStream:
		if len(b.Stream) != len(o.Stream) {
			return false
		}
		for i := range b.Stream {
			if !b.Stream[i].Equal(o.Stream[i]) {
				return false
			}
		}
	}
	return true
}
