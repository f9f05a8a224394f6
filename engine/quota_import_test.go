package engine_test

import (
	"context"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// TestImportedSubscriptionMessagesCountTheirBytes: messages imported into
// a durable subscription count their size, like published ones, and
// leave nothing behind when deleted.
func TestImportedSubscriptionMessagesCountTheirBytes(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "persistent"}[persistent], func(t *testing.T) {
			ctx := context.Background()
			var h *harness
			if persistent {
				h = newPersistent(t, "", engine.Config{})
			} else {
				h = newBroker(t, engine.Config{})
			}
			c := h.conn(engine.ConnectionOptions{ClientID: "imp"})
			cons := consumer(t, h.session(c, engine.AutoAcknowledge), topicT, engine.ConsumerOptions{Durable: true, SubscriptionName: "d"})
			_ = cons.Close()
			msgs := []*message.Message{text("one"), text("two")}
			for _, m := range msgs {
				m.DeliveryMode, m.Priority = message.Persistent, 4
			}
			if n, err := h.b.ImportMessages(ctx, engine.SubscriptionTarget("imp", "d"), msgs); err != nil || n.Imported != 2 {
				t.Fatalf("import: %+v, %v", n, err)
			}
			in := quotaInfo(t, h.b, topicT)
			want := int64(msgs[0].Size() + msgs[1].Size())
			if in.Messages != 2 || in.Bytes != want {
				t.Fatalf("after the import the topic reports %d messages, %d bytes; want 2, %d", in.Messages, in.Bytes, want)
			}
			if n, err := h.b.DeleteMessages(ctx, engine.SubscriptionTarget("imp", "d"), engine.Filter{}); err != nil || n != 2 {
				t.Fatalf("delete: %d, %v", n, err)
			}
			if in := quotaInfo(t, h.b, topicT); in.Messages != 0 || in.Bytes != 0 {
				t.Fatalf("after the deletion the topic reports %d messages, %d bytes", in.Messages, in.Bytes)
			}
		})
	}
}
