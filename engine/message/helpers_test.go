package message

import (
	"strings"
	"testing"
)

// sample returns a message with every header set, six properties and a 1 KiB
// text body: the shape the benchmarks use.
func sample() *Message {
	return &Message{
		ID:              "ID:sluice-1-1700000000000-42",
		Destination:     Destination{Kind: Queue, Name: "orders.incoming"},
		ReplyTo:         Destination{Kind: TempQueue, Name: "reply-7"},
		CorrelationID:   "corr-0042",
		Type:            "OrderCreated",
		DeliveryMode:    Persistent,
		Priority:        7,
		Timestamp:       1700000000123,
		Expiration:      1700000060123,
		DeliveryTime:    1700000000123,
		RedeliveryLimit: 5,
		Producer:        12,
		Props: Properties{
			{Name: "customer", Value: StringValue("ACME Corp")},
			{Name: "region", Value: StringValue("eu-west")},
			{Name: "qty", Value: IntValue(12)},
			{Name: "total", Value: DoubleValue(1234.5)},
			{Name: "express", Value: BoolValue(true)},
			{Name: "JMSXGroupID", Value: StringValue("order-42")},
		},
		Body: TextBody(strings.Repeat("x", 1024)),
	}
}

func TestMessageClone(t *testing.T) {
	m := sample()
	m.Body = StreamBody(BytesValue([]byte{1, 2}))
	c := m.Clone()
	if !c.Equal(m) {
		t.Fatal("clone differs")
	}
	c.Props.SetUnchecked("JMS_Sluice_Reason", StringValue("expired"))
	c.Props[0].Value = StringValue("changed")
	c.Body.Stream[0].B[0] = 9
	c.Priority = 1
	if m.Props.Exists("JMS_Sluice_Reason") || m.Props[0].Value.S != "ACME Corp" || m.Body.Stream[0].B[0] != 1 || m.Priority != 7 {
		t.Error("changing the clone changed the original")
	}
}

func TestMessageSize(t *testing.T) {
	for _, m := range []*Message{{}, sample()} {
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if m.Size() != len(enc) {
			t.Errorf("Size = %d, encoded length %d", m.Size(), len(enc))
		}
	}
	small, big := sample(), sample()
	big.Props.SetUnchecked("extra", StringValue(strings.Repeat("y", 100)))
	if big.Size() <= small.Size()+100 {
		t.Errorf("a 100-byte property grew the size from %d to %d", small.Size(), big.Size())
	}
	if s := sample().Size(); s < 1024+100 || s > 1024+300 {
		t.Errorf("sample size %d is not body + headers", s)
	}
}

func TestExpired(t *testing.T) {
	tests := []struct {
		expiration, now int64
		want            bool
	}{
		{0, 1 << 60, false},
		{-5, 100, false},
		{100, 99, false},
		{100, 100, false}, // expired only when now is later than JMSExpiration
		{100, 101, true},
	}
	for _, tt := range tests {
		m := Message{Expiration: tt.expiration}
		if got := m.Expired(tt.now); got != tt.want {
			t.Errorf("Expiration %d, now %d: Expired = %v", tt.expiration, tt.now, got)
		}
	}
}

func TestValidatePriority(t *testing.T) {
	for p := -2; p <= 11; p++ {
		err := ValidatePriority(p)
		if (err == nil) != (p >= 0 && p <= 9) {
			t.Errorf("ValidatePriority(%d) = %v", p, err)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := sample().Validate(); err != nil {
		t.Fatalf("sample: %v", err)
	}
	tests := []struct {
		name string
		edit func(*Message)
		want string
	}{
		{"delivery mode", func(m *Message) { m.DeliveryMode = 0 }, "delivery mode"},
		{"priority", func(m *Message) { m.Priority = 10 }, "priority"},
		{"destination", func(m *Message) { m.Destination.Kind = 9 }, "destination kind"},
		{"reply-to", func(m *Message) { m.ReplyTo.Kind = 9 }, "reply-to kind"},
		{"property type", func(m *Message) { m.Props[0].Value.Type = 50 }, "unknown value type"},
		{"body kind", func(m *Message) { m.Body.Kind = 50 }, "body kind"},
		{"map type", func(m *Message) { m.Body = Body{Kind: BodyMap, Map: []Field{{Name: "a", Value: Value{Type: 50}}}} }, "map entry"},
		{"stream type", func(m *Message) { m.Body = StreamBody(Value{Type: 50}) }, "stream value"},
	}
	for _, tt := range tests {
		m := sample()
		tt.edit(m)
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v", tt.name, err)
		}
	}
}
