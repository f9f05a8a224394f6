package journal_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
	"github.com/sluicemq/sluice/engine/store/storetest"
)

func open(t *testing.T, dir string, opts journal.Options) store.Store {
	t.Helper()
	inner, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Validate = boltstore.Validate
	s, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), inner, opts)
	if err != nil {
		_ = inner.Close()
		t.Fatal(err)
	}
	return s
}

// The journal over bbolt passes the store contract suite, including the
// model-checked simulation across reopens.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Store { return open(t, dir, journal.Options{}) })
}

// Small segments make the suite rotate and delete segments constantly.
func TestContractSmallSegments(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		return open(t, dir, journal.Options{SegmentSize: 4096, MaxPending: 8192, ApplyBatch: 7})
	})
}
