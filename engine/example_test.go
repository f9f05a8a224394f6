package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Example embeds the engine: one connection sends a text message to a queue
// and receives it. With no Store in the Config the engine keeps messages in
// memory; give it one (package engine/store) to keep persistent messages
// across restarts.
func Example() {
	ctx := context.Background()
	b, err := engine.New(ctx, engine.Config{AutoCreate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	conn, err := b.Connect(engine.ConnectionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		log.Fatal(err)
	}
	orders := message.Destination{Kind: message.Queue, Name: "orders"}
	prod, err := sess.CreateProducer(orders)
	if err != nil {
		log.Fatal(err)
	}
	if err := prod.Send(ctx, &message.Message{Body: message.TextBody("hi")}, engine.SendOptions{}); err != nil {
		log.Fatal(err)
	}
	cons, err := sess.CreateConsumer(orders, engine.ConsumerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := conn.Start(); err != nil {
		log.Fatal(err)
	}
	d, err := cons.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s from %s, delivery %d\n", d.Msg.Body.Data, d.Msg.Destination, d.DeliveryCount)
	// Output: hi from /queue/orders, delivery 1
}
