package amqp091_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

func publish(t testing.TB, ch *amqp.Channel, exchange, key string, p amqp.Publishing) {
	t.Helper()
	if err := ch.PublishWithContext(context.Background(), exchange, key, false, false, p); err != nil {
		t.Fatal(err)
	}
}

func TestPublisherConfirms(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("confirmed", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 200))
	const n = 100
	for i := range n {
		publish(t, ch, "", "confirmed", amqp.Publishing{Body: []byte(fmt.Sprint(i)), DeliveryMode: amqp.Persistent})
	}
	// Unroutable: confirmed too (there is nothing to store).
	publish(t, ch, "", "no-such-queue", amqp.Publishing{Body: []byte("lost")})
	for i := range n + 1 {
		select {
		case c := <-confirms:
			if !c.Ack || c.DeliveryTag != uint64(i+1) {
				t.Fatalf("confirmation %d: %+v", i, c)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("confirmation %d missing", i)
		}
	}
}

func TestMandatoryReturn(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	err := ch.PublishWithContext(context.Background(), "", "nowhere", true, false, amqp.Publishing{Body: []byte("x"), MessageId: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-returns:
		if r.ReplyCode != 312 || r.RoutingKey != "nowhere" || string(r.Body) != "x" || r.MessageId != "m-1" {
			t.Fatalf("return %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.return")
	}
}

func TestQueueDeclarePassiveDeletePurge(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclarePassive("missing", false, false, false, false, nil); amqpCode(err) != 404 {
		t.Fatalf("passive declare of a missing queue: %v, want 404", err)
	}
	ch = channel(t, c) // the 404 closed the channel
	if _, err := ch.QueueDeclare("work", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		publish(t, ch, "", "work", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	q, err := ch.QueueDeclarePassive("work", true, false, false, false, nil)
	if err != nil || q.Messages != 5 {
		t.Fatalf("passive declare: %+v %v, want 5 messages", q, err)
	}
	if _, err := ch.QueueDelete("work", false, true, false); amqpCode(err) != 406 {
		t.Fatalf("delete if-empty of a full queue: %v, want 406", err)
	}
	ch = channel(t, c)
	n, err := ch.QueuePurge("work", false)
	if err != nil || n != 5 {
		t.Fatalf("purge: %d %v", n, err)
	}
	ds, err := ch.Consume("work", "c1", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = ds
	if _, err := ch.QueueDelete("work", true, false, false); amqpCode(err) != 406 {
		t.Fatalf("delete if-unused of a consumed queue: %v, want 406", err)
	}
	ch = channel(t, c)
	if _, err := ch.QueueDelete("work", false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive("work", true, false, false, false, nil); amqpCode(err) != 404 {
		t.Fatalf("passive declare after delete: %v, want 404", err)
	}
}

func TestServerCancelOnQueueDelete(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("doomed", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	cancels := ch.NotifyCancel(make(chan string, 1))
	if _, err := ch.Consume("doomed", "watcher", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	other := channel(t, dial(t, addr))
	if _, err := other.QueueDelete("doomed", false, false, false); err != nil {
		t.Fatal(err)
	}
	select {
	case tag := <-cancels:
		if tag != "watcher" {
			t.Fatalf("cancelled %q", tag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.cancel from the server")
	}
}

func TestGetNackRejectRecover(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("g", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Get("g", false); ok || err != nil {
		t.Fatalf("get from an empty queue: %v %v", ok, err)
	}
	publish(t, ch, "", "g", amqp.Publishing{Body: []byte("one")})
	d, ok, err := ch.Get("g", false)
	if err != nil || !ok || string(d.Body) != "one" || d.Redelivered {
		t.Fatalf("get: %q %v %v redelivered %v", d.Body, ok, err, d.Redelivered)
	}
	// nack with requeue: a failed delivery, back with its count.
	if err := d.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	var again amqp.Delivery
	for range 500 {
		if again, ok, err = ch.Get("g", false); err != nil || ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok || !again.Redelivered || again.Headers["x-delivery-count"] != int64(1) || again.Headers["JMSXDeliveryCount"] != int32(2) {
		t.Fatalf("after nack: ok %v redelivered %v headers %v", ok, again.Redelivered, again.Headers)
	}
	// reject without requeue: undeliverable (no error destination: gone).
	if err := again.Reject(false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok, _ := ch.Get("g", false); ok {
		t.Fatal("a rejected message came back")
	}
	// recover: unacknowledged deliveries come back redelivered.
	publish(t, ch, "", "g", amqp.Publishing{Body: []byte("two")})
	ds, err := ch.Consume("g", "c", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := next(t, ds)
	if err := ch.Recover(true); err != nil {
		t.Fatal(err)
	}
	second := next(t, ds)
	if string(second.Body) != "two" || !second.Redelivered || second.DeliveryTag == first.DeliveryTag {
		t.Fatalf("after recover: %q redelivered %v tag %d (first %d)", second.Body, second.Redelivered, second.DeliveryTag, first.DeliveryTag)
	}
	if err := second.Ack(false); err != nil {
		t.Fatal(err)
	}
	// Acking an unknown tag is a channel error.
	if err := ch.Ack(999, false); err != nil {
		t.Fatal(err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	select {
	case e := <-closed:
		if e == nil || e.Code != 406 {
			t.Fatalf("ack of an unknown tag closed the channel with %v, want 406", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ack of an unknown tag left the channel open")
	}
}

func TestQosPerConsumer(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("qos", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		publish(t, ch, "", "qos", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	if err := ch.Qos(2, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("qos", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := next(t, ds), next(t, ds)
	none(t, ds, 200*time.Millisecond) // the window is full
	if err := a.Ack(false); err != nil {
		t.Fatal(err)
	}
	c := next(t, ds)
	none(t, ds, 100*time.Millisecond)
	// multiple acks both.
	if err := c.Ack(true); err != nil {
		t.Fatal(err)
	}
	_ = b
	next(t, ds)
	next(t, ds)
}

func TestNoAckConsumer(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("auto", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume("auto", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		publish(t, ch, "", "auto", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	for i := range 20 {
		if d := next(t, ds); string(d.Body) != fmt.Sprint(i) {
			t.Fatalf("delivery %d: %q", i, d.Body)
		}
	}
	waitDepth(t, eng, "auto", 0)
}

// waitDepth waits until queue name holds want messages.
func waitDepth(t testing.TB, eng *engine.Broker, name string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: name})
		if err == nil && info.Messages == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d (%v)", name, info.Messages, want, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTransactions(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("tx", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Tx(); err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "", "tx", amqp.Publishing{Body: []byte("rolled back")})
	if err := ch.TxRollback(); err != nil {
		t.Fatal(err)
	}
	publish(t, ch, "", "tx", amqp.Publishing{Body: []byte("committed")})
	waitDepth(t, eng, "tx", 0) // not visible before the commit
	if err := ch.TxCommit(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, eng, "tx", 1)
	ds, err := ch.Consume("tx", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := next(t, ds)
	if string(d.Body) != "committed" {
		t.Fatalf("got %q", d.Body)
	}
	if err := d.Ack(false); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, eng, "tx", 1) // the ack waits for the commit
	if err := ch.TxCommit(); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, eng, "tx", 0)
}

func TestExclusiveAndServerNamedQueues(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name == "" {
		t.Fatal("no server-generated name")
	}
	// Another connection replies to it by its name.
	other := channel(t, dial(t, addr))
	publish(t, other, "", q.Name, amqp.Publishing{Body: []byte("reply")})
	ds, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := next(t, ds); string(d.Body) != "reply" || d.RoutingKey != q.Name {
		t.Fatalf("got %q via %q", d.Body, d.RoutingKey)
	}
	// An exclusive named queue is this connection's; another cannot
	// declare it exclusive as well... it is a temporary queue, gone with
	// its connection.
	if _, err := ch.QueueDeclare("mine", false, false, true, false, nil); err != nil {
		t.Fatal(err)
	}
	temps := func() int {
		n := 0
		for _, d := range eng.Destinations() {
			if d.Kind == message.TempQueue {
				n++
			}
		}
		return n
	}
	if n := temps(); n != 2 {
		t.Fatalf("%d temporary queues, want 2", n)
	}
	_ = c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for temps() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d temporary queues left after the connection closed", temps())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLargeMessageSplitAtFrameMax(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{MaxFrameSize: 4096})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("big", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 100_000)
	for i := range body {
		body[i] = byte(i)
	}
	publish(t, ch, "", "big", amqp.Publishing{Body: body})
	d, ok, err := ch.Get("big", true)
	if err != nil || !ok || string(d.Body) != string(body) {
		t.Fatalf("get: ok %v err %v, %d bytes", ok, err, len(d.Body))
	}
}

func TestMessageTooLarge(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{MaxMessageSize: 1000})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("small", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	publish(t, ch, "", "small", amqp.Publishing{Body: make([]byte, 2000)})
	select {
	case e := <-closed:
		if e == nil || e.Code != 406 {
			t.Fatalf("closed with %v, want 406", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("oversize message accepted")
	}
	// The connection stays usable.
	ch = channel(t, c)
	publish(t, ch, "", "small", amqp.Publishing{Body: make([]byte, 500)})
	if _, ok, err := ch.Get("small", true); !ok || err != nil {
		t.Fatalf("get after the refusal: %v %v", ok, err)
	}
}

// A publish whose store write fails is a basic.nack; the others around it
// are acks.
func TestConfirmNackOnStoreFailure(t *testing.T) {
	eng, faults, closeEng := enginetest.DurableFaults(t, t.TempDir(), engine.Config{AutoCreate: true})
	addr := serve(t, eng, closeEng, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("faulty", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 4))
	next := func() amqp.Confirmation {
		t.Helper()
		select {
		case c := <-confirms:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no confirmation")
		}
		return amqp.Confirmation{}
	}
	publish(t, ch, "", "faulty", amqp.Publishing{Body: []byte("kept"), DeliveryMode: amqp.Persistent})
	if c := next(); !c.Ack || c.DeliveryTag != 1 {
		t.Fatalf("first: %+v, want ack 1", c)
	}
	faults.Fail(true)
	publish(t, ch, "", "faulty", amqp.Publishing{Body: []byte("lost"), DeliveryMode: amqp.Persistent})
	if c := next(); c.Ack || c.DeliveryTag != 2 {
		t.Fatalf("second: %+v, want nack 2", c)
	}
	faults.Fail(false)
	publish(t, ch, "", "faulty", amqp.Publishing{Body: []byte("kept too"), DeliveryMode: amqp.Persistent})
	if c := next(); !c.Ack || c.DeliveryTag != 3 {
		t.Fatalf("third: %+v, want ack 3", c)
	}
	if got, want := drain(t, ch, "faulty"), []string{"kept", "kept too"}; !equal(got, want) {
		t.Fatalf("queue holds %v, want %v", got, want)
	}
}

// An auto-delete queue goes when its last consumer does, not before it
// had one.
func TestAutoDeleteQueue(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("ad", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	exists := func() bool {
		_, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "ad"})
		return err == nil
	}
	if _, err := ch.Consume("ad", "one", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	other := channel(t, c)
	if _, err := other.Consume("ad", "two", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Cancel("one", false); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("deleted while a consumer was left")
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for exists() {
		if time.Now().After(deadline) {
			t.Fatal("auto-delete queue still there after its last consumer left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Declared and never consumed: it stays.
	if _, err := ch.QueueDeclare("ad", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Get("ad", true); ok || err != nil {
		t.Fatalf("get: %v %v", ok, err)
	}
	if !exists() {
		t.Fatal("an auto-delete queue without consumers was deleted")
	}
}

// Closing a channel (or its connection) gives its unacknowledged
// deliveries back: another consumer gets them, flagged redelivered.
func TestChannelCloseReturnsUnacked(t *testing.T) {
	addr, _ := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	if _, err := ch.QueueDeclare("back", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		publish(t, ch, "", "back", amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	first := channel(t, c)
	ds, err := first.Consume("back", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		next(t, ds)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	other := channel(t, dial(t, addr))
	ods, err := other.Consume("back", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d := next(t, ods)
		if !d.Redelivered || string(d.Body) != fmt.Sprint(i) {
			t.Fatalf("after close: %q redelivered %v", d.Body, d.Redelivered)
		}
	}
}

// A message whose properties do not fit in one frame of the client's
// frame-max still arrives, without its headers table.
func TestHeadersTooLargeForFrameMax(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{MaxFrameSize: 4096})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("wide", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := eng.Connect(engine.ConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := sess.CreateProducer(message.Destination{Kind: message.Queue, Name: "wide"})
	if err != nil {
		t.Fatal(err)
	}
	m := &message.Message{Body: message.TextBody("wide"), CorrelationID: "kept"}
	for i := range 100 {
		m.Props.SetUnchecked(fmt.Sprintf("p%03d", i), message.StringValue(string(make([]byte, 64))))
	}
	if err := prod.Send(context.Background(), m, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	d, ok, err := ch.Get("wide", true)
	if err != nil || !ok || string(d.Body) != "wide" || d.CorrelationId != "kept" || len(d.Headers) != 0 {
		t.Fatalf("get: ok %v err %v body %q corr %q headers %d", ok, err, d.Body, d.CorrelationId, len(d.Headers))
	}
}

// A publish over the queue's quota is a basic.nack in confirm mode; the
// channel stays open.
func TestQuotaNack(t *testing.T) {
	policy := func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d.Name == "small" {
			p.MaxMessages = 1
		}
		return p
	}
	addr, _ := startServer(t, engine.Config{Policy: policy}, amqp091.Options{})
	ch := channel(t, dial(t, addr))
	if _, err := ch.QueueDeclare("small", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 4))
	for _, body := range []string{"fits", "over"} {
		publish(t, ch, "", "small", amqp.Publishing{Body: []byte(body)})
	}
	for i, want := range []bool{true, false} {
		select {
		case c := <-confirms:
			if c.Ack != want || c.DeliveryTag != uint64(i+1) {
				t.Fatalf("confirmation %d: %+v, want ack=%v", i+1, c, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("confirmation %d missing", i+1)
		}
	}
	if d, ok, err := ch.Get("small", true); err != nil || !ok || string(d.Body) != "fits" {
		t.Fatalf("get: %q %v %v", d.Body, ok, err)
	}
}
