package broker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// The tests of this file check issue #17's item 4 across a leader change:
// what the old leader recorded about redeliveries, schedules, durable
// subscriptions and quotas is what the new leader serves. Each starts its
// own three-node cluster, sets its state up on the leader over STOMP, shuts
// that leader down and checks, over STOMP on the new leader, what a client
// sees.

// failOver shuts the leader l down and returns the new leader once it
// accepts a STOMP client (within 20 s) and the time that took.
func (c *testCluster) failOver(l int) (int, time.Duration) {
	c.t.Helper()
	stopped := time.Now()
	c.stop(l)
	nl := c.leader(20 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := dialClusterSTOMP(c.member(nl).STOMP)
		if err == nil {
			_ = conn.Disconnect()
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("new leader n%d refuses STOMP clients: %v", nl+1, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(stopped)
	c.t.Logf("leader n%d shut down; n%d serves %v later", l+1, nl+1, took.Round(time.Millisecond))
	return nl, took
}

func mustDialSTOMP(t *testing.T, addr string, opts ...func(*stomp.Conn) error) *stomp.Conn {
	t.Helper()
	opts = append([]func(*stomp.Conn) error{stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.WriteChannelCapacity(4096), stomp.ConnOpt.ReadChannelCapacity(4096)}, opts...)
	conn, err := stomp.Dial("tcp", addr, opts...)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Disconnect() })
	return conn
}

func mustSubscribe(t *testing.T, conn *stomp.Conn, dest string, opts ...func(*frame.Frame) error) *stomp.Subscription {
	t.Helper()
	sub, err := conn.Subscribe(dest, stomp.AckClientIndividual, opts...)
	if err != nil {
		t.Fatalf("subscribe %s: %v", dest, err)
	}
	return sub
}

// sendPersistent sends body to dest with a receipt; the receipt means the
// send is committed on a majority.
func sendPersistent(t *testing.T, conn *stomp.Conn, dest, body string, opts ...func(*frame.Frame) error) {
	t.Helper()
	opts = append([]func(*frame.Frame) error{stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")}, opts...)
	if err := conn.Send(dest, "text/plain", []byte(body), opts...); err != nil {
		t.Fatalf("send %q to %s: %v", body, dest, err)
	}
}

// receive returns the next message of sub within d.
func receive(t *testing.T, sub *stomp.Subscription, d time.Duration, what string) *stomp.Message {
	t.Helper()
	select {
	case m := <-sub.C:
		if m == nil || m.Err != nil {
			t.Fatalf("%s: subscription ended: %v", what, m)
		}
		return m
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
	}
	return nil
}

// checkDelivery checks a delivery's body, redelivered flag and delivery
// count headers.
func checkDelivery(t *testing.T, m *stomp.Message, body string, redelivered bool, count int) {
	t.Helper()
	if string(m.Body) != body {
		t.Errorf("got %q, want %q", m.Body, body)
		return
	}
	if got := m.Header.Get("redelivered") == "true"; got != redelivered {
		t.Errorf("%s: redelivered %q, want %v", body, m.Header.Get("redelivered"), redelivered)
	}
	for _, h := range []string{"JMSXDeliveryCount", "x-delivery-count"} {
		if got := m.Header.Get(h); got != strconv.Itoa(count) {
			t.Errorf("%s: %s %q, want %d", body, h, got, count)
		}
	}
}

// destMessages is what the engine of node i reports for dest: the
// messages it holds and how many of them are scheduled.
func (c *testCluster) destMessages(i int, dest string) (messages int64, scheduled int) {
	c.t.Helper()
	d, err := message.ParseDestination(dest)
	if err != nil {
		c.t.Fatal(err)
	}
	in, err := c.nodes[i].Engine().DestinationInfo(d)
	if err != nil {
		c.t.Fatalf("n%d: %v", i+1, err)
	}
	return in.Messages, in.Scheduled
}

// A message NACKed on the old leader comes back from the new one flagged
// redelivered with delivery count 2, not before the queue's redelivery
// delay (counted from the NACK) has passed; a message delivered and never
// acknowledged when the old leader went away comes back flagged too. The
// queue's redelivery limit (1) counts the old leader's delivery: the next
// NACK on the new leader moves the message to the error destination, with
// the reason, original destination and delivery count a consumer there
// reads.
func TestClusterCarryOverRedeliveryCountAndDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	const (
		queue = "/queue/carry.redeliver"
		dlq   = "/queue/carry.dlq"
		delay = 6 * time.Second
	)
	d, limit := config.Duration(delay), int32(1)
	c := newTestCluster(t, config.Destination{Match: "carry.redeliver", Kind: "queue",
		RedeliveryDelayOverride: &d, RedeliveryLimit: &limit, ErrorDestination: dlq})
	l := c.leader(15 * time.Second)

	conn := mustDialSTOMP(t, c.member(l).STOMP)
	sendPersistent(t, conn, queue, "poison")
	sendPersistent(t, conn, queue, "held")
	sub := mustSubscribe(t, conn, queue, stomp.SubscribeOpt.Header("activemq.prefetchSize", "2"))
	poison := receive(t, sub, 10*time.Second, "first delivery on the old leader")
	checkDelivery(t, poison, "poison", false, 1)
	held := receive(t, sub, 10*time.Second, "second delivery on the old leader")
	checkDelivery(t, held, "held", false, 1)
	nacked := time.Now()
	if err := conn.Nack(poison); err != nil {
		t.Fatal(err)
	}
	// A send's receipt on the same connection comes after the NACK's
	// write (its due time) is committed: frames are taken in order.
	sendPersistent(t, conn, "/queue/carry.barrier", "barrier")
	// "held" stays delivered and unacknowledged as the leader goes away.

	nl, _ := c.failOver(l)
	serving := time.Now()
	if n, _ := c.destMessages(nl, queue); n != 2 {
		t.Errorf("the new leader holds %d messages in %s, want 2", n, queue)
	}
	nconn := mustDialSTOMP(t, c.member(nl).STOMP)
	nsub := mustSubscribe(t, nconn, queue, stomp.SubscribeOpt.Header("activemq.prefetchSize", "2"))
	got := map[string]*stomp.Message{}
	at := map[string]time.Time{}
	for len(got) < 2 {
		m := receive(t, nsub, delay+20*time.Second, fmt.Sprintf("redeliveries on the new leader (have %d of 2)", len(got)))
		got[string(m.Body)], at[string(m.Body)] = m, time.Now()
	}
	if got["poison"] == nil || got["held"] == nil {
		t.Fatalf("the new leader delivered %v, want poison and held", mapKeys(got))
	}
	checkDelivery(t, got["held"], "held", true, 2)
	checkDelivery(t, got["poison"], "poison", true, 2)
	after := at["poison"].Sub(nacked)
	switch {
	case after < delay:
		t.Errorf("poison redelivered %v after its NACK, before the redelivery delay of %v", after.Round(time.Millisecond), delay)
	case serving.After(nacked.Add(delay)):
		t.Logf("the new leader served only %v after the NACK, past the delay: the delay was not exercised", serving.Sub(nacked).Round(time.Millisecond))
	default:
		t.Logf("poison redelivered %v after its NACK (delay %v); held %v after the new leader served",
			after.Round(time.Millisecond), delay, at["held"].Sub(serving).Round(time.Millisecond))
	}

	// Redelivered once (limit 1), the next failure is its last.
	if err := nconn.Ack(got["held"]); err != nil {
		t.Fatal(err)
	}
	if err := nconn.Nack(got["poison"]); err != nil {
		t.Fatal(err)
	}
	dsub := mustSubscribe(t, nconn, dlq)
	m := receive(t, dsub, 10*time.Second, "the error destination on the new leader")
	if string(m.Body) != "poison" {
		t.Fatalf("error destination got %q, want poison", m.Body)
	}
	for h, want := range map[string]string{
		"JMS_SluiceErrorReason":         "redelivery limit exceeded",
		"JMS_SluiceOriginalDestination": queue,
		"JMS_SluiceDeliveryCount":       "2",
	} {
		if got := m.Header.Get(h); got != want {
			t.Errorf("error destination's copy: %s %q, want %q", h, got, want)
		}
	}
	if err := nconn.Ack(m); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, queue+" empty on the new leader", func() bool {
		n, _ := c.destMessages(nl, queue)
		return n == 0
	})
}

// Messages sent on the old leader with a delivery time
// (sluice-delivery-time, absolute) and a time to deliver
// (AMQ_SCHEDULED_DELAY, relative) are not delivered by the old leader
// before it goes away, are held as scheduled by the new one, and are
// delivered by it once their time comes, not before, as first deliveries.
// One is due more than 30 s ahead, so that it is kept in the store's time
// index only (paging) when it is sent.
func TestClusterCarryOverSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	const (
		queue = "/queue/carry.sched"
		ahead = 8 * time.Second
		far   = 32 * time.Second
	)
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)

	conn := mustDialSTOMP(t, c.member(l).STOMP)
	early := mustSubscribe(t, conn, queue)
	due := map[string]time.Time{}
	at := time.Now().Add(ahead).Truncate(time.Millisecond)
	sendPersistent(t, conn, queue, "at", stomp.SendOpt.Header("sluice-delivery-time", strconv.FormatInt(at.UnixMilli(), 10)))
	due["at"] = at
	due["delayed"] = time.Now().Add(ahead)
	sendPersistent(t, conn, queue, "delayed", stomp.SendOpt.Header("AMQ_SCHEDULED_DELAY", strconv.FormatInt(ahead.Milliseconds(), 10)))
	due["far"] = time.Now().Add(far)
	sendPersistent(t, conn, queue, "far", stomp.SendOpt.Header("AMQ_SCHEDULED_DELAY", strconv.FormatInt(far.Milliseconds(), 10)))
	if n, sched := c.destMessages(l, queue); n != 3 || sched != 3 {
		t.Errorf("the old leader holds %d messages, %d scheduled, want 3 and 3", n, sched)
	}

	nl, _ := c.failOver(l)
	select {
	case m := <-early.C:
		if m.Err == nil {
			t.Errorf("the old leader delivered %q before its time", m.Body)
		}
	default:
	}
	serving := time.Now()
	if serving.Before(at) {
		if n, sched := c.destMessages(nl, queue); n != 3 || sched != 3 {
			t.Errorf("the new leader holds %d messages, %d scheduled, before their time, want 3 and 3", n, sched)
		}
	} else {
		t.Logf("the new leader served only after the delivery time: \"not before\" was not exercised")
	}
	nconn := mustDialSTOMP(t, c.member(nl).STOMP)
	sub := mustSubscribe(t, nconn, queue)
	for range 3 {
		m := receive(t, sub, far+20*time.Second, "scheduled messages on the new leader")
		now := time.Now()
		body := string(m.Body)
		want, ok := due[body]
		if !ok {
			t.Fatalf("unexpected or duplicate message %q", body)
		}
		delete(due, body)
		checkDelivery(t, m, body, false, 1)
		if now.Before(want) {
			t.Errorf("%s delivered %v before its delivery time", body, want.Sub(now).Round(time.Millisecond))
		}
		if late := now.Sub(want); late > 10*time.Second {
			t.Errorf("%s delivered %v after its delivery time", body, late.Round(time.Millisecond))
		}
		if body == "at" {
			if got := m.Header.Get("sluice-delivery-time"); got != strconv.FormatInt(at.UnixMilli(), 10) {
				t.Errorf("at: sluice-delivery-time %q, want %d", got, at.UnixMilli())
			}
		}
		t.Logf("%s delivered %v after its delivery time", body, now.Sub(want).Round(time.Millisecond))
		if err := nconn.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
}

// A durable subscription made on the old leader (client-id and
// activemq.subscriptionName) keeps, while its subscriber is away and the
// leader changes, the messages published for it; the subscriber,
// returning to the new leader with the same client ID and name, gets them
// in order as first deliveries, the one it held unacknowledged when it
// left flagged redelivered, and not the one it acknowledged.
func TestClusterCarryOverDurableSubscriptions(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	const (
		topic    = "/topic/carry.news"
		clientID = "carry-app"
		subName  = "news"
	)
	durable := stomp.SubscribeOpt.Header("activemq.subscriptionName", subName)
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)
	lm := c.member(l)

	pub := mustDialSTOMP(t, lm.STOMP)
	subc, err := stomp.Dial("tcp", lm.STOMP, stomp.ConnOpt.HeartBeat(0, 0), stomp.ConnOpt.Header("client-id", clientID),
		stomp.ConnOpt.WriteChannelCapacity(4096), stomp.ConnOpt.ReadChannelCapacity(4096))
	if err != nil {
		t.Fatal(err)
	}
	sub := mustSubscribe(t, subc, topic, durable)
	// The subscription exists once it gets what is published after it.
	var first *stomp.Message
	for j := 0; first == nil; j++ {
		if j == 50 {
			t.Fatal("the durable subscription got nothing of 50 publishes")
		}
		sendPersistent(t, pub, topic, "acked")
		select {
		case m := <-sub.C:
			first = m
		case <-time.After(100 * time.Millisecond):
		}
	}
	checkDelivery(t, first, "acked", false, 1)
	if err := subc.Ack(first); err != nil {
		t.Fatal(err)
	}
	// Publishes made before the subscription existed were not for it;
	// those made after are all delivered. Drain those extra "acked" ones.
	sendPersistent(t, pub, topic, "held")
	var held *stomp.Message
	for held == nil {
		m := receive(t, sub, 10*time.Second, "held on the old leader")
		switch string(m.Body) {
		case "acked":
			if err := subc.Ack(m); err != nil {
				t.Fatal(err)
			}
		case "held":
			held = m
		default:
			t.Fatalf("unexpected %q", m.Body)
		}
	}
	checkDelivery(t, held, "held", false, 1)
	// The subscriber goes away with "held" unacknowledged; the DISCONNECT
	// receipt comes after its ACKs are taken.
	if err := subc.Disconnect(); err != nil {
		t.Fatal(err)
	}
	const away = 3
	for j := range away {
		sendPersistent(t, pub, topic, fmt.Sprintf("away-%d", j))
	}
	if n, _ := c.destMessages(l, topic); n != 1+away {
		t.Errorf("the old leader holds %d messages for the subscription, want %d", n, 1+away)
	}

	nl, _ := c.failOver(l)
	nm := c.member(nl)
	if n, _ := c.destMessages(nl, topic); n != 1+away {
		t.Errorf("the new leader holds %d messages for the subscription, want %d", n, 1+away)
	}
	nsubc := mustDialSTOMP(t, nm.STOMP, stomp.ConnOpt.Header("client-id", clientID))
	nsub := mustSubscribe(t, nsubc, topic, durable)
	npub := mustDialSTOMP(t, nm.STOMP)
	sendPersistent(t, npub, topic, "after")
	var bodies []string
	for len(bodies) == 0 || bodies[len(bodies)-1] != "after" {
		if len(bodies) > 2+away {
			t.Fatalf("the resumed subscription got %v", bodies)
		}
		m := receive(t, nsub, 10*time.Second, fmt.Sprintf("the resumed subscription on the new leader (got %v)", bodies))
		body := string(m.Body)
		bodies = append(bodies, body)
		if body == "held" {
			checkDelivery(t, m, body, true, 2)
		} else {
			checkDelivery(t, m, body, false, 1)
		}
		if err := nsubc.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"held"}
	for j := range away {
		want = append(want, fmt.Sprintf("away-%d", j))
	}
	want = append(want, "after")
	if strings.Join(bodies, ",") != strings.Join(want, ",") {
		t.Errorf("the resumed subscription got %v, want %v", bodies, want)
	}
}

// A queue's quota filled on the old leader (by messages, and by bytes) is
// still full on the new leader: a send there is refused with an ERROR the
// STOMP client reads; once a consumer on the new leader takes one message
// there is room for exactly one more.
func TestClusterCarryOverQuotas(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	body := strings.Repeat("q", 1000)
	cases := []struct {
		name string
		dest config.Destination
		fits int
	}{
		{"messages", config.Destination{Match: "carry.quota.messages", Kind: "queue", MaxMessages: 3}, 3},
		// A message's size is its encoding: the 1000-byte body and its
		// header fields, so two fit and three do not.
		{"bytes", config.Destination{Match: "carry.quota.bytes", Kind: "queue", MaxBytes: 2600}, 2},
	}
	var dests []config.Destination
	for _, tc := range cases {
		dests = append(dests, tc.dest)
	}
	c := newTestCluster(t, dests...)
	l := c.leader(15 * time.Second)

	// trySend sends one message on a connection of its own (a refusal
	// closes the connection).
	trySend := func(addr, dest, b string) error {
		conn, err := dialClusterSTOMP(addr)
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		err = conn.Send(dest, "text/plain", []byte(b), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"))
		if err != nil {
			// The ERROR closed the connection: no DISCONNECT receipt
			// would come.
			_ = conn.MustDisconnect()
			return err
		}
		_ = conn.Disconnect()
		return nil
	}
	wantFull := func(err error, where, dest string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: a send to the full %s was confirmed", where, dest)
		} else if !strings.Contains(err.Error(), "is full") {
			t.Errorf("%s: the refusal %q does not say the destination is full", where, err)
		}
	}
	for _, tc := range cases {
		dest := "/queue/" + tc.dest.Match
		for j := range tc.fits {
			if err := trySend(c.member(l).STOMP, dest, fmt.Sprintf("%s-%d%s", tc.name, j, body)); err != nil {
				t.Fatalf("%s: send %d of %d within the quota: %v", tc.name, j+1, tc.fits, err)
			}
		}
		wantFull(trySend(c.member(l).STOMP, dest, "over"+body), "old leader", dest)
	}

	nl, _ := c.failOver(l)
	nm := c.member(nl)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dest := "/queue/" + tc.dest.Match
			if n, _ := c.destMessages(nl, dest); n != int64(tc.fits) {
				t.Errorf("the new leader holds %d messages in %s, want %d", n, dest, tc.fits)
			}
			err := trySend(nm.STOMP, dest, "over"+body)
			wantFull(err, "new leader", dest)
			t.Logf("the new leader refuses a send to %s: %v", dest, err)

			conn := mustDialSTOMP(t, nm.STOMP)
			sub := mustSubscribe(t, conn, dest)
			m := receive(t, sub, 10*time.Second, "a message within the quota on the new leader")
			if want := tc.name + "-0" + body; string(m.Body) != want {
				t.Errorf("first message %.20q…, want %.20q…", m.Body, want)
			}
			if err := conn.Ack(m); err != nil {
				t.Fatal(err)
			}
			if err := conn.Disconnect(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "the ACK makes room", func() bool {
				n, _ := c.destMessages(nl, dest)
				return n == int64(tc.fits-1)
			})
			if err := trySend(nm.STOMP, dest, "again"+body); err != nil {
				t.Errorf("a send after a message left: %v", err)
			}
			wantFull(trySend(nm.STOMP, dest, "over-again"+body), "new leader after one left", dest)
		})
	}
}

func mapKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
