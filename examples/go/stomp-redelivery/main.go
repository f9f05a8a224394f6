// Command stomp-redelivery is the go-stomp quick start: quickstart.nack has redelivery_limit = 2
// and an error queue (examples/config/quickstart.toml); the consumer NACKs until the message is moved.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-stomp/stomp/v3"
)

func main() {
	time.AfterFunc(15*time.Second, func() { log.Fatal("FAIL: not done within 15s (is the broker using examples/config/quickstart.toml?)") })
	conn := must(stomp.Dial("tcp", "127.0.0.1:"+cmp.Or(os.Getenv("SLUICE_STOMP_PORT"), "61613")))
	work := must(conn.Subscribe("/queue/quickstart.nack", stomp.AckClientIndividual))
	check(conn.Send("/queue/quickstart.nack", "text/plain", []byte("poison"), stomp.SendOpt.Receipt))
	for i := 1; i <= 3; i++ { // 1 delivery + redelivery_limit 2
		m := next(work)
		fmt.Printf("delivery %d of %q (JMSXDeliveryCount %s): NACK\n", i, m.Body, m.Header.Get("JMSXDeliveryCount"))
		check(conn.Nack(m)) // a failed delivery, counted against the limit
	}
	m := next(must(conn.Subscribe("/queue/quickstart.nack.DLQ", stomp.AckAuto)))
	fmt.Printf("on the error queue: %q, %s\n", m.Body, m.Header.Get("JMS_SluiceErrorReason"))
	check(errors.Join(work.Unsubscribe(), m.Subscription.Unsubscribe(), conn.Disconnect()))
	fmt.Println("PASS: delivered three times, then moved to the error queue")
}

func check(err error) {
	if err != nil {
		log.Fatal("FAIL: ", err)
	}
}

func must[T any](v T, err error) T              { check(err); return v }
func next(s *stomp.Subscription) *stomp.Message { m := <-s.C; check(m.Err); return m }
