package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// Fencing.
//
// A store write that fails with an error wrapping store.ErrIndeterminate
// may or may not have been applied (a replicated store that lost its
// leadership; see store.ErrIndeterminate). From then on the engine's
// memory may disagree with its store in a way it cannot know, so the
// engine fences itself: it writes nothing more (every later write fails
// at once with an error wrapping ErrFenced, and applies nothing), it does
// not undo in memory what the indeterminate write was to record (no
// message is put back or taken off its queue, no routed message is
// forgotten, no transaction is reported rolled back), and the operation
// that made the write answers that its outcome is unknown (an error
// wrapping both ErrFenced and store.ErrIndeterminate), never that it
// failed. Reads go on. A fenced Broker is of no further use: its owner
// closes it and opens a new one on the store, which recovers whatever was
// applied (Fenced tells when).
//
// The fenced state has one owner, the Broker's fence; only its methods
// read or change it. Every store write of the engine goes through
// guardStore, which refuses writes once the fence is up and raises it on
// an indeterminate outcome.

// ErrFenced is wrapped by the error of every operation of a fenced Broker
// that needed a store write: by the operation whose write's outcome is
// unknown (which wraps store.ErrIndeterminate too: it may have been
// applied), and by every later one (refused before it reached the store,
// so not wrapping store.ErrIndeterminate: nothing of it was applied).
var ErrFenced = errors.New("engine fenced: a store write's outcome is unknown; " +
	"nothing more is written until the broker is rebuilt from its store")

// fence is a Broker's fenced state: down until the first indeterminate
// write, then up for good.
type fence struct {
	once  sync.Once
	up    chan struct{} // closed when fenced
	cause error         // the indeterminate write's error; set before up closes
}

func newFence() *fence { return &fence{up: make(chan struct{})} }

// raise fences the broker for cause (the first caller wins) and reports
// whether this call did.
func (f *fence) raise(log *slog.Logger, cause error) bool {
	raised := false
	f.once.Do(func() {
		f.cause = cause
		close(f.up)
		raised = true
		log.Error("engine fenced: a store write's outcome is unknown; no further write is made, "+
			"and the broker must be rebuilt from its store", slog.Any("err", cause))
	})
	return raised
}

// refused returns the error of a write refused because the fence is up,
// or nil while it is down.
func (f *fence) refused() error {
	select {
	case <-f.up:
		// The cause is named, not wrapped: this write's outcome is known
		// (not made), so it must not match store.ErrIndeterminate.
		return fmt.Errorf("%w: this write was not made (the first unknown outcome: %v)", ErrFenced, f.cause)
	default:
		return nil
	}
}

// Fenced is closed once the Broker is fenced: a store write's outcome was
// unknown (store.ErrIndeterminate), so it writes nothing more and must be
// closed and replaced by a Broker opened on the store. A Broker without a
// store is never fenced.
func (b *Broker) Fenced() <-chan struct{} { return b.fence.up }

// FenceCause returns the error of the write whose unknown outcome fenced
// the Broker, or nil while it is not fenced.
func (b *Broker) FenceCause() error {
	select {
	case <-b.fence.up:
		return b.fence.cause
	default:
		return nil
	}
}

// indeterminate reports whether err is an unknown outcome: the write may
// have been applied, and must not be undone in memory.
func indeterminate(err error) bool {
	return err != nil && errors.Is(err, store.ErrIndeterminate)
}

// outcomeUnknown is the error of an operation whose store write had an
// unknown outcome, for its caller to tell its client; what names what may
// have been stored ("the message to /queue/q"). It wraps ErrFenced and err
// (which wraps store.ErrIndeterminate).
func outcomeUnknown(what string, err error) error {
	return unknownOutcome(what+" may have been stored", err)
}

// unknownOutcome is outcomeUnknown with its own account of what may have
// happened.
func unknownOutcome(what string, err error) error {
	if !errors.Is(err, ErrFenced) {
		err = fencedCause{err}
	}
	return &Error{Code: CodeJMS,
		Msg: "outcome unknown: the broker lost its store's leadership or had no answer in time; " + what,
		Err: err}
}

// fencedCause is an indeterminate write's error, matching ErrFenced too.
type fencedCause struct{ err error }

func (e fencedCause) Error() string   { return e.err.Error() }
func (e fencedCause) Unwrap() []error { return []error{ErrFenced, e.err} }

// guardStore is the Broker's view of its store: every write goes through
// it, refused once the fence is up and raising it on an indeterminate
// outcome. sub, lin and hold are the store's optional interfaces, nil
// when it has not got them; the Broker asks for them with submitter,
// lingerer and holdStore, never by asserting on guardStore (which has every
// method).
type guardStore struct {
	s    store.Store
	f    *fence
	log  *slog.Logger
	sub  store.Submitter
	lin  store.Lingerer
	hold store.Holder
	ver  store.Verifier
}

func newGuardStore(s store.Store, f *fence, log *slog.Logger) *guardStore {
	g := &guardStore{s: s, f: f, log: log}
	g.sub, _ = s.(store.Submitter)
	g.lin, _ = s.(store.Lingerer)
	g.hold, _ = s.(store.Holder)
	g.ver, _ = s.(store.Verifier)
	return g
}

// check raises the fence when err is an unknown outcome, and returns err,
// made to match ErrFenced too when it is one (the same text).
func (g *guardStore) check(err error) error {
	if !indeterminate(err) {
		return err
	}
	g.f.raise(g.log, err)
	return fencedCause{err}
}

// Update is the store's, refused once fenced.
func (g *guardStore) Update(ctx context.Context, ops []store.Op) error {
	if err := g.f.refused(); err != nil {
		return err
	}
	return g.check(g.s.Update(ctx, ops))
}

// UpdateLinger is the store's (Update where it has none), refused once
// fenced.
func (g *guardStore) UpdateLinger(ctx context.Context, ops []store.Op, linger time.Duration) error {
	if g.lin == nil {
		return g.Update(ctx, ops)
	}
	if err := g.f.refused(); err != nil {
		return err
	}
	return g.check(g.lin.UpdateLinger(ctx, ops, linger))
}

// Submit is the store's, refused once fenced; only for a store that is a
// store.Submitter.
func (g *guardStore) Submit(ops []store.Op, linger time.Duration) store.Pending {
	if err := g.f.refused(); err != nil {
		return refusedPending{err: err}
	}
	return &guardPending{Pending: g.sub.Submit(ops, linger), g: g}
}

// HoldFunc is the store's, refused once fenced; only for a store that is
// a store.Holder.
func (g *guardStore) HoldFunc(makeOps func() []store.Op, hold time.Duration) store.Pending {
	if err := g.f.refused(); err != nil {
		return refusedPending{err: err}
	}
	return &guardPending{Pending: g.hold.HoldFunc(makeOps, hold), g: g}
}

// Verify is the store's, refused once fenced; only for a store that is a
// store.Verifier.
func (g *guardStore) Verify() store.Pending {
	if err := g.f.refused(); err != nil {
		return refusedPending{err: err}
	}
	return &guardPending{Pending: g.ver.Verify(), g: g}
}

// ForEach is the store's.
func (g *guardStore) ForEach(bucket string, fn func(key, value []byte) error) error {
	return g.s.ForEach(bucket, fn)
}

// Get is the store's.
func (g *guardStore) Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error {
	return g.s.Get(bucket, keys, fn)
}

// Range is the store's.
func (g *guardStore) Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error {
	return g.s.Range(bucket, from, limit, fn)
}

// Buckets is the store's.
func (g *guardStore) Buckets(fn func(name string) error) error { return g.s.Buckets(fn) }

// Close is the store's (the Broker never closes its store).
func (g *guardStore) Close() error { return g.s.Close() }

// guardPending is a submitted write whose unknown outcome raises the
// fence.
type guardPending struct {
	store.Pending
	g *guardStore
}

// Err is the write's, raising the fence on an unknown outcome.
func (p *guardPending) Err() error { return p.g.check(p.Pending.Err()) }

// refusedPending is a write refused by the fence before it was submitted.
type refusedPending struct{ err error }

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (p refusedPending) Done() <-chan struct{} { return closedCh }
func (p refusedPending) Err() error            { return p.err }
func (p refusedPending) Withdraw() bool        { return false }

// submitter returns the store as a store.Submitter, if it is one.
func (b *Broker) submitter() (store.Submitter, bool) {
	if b.store == nil || b.store.sub == nil {
		return nil, false
	}
	return b.store, true
}

// verifier returns the store as a store.Verifier, if it is one.
func (b *Broker) verifier() (store.Verifier, bool) {
	if b.store == nil || b.store.ver == nil {
		return nil, false
	}
	return b.store, true
}

// holdStore returns the store as a store.Holder, if it is one.
func (b *Broker) holdStore() (store.Holder, bool) {
	if b.store == nil || b.store.hold == nil {
		return nil, false
	}
	return b.store, true
}
