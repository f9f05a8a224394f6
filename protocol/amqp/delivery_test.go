package amqp_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	sluiceamqp "github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/stomp"
)

func TestReleaseVersusModify(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "outcomes", nil)
	send(t, snd, text("m"))
	r := receiver(t, s, "outcomes", nil)
	ctx := context.Background()

	m := recv(t, r)
	if m.Header != nil && m.Header.DeliveryCount != 0 {
		t.Fatalf("first delivery-count %d", m.Header.DeliveryCount)
	}
	if err := r.ReleaseMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	m = recv(t, r)
	if m.Header.DeliveryCount != 0 {
		t.Fatalf("released counts as a delivery: delivery-count %d", m.Header.DeliveryCount)
	}
	if err := r.ModifyMessage(ctx, m, &amqp.ModifyMessageOptions{DeliveryFailed: true}); err != nil {
		t.Fatal(err)
	}
	m = recv(t, r)
	if m.Header.DeliveryCount != 1 {
		t.Fatalf("after modified delivery-failed: delivery-count %d, want 1", m.Header.DeliveryCount)
	}
	if err := r.ModifyMessage(ctx, m, &amqp.ModifyMessageOptions{DeliveryFailed: true, UndeliverableHere: true}); err != nil {
		t.Fatal(err)
	}
	m = recv(t, r)
	if m.Header.DeliveryCount != 2 {
		t.Fatalf("after modified undeliverable-here: delivery-count %d, want 2", m.Header.DeliveryCount)
	}
	accept(t, r, m)
}

func TestRejectGoesToErrorDestination(t *testing.T) {
	dlq := message.Destination{Kind: message.Queue, Name: "DLQ"}
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{Policy: func(d message.Destination) engine.Policy {
		p := engine.DefaultPolicy()
		if d.Name == "work" {
			p.ErrorDestination = dlq
		}
		return p
	}})
	c := ts.dial(t, nil)
	s := session(t, c)
	send(t, sender(t, s, "work", nil), text("poison"))
	r := receiver(t, s, "work", nil)
	m := recv(t, r)
	if err := r.RejectMessage(context.Background(), m, nil); err != nil {
		t.Fatal(err)
	}
	recvNone(t, r, 200*time.Millisecond)
	rd := receiver(t, s, "DLQ", nil)
	m = recv(t, rd)
	if m.Value != "poison" {
		t.Fatalf("error destination got %v", m.Value)
	}
	if m.ApplicationProperties[engine.PropErrorReason] == nil {
		t.Fatalf("no error reason: %v", m.ApplicationProperties)
	}
	accept(t, rd, m)
}

func durableOpts(name string) *amqp.ReceiverOptions {
	return &amqp.ReceiverOptions{
		Name:               name,
		SourceCapabilities: []string{"topic"},
		SourceDurability:   amqp.DurabilityUnsettledState,
		SourceExpiryPolicy: amqp.ExpiryPolicyNever,
	}
}

func TestDurableSubscriptionAcrossReconnect(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	copts := &amqp.ConnOptions{ContainerID: "client-1"}
	c1 := ts.dial(t, copts)
	_ = receiver(t, session(t, c1), "prices", durableOpts("sub1"))
	_ = c1.Close() // the link is not closed: the subscription stays
	waitFor(t, func() bool { return len(ts.eng.Connections()) == 0 }, "connection not gone")

	p := ts.dial(t, nil)
	snd := sender(t, session(t, p), "topic://prices", nil)
	send(t, snd, text("a"))
	send(t, snd, text("b"))

	c2 := ts.dial(t, copts)
	r := receiver(t, session(t, c2), "prices", durableOpts("sub1"))
	for _, want := range []string{"a", "b"} {
		m := recv(t, r)
		if m.Value != want {
			t.Fatalf("got %v, want %s", m.Value, want)
		}
		accept(t, r, m)
	}
	// A closing detach deletes the subscription.
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, si := range ts.eng.Subscriptions() {
		if si.Durable {
			t.Fatalf("durable subscription survived a closed detach: %+v", si)
		}
	}
}

func TestSharedSubscription(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	opts := func(name string) *amqp.ReceiverOptions {
		return &amqp.ReceiverOptions{Name: name, SourceCapabilities: []string{"topic", "shared", "global"}}
	}
	c1 := ts.dial(t, nil)
	c2 := ts.dial(t, nil)
	r1 := receiver(t, session(t, c1), "events", opts("shared-sub|global-volatile1"))
	r2 := receiver(t, session(t, c2), "events", opts("shared-sub|global-volatile1"))
	snd := sender(t, session(t, c1), "topic://events", nil)
	for range 4 {
		send(t, snd, text("e"))
	}
	got := 0
	for _, r := range []*amqp.Receiver{r1, r2} {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			m, err := r.Receive(ctx, nil)
			cancel()
			if err != nil {
				break
			}
			accept(t, r, m)
			got++
		}
	}
	if got != 4 {
		t.Fatalf("shared subscription delivered %d messages, want each of 4 once", got)
	}
}

func TestDynamicTemporaryQueue(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	r := receiver(t, s, "", &amqp.ReceiverOptions{DynamicAddress: true, SourceCapabilities: []string{"temporary-queue"}})
	addr := r.Address()
	if !strings.HasPrefix(addr, "temp-queue://") {
		t.Fatalf("dynamic address %q", addr)
	}
	other := ts.dial(t, nil)
	send(t, sender(t, session(t, other), addr, nil), text("reply"))
	m := recv(t, r)
	if m.Value != "reply" {
		t.Fatalf("got %v", m.Value)
	}
	accept(t, r, m)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, d := range ts.eng.Destinations() {
		if d.Destination().Kind == message.TempQueue {
			t.Fatalf("temporary queue outlived its link: %+v", d)
		}
	}
}

func TestDrain(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "drain", nil)
	send(t, snd, text("1"))
	send(t, snd, text("2"))
	r := receiver(t, s, "drain", &amqp.ReceiverOptions{Credit: -1})
	if err := r.IssueCredit(5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1", "2"} {
		m := recv(t, r)
		if m.Value != want {
			t.Fatalf("got %v", m.Value)
		}
		accept(t, r, m)
	}
	// Three credits are left: the drain uses them up and is answered.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.DrainCredit(ctx, nil); err != nil {
		t.Fatalf("drain not answered: %v", err)
	}
	// A drain with no credit is answered too.
	if err := r.DrainCredit(ctx, nil); err != nil {
		t.Fatalf("drain of an empty queue not answered: %v", err)
	}
	// After a drain, nothing is sent without new credit.
	send(t, snd, text("3"))
	recvNone(t, r, 200*time.Millisecond)
	if err := r.IssueCredit(1); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, r); m.Value != "3" {
		t.Fatalf("got %v", m.Value)
	}
}

func TestPreSettled(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "presettled", &amqp.SenderOptions{SettlementMode: ptr(amqp.SenderSettleModeSettled)})
	for range 3 {
		send(t, snd, text("fire-and-forget"))
	}
	r := receiver(t, s, "presettled", &amqp.ReceiverOptions{RequestedSenderSettleMode: ptr(amqp.SenderSettleModeSettled)})
	for range 3 {
		if m := recv(t, r); m.Value != "fire-and-forget" {
			t.Fatalf("got %v", m.Value)
		}
	}
	dest := message.Destination{Kind: message.Queue, Name: "presettled"}
	waitFor(t, func() bool {
		info, _ := ts.eng.DestinationInfo(dest)
		return info.Messages == 0
	}, "pre-settled deliveries were not acknowledged")
}

func TestLargeMessageOverMaxFrameSize(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{MaxFrameSize: 4096}, engine.Config{})
	c := ts.dial(t, &amqp.ConnOptions{MaxFrameSize: 4096})
	s := session(t, c)
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB
	send(t, sender(t, s, "big", nil), &amqp.Message{Data: [][]byte{big}})
	r := receiver(t, s, "big", nil)
	m := recv(t, r)
	if !bytes.Equal(m.GetData(), big) {
		t.Fatalf("large message changed: %d bytes", len(m.GetData()))
	}
	accept(t, r, m)
}

func TestMaxMessageSize(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{MaxFrameSize: 4096, MaxMessageSize: 10000}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	snd := sender(t, s, "limited", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := snd.Send(ctx, &amqp.Message{Data: [][]byte{make([]byte, 20000)}}, nil)
	if err == nil {
		t.Fatal("message over the maximum accepted")
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{IdleTimeout: 300 * time.Millisecond}, engine.Config{})
	// go-amqp sends empty frames at half the server's idle time-out: the
	// connection lives on.
	c := ts.dial(t, nil)
	s := session(t, c)
	time.Sleep(time.Second)
	send(t, sender(t, s, "alive", nil), text("still open"))

	// A silent client is closed with amqp:resource-limit-exceeded.
	rc := rawDial(t, ts.addr)
	rc.open(t, 0)
	f := rc.expectClose(t, 3*time.Second)
	if e := closeErr(f); e == nil || e.Condition != "amqp:resource-limit-exceeded" {
		t.Fatalf("silent client closed with %v", e)
	}
}

func TestCrossProtocolStompToAMQP(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	ssrv := stomp.NewServer(ts.eng, stomp.Options{})
	t.Cleanup(func() { _ = ssrv.Shutdown(context.Background()) })
	stompAddr := serveStomp(t, ssrv)

	sc, err := gostomp.Dial("tcp", stompAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Disconnect()

	c := ts.dial(t, nil)
	s := session(t, c)
	r := receiver(t, s, "xproto", nil)
	err = sc.Send("/queue/xproto", "text/plain", []byte("from stomp"),
		gostomp.SendOpt.Receipt,
		gostomp.SendOpt.Header("persistent", "true"),
		gostomp.SendOpt.Header("priority", "6"),
		gostomp.SendOpt.Header("correlation-id", "c-7"),
		gostomp.SendOpt.Header("reply-to", "/queue/answers"),
		gostomp.SendOpt.Header("type", "Order"),
		gostomp.SendOpt.Header("region", "emea"))
	if err != nil {
		t.Fatal(err)
	}
	m := recv(t, r)
	if m.Value != "from stomp" || !m.Header.Durable || m.Header.Priority != 6 {
		t.Fatalf("message %v header %+v", m.Value, m.Header)
	}
	p := m.Properties
	if p.CorrelationID != "c-7" || *p.ReplyTo != "answers" || *p.Subject != "Order" {
		t.Fatalf("properties %+v", p)
	}
	if m.Annotations["x-opt-jms-reply-to"] != int8(0) {
		t.Fatalf("reply-to type %v", m.Annotations)
	}
	if m.ApplicationProperties["region"] != "emea" {
		t.Fatalf("application-properties %v", m.ApplicationProperties)
	}
	accept(t, r, m)

	// And back: AMQP to STOMP, typed properties as their strings.
	sub, err := sc.Subscribe("/queue/back", gostomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	send(t, sender(t, s, "back", nil), &amqp.Message{
		Header:                &amqp.MessageHeader{Durable: true, Priority: 8},
		Properties:            &amqp.MessageProperties{CorrelationID: "c-8", Subject: ptr("Reply"), ReplyTo: ptr("topic://t")},
		ApplicationProperties: map[string]any{"count": int32(42), "ok": true},
		Value:                 "from amqp",
	})
	select {
	case sm := <-sub.C:
		if sm.Err != nil {
			t.Fatal(sm.Err)
		}
		h := sm.Header
		if string(sm.Body) != "from amqp" || h.Get("persistent") != "true" || h.Get("priority") != "8" ||
			h.Get("correlation-id") != "c-8" || h.Get("type") != "Reply" || h.Get("reply-to") != "/topic/t" ||
			h.Get("count") != "42" || h.Get("ok") != "true" {
			t.Fatalf("STOMP message %q headers %v", sm.Body, h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no STOMP message")
	}
}

func TestClientIDInUseRefused(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	_ = ts.dial(t, &amqp.ConnOptions{ContainerID: "only-one"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The server answers with an open (marked connection-establishment-failed)
	// and closes with the reason: go-amqp sees it on the next call.
	c2, err := amqp.Dial(ctx, "amqp://"+ts.addr, &amqp.ConnOptions{ContainerID: "only-one"})
	if err == nil {
		defer c2.Close()
		_, err = c2.NewSession(ctx, nil)
	}
	re := remoteErr(err)
	if re == nil || re.Condition != amqp.ErrCondInvalidField || re.Info["invalid-field"] != "container-id" {
		t.Fatalf("second connection with the same client ID: %v", err)
	}
}

func TestDeletedDestinationDetachesConsumer(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	r := receiver(t, s, "doomed", nil)
	if err := ts.eng.DeleteDestination(context.Background(), message.Destination{Kind: message.Queue, Name: "doomed"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := r.Receive(ctx, nil)
	if err == nil {
		t.Fatal("receive after the queue was deleted succeeded")
	}
	if re := remoteErr(err); re != nil && re.Condition != amqp.ErrCondResourceDeleted {
		t.Fatalf("receive after the queue was deleted: %v", err)
	}
	// The connection carries on.
	send(t, sender(t, session(t, c), "other", nil), text("fine"))
}

// Sluice's attach property sluice-redelivery-delay sets the session
// redelivery delay of a receiving link: a delivery-failed message waits it
// out.
func TestRedeliveryDelayAttachProperty(t *testing.T) {
	ts := startServer(t, sluiceamqp.Options{}, engine.Config{})
	c := ts.dial(t, nil)
	s := session(t, c)
	send(t, sender(t, s, "delayed", nil), text("m"))
	r := receiver(t, s, "delayed", &amqp.ReceiverOptions{Properties: map[string]any{"sluice-redelivery-delay": int64(400)}})
	m := recv(t, r)
	failed := time.Now()
	if err := r.ModifyMessage(context.Background(), m, &amqp.ModifyMessageOptions{DeliveryFailed: true}); err != nil {
		t.Fatal(err)
	}
	recvNone(t, r, 200*time.Millisecond)
	m = recv(t, r)
	if time.Since(failed) < 350*time.Millisecond || m.Header.DeliveryCount != 1 {
		t.Fatalf("redelivered after %s with delivery-count %d", time.Since(failed), m.Header.DeliveryCount)
	}
	accept(t, r, m)
}
