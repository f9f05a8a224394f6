package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// sendAMQP10Confirmed sends one durable message to queue over AMQP 1.0
// on an unsettled link: Send returns once the broker's disposition has
// settled it (accepted).
func sendAMQP10Confirmed(t *testing.T, addr, queue, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		t.Fatalf("AMQP 1.0 dial %s: %v", addr, err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := s.NewSender(ctx, queue, &amqp.SenderOptions{SettlementMode: amqp.SenderSettleModeUnsettled.Ptr()})
	if err != nil {
		t.Fatal(err)
	}
	m := amqp.NewMessage([]byte(body))
	m.Header = &amqp.MessageHeader{Durable: true}
	if err := snd.Send(ctx, m, nil); err != nil {
		t.Fatalf("AMQP 1.0 send of %q not accepted: %v", body, err)
	}
}

// sendAMQP091Confirmed publishes one persistent message to queue over
// AMQP 0-9-1 with publisher confirms and waits for its ack.
func sendAMQP091Confirmed(t *testing.T, addr, queue, body string) {
	t.Helper()
	c, err := amqp091.DialConfig("amqp://guest:guest@"+addr+"/", amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("AMQP 0-9-1 dial %s: %v", addr, err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false,
		amqp091.Publishing{DeliveryMode: amqp091.Persistent, ContentType: "text/plain", Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil || !ok {
		t.Fatalf("AMQP 0-9-1 publish of %q not confirmed: ack %v, %v", body, ok, err)
	}
}

// receiveAMQP10 takes one message from queue over AMQP 1.0 and accepts it.
func receiveAMQP10(t *testing.T, addr, queue string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		t.Fatalf("AMQP 1.0 dial %s: %v", addr, err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.NewReceiver(ctx, queue, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Receive(ctx, nil)
	if err != nil {
		t.Fatalf("AMQP 1.0 receive from %s on %s: %v", queue, addr, err)
	}
	if err := r.AcceptMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	if m.Value != nil { // a text message from another protocol is an amqp-value
		return fmt.Sprint(m.Value)
	}
	return string(m.GetData())
}

// receiveAMQP091 takes one message from queue over AMQP 0-9-1 and acks it.
func receiveAMQP091(t *testing.T, addr, queue string) string {
	t.Helper()
	c, err := amqp091.DialConfig("amqp://guest:guest@"+addr+"/", amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("AMQP 0-9-1 dial %s: %v", addr, err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d, ok := <-ds:
		if !ok {
			t.Fatalf("AMQP 0-9-1 consumer on %s closed", addr)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		return string(d.Body)
	case <-time.After(15 * time.Second):
		t.Fatalf("AMQP 0-9-1: nothing from %s on %s within 15 s", queue, addr)
	}
	return ""
}

// A persistent message confirmed over AMQP 1.0 (the broker's disposition
// settles the transfer) and one confirmed over AMQP 0-9-1 (a publisher
// confirm) survive the loss of the leader that confirmed them: the new
// leader, elected within 10 s, delivers both, each over its protocol.
// Followers (the new one and the old leader back as one) refuse each
// protocol with its redirect naming the new leader: STOMP ERROR, AMQP 1.0
// amqp:connection:redirect with network-host and port, 0-9-1 close 320
// with the address in its text (checkFollower).
func TestClusterAMQPSendsSurviveLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)
	lm := c.member(l)
	for _, f := range []int{(l + 1) % 3, (l + 2) % 3} {
		c.checkFollower(f, lm)
	}
	sendAMQP10Confirmed(t, lm.AMQP, "cl.amqp10", "over 1.0")
	sendAMQP091Confirmed(t, lm.AMQP, "cl.amqp091", "over 0-9-1")

	stopped := time.Now()
	c.stop(l)
	nl := c.leader(10 * time.Second)
	t.Logf("n%d leads %v after n%d stopped", nl+1, time.Since(stopped).Round(time.Millisecond), l+1)
	nm := c.member(nl)
	if got := receiveAMQP10(t, nm.AMQP, "cl.amqp10"); got != "over 1.0" {
		t.Errorf("AMQP 1.0 on the new leader: %q, want %q", got, "over 1.0")
	}
	if got := receiveAMQP091(t, nm.AMQP, "cl.amqp091"); got != "over 0-9-1" {
		t.Errorf("AMQP 0-9-1 on the new leader: %q, want %q", got, "over 0-9-1")
	}
	// Across protocols too: what 0-9-1 confirmed, AMQP 1.0 receives.
	sendAMQP091Confirmed(t, nm.AMQP, "cl.cross", "cross")
	if got := receiveAMQP10(t, nm.AMQP, "cl.cross"); got != "cross" {
		t.Errorf("AMQP 1.0 receive of a 0-9-1 send: %q", got)
	}

	c.start(l)
	waitUntil(t, 15*time.Second, fmt.Sprintf("n%d follows n%d", l+1, nl+1), func() bool {
		id, _ := c.nodes[l].cluster.rs.Leader()
		return id == nm.ID
	})
	for i := range c.nodes {
		if i != nl {
			c.checkFollower(i, nm)
		}
	}
}
