package message

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func jsonRoundTrip(t *testing.T, m *Message) *Message {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var got Message
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("Unmarshal: %v\n%s", err, data)
	}
	if !got.Equal(m) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v\njson %s", got, *m, data)
	}
	return &got
}

func TestJSONRoundTripBodies(t *testing.T) {
	for _, b := range bodies(t) {
		t.Run(b.Kind.String(), func(t *testing.T) {
			m := sample()
			m.Body = b
			jsonRoundTrip(t, m)
		})
	}
	t.Run("invalid UTF-8 text", func(t *testing.T) {
		m := sample()
		m.Body = TextBody("a\xffb")
		jsonRoundTrip(t, m)
		data, _ := json.Marshal(m)
		if !strings.Contains(string(data), `"data":"Yf9i"`) {
			t.Errorf("non-UTF-8 text not in base64: %s", data)
		}
	})
}

func TestJSONRoundTripValues(t *testing.T) {
	for _, v := range everyValue() {
		t.Run(v.Type.String()+"/"+v.String(), func(t *testing.T) {
			m := sample()
			m.Props = nil
			m.Props.SetUnchecked("p", v)
			jsonRoundTrip(t, m)
		})
	}
}

func TestJSONHeaders(t *testing.T) {
	m := &Message{
		ID:              "ID:1",
		Destination:     Destination{Kind: Topic, Name: "prices/eu"},
		DeliveryMode:    NonPersistent,
		Priority:        0,
		RedeliveryLimit: 0,
	}
	jsonRoundTrip(t, m)
	m.Destination = Destination{}
	jsonRoundTrip(t, m)
}

func TestJSONGolden(t *testing.T) {
	m := &Message{
		ID:              "ID:7",
		Destination:     Destination{Kind: Queue, Name: "a"},
		ReplyTo:         Destination{Kind: TempQueue, Name: "r"},
		CorrelationID:   "c",
		Type:            "t",
		DeliveryMode:    Persistent,
		Priority:        4,
		Timestamp:       1700000000000,
		RedeliveryLimit: NoRedeliveryLimit,
		Props: Properties{
			{Name: "x", Value: IntValue(5)},
			{Name: "big", Value: LongValue(1<<53 + 1)},
			{Name: "f", Value: FloatValue(1.1)},
			{Name: "n", Value: NullValue()},
		},
		Body: TextBody("hi"),
	}
	want := `{"id":"ID:7","destination":"/queue/a","replyTo":"/temp-queue/r","correlationId":"c","type":"t",` +
		`"deliveryMode":"PERSISTENT","priority":4,"timestamp":1700000000000,"expiration":0,"deliveryTime":0,` +
		`"redeliveryLimit":-1,"properties":[{"name":"x","type":"int","value":5},` +
		`{"name":"big","type":"long","value":"9007199254740993"},{"name":"f","type":"float","value":1.1},` +
		`{"name":"n","type":"null"}],"body":{"kind":"text","text":"hi"}}`
	data, err := json.Marshal(*m) // a Message value must marshal the same way
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	if data2, _ := json.Marshal(m); string(data2) != string(data) {
		t.Errorf("*Message marshals differently: %s", data2)
	}
}

func TestJSONInputForms(t *testing.T) {
	var m Message
	must(t, json.Unmarshal([]byte(`{"properties":[
		{"name":"a","type":"long","value":9007199254740993},
		{"name":"b","type":"int","value":"12"},
		{"name":"c","type":"double","value":"NaN"},
		{"name":"d","type":"char","value":65},
		{"name":"e","type":"char","value":"é"},
		{"name":"f","type":"float","value":"-Infinity"},
		{"name":"g","type":"String","value":"s"},
		{"name":"h","type":"null","value":null}
	]}`), &m))
	if m.DeliveryMode != Persistent || m.Priority != 4 || m.RedeliveryLimit != NoRedeliveryLimit {
		t.Errorf("defaults: mode %v priority %d limit %d", m.DeliveryMode, m.Priority, m.RedeliveryLimit)
	}
	if m.Body.Kind != BodyNone {
		t.Errorf("body kind %v", m.Body.Kind)
	}
	checks := map[string]Value{
		"a": LongValue(1<<53 + 1), "b": IntValue(12), "d": CharValue('A'), "e": CharValue('é'),
		"g": StringValue("s"), "h": NullValue(),
	}
	for name, want := range checks {
		if got, _ := m.Props.Get(name); !got.Equal(want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	if c, _ := m.Props.GetDouble("c"); c == c {
		t.Errorf("c = %v, want NaN", c)
	}
}

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"not an object", `[]`, "cannot unmarshal"},
		{"unknown field", `{"idd":"x"}`, "unknown field"},
		{"trailing", `{} {}`, "after the JSON value"},
		{"destination prefix", `{"destination":"queue/a"}`, "no known prefix"},
		{"destination empty name", `{"destination":"/queue/"}`, "empty name"},
		{"replyTo", `{"replyTo":"x"}`, "replyTo"},
		{"delivery mode", `{"deliveryMode":"persistent"}`, "deliveryMode"},
		{"priority", `{"priority":10}`, "priority"},
		{"priority negative", `{"priority":-1}`, "priority"},
		{"body kind", `{"body":{"kind":"object"}}`, "body kind"},
		{"body none with text", `{"body":{"kind":"none","text":"x"}}`, "has content"},
		{"text and data", `{"body":{"kind":"text","text":"x","data":"eA=="}}`, "both"},
		{"bytes as text", `{"body":{"kind":"bytes","text":"x"}}`, "base64"},
		{"bad base64 body", `{"body":{"kind":"bytes","data":"!!"}}`, "illegal base64"},
		{"map duplicate", `{"body":{"kind":"map","map":[{"name":"a","type":"int","value":1},{"name":"a","type":"int","value":2}]}}`, "duplicate"},
		{"map empty name", `{"body":{"kind":"map","map":[{"name":"","type":"int","value":1}]}}`, "empty"},
		{"field without name", `{"properties":[{"type":"int","value":1}]}`, "no name"},
		{"stream value with name", `{"body":{"kind":"stream","stream":[{"name":"a","type":"int","value":1}]}}`, "has a name"},
		{"unknown type", `{"properties":[{"name":"a","type":"object","value":1}]}`, "unknown value type"},
		{"missing value", `{"properties":[{"name":"a","type":"int"}]}`, "needs a value"},
		{"null with value", `{"properties":[{"name":"a","type":"null","value":1}]}`, "null value has a value"},
		{"bool as string", `{"properties":[{"name":"a","type":"boolean","value":"true"}]}`, "true or false"},
		{"byte range", `{"properties":[{"name":"a","type":"byte","value":128}]}`, "8-bit"},
		{"int fraction", `{"properties":[{"name":"a","type":"int","value":1.5}]}`, "32-bit"},
		{"long exponent", `{"properties":[{"name":"a","type":"long","value":1e3}]}`, "64-bit"},
		{"float range", `{"properties":[{"name":"a","type":"float","value":1e39}]}`, "in range"},
		{"double go spelling", `{"properties":[{"name":"a","type":"double","value":"inf"}]}`, "a number"},
		{"string as number", `{"properties":[{"name":"a","type":"string","value":1}]}`, "a string"},
		{"bytes not string", `{"properties":[{"name":"a","type":"bytes","value":1}]}`, "base64"},
		{"bytes bad", `{"properties":[{"name":"a","type":"bytes","value":"***"}]}`, "base64"},
		{"char two", `{"properties":[{"name":"a","type":"char","value":"ab"}]}`, "one character"},
		{"char astral", `{"properties":[{"name":"a","type":"char","value":"😀"}]}`, "one character"},
		{"char range", `{"properties":[{"name":"a","type":"char","value":65536}]}`, "UTF-16"},
		{"value field unknown", `{"properties":[{"name":"a","type":"int","value":1,"x":2}]}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := *sample()
			err := m.UnmarshalJSON([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, tt.want)
			}
			if !m.Equal(sample()) {
				t.Error("a failed decode changed the message")
			}
		})
	}
}

func TestJSONMarshalRefusesInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Message)
	}{
		{"zero delivery mode", func(m *Message) { m.DeliveryMode = 0 }},
		{"priority", func(m *Message) { m.Priority = 12 }},
		{"destination without name", func(m *Message) { m.Destination.Name = "" }},
		{"reply-to without kind", func(m *Message) { m.ReplyTo.Kind = NoDest }},
		{"unknown type", func(m *Message) { m.Props[0].Value.Type = 99 }},
	}
	for _, tt := range tests {
		m := sample()
		tt.edit(m)
		if _, err := json.Marshal(m); err == nil {
			t.Errorf("%s: marshalled", tt.name)
		}
	}
	if _, err := json.Marshal(Value{Type: 99}); err == nil {
		t.Error("unknown value type marshalled")
	}
}

func TestValueJSON(t *testing.T) {
	for _, v := range everyValue() {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%v: %v", v.Type, err)
		}
		var got Value
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !got.Equal(v) {
			t.Errorf("%s decoded as %#v", data, got)
		}
	}
}

func TestJSONErrorTypes(t *testing.T) {
	var m Message
	err := json.Unmarshal([]byte(`{"properties":[{"name":"a","type":"int","value":"x"}]}`), &m)
	if err == nil || !strings.Contains(err.Error(), `field "a"`) {
		t.Errorf("error = %v", err)
	}
	var se *json.SyntaxError
	if err := json.Unmarshal([]byte(`{`), &m); !errors.As(err, &se) {
		t.Errorf("syntax error = %v", err)
	}
}

func FuzzMessageJSON(f *testing.F) {
	for _, b := range bodies(f) {
		m := sample()
		m.Body = b
		if len(b.Data) > 1000 {
			continue
		}
		data, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"properties":[{"name":"a","type":"char","value":55296}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := m.UnmarshalJSON(data); err != nil {
			return
		}
		out, err := json.Marshal(&m)
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v", err)
		}
		var again Message
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-encoding does not decode: %v\n%s", err, out)
		}
		if !again.Equal(&m) {
			t.Fatalf("re-encoding decodes differently:\n%s", out)
		}
	})
}
