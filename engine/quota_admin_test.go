package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// An administrator's moves and imports are held to the quota of their
// target like sends: counting the room sends in progress have reserved,
// and, for a topic or one of its durable subscriptions, what the topic's
// subscriptions hold together.

// adminOps are the administrator's ways to bring one message into to: a
// move from queueA (which holds it) or an import.
var adminOps = []struct {
	name string
	do   func(h *harness, to engine.Target) (int, error)
}{
	{"move", func(h *harness, to engine.Target) (int, error) {
		return h.b.MoveMessages(context.Background(), engine.QueueTarget(queueA.Name), engine.Filter{}, to.Dest)
	}},
	{"import", func(h *harness, to engine.Target) (int, error) {
		m := text("imported")
		m.DeliveryMode, m.Priority = message.Persistent, 4
		res, err := h.b.ImportMessages(context.Background(), to, []*message.Message{m})
		return res.Imported, err
	}},
}

// TestAdminMoveAndImportCountRoomReservedBySends: queue b has a quota of
// 2, holds one message and an open transaction has sent it another: a
// move or an import of one more message is refused (the message to move
// stays on queue a), and once the transaction commits b holds exactly 2.
func TestAdminMoveAndImportCountRoomReservedBySends(t *testing.T) {
	ctx := context.Background()
	for _, op := range adminOps {
		for _, persistent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/persistent=%v", op.name, persistent), func(t *testing.T) {
				pols := newPolicies().set(queueB, func(p *engine.Policy) { p.MaxMessages = 2 })
				var h *harness
				if persistent {
					h = newPersistent(t, "", engine.Config{Policy: pols.get})
				} else {
					h = newBroker(t, engine.Config{Policy: pols.get})
				}
				c := h.conn(engine.ConnectionOptions{})
				plain := h.session(c, engine.AutoAcknowledge)
				send(t, plain, queueA, "to-move", engine.SendOptions{})
				send(t, plain, queueB, "held", engine.SendOptions{})
				tx := h.session(c, engine.Transacted)
				send(t, tx, queueB, "in-transaction", engine.SendOptions{})

				n, err := op.do(h, engine.QueueTarget(queueB.Name))
				wantCode(t, op.name+" into a queue whose room an open transaction holds", err, engine.ErrResourceAllocation)
				if n != 0 {
					t.Fatalf("%s reports %d messages done", op.name, n)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if in := quotaInfo(t, h.b, queueB); in.Messages != 2 {
					t.Fatalf("queue b holds %d messages, want its quota of 2", in.Messages)
				}
				if in := quotaInfo(t, h.b, queueA); in.Messages != 1 {
					t.Fatalf("queue a holds %d messages after the refused %s, want 1", in.Messages, op.name)
				}
			})
		}
	}
}

// TestAdminMoveAndImportHeldToTopicQuota: topic t has a quota of 2 and
// two durable subscriptions, each holding one copy of a message: the
// topic is full, so an import into one of its subscriptions, an import
// into the topic and a move to the topic are refused and the topic still
// holds 2; with room for one more copy, an import into one subscription
// goes through.
func TestAdminMoveAndImportHeldToTopicQuota(t *testing.T) {
	ctx := context.Background()
	sub := engine.SubscriptionTarget("imp", "d1")
	cases := []struct {
		name string
		to   engine.Target
		op   func(h *harness, to engine.Target) (int, error)
	}{
		{"import-into-subscription", sub, adminOps[1].do},
		{"import-into-topic", engine.Target{Dest: topicT}, adminOps[1].do},
		{"move-to-topic", engine.Target{Dest: topicT}, adminOps[0].do},
	}
	for _, tc := range cases {
		for _, persistent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/persistent=%v", tc.name, persistent), func(t *testing.T) {
				pols := newPolicies().set(topicT, func(p *engine.Policy) { p.MaxMessages = 2 })
				var h *harness
				if persistent {
					h = newPersistent(t, "", engine.Config{Policy: pols.get})
				} else {
					h = newBroker(t, engine.Config{Policy: pols.get})
				}
				sc := h.conn(engine.ConnectionOptions{ClientID: "imp"})
				ss := h.session(sc, engine.AutoAcknowledge)
				for _, name := range []string{"d1", "d2"} {
					_ = consumer(t, ss, topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: name}).Close()
				}
				plain := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
				send(t, plain, queueA, "to-move", engine.SendOptions{})
				send(t, plain, topicT, "published", engine.SendOptions{})
				wantTopicHolds(t, h.b, 2)

				n, err := tc.op(h, tc.to)
				wantCode(t, tc.name+" with the topic full", err, engine.ErrResourceAllocation)
				if n != 0 {
					t.Fatalf("%d messages done", n)
				}
				if in := quotaInfo(t, h.b, topicT); in.Messages != 2 {
					t.Fatalf("topic t holds %d messages, over its quota of 2", in.Messages)
				}
				if in := quotaInfo(t, h.b, queueA); in.Messages != 1 {
					t.Fatalf("queue a holds %d messages after the refused operation, want 1", in.Messages)
				}

				if _, err := h.b.DeleteMessages(ctx, engine.SubscriptionTarget("imp", "d2"), engine.Filter{}); err != nil {
					t.Fatal(err)
				}
				if n, err := adminOps[1].do(h, sub); err != nil || n != 1 {
					t.Fatalf("import into a subscription with room for one copy: %d, %v", n, err)
				}
				if in := quotaInfo(t, h.b, topicT); in.Messages != 2 {
					t.Fatalf("topic t holds %d messages, want 2", in.Messages)
				}
			})
		}
	}
}

// TestImportedSubscriptionMessagesMoveWithTheirBytes: messages imported
// into a durable subscription take their bytes along when an
// administrator moves them to a queue: the subscription's topic reports
// 0 bytes afterwards, the queue the imported messages' size, and a byte
// quota on the topic admits exactly what fits.
func TestImportedSubscriptionMessagesMoveWithTheirBytes(t *testing.T) {
	ctx := context.Background()
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprint("persistent=", persistent), func(t *testing.T) {
			pols := newPolicies()
			var h *harness
			if persistent {
				h = newPersistent(t, "", engine.Config{Policy: pols.get})
			} else {
				h = newBroker(t, engine.Config{Policy: pols.get})
			}
			c := h.conn(engine.ConnectionOptions{ClientID: "imp"})
			_ = consumer(t, h.session(c, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"}).Close()
			mk := func(n int) *message.Message {
				m := fixedID(text("x"), n)
				m.DeliveryMode, m.Priority = message.Persistent, 4
				m.Timestamp = 1_700_000_000_000 // kept by the import: every message has the same size
				return m
			}
			probe := mk(0)
			probe.Destination = topicT
			size := int64(probe.Size())
			pols.set(topicT, func(p *engine.Policy) { p.MaxBytes = 2*size + size/2 })
			target := engine.SubscriptionTarget("imp", "d")
			wantCode(t, "import of three messages with room for two", func() error {
				_, err := h.b.ImportMessages(ctx, target, []*message.Message{mk(1), mk(2), mk(3)})
				return err
			}(), engine.ErrResourceAllocation)
			if n, err := h.b.ImportMessages(ctx, target, []*message.Message{mk(4), mk(5)}); err != nil || n.Imported != 2 {
				t.Fatalf("import of two messages with room for two: %+v, %v", n, err)
			}
			if in := quotaInfo(t, h.b, topicT); in.Messages != 2 || in.Bytes != 2*size {
				t.Fatalf("after the import the topic reports %d messages, %d bytes; want 2, %d", in.Messages, in.Bytes, 2*size)
			}
			h.create(queueB)
			if n, err := h.b.MoveMessages(ctx, target, engine.Filter{}, queueB); err != nil || n != 2 {
				t.Fatalf("move: %d, %v", n, err)
			}
			if in := quotaInfo(t, h.b, topicT); in.Messages != 0 || in.Bytes != 0 {
				t.Fatalf("after the move the topic reports %d messages, %d bytes; want 0, 0", in.Messages, in.Bytes)
			}
			if in := quotaInfo(t, h.b, queueB); in.Messages != 2 || in.Bytes < 2*(size-4) {
				t.Fatalf("after the move queue b reports %d messages, %d bytes; want 2 of about %d", in.Messages, in.Bytes, size)
			}
		})
	}
}
