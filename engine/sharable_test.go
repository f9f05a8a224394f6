package engine_test

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
)

// Seed, "Creating a Sharable Subscription Policy": "Consumers can share a
// non-durable subscriptions only if they have the same Client ID and
// Client ID Policy". Sharable non-durable subscribers of a topic with the
// same client ID, policy and selector split its messages; any other
// subscriber has a subscription of its own and gets every message.
func TestSharableNonDurableSubscriptions(t *testing.T) {
	h := newBroker(t, engine.Config{})
	sharable := engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted, SharingPolicy: engine.Sharable}
	opts := engine.ConsumerOptions{Prefetch: 1}
	c1, c2 := h.conn(sharable), h.conn(sharable)
	a := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
	b := consumer(t, h.session(c2, engine.AutoAcknowledge), topicT, opts)

	// Subscribers that do not qualify: another client ID, the Exclusive
	// policy with the same client ID, another selector, noLocal.
	other := h.conn(engine.ConnectionOptions{ClientID: "other", ClientIDPolicy: engine.Unrestricted, SharingPolicy: engine.Sharable})
	exclusive := h.conn(engine.ConnectionOptions{ClientID: "cid", ClientIDPolicy: engine.Unrestricted})
	c3 := h.conn(sharable)
	independent := []*engine.Consumer{
		consumer(t, h.session(other, engine.AutoAcknowledge), topicT, opts),
		consumer(t, h.session(exclusive, engine.AutoAcknowledge), topicT, opts),
		consumer(t, h.session(c3, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{Selector: "TRUE"}),
		consumer(t, h.session(c3, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{NoLocal: true}),
	}
	for _, c := range []*engine.Connection{c1, c2, other, exclusive, c3} {
		_ = c.Start()
	}
	const n = 20
	checkDistributed(t, h, []*engine.Consumer{a, b}, topicT, n)
	for i, c := range independent {
		got := recvAll(t, c, 200*time.Millisecond)
		if len(got) != n {
			t.Fatalf("independent subscriber %d got %d of %d messages", i, len(got), n)
		}
	}

	// The shared subscription ends with its last subscriber: a new one
	// starts empty.
	_ = a.Close()
	_ = b.Close()
	send(t, h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge), topicT, "nobody", engine.SendOptions{})
	late := consumer(t, h.session(c1, engine.AutoAcknowledge), topicT, opts)
	recvNone(t, late, 100*time.Millisecond)
}
