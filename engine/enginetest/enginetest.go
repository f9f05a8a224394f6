// Package enginetest opens engines for the tests of the packages built on
// the engine (the protocol front-ends): a broker over the real durable
// store, as `sluice serve` opens it, that a test can close and open again
// on the same directory to check what survives a restart, and can make
// refuse writes to check what a client is told when the disk fails.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// Durable opens a broker with cfg over the journal and bbolt in dir
// (cfg.Store is replaced). close closes the broker and then the store; it
// runs at the test's cleanup too, and a second call does nothing.
func Durable(tb testing.TB, dir string, cfg engine.Config) (b *engine.Broker, close func()) {
	tb.Helper()
	b, _, close = open(tb, dir, cfg, false)
	return b, close
}

// DurableFaults is Durable with a Faults store between the broker and the
// journal: the test decides when writes fail.
func DurableFaults(tb testing.TB, dir string, cfg engine.Config) (b *engine.Broker, faults *Faults, close func()) {
	tb.Helper()
	return open(tb, dir, cfg, true)
}

func open(tb testing.TB, dir string, cfg engine.Config, withFaults bool) (*engine.Broker, *Faults, func()) {
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
	var faults *Faults
	cfg.Store = js
	if withFaults {
		faults = &Faults{Store: js, sub: js}
		cfg.Store = faults
	}
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		_ = js.Close()
		_ = bs.Close()
		tb.Fatalf("open broker on %s: %v", dir, err)
	}
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		_ = b.Close()
		_ = js.Close()
		_ = bs.Close()
	}
	tb.Cleanup(closeAll)
	return b, faults, closeAll
}

// ErrInjected is the failure of a write that a Faults store refuses.
var ErrInjected = errors.New("enginetest: injected store failure")

// ErrInjectedUnknown is the failure of a write that a Faults store makes
// indeterminate (Unsure): it wraps store.ErrIndeterminate, as a replicated
// store's deposed leader reports a write, though the write was not applied.
var ErrInjectedUnknown = fmt.Errorf("enginetest: injected unknown outcome: %w", store.ErrIndeterminate)

// Faults is a store over another that refuses every write while failing
// is set: Update returns ErrInjected, Submit a Pending already failed with
// it. Reads go through.
type Faults struct {
	store.Store
	sub     store.Submitter
	failing atomic.Bool
	unsure  atomic.Bool  // refused writes report ErrInjectedUnknown
	delay   atomic.Int64 // ns before a refused Submit reports its failure
}

// Fail makes the store refuse writes (true) or take them again (false).
func (f *Faults) Fail(on bool) { f.failing.Store(on) }

// Unsure makes the store refuse writes (true) with ErrInjectedUnknown, an
// unknown outcome (the engine then fences itself), or take them again
// (false).
func (f *Faults) Unsure(on bool) {
	f.unsure.Store(on)
	f.failing.Store(on)
}

// refusal is the error of a refused write.
func (f *Faults) refusal() error {
	if f.unsure.Load() {
		return ErrInjectedUnknown
	}
	return ErrInjected
}

// FailAfter makes the store refuse writes, a submitted write reporting its
// failure only after d, as a disk would after trying.
func (f *Faults) FailAfter(d time.Duration) {
	f.delay.Store(int64(d))
	f.failing.Store(true)
}

// Update refuses ops while failing, else passes them on.
func (f *Faults) Update(ctx context.Context, ops []store.Op) error {
	if f.failing.Load() {
		return f.refusal()
	}
	return f.Store.Update(ctx, ops)
}

// Submit refuses ops while failing, else passes them on.
func (f *Faults) Submit(ops []store.Op, linger time.Duration) store.Pending {
	if f.failing.Load() {
		p := failed{done: make(chan struct{}), err: f.refusal()}
		if d := time.Duration(f.delay.Load()); d > 0 {
			time.AfterFunc(d, func() { close(p.done) })
		} else {
			close(p.done)
		}
		return p
	}
	return f.sub.Submit(ops, linger)
}

// HoldFunc is Submit for a held write whose ops are made when it is
// committed (journal.Store.HoldFunc), held by the wrapped store when it can
// hold writes; while failing it is refused as Submit refuses.
func (f *Faults) HoldFunc(makeOps func() []store.Op, hold time.Duration) store.Pending {
	if f.failing.Load() {
		return f.Submit(nil, hold)
	}
	if h, ok := f.sub.(interface {
		HoldFunc(func() []store.Op, time.Duration) store.Pending
	}); ok {
		return h.HoldFunc(makeOps, hold)
	}
	return f.sub.Submit(makeOps(), hold)
}

// failed is a Pending that fails with err once done closes.
type failed struct {
	done chan struct{}
	err  error
}

func (p failed) Done() <-chan struct{} { return p.done }
func (p failed) Err() error            { return p.err }
func (failed) Withdraw() bool          { return false }
