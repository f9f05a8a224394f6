// Package enginetest opens engines for the tests of the packages built on
// the engine (the protocol front-ends): a broker over the real durable
// store, as `sluice serve` opens it, that a test can close and open again
// on the same directory to check what survives a restart.
package enginetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// Durable opens a broker with cfg over the journal and bbolt in dir
// (cfg.Store is replaced). close closes the broker and then the store; it
// runs at the test's cleanup too, and a second call does nothing.
func Durable(tb testing.TB, dir string, cfg engine.Config) (b *engine.Broker, close func()) {
	tb.Helper()
	bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		tb.Fatalf("open bbolt in %s: %v", dir, err)
	}
	js, err := journal.Open(context.Background(), filepath.Join(dir, "journal"), bs, journal.Options{Validate: boltstore.Validate})
	if err != nil {
		_ = bs.Close()
		tb.Fatalf("open journal in %s: %v", dir, err)
	}
	cfg.Store = js
	b, err = engine.New(context.Background(), cfg)
	if err != nil {
		_ = js.Close()
		_ = bs.Close()
		tb.Fatalf("open broker on %s: %v", dir, err)
	}
	closed := false
	close = func() {
		if closed {
			return
		}
		closed = true
		_ = b.Close()
		_ = js.Close()
		_ = bs.Close()
	}
	tb.Cleanup(close)
	return b, close
}
