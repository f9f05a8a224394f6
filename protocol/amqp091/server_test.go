package amqp091_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// startServer runs an in-memory engine and an AMQP 0-9-1 server on
// 127.0.0.1:0 until the test ends.
func startServer(t testing.TB, cfg engine.Config, opts amqp091.Options) (string, *engine.Broker) {
	t.Helper()
	eng, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, eng, func() { _ = eng.Close() }, opts), eng
}

// serve runs a server with opts on eng at 127.0.0.1:0 until the test
// ends, then shuts it down and calls closeEng.
func serve(t testing.TB, eng *engine.Broker, closeEng func(), opts amqp091.Options) string {
	t.Helper()
	srv := amqp091.NewServer(eng, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		closeEng()
	})
	return ln.Addr().String()
}

func url(addr string) string { return "amqp://guest:guest@" + addr + "/" }

func dial(t testing.TB, addr string) *amqp.Connection {
	t.Helper()
	c, err := amqp.DialConfig(url(addr), amqp.Config{Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func channel(t testing.TB, c *amqp.Connection) *amqp.Channel {
	t.Helper()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func next(t testing.TB, ds <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case d, ok := <-ds:
		if !ok {
			t.Fatal("deliveries closed")
		}
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery within 5s")
	}
	return amqp.Delivery{}
}

func none(t testing.TB, ds <-chan amqp.Delivery, wait time.Duration) {
	t.Helper()
	select {
	case d, ok := <-ds:
		if ok {
			t.Fatalf("unexpected delivery %q", d.Body)
		}
	case <-time.After(wait):
	}
}

// amqpCode returns the reply code of an *amqp.Error, or 0.
func amqpCode(err error) int {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

func TestPublishConsumeAck(t *testing.T) {
	addr, eng := startServer(t, engine.Config{}, amqp091.Options{})
	c := dial(t, addr)
	ch := channel(t, c)
	q, err := ch.QueueDeclare("orders", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "orders" {
		t.Fatalf("declared %q", q.Name)
	}
	ctx := context.Background()
	for i := range 3 {
		err := ch.PublishWithContext(ctx, "", "orders", false, false, amqp.Publishing{
			ContentType: "text/plain", Body: []byte(fmt.Sprint("m", i)), DeliveryMode: amqp.Persistent,
			Headers: amqp.Table{"n": int32(i)},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ds, err := ch.Consume("orders", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d := next(t, ds)
		if string(d.Body) != fmt.Sprint("m", i) || d.Headers["n"] != int32(i) || d.DeliveryMode != amqp.Persistent {
			t.Fatalf("delivery %d: %q headers %v mode %d", i, d.Body, d.Headers, d.DeliveryMode)
		}
		if d.RoutingKey != "orders" || d.Exchange != "" {
			t.Fatalf("delivery %d from %q/%q", i, d.Exchange, d.RoutingKey)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
	// The queue is the engine queue "orders".
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := eng.DestinationInfo(message.Destination{Kind: message.Queue, Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		if info.Messages == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left after acks", info.Messages)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A server shutting down tells its clients: connection.close 320.
func TestShutdownClosesWithConnectionForced(t *testing.T) {
	eng, err := engine.New(context.Background(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := amqp091.NewServer(eng, amqp091.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	c, err := amqp.Dial(url(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	closed := c.NotifyClose(make(chan *amqp.Error, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-closed:
		if e == nil || e.Code != 320 {
			t.Fatalf("closed with %v, want 320 CONNECTION_FORCED", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client was not told")
	}
}
