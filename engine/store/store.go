// Package store defines the narrow interface between the JMS engine and its
// durable storage. The engine owns every record's encoding; a Store only keeps
// ordered key/value pairs in named buckets and applies batches of writes
// atomically and durably. bbolt (package boltstore) is the embedded default; a
// replicated store can implement the same interface later, and package
// storetest is the contract suite every implementation must pass.
package store

import (
	"context"
	"time"
)

// OpKind says what an Op does.
type OpKind uint8

// The two kinds of write.
const (
	// Put sets Key to Value in Bucket, creating the bucket if needed.
	Put OpKind = iota + 1
	// Delete removes Key from Bucket; deleting a missing key or a key of a
	// missing bucket is not an error.
	Delete
	// DeleteBucket removes Bucket and everything in it; a missing bucket is
	// not an error.
	DeleteBucket
)

// Op is one write of a batch.
type Op struct {
	Kind   OpKind
	Bucket string
	Key    []byte
	Value  []byte
}

// Store is durable, ordered key/value storage in named buckets.
//
// Implementations must be safe for concurrent use. Update is where
// throughput comes from: concurrent calls should share one durable commit
// (group commit) rather than sync once each.
//
// Ordering between separate calls: a write is never applied before an
// earlier one of the same caller that had returned (Update, UpdateLinger)
// or had been submitted (Submitter.Submit). So a caller reads its own
// writes, a key never goes back to an older value, and once a write is
// visible every earlier write of its caller is too. The engine relies on
// it: a delivery mark or an acknowledgement submitted after a message's
// held first write (consume before store), or the write that unflags
// scheduled messages read back from their time index, is applied after
// it, so a crash in between finds the older state whole. storetest checks
// the rule for every implementation.
//
// Failed writes: a write that fails applied nothing, so its caller may
// undo what it did in memory, except when the error wraps
// ErrIndeterminate: then the write may or may not be applied, now or
// later, and the caller must not undo, write no more, and rebuild its
// state from the store (see ErrIndeterminate).
type Store interface {
	// Update applies ops atomically: after it returns nil, all of them are
	// durable (they survive a crash of the process or the machine); after it
	// returns an error, none of them was applied, unless the error wraps
	// ErrIndeterminate (see there). ops are not retained.
	Update(ctx context.Context, ops []Op) error
	// ForEach calls fn for every key of bucket in ascending byte order. The
	// key and value slices are valid only during the call. A missing bucket
	// yields no calls. An error from fn stops the walk and is returned.
	ForEach(bucket string, fn func(key, value []byte) error) error
	// Get looks up keys in bucket and calls fn, in the order of keys, for
	// each one present, with its index in keys; the value is valid only
	// during the call. A missing bucket or key yields no call. It sees
	// every Update that has returned.
	Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error
	// Range calls fn for the keys of bucket from from (inclusive; nil is
	// the first key) in ascending byte order, at most limit of them (0: no
	// limit), in one consistent view. Key and value are valid only during
	// the call. It sees every Update that has returned. An error from fn
	// stops the walk and is returned. The engine reads the messages it
	// keeps out of memory (paging) with it.
	Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error
	// Buckets calls fn with the name of every bucket, in ascending order.
	Buckets(fn func(name string) error) error
	// Close waits for pending updates and releases the store. Updates after
	// Close fail with ErrClosed.
	Close() error
}

// Lingerer is a Store that can hold a write for a short while so that it
// shares its sync with the writes that follow (package journal is one). The
// engine uses it for writes that are not on a sender's critical path:
// delivery marks and background acknowledgements. It is optional: a Store
// without it gets plain Updates.
type Lingerer interface {
	// UpdateLinger is Update, except that the store may wait up to linger
	// before it starts the durable commit, for company.
	UpdateLinger(ctx context.Context, ops []Op, linger time.Duration) error
}

// Submitter is a Store that can take a write back before its commit begins
// (package journal is one). The engine uses it to confirm a persistent
// message that a consumer has already acknowledged without ever writing it,
// as RabbitMQ does: the message is then either durable or consumed when its
// producer hears back.
type Submitter interface {
	// Submit queues ops like UpdateLinger and returns at once.
	Submit(ops []Op, linger time.Duration) Pending
}

// Holder is a Store that can hold a write until a deadline so that it can
// still be taken back, without it counting as company for other writes,
// and make its ops only when it commits them (packages journal and
// raftstore are ones). The engine holds a message's first write with it
// (consume before store): at a light load a delivery mark or an
// acknowledgement then commits at once instead of lingering beside a
// write that waits to be withdrawn, and a message consumed within the
// hold is never encoded. It is optional: a Submitter without it gets
// Submit with the hold as its linger.
type Holder interface {
	// HoldFunc queues the write that makeOps makes and returns at once.
	// The store does not begin its commit before hold has passed, unless
	// it commits a write queued after it (the order of writes is kept), so
	// until then Withdraw takes it back and makeOps is never called.
	// makeOps is called at most once, when the commit takes the write; it
	// must only read what does not change. The Pending is a Submitter's:
	// its Err is the ops' validation error if they are invalid.
	HoldFunc(makeOps func() []Op, hold time.Duration) Pending
}

// Verifier is a Store whose authority to write can end before it knows:
// a replicated store's leader, deposed while cut off from the others
// (package raftstore). Its writes fail then (ErrIndeterminate), but a
// write withdrawn before its commit began (Submitter) writes nothing, so
// the engine asks Verify before it confirms a message that a consumer
// acknowledged before it was stored (consume before store): a producer is
// then told its message was consumed only by a node that still leads.
// Embedded stores never lose their authority and do not implement it.
type Verifier interface {
	// Verify asks the store to confirm that it may still write; its
	// Pending is done once it knows: Err nil when the store held its
	// authority at some time after the call, an error wrapping
	// ErrIndeterminate when it cannot tell (no longer the leader, no
	// answer in time). Its Withdraw takes nothing back (false).
	Verify() Pending
}

// Pending is a submitted write.
type Pending interface {
	// Done is closed when the write is durable, failed, or withdrawn.
	Done() <-chan struct{}
	// Err is nil once the write is durable; ErrWithdrawn when it was taken
	// back; the failure otherwise (nothing of it was applied, unless it
	// wraps ErrIndeterminate). Valid after Done is closed.
	Err() error
	// Withdraw takes the write back if its commit has not begun, and
	// reports whether it did; then nothing of it is ever applied.
	Withdraw() bool
}

// ErrIndeterminate is wrapped by the error of a write whose outcome the
// store cannot know: it may or may not have been applied, now or later (a
// replicated store whose leader lost its leadership after taking the
// write, or got no answer in time; package raftstore). It is the one
// exception to "a failed write applied nothing", for Update,
// UpdateLinger and a Pending's Err alike. A caller that sees it must not
// undo in memory what the write was to record, as it would after a plain
// failure: its view is unknown from then on, and it must make no further
// write on it and rebuild it from the store (the engine fences itself and
// is reopened from the store; see engine.ErrFenced). Ordering still holds:
// a write made after it returned is applied, if at all, after it.
// Embedded stores (boltstore, journal) never return it.
var ErrIndeterminate = errIndeterminate{}

type errIndeterminate struct{}

func (errIndeterminate) Error() string { return "store: write outcome unknown" }

// ErrWithdrawn is the Err of a Pending write that was taken back.
var ErrWithdrawn = errWithdrawn{}

type errWithdrawn struct{}

func (errWithdrawn) Error() string { return "store: write withdrawn" }

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errClosed{}

type errClosed struct{}

func (errClosed) Error() string { return "store: closed" }
