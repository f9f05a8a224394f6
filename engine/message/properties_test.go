package message

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidatePropertyName(t *testing.T) {
	tests := []struct {
		name   string
		reason string // substring of the error; "" means valid
	}{
		{"orderId", ""},
		{"_x", ""},
		{"$x", ""},
		{"a1_$", ""},
		{"größe", ""},
		{"名前", ""},
		{"x١", ""}, // a non-ASCII digit after the first character
		{"jmsxFoo", ""},
		{"JMSFoo", ""}, // not a header name
		{"Nullable", ""},
		{"INX", ""},
		{"", "empty"},
		{"1abc", "must start with"},
		{"a-b", "not a letter"},
		{"a b", "not a letter"},
		{"a.b", "not a letter"},
		{"€uro", ""},    // currency signs are Java identifier starts
		{"a\u0301", ""}, // a combining mark after the start
		{"‿x", ""},      // connector punctuation
		{"ın", ""},      // dotless i upper-cases to I, but keywords are ASCII
		{"\u0301a", "must start with"},
		{"-a", "must start with"},
		{"a\u00a0", "not a letter"}, // no-break space
		{"a\xffb", "UTF-8"},
		{"NULL", "keyword"},
		{"null", "keyword"},
		{"True", "keyword"},
		{"false", "keyword"},
		{"Not", "keyword"},
		{"and", "keyword"},
		{"OR", "keyword"},
		{"between", "keyword"},
		{"LIKE", "keyword"},
		{"in", "keyword"},
		{"Is", "keyword"},
		{"escape", "keyword"},
		{"JMSXGroupID", "JMSX prefix"},
		{"JMSXAnything", "JMSX prefix"},
		{"JMS_BEA_Foo", "JMS_ prefix"},
		{"JMSPriority", "header"},
		{"JMSCorrelationID", "header"},
		{"JMSDeliveryTime", "header"},
		{"JMSRedeliveryLimit", "header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePropertyName(tt.name)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var pe *PropertyNameError
			if !errors.As(err, &pe) || pe.Name != tt.name || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("error = %v; want a *PropertyNameError mentioning %q", err, tt.reason)
			}
		})
	}
}

func TestPropertiesSetGet(t *testing.T) {
	var p Properties
	if err := p.Set("a", IntValue(1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("b", StringValue("x")); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("a", LongValue(2)); err != nil { // replaces in place
		t.Fatal(err)
	}
	if got := p.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names = %v", got)
	}
	if v, ok := p.Get("a"); !ok || !v.Equal(LongValue(2)) {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if v, ok := p.Get("A"); ok || v.Type != Null {
		t.Errorf("Get(A) = %v, %v; names are case-sensitive", v, ok)
	}
	if !p.Exists("b") || p.Exists("c") {
		t.Error("Exists is wrong")
	}

	for _, bad := range []Value{BytesValue([]byte{1}), CharValue('c'), NullValue(), {Type: 42}} {
		var te *PropertyTypeError
		if err := p.Set("c", bad); !errors.As(err, &te) || te.Type != bad.Type {
			t.Errorf("Set(%v) = %v; want *PropertyTypeError", bad.Type, err)
		}
	}
	var ne *PropertyNameError
	if err := p.Set("JMSXGroupID", StringValue("g")); !errors.As(err, &ne) {
		t.Errorf("Set(JMSXGroupID) = %v", err)
	}
	p.SetUnchecked("JMSXGroupID", StringValue("g"))
	p.SetUnchecked("JMS_Sluice_Reason", StringValue("expired"))
	if got := p.Names(); !slices.Equal(got, []string{"a", "b", "JMSXGroupID", "JMS_Sluice_Reason"}) {
		t.Errorf("Names = %v", got)
	}

	if !p.Delete("b") || p.Delete("b") {
		t.Error("Delete is wrong")
	}
	if got := p.Names(); !slices.Equal(got, []string{"a", "JMSXGroupID", "JMS_Sluice_Reason"}) {
		t.Errorf("Names after Delete = %v", got)
	}
	p.Clear()
	if len(p) != 0 || p.Names() != nil {
		t.Errorf("after Clear: %v", p)
	}
}

func TestPropertiesCloneIndependent(t *testing.T) {
	p := Properties{{Name: "a", Value: IntValue(1)}, {Name: "raw", Value: BytesValue([]byte{1, 2})}}
	c := p.Clone()
	if !c.Equal(p) {
		t.Fatal("clone differs")
	}
	c[0].Value = IntValue(9)
	c[1].Value.B[0] = 9
	if v, _ := p.Get("a"); !v.Equal(IntValue(1)) {
		t.Error("clone shares fields")
	}
	if p[1].Value.B[0] != 1 {
		t.Error("clone shares bytes")
	}
	if Properties(nil).Clone() != nil {
		t.Error("nil clone is not nil")
	}
	// Delete on a copy must not disturb the original's view.
	q := p.Clone()
	shared := q
	q.Delete("a")
	if len(shared) != 2 || shared[0].Name != "a" {
		t.Errorf("Delete changed a slice sharing the array: %v", shared)
	}
}

func TestPropertiesTypedGetters(t *testing.T) {
	var p Properties
	must(t, p.Set("b", BoolValue(true)))
	must(t, p.Set("i", IntValue(-3)))
	must(t, p.Set("s", StringValue("42")))
	must(t, p.Set("f", FloatValue(0.5)))

	if v, err := p.GetBool("b"); !v || err != nil {
		t.Errorf("GetBool(b) = %v, %v", v, err)
	}
	if v, err := p.GetLong("i"); v != -3 || err != nil {
		t.Errorf("GetLong(i) = %v, %v", v, err)
	}
	if v, err := p.GetShort("s"); v != 42 || err != nil {
		t.Errorf("GetShort(s) = %v, %v", v, err)
	}
	if v, err := p.GetDouble("f"); v != 0.5 || err != nil {
		t.Errorf("GetDouble(f) = %v, %v", v, err)
	}
	if v, err := p.GetString("f"); v != "0.5" || err != nil {
		t.Errorf("GetString(f) = %v, %v", v, err)
	}
	if v, err := p.GetFloat("s"); v != 42 || err != nil {
		t.Errorf("GetFloat(s) = %v, %v", v, err)
	}
	if v, err := p.GetByte("s"); v != 42 || err != nil {
		t.Errorf("GetByte(s) = %v, %v", v, err)
	}
	if v, err := p.GetInt("i"); v != -3 || err != nil {
		t.Errorf("GetInt(i) = %v, %v", v, err)
	}

	// Missing properties: false, "", and NumberFormatException for numbers.
	if v, err := p.GetBool("missing"); v || err != nil {
		t.Errorf("GetBool(missing) = %v, %v", v, err)
	}
	if v, err := p.GetString("missing"); v != "" || err != nil {
		t.Errorf("GetString(missing) = %v, %v", v, err)
	}
	var nullErr *NullError
	if _, err := p.GetInt("missing"); !errors.As(err, &nullErr) || !strings.Contains(err.Error(), `property "missing"`) {
		t.Errorf("GetInt(missing) error = %v", err)
	}

	var ce *ConversionError
	_, err := p.GetInt("b")
	if !errors.As(err, &ce) || ce.From != Bool || ce.To != Int {
		t.Fatalf("GetInt(b) = %v", err)
	}
	if got, want := err.Error(), `message: cannot read boolean property "b" as int`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	var fe *FormatError
	if _, err := p.GetInt("b2"); err == nil {
		t.Error("GetInt of a missing property succeeded")
	}
	must(t, p.Set("t", StringValue("ten")))
	if _, err := p.GetLong("t"); !errors.As(err, &fe) || !strings.Contains(err.Error(), `property "t"`) {
		t.Errorf("GetLong(t) = %v", err)
	}
}

func TestJMSXPropertyNames(t *testing.T) {
	names := JMSXPropertyNames()
	want := []string{"JMSXDeliveryCount", "JMSXGroupID", "JMSXGroupSeq", "JMSXUserID"}
	if !slices.Equal(names, want) {
		t.Errorf("JMSXPropertyNames = %v", names)
	}
	names[0] = "changed"
	if JMSXPropertyNames()[0] != "JMSXDeliveryCount" {
		t.Error("JMSXPropertyNames shares its slice")
	}
	for _, n := range want {
		if ValidatePropertyName(n) == nil {
			t.Errorf("applications may set %s", n)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
