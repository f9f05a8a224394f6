package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
	"github.com/sluicemq/sluice/engine/message"
)

// Definitions are kept per namespace across a restart, replaced and
// deleted by key, and leave the engine's own records alone.
func TestDefinitions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	list := func(b *engine.Broker, ns string) string {
		t.Helper()
		var out []string
		if err := b.Definitions(ns, func(k string, v []byte) error { out = append(out, k+"="+string(v)); return nil }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, ",")
	}
	b, closeB := enginetest.Durable(t, dir, engine.Config{})
	for _, d := range []struct{ ns, k, v string }{{"a", "x", "1"}, {"a", "y", "2"}, {"ab", "x", "other"}, {"a", "x", "3"}} {
		if err := b.PutDefinition(ctx, d.ns, d.k, []byte(d.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteDefinition(ctx, "a", "y"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteDefinition(ctx, "a", "never"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if err := b.PutDefinition(ctx, "", "k", nil); err == nil {
		t.Fatal("an empty namespace was accepted")
	}
	if err := b.PutDefinition(ctx, "a", "big", make([]byte, 70<<10)); err == nil {
		t.Fatal("an oversize definition was accepted")
	}
	closeB()
	b, closeB = enginetest.Durable(t, dir, engine.Config{})
	defer closeB()
	if got := list(b, "a"); got != "x=3" {
		t.Fatalf("namespace a after a restart: %q, want x=3", got)
	}
	if got := list(b, "ab"); got != "x=other" {
		t.Fatalf("namespace ab: %q", got)
	}
	if got := list(b, "none"); got != "" {
		t.Fatalf("an empty namespace lists %q", got)
	}
}

func TestExistsAndHasSubscriptions(t *testing.T) {
	b, err := engine.New(context.Background(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	topic := message.Destination{Kind: message.Topic, Name: "t"}
	if b.DestinationExists(topic) || b.HasSubscriptions(topic) {
		t.Fatal("a topic that does not exist")
	}
	if _, err := b.CreateDestination(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	if !b.DestinationExists(topic) || b.HasSubscriptions(topic) {
		t.Fatal("a new topic: exists, without subscriptions")
	}
	conn, err := b.Connect(engine.ConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := sess.CreateConsumer(topic, engine.ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !b.HasSubscriptions(topic) {
		t.Fatal("a subscriber's subscription not seen")
	}
	_ = cons.Close()
	if b.HasSubscriptions(topic) {
		t.Fatal("a closed subscriber's subscription still seen")
	}
	if b.HasSubscriptions(message.Destination{Kind: message.Queue, Name: "t"}) {
		t.Fatal("a queue has no subscriptions")
	}
}
