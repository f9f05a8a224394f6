// Command amqp-schedule is the go-amqp quick start: a delivery schedule. The time_to_deliver_override of
// queue quickstart.schedule (examples/config/quickstart.toml) holds each message until the next whole 5 s.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/Azure/go-amqp"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn := must(amqp.Dial(ctx, "amqp://127.0.0.1:"+os.Getenv("SLUICE_AMQP_PORT"), nil)) // no port: 5672
	session := must(conn.NewSession(ctx, nil))
	receiver := must(session.NewReceiver(ctx, "quickstart.schedule", nil))
	check(must(session.NewSender(ctx, "quickstart.schedule", nil)).Send(ctx, amqp.NewMessage([]byte("report")), nil))
	m := must(receiver.Receive(ctx, nil))
	check(receiver.AcceptMessage(ctx, m))
	check(conn.Close())
	sent := *m.Properties.CreationTime                        // JMSTimestamp: when the broker took it
	at, _ := m.Annotations["x-opt-delivery-time"].(time.Time) // JMSDeliveryTime: when the schedule let it go
	if at.UnixMilli()%5000 != 0 || !at.After(sent) || time.Now().Before(at) {
		log.Fatalf("FAIL: sent %s, delivery time %s: not the next whole 5 s (examples/config/quickstart.toml?)", sent, at)
	}
	fmt.Printf("PASS: sent %s, held by the delivery schedule until %s\n", sent.Format(time.StampMilli), at.Format(time.StampMilli))
}

func check(err error) {
	if err != nil {
		log.Fatal("FAIL: ", err)
	}
}

func must[T any](v T, err error) T { check(err); return v }
