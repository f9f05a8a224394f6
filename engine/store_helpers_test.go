package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// openDurable opens the store `sluice serve` uses: a journal in dir/journal
// in front of bbolt in dir/sluice.db.
func openDurable(tb testing.TB, dir string) (*journal.Store, *boltstore.Store) {
	tb.Helper()
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	js, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), bs, journal.Options{Validate: boltstore.Validate})
	if err != nil {
		_ = bs.Close()
		tb.Fatal(err)
	}
	return js, bs
}
