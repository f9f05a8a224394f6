package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
)

// TestMaxTransactionsPerConnection: past ConnectionOptions.MaxTransactions
// BeginTxn is refused with CodeResourceAllocation and a message naming the
// limit; ending one makes room, the connection keeps working, and other
// connections are not counted.
func TestMaxTransactionsPerConnection(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		open  int // transactions that must open
	}{
		{"no limit", 0, 150},
		{"limit 1", 1, 1},
		{"limit 100", 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newBroker(t, engine.Config{})
			c := h.conn(engine.ConnectionOptions{MaxTransactions: tt.limit})
			var txns []*engine.Txn
			for i := range tt.open {
				tx, err := c.BeginTxn()
				if err != nil {
					t.Fatalf("transaction %d: %v", i+1, err)
				}
				txns = append(txns, tx)
			}
			if tt.limit == 0 {
				return
			}
			_, err := c.BeginTxn()
			if codeOrNil(err) != engine.CodeResourceAllocation || !strings.Contains(err.Error(), "too many open transactions (limit") {
				t.Fatalf("transaction %d: %v, want ResourceAllocation naming the limit", tt.limit+1, err)
			}
			other := h.conn(engine.ConnectionOptions{MaxTransactions: tt.limit})
			if _, err := other.BeginTxn(); err != nil {
				t.Fatalf("another connection: %v", err)
			}
			// A commit and a rollback each make room for one more.
			if err := txns[0].Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			tx, err := c.BeginTxn()
			if err != nil {
				t.Fatalf("after a commit: %v", err)
			}
			tx.Rollback(context.Background())
			tx, err = c.BeginTxn()
			if err != nil {
				t.Fatalf("after a rollback: %v", err)
			}
			// The connection still works.
			s := h.session(c, engine.AutoAcknowledge)
			send(t, s, queueA, "still here", engine.SendOptions{})
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			_ = c.Start()
			if d := recv(t, cons); body(d) != "still here" {
				t.Fatalf("got %q", body(d))
			}
		})
	}
}
