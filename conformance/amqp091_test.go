package conformance

import (
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

func TestAMQP091Target(t *testing.T) {
	tests := []struct {
		name          string
		d             Dest
		exchange, key string
		wantErr       bool
	}{
		{"queue", Dest{Kind: Queue, Name: "orders"}, "", "orders", false},
		{"topic", Dest{Kind: Topic, Name: "prices"}, "amq.topic", "prices", false},
		{"own temporary queue", Dest{Kind: TempQueue, Name: "amq.gen-7.1", Addr: "amq.gen-7.1", Proto: "amqp091"}, "", "amq.gen-7.1", false},
		{"STOMP temporary queue", Dest{Kind: TempQueue, Name: "tmp1", Addr: "/temp-queue/tmp1", Proto: "stomp"}, "", "", true},
		{"temporary topic", Dest{Kind: TempTopic, Name: "t", Addr: "/temp-topic/t", Proto: "stomp"}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, key, err := amqp091Target(tt.d)
			if (err != nil) != tt.wantErr || ex != tt.exchange || key != tt.key {
				t.Fatalf("amqp091Target(%v) = %q, %q, %v; want %q, %q, error %v", tt.d, ex, key, err, tt.exchange, tt.key, tt.wantErr)
			}
		})
	}
}

// TestAMQP091ReplyToRoundTrip checks that a reply destination rendered for
// reply-to reads back as the same kind and name.
func TestAMQP091ReplyToRoundTrip(t *testing.T) {
	tests := []struct {
		d        Dest
		rendered string
	}{
		{Dest{Kind: Queue, Name: "replies"}, "replies"},
		{Dest{Kind: Topic, Name: "news"}, "/topic/news"},
		{Dest{Kind: TempQueue, Name: "amq.gen-3.2", Addr: "amq.gen-3.2", Proto: "amqp091"}, "amq.gen-3.2"},
		{Dest{Kind: TempQueue, Name: "tmp4", Addr: "/temp-queue/tmp4", Proto: "stomp"}, "/temp-queue/tmp4"},
		{Dest{Kind: TempTopic, Name: "x", Addr: "temp-topic://x", Proto: "amqp"}, "/temp-topic/x"},
	}
	for _, tt := range tests {
		got := amqp091ReplyTo(tt.d)
		if got != tt.rendered {
			t.Errorf("amqp091ReplyTo(%v) = %q, want %q", tt.d, got, tt.rendered)
			continue
		}
		back := parseAMQP091ReplyTo(got)
		if back.Kind != tt.d.Kind {
			t.Errorf("%q reads back as kind %v, want %v", got, back.Kind, tt.d.Kind)
		}
		if !tt.d.Kind.IsTemp() && back.Name != tt.d.Name {
			t.Errorf("%q reads back as name %q, want %q", got, back.Name, tt.d.Name)
		}
	}
}

func TestAMQP091Received(t *testing.T) {
	d := amqp091.Delivery{
		Body: []byte("hello"), MessageId: "ID:1", CorrelationId: "c-1", Type: "order", ReplyTo: "amq.gen-1.1",
		Priority: 7, DeliveryMode: amqp091.Persistent, Redelivered: true, Expiration: "60000",
		Timestamp: time.UnixMilli(1_700_000_000_000), Exchange: "amq.topic", RoutingKey: "prices",
		Headers: amqp091.Table{"JMSXDeliveryCount": int32(3), "x-delivery-count": int64(2), "JMSDeliveryTime": int64(1_700_000_001_000),
			"JMSRedeliveryLimit": int32(5), "n": int32(42), "s": "x"},
	}
	r := amqp091Received(d)
	if r.Body != "hello" || r.ID != "ID:1" || r.CorrelationID != "c-1" || r.Type != "order" || r.Priority != 7 || !r.Persistent || !r.Redelivered {
		t.Fatalf("header fields: %+v", r)
	}
	if r.DeliveryCount != 3 || r.DeliveryTime != 1_700_000_001_000 || r.Timestamp != 1_700_000_000_000 || r.Destination != "/topic/prices" {
		t.Fatalf("count %d, delivery time %d, timestamp %d, destination %q", r.DeliveryCount, r.DeliveryTime, r.Timestamp, r.Destination)
	}
	if left := r.Expiration - r.At.UnixMilli(); left != 60000 {
		t.Fatalf("expiration %d ms after receipt, want 60000", left)
	}
	if r.ReplyTo == nil || r.ReplyTo.Kind != TempQueue || r.ReplyTo.Addr != "amq.gen-1.1" {
		t.Fatalf("reply-to %+v", r.ReplyTo)
	}
	if len(r.Props) != 2 || r.Props["n"] != int32(42) || r.Props["s"] != "x" {
		t.Fatalf("properties %v: want n (int32) and s only", r.Props)
	}
}

func TestAMQP091PublishingRefusesWhatItCannotSay(t *testing.T) {
	c := &amqp091Conn{}
	for name, m := range map[string]*Message{
		"priority 0":            {Body: "b", Priority: Prio(0)},
		"temporary topic reply": {Body: "b", ReplyTo: &Dest{Kind: TempTopic, Name: "t"}},
	} {
		if _, err := c.publishing(m); err == nil {
			t.Errorf("%s: accepted", name)
		} else if _, ok := err.(*NotExpressibleError); !ok {
			t.Errorf("%s: %v, want a NotExpressibleError", name, err)
		}
	}
	p, err := c.publishing(&Message{Body: "<a/>", XML: true, Priority: Prio(9), Persistent: NonPersistent, TTL: time.Second,
		DeliveryDelay: 700 * time.Millisecond, RedeliveryLimit: Int(2), Props: Props{{"l", int64(5)}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.ContentType != "text/xml" || p.Priority != 9 || p.DeliveryMode != amqp091.Transient || p.Expiration != "1000" ||
		p.Headers["x-delay"] != int64(700) || p.Headers["JMSRedeliveryLimit"] != int32(2) || p.Headers["l"] != int64(5) {
		t.Fatalf("publishing %+v", p)
	}
}
