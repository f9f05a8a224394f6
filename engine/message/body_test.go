package message

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBodyText(t *testing.T) {
	tests := []struct {
		body Body
		want string
		ok   bool
	}{
		{TextBody("hello"), "hello", true},
		{XMLBody("<a/>"), "<a/>", true},
		{TextBody(""), "", true},
		{BytesBody([]byte("x")), "", false},
		{StreamBody(IntValue(1)), "", false},
		{Body{}, "", false},
	}
	for _, tt := range tests {
		got, err := tt.body.Text()
		if tt.ok {
			if err != nil || got != tt.want {
				t.Errorf("%s Text() = %q, %v", tt.body.Kind, got, err)
			}
			continue
		}
		var be *BodyKindError
		if !errors.As(err, &be) || be.Kind != tt.body.Kind {
			t.Errorf("%s Text() = %q, %v; want *BodyKindError", tt.body.Kind, got, err)
		}
	}
	if k := XMLBody("x").Kind; k != BodyXML {
		t.Errorf("XMLBody kind = %v", k)
	}
}

func TestMapBody(t *testing.T) {
	b, err := MapBody(
		Field{Name: "s", Value: StringValue("7")},
		Field{Name: "c", Value: CharValue('z')},
		Field{Name: "raw", Value: BytesValue([]byte{9})},
		Field{Name: "n", Value: NullValue()},
		Field{Name: "i", Value: IntValue(5)},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.MapNames(); !slices.Equal(got, []string{"s", "c", "raw", "n", "i"}) {
		t.Errorf("MapNames = %v", got)
	}
	if v, err := b.MapInt("s"); v != 7 || err != nil {
		t.Errorf("MapInt(s) = %v, %v", v, err)
	}
	if v, err := b.MapChar("c"); v != 'z' || err != nil {
		t.Errorf("MapChar(c) = %v, %v", v, err)
	}
	if v, err := b.MapString("c"); v != "z" || err != nil {
		t.Errorf("MapString(c) = %v, %v", v, err)
	}
	if v, err := b.MapBytes("raw"); len(v) != 1 || v[0] != 9 || err != nil {
		t.Errorf("MapBytes(raw) = %v, %v", v, err)
	}
	if v, err := b.MapBytes("n"); v != nil || err != nil {
		t.Errorf("MapBytes(n) = %v, %v", v, err)
	}
	if v, err := b.MapBool("missing"); v || err != nil {
		t.Errorf("MapBool(missing) = %v, %v", v, err)
	}
	if v, err := b.MapLong("i"); v != 5 || err != nil {
		t.Errorf("MapLong(i) = %v, %v", v, err)
	}
	if v, err := b.MapShort("s"); v != 7 || err != nil {
		t.Errorf("MapShort(s) = %v, %v", v, err)
	}
	if v, err := b.MapByte("s"); v != 7 || err != nil {
		t.Errorf("MapByte(s) = %v, %v", v, err)
	}
	if v, err := b.MapFloat("s"); v != 7 || err != nil {
		t.Errorf("MapFloat(s) = %v, %v", v, err)
	}
	if v, err := b.MapDouble("s"); v != 7 || err != nil {
		t.Errorf("MapDouble(s) = %v, %v", v, err)
	}
	var ne *NullError
	if _, err := b.MapChar("n"); !errors.As(err, &ne) {
		t.Errorf("MapChar(null) = %v; want *NullError", err)
	}
	var ce *ConversionError
	_, err = b.MapString("raw")
	if !errors.As(err, &ce) || ce.From != Bytes || !strings.Contains(err.Error(), `map entry "raw"`) {
		t.Errorf("MapString(raw) = %v", err)
	}
	if _, err := b.MapChar("s"); !errors.As(err, &ce) {
		t.Errorf("MapChar(string) = %v; a string never reads as char", err)
	}

	must(t, b.MapSet("i", LongValue(6)))
	must(t, b.MapSet("new", DoubleValue(1)))
	if v, _ := b.MapValue("i"); !v.Equal(LongValue(6)) {
		t.Errorf("after MapSet: %v", v)
	}
	if got := b.MapNames(); len(got) != 6 || got[5] != "new" {
		t.Errorf("MapNames = %v", got)
	}
	if err := b.MapSet("", IntValue(1)); err == nil {
		t.Error("MapSet with an empty name succeeded")
	}
	if err := b.MapSet("x", Value{Type: 77}); err == nil {
		t.Error("MapSet with an unknown type succeeded")
	}
}

func TestMapBodyErrors(t *testing.T) {
	if _, err := MapBody(Field{Name: "a"}, Field{Name: "a"}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate: %v", err)
	}
	many := make([]Field, 100)
	for i := range many {
		many[i] = Field{Name: strings.Repeat("k", i+1)}
	}
	if _, err := MapBody(many...); err != nil {
		t.Errorf("100 distinct names: %v", err)
	}
	many[99].Name = "k"
	if _, err := MapBody(many...); err == nil {
		t.Error("duplicate among 100 names accepted")
	}
	if _, err := MapBody(Field{Name: ""}); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := MapBody(Field{Name: "x", Value: Value{Type: 200}}); err == nil {
		t.Error("unknown type accepted")
	}
	var be *BodyKindError
	text := TextBody("x")
	if _, err := text.MapInt("a"); !errors.As(err, &be) {
		t.Errorf("MapInt on text = %v", err)
	}
	if err := text.MapSet("a", IntValue(1)); !errors.As(err, &be) {
		t.Errorf("MapSet on text = %v", err)
	}
	if v, ok := text.MapValue("a"); ok || v.Type != Null {
		t.Error("MapValue on text found something")
	}
	if text.MapNames() != nil {
		t.Error("MapNames on text is not nil")
	}
}

func TestBodyCloneEqualSize(t *testing.T) {
	m, _ := MapBody(Field{Name: "b", Value: BytesValue([]byte{1})})
	bodies := []Body{
		{},
		TextBody("text"),
		XMLBody("<x/>"),
		BytesBody([]byte{0, 1, 2}),
		m,
		StreamBody(BytesValue([]byte{1}), StringValue("s"), NullValue()),
	}
	for _, b := range bodies {
		c := b.Clone()
		if !c.Equal(b) {
			t.Errorf("%s: clone differs", b.Kind)
		}
		switch b.Kind {
		case BodyText, BodyXML, BodyBytes:
			c.Data[0] ^= 0xff
		case BodyMap:
			c.Map[0].Value.B[0] = 7
		case BodyStream:
			c.Stream[0].B[0] = 7
		}
		if b.Kind != BodyNone && c.Equal(b) {
			t.Errorf("%s: clone shares memory", b.Kind)
		}
		msg := Message{Body: b}
		enc, err := msg.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		empty := Message{}
		if got, want := b.Size(), len(enc)-empty.Size()+1; got != want {
			t.Errorf("%s: Size = %d, want %d (its encoded length)", b.Kind, got, want)
		}
	}
	if TextBody("a").Equal(XMLBody("a")) {
		t.Error("text equals xml")
	}
	if !StreamBody().Equal(Body{Kind: BodyStream}) {
		t.Error("empty streams differ")
	}
	if StreamBody(IntValue(1)).Equal(StreamBody(IntValue(2))) {
		t.Error("different streams equal")
	}
}
