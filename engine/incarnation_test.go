package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// WebLogic JMS "Managing Your Applications", "Message Timestamps for
// Troubleshooting Deleted Destinations": the configured creation time of a
// destination is its version; at restart, leftover persistent messages of an
// older version are discarded, and a stored version newer than the configured
// one stops the broker.

func configured(created time.Time, dests ...message.Destination) []engine.ConfiguredDestination {
	out := make([]engine.ConfiguredDestination, len(dests))
	for i, d := range dests {
		out[i] = engine.ConfiguredDestination{Destination: d, Created: created}
	}
	return out
}

var (
	t1 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 = t1.Add(24 * time.Hour)
	t0 = t1.Add(-24 * time.Hour)
)

// Configured destinations exist from the start, with AutoCreate off, with
// or without a store.
func TestConfiguredDestinationsExist(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("persistent=", persistent), func(t *testing.T) {
			h := newStrict(t, persistent, "", engine.Config{Destinations: configured(t1, queueA, topicT)})
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.AutoAcknowledge)
			qc := consumer(t, s, queueA, engine.ConsumerOptions{})
			tc := consumer(t, s, topicT, engine.ConsumerOptions{})
			_ = c.Start()
			send(t, s, queueA, "q", engine.SendOptions{})
			send(t, s, topicT, "t", engine.SendOptions{})
			if body(recv(t, qc)) != "q" || body(recv(t, tc)) != "t" {
				t.Fatal("configured destinations")
			}
			if _, err := s.CreateProducer(queueB); !errors.Is(err, engine.ErrInvalidDestination) {
				t.Fatalf("unconfigured queue: %v", err)
			}
		})
	}
}

func TestConfiguredDestinationErrors(t *testing.T) {
	cases := map[string][]engine.ConfiguredDestination{
		"twice":          append(configured(t1, queueA), configured(t2, queueA)...),
		"temporary":      configured(t1, message.Destination{Kind: message.TempQueue, Name: "x"}),
		"no-name":        configured(t1, message.Destination{Kind: message.Queue}),
		"no-destination": configured(t1, message.Destination{}),
	}
	for name, dests := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := engine.New(context.Background(), engine.Config{Destinations: dests})
			if err == nil {
				_ = b.Close()
				t.Fatal("accepted")
			}
		})
	}
}

// Restart with the same, a later and an earlier configured creation time.
func TestDestinationIncarnationAtRestart(t *testing.T) {
	for _, dest := range []message.Destination{queueA, topicT} {
		t.Run(dest.Kind.String(), func(t *testing.T) {
			h := newStrict(t, true, "", engine.Config{Destinations: configured(t1, dest)})
			fill := func() {
				t.Helper()
				c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
				s := h.session(c, engine.AutoAcknowledge)
				if dest.Kind.IsTopic() {
					_ = consumer(t, s, dest, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"}).Close()
				}
				send(t, s, dest, "old", engine.SendOptions{})
				_ = c.Close()
			}
			count := func() int {
				t.Helper()
				c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
				defer c.Close()
				s := h.session(c, engine.AutoAcknowledge)
				var cons *engine.Consumer
				if dest.Kind.IsTopic() {
					cons = consumer(t, s, dest, engine.ConsumerOptions{Durable: true, SubscriptionName: "sub"})
				} else {
					cons = consumer(t, s, dest, engine.ConsumerOptions{})
				}
				_ = c.Start()
				n := len(recvAll(t, cons, 50*time.Millisecond))
				if err := cons.Close(); err != nil {
					t.Fatal(err)
				}
				return n
			}
			fill()

			// Same creation time: the messages are this incarnation's.
			h.restartStrict()
			if n := count(); n != 1 {
				t.Fatalf("same creation time: %d messages, want 1", n)
			}
			fill()

			// A newer stored version than configured: the broker does not
			// start, and says what to do; nothing is lost by trying.
			h.close()
			st, _ := openDurable(t, h.dir)
			cfg := h.cfg
			cfg.Store = st
			cfg.Destinations = configured(t0, dest)
			b, err := engine.New(context.Background(), cfg)
			if err == nil {
				_ = b.Close()
				_ = st.Close()
				t.Fatal("started with a destination newer in the store than in the configuration")
			}
			_ = st.Close()
			msg := err.Error()
			for _, want := range []string{dest.String(), "clock", fmt.Sprint(t1.UnixMilli())} {
				if !strings.Contains(msg, want) {
					t.Fatalf("error %q does not mention %q", msg, want)
				}
			}
			h.cfg.Destinations = configured(t1, dest)
			h.restartStrict()
			if n := count(); n != 1 {
				t.Fatalf("after the refused start: %d messages, want 1", n)
			}
			fill()

			// An unknown creation time (zero) accepts what is stored.
			h.cfg.Destinations = configured(time.Time{}, dest)
			h.restartStrict()
			if n := count(); n != 1 {
				t.Fatalf("zero creation time: %d messages, want 1", n)
			}
			fill()

			// A later configured creation time: the destination was deleted
			// and re-created while the broker was down; the leftovers go.
			h.cfg.Destinations = configured(t2, dest)
			h.restartStrict()
			if n := count(); n != 0 {
				t.Fatalf("re-created destination: %d leftover messages", n)
			}
			if dest.Kind.IsTopic() {
				// The re-created subscription (by count) is the new one.
				c := h.conn(engine.ConnectionOptions{ClientID: "cid"})
				if err := h.session(c, engine.AutoAcknowledge).Unsubscribe(context.Background(), "sub"); err != nil {
					t.Fatal(err)
				}
				_ = c.Close()
			}
			fill()
			// The new version is recorded: the next start keeps its messages,
			// and the old configured time is now older than the store's.
			h.restartStrict()
			if n := count(); n != 1 {
				t.Fatalf("second start of the new incarnation: %d messages, want 1", n)
			}
			storeEmptyAfterDrain(t, h)
		})
	}
}

// storeEmptyAfterDrain restarts and checks that nothing but destination
// and subscription records is left once every message has been consumed.
func storeEmptyAfterDrain(t *testing.T, h *harness) {
	t.Helper()
	h.restartStrict()
	n := 0
	_ = h.st.Buckets(func(name string) error {
		if name == "dests" || name == "subs" {
			return nil
		}
		return h.st.ForEach(name, func(k, _ []byte) error {
			n++
			t.Logf("left in %s: %x", name, k)
			return nil
		})
	})
	if n != 0 {
		t.Fatalf("%d message records left", n)
	}
}

// A configured destination deleted at run time is back, empty, at the next
// start: the configuration still has it.
func TestConfiguredDestinationDeletedAtRunTime(t *testing.T) {
	h := newStrict(t, true, "", engine.Config{Destinations: configured(t1, queueA)})
	s := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	send(t, s, queueA, "gone", engine.SendOptions{})
	if err := h.b.DeleteDestination(context.Background(), queueA); err != nil {
		t.Fatal(err)
	}
	h.restartStrict()
	if n := h.depth(queueA); n != 0 {
		t.Fatalf("%d messages after deletion and restart", n)
	}
}
