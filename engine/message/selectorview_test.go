package message

import (
	"testing"

	"github.com/sluicemq/sluice/grammar/selector"
)

func TestSelectorViewHeaders(t *testing.T) {
	m := sample()
	d := &Delivery{Msg: m, DeliveryCount: 3, Redelivered: true}
	var sm selector.Message = SelectorView{D: d}
	str := func(s string) selector.Value { return selector.Value{Kind: selector.String, Str: s} }
	long := func(n int64) selector.Value { return selector.Value{Kind: selector.Long, Long: n} }
	tests := []struct {
		h    selector.Header
		want selector.Value
	}{
		{selector.JMSDeliveryMode, str("PERSISTENT")},
		{selector.JMSPriority, long(7)},
		{selector.JMSMessageID, str(m.ID)},
		{selector.JMSTimestamp, long(m.Timestamp)},
		{selector.JMSCorrelationID, str("corr-0042")},
		{selector.JMSType, str("OrderCreated")},
		{selector.JMSRedelivered, selector.Value{Kind: selector.Bool, Bool: true}},
		{selector.JMSDeliveryTime, long(m.DeliveryTime)},
		{selector.Header(0), selector.Value{}},
		{selector.Header(200), selector.Value{}},
	}
	for _, tt := range tests {
		if got := sm.Header(tt.h); got != tt.want {
			t.Errorf("Header(%d) = %+v, want %+v", tt.h, got, tt.want)
		}
	}

	m2 := &Message{DeliveryMode: NonPersistent, Timestamp: 55}
	sm = SelectorView{D: &Delivery{Msg: m2}}
	for h, want := range map[selector.Header]selector.Value{
		selector.JMSDeliveryMode:  str("NON_PERSISTENT"),
		selector.JMSCorrelationID: {},
		selector.JMSType:          {},
		selector.JMSRedelivered:   {Kind: selector.Bool},
		selector.JMSDeliveryTime:  long(55), // no delay: the timestamp
	} {
		if got := sm.Header(h); got != want {
			t.Errorf("unset Header(%d) = %+v, want %+v", h, got, want)
		}
	}
	for _, v := range []SelectorView{{}, {D: &Delivery{}}} {
		if got := v.Header(selector.JMSPriority); got.Kind != selector.Null {
			t.Errorf("view without a message: %+v", got)
		}
		if got := v.Property("x"); got.Kind != selector.Null {
			t.Errorf("view without a message: %+v", got)
		}
		if _, ok := v.Body(); ok {
			t.Error("view without a message has a body")
		}
	}
}

func TestSelectorViewProperties(t *testing.T) {
	m := &Message{}
	m.Props.SetUnchecked("b", BoolValue(true))
	m.Props.SetUnchecked("y", ByteValue(-2))
	m.Props.SetUnchecked("s", ShortValue(300))
	m.Props.SetUnchecked("i", IntValue(-70000))
	m.Props.SetUnchecked("l", LongValue(1<<40))
	m.Props.SetUnchecked("f", FloatValue(1.5))
	m.Props.SetUnchecked("d", DoubleValue(-2.25))
	m.Props.SetUnchecked("str", StringValue("x"))
	m.Props.SetUnchecked("c", CharValue('c'))
	m.Props.SetUnchecked("raw", BytesValue([]byte{1}))
	m.Props.SetUnchecked("JMSXGroupID", StringValue("g"))
	m.Props.SetUnchecked("JMSXDeliveryCount", IntValue(99)) // the delivery wins
	v := SelectorView{D: &Delivery{Msg: m, DeliveryCount: 4}}
	long := func(n int64) selector.Value { return selector.Value{Kind: selector.Long, Long: n} }
	dbl := func(f float64) selector.Value { return selector.Value{Kind: selector.Double, Double: f} }
	tests := map[string]selector.Value{
		"b":                 {Kind: selector.Bool, Bool: true},
		"y":                 long(-2),
		"s":                 long(300),
		"i":                 long(-70000),
		"l":                 long(1 << 40),
		"f":                 dbl(1.5),
		"d":                 dbl(-2.25),
		"str":               {Kind: selector.String, Str: "x"},
		"c":                 {},
		"raw":               {},
		"missing":           {},
		"B":                 {},
		"JMSXGroupID":       {Kind: selector.String, Str: "g"},
		"JMSXDeliveryCount": long(4),
	}
	for name, want := range tests {
		if got := v.Property(name); got != want {
			t.Errorf("Property(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestSelectorViewBody(t *testing.T) {
	m := &Message{}
	for _, tt := range []struct {
		body Body
		ok   bool
	}{
		{TextBody("<a/>"), true},
		{XMLBody("<a/>"), true},
		{BytesBody([]byte("<a/>")), false},
		{Body{}, false},
	} {
		m.Body = tt.body
		text, ok := SelectorView{D: &Delivery{Msg: m}}.Body()
		if ok != tt.ok || (ok && string(text) != "<a/>") {
			t.Errorf("%s: Body() = %q, %v", tt.body.Kind, text, ok)
		}
	}
}

var sinkValue selector.Value

func TestSelectorViewDoesNotAllocate(t *testing.T) {
	d := &Delivery{Msg: sample(), DeliveryCount: 2}
	allocs := testing.AllocsPerRun(1000, func() {
		var sm selector.Message = SelectorView{D: d}
		sinkValue = sm.Header(selector.JMSDeliveryMode)
		sinkValue = sm.Header(selector.JMSCorrelationID)
		sinkValue = sm.Header(selector.JMSDeliveryTime)
		sinkValue = sm.Property("total")
		sinkValue = sm.Property("region")
		sinkValue = sm.Property("JMSXDeliveryCount")
		sinkValue = sm.Property("missing")
		text, _ := sm.Body()
		sinkValue.Str = string(text[:0])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per evaluation", allocs)
	}
}
