package amqp091_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// nack with requeue is a failed delivery: past the redelivery limit the
// message goes to the error destination; nack without requeue sends it
// there at once.
func TestNackRedeliveryLimitAndErrorDestination(t *testing.T) {
	errQ := message.Destination{Kind: message.Queue, Name: "work.errors"}
	policy := func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d.Name == "work" {
			p.RedeliveryLimit = 1
			p.ErrorDestination = errQ
		}
		return p
	}
	addr, _ := startServer(t, engine.Config{Policy: policy, AutoCreate: true}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	for _, q := range []string{"work", "work.errors"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, ch, "", "work", amqp.Publishing{Body: []byte("poison")})
	ds, err := ch.Consume("work", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the first delivery and the one redelivery allowed
		d := next(t, ds)
		if d.Redelivered != (i > 0) {
			t.Fatalf("delivery %d: redelivered %v", i, d.Redelivered)
		}
		if err := d.Nack(false, true); err != nil {
			t.Fatal(err)
		}
	}
	none(t, ds, 200*time.Millisecond)
	var got amqp.Delivery
	ok := false
	for range 200 {
		if got, ok, err = ch.Get("work.errors", true); ok || err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || string(got.Body) != "poison" {
		t.Fatalf("error destination: ok %v err %v body %q", ok, err, got.Body)
	}
	// requeue=false: to the error destination at once.
	publish(t, ch, "", "work", amqp.Publishing{Body: []byte("bad")})
	d := next(t, ds)
	if err := d.Reject(false); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if got, ok, err = ch.Get("work.errors", true); ok || err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || string(got.Body) != "bad" {
		t.Fatalf("rejected message: ok %v err %v body %q", ok, err, got.Body)
	}
}

func TestSelector(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("sel", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("sel", "", true, false, false, false, amqp.Table{"x-selector": "region = 'EU' AND JMSPriority > 3"})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "", "sel", amqp.Publishing{Body: []byte("us"), Priority: 9, Headers: amqp.Table{"region": "US"}})
	publish(t, ch, "", "sel", amqp.Publishing{Body: []byte("eu-low"), Priority: 1, Headers: amqp.Table{"region": "EU"}})
	publish(t, ch, "", "sel", amqp.Publishing{Body: []byte("eu"), Priority: 5, Headers: amqp.Table{"region": "EU"}})
	if d := next(t, ds); string(d.Body) != "eu" {
		t.Fatalf("selected %q", d.Body)
	}
	none(t, ds, 100*time.Millisecond)
	// A bad selector names where it went wrong.
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if _, err := ch.Consume("sel", "", true, false, false, false, amqp.Table{"x-selector": "region = = 'EU'"}); amqpCode(err) != 406 {
		t.Fatalf("bad selector: %v, want 406", err)
	}
	if e := <-closed; e == nil || !containsAny(e.Reason, "column", "position", "offset", ":1:") {
		t.Fatalf("bad selector reason %v: want a position", e)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
	}
	return false
}

// x-delay holds a message back; priority orders what is waiting;
// expiration drops what is too old.
func TestDelayPriorityExpiration(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("p", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Priority 0: should a loaded machine start the consumer after the
	// delay, the delayed message still comes after the others.
	publish(t, ch, "", "p", amqp.Publishing{Body: []byte("delayed"), Priority: 0, Headers: amqp.Table{"x-delay": int32(500)}})
	for i, prio := range []uint8{1, 8, 4} {
		publish(t, ch, "", "p", amqp.Publishing{Body: []byte(fmt.Sprint("prio", prio)), Priority: prio, MessageId: fmt.Sprint(i)})
	}
	publish(t, ch, "", "p", amqp.Publishing{Body: []byte("expired"), Expiration: "1"})
	time.Sleep(20 * time.Millisecond)
	if err := ch.Qos(10, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("p", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prio8", "prio4", "prio1"} {
		if d := next(t, ds); string(d.Body) != want {
			t.Fatalf("got %q, want %q", d.Body, want)
		}
	}
	d := next(t, ds)
	if string(d.Body) != "delayed" || time.Since(start) < 480*time.Millisecond { // the engine counts in whole ms
		t.Fatalf("got %q after %s", d.Body, time.Since(start))
	}
	if _, ok := d.Headers["JMSDeliveryTime"]; !ok {
		t.Fatalf("delayed message without JMSDeliveryTime: %v", d.Headers)
	}
	none(t, ds, 100*time.Millisecond) // the expired one never comes
}

// connection.blocked while the broker's disk alarm holds producers, and
// connection.unblocked when it ends.
func TestConnectionBlocked(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	blocked := c.NotifyBlocked(make(chan amqp.Blocking, 2))
	eng.Flow().SetDiskAlarm(true, 1, 100)
	select {
	case b := <-blocked:
		if !b.Active || b.Reason == "" {
			t.Fatalf("blocking %+v", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection.blocked")
	}
	// A publish while blocked waits: the server reads no further.
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("held", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "", "held", amqp.Publishing{Body: []byte("held back")})
	time.Sleep(100 * time.Millisecond)
	waitDepth(t, eng, "held", 0)
	eng.Flow().SetDiskAlarm(false, 1000, 100)
	select {
	case b := <-blocked:
		if b.Active {
			t.Fatalf("blocking %+v, want unblocked", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection.unblocked")
	}
	waitDepth(t, eng, "held", 1)
}

// nack with multiple settles every delivery up to the tag; the absolute
// delivery time header holds a message until then; JMS_BEA_SELECT
// selects on an XML body.
func TestNackMultipleDeliveryTimeXMLSelector(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	for _, q := range []string{"nm", "dt", "xml"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		publish(t, ch, "", "nm", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	ds, err := ch.Consume("nm", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last amqp.Delivery
	for range 3 {
		last = next(t, ds)
	}
	if err := last.Nack(true, true); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if d := next(t, ds); !d.Redelivered {
			t.Fatalf("%q not redelivered after nack multiple", d.Body)
		}
	}

	at := time.Now().Add(300 * time.Millisecond)
	publish(t, ch, "", "dt", amqp.Publishing{Body: []byte("later"), Headers: amqp.Table{"AMQ_SCHEDULED_TIME": at.UnixMilli()}})
	dds, err := ch.Consume("dt", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := next(t, dds); time.Now().Before(at.Add(-20 * time.Millisecond)) {
		t.Fatalf("%q delivered before its delivery time", d.Body)
	}

	xds, err := ch.Consume("xml", "", true, false, false, false, amqp.Table{"x-selector": "JMS_BEA_SELECT('xpath', '/order/@region') = 'EU'"})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "", "xml", amqp.Publishing{ContentType: "text/xml", Body: []byte(`<order region="US"/>`)})
	publish(t, ch, "", "xml", amqp.Publishing{ContentType: "text/xml", Body: []byte(`<order region="EU"/>`)})
	if d := next(t, xds); string(d.Body) != `<order region="EU"/>` {
		t.Fatalf("XML selector chose %q", d.Body)
	}
}

// The connection's consumers are bounded, with a clear refusal.
func TestConsumerLimit(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{MaxConsumers: 2})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("lim", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := ch.Consume("lim", "", false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := ch.Consume("lim", "", false, false, false, false, nil)
	if amqpCode(err) != 530 {
		t.Fatalf("third consumer: %v, want 530", err)
	}
}

// An exclusive consumer is the queue's only one while it lasts.
func TestExclusiveConsumer(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("solo", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume("solo", "only", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	other := channel(t, dial(t, addr))
	if _, err := other.Consume("solo", "", false, false, false, false, nil); amqpCode(err) != 403 {
		t.Fatalf("second consumer beside an exclusive one: %v, want 403", err)
	}
	if err := ch.Cancel("only", false); err != nil {
		t.Fatal(err)
	}
	other = channel(t, dial(t, addr))
	if _, err := other.Consume("solo", "", false, false, false, false, nil); err != nil {
		t.Fatalf("consumer after the exclusive one left: %v", err)
	}
	if _, err := ch.Consume("solo", "", false, true, false, false, nil); amqpCode(err) != 403 {
		t.Fatalf("exclusive consumer beside another: %v, want 403", err)
	}
}

// Applications written for RabbitMQ's delayed-message plugin declare an
// x-delayed-message exchange and publish with x-delay.
func TestDelayedMessageExchange(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	if err := ch.ExchangeDeclare("later", "x-delayed-message", true, false, false, false, amqp.Table{"x-delayed-type": "direct"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("jobs", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("jobs", "run", "later", false, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	publish(t, ch, "later", "run", amqp.Publishing{Body: []byte("job"), Headers: amqp.Table{"x-delay": int64(300)}})
	ds, err := ch.Consume("jobs", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := next(t, ds); string(d.Body) != "job" || time.Since(start) < 280*time.Millisecond { // whole ms
		t.Fatalf("got %q after %s", d.Body, time.Since(start))
	}
	if err := ch.ExchangeDeclare("later", "direct", true, false, false, false, nil); amqpCode(err) != 406 {
		t.Fatalf("redeclare with another type: %v, want 406", err)
	}
	ch = channel(t, c)
	if err := ch.ExchangeDeclare("bad", "x-delayed-message", true, false, false, false, nil); amqpCode(err) != 406 {
		t.Fatalf("x-delayed-message without x-delayed-type: %v, want 406", err)
	}
}

// The message's own redelivery limit (JMSRedeliveryLimit) applies to a
// nack with requeue.
func TestMessageRedeliveryLimitHeader(t *testing.T) {
	policy := func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d.Name == "limited" {
			p.ErrorDestination = message.Destination{Kind: message.Queue, Name: "limited.dlq"}
		}
		return p
	}
	addr, _ := startServer(t, engine.Config{Policy: policy, AutoCreate: true}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	for _, q := range []string{"limited", "limited.dlq"} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, ch, "", "limited", amqp.Publishing{Body: []byte("once"), Headers: amqp.Table{"JMSRedeliveryLimit": int32(0)}})
	d, ok, err := ch.Get("limited", false)
	if err != nil || !ok || d.Headers["JMSRedeliveryLimit"] != int32(0) {
		t.Fatalf("get: ok %v err %v headers %v", ok, err, d.Headers)
	}
	if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	var dl amqp.Delivery
	for range 500 {
		if dl, ok, err = ch.Get("limited.dlq", true); ok || err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || string(dl.Body) != "once" {
		t.Fatalf("error destination: ok %v err %v", ok, err)
	}
}
