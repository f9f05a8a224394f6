// Package boltstore is the embedded, default implementation of store.Store,
// kept in one go.etcd.io/bbolt file in the broker's data directory.
//
// It sits directly under the JMS engine: the engine encodes its records and
// hands them over as batches of store.Op; boltstore applies every batch
// atomically and durably (bbolt commits with a real fdatasync) before Update
// returns.
//
// # Group commit
//
// An fsync costs far more than applying a few writes, so Update calls are not
// committed one by one. Every Update queues its batch and waits; a single
// committer goroutine takes everything that is waiting (bounded by
// Options.MaxBatchOps and Options.MaxBatchBytes), applies it in one bbolt
// read-write transaction with one commit, and then answers every caller. The
// batching is natural: whatever queued while the previous commit was syncing
// goes into the next one, so no delay is added unless Options.MaxDelay asks
// for it (the committer only yields the processor a few times after
// answering, while callers that come straight back are still queueing, so
// that they join the next batch). Batches apply
// in the order they were queued, as if committed one after another.
//
// A bbolt commit syncs the file twice (data pages, then the meta page that
// points at them), so the disk's sync rate bounds commits per second and
// the batch size is what lifts Updates per second above it: the more
// callers wait, the bigger the batch.
//
// Atomicity holds per Update call. Ops are validated before they are queued
// (see Update), so an invalid batch fails alone without touching the queue.
// If applying one caller's batch still fails inside a merged transaction, the
// transaction is rolled back, that caller gets the error and the others are
// committed again without it. If the commit itself fails (an I/O error), each
// caller's batch is retried in its own transaction so each gets its own
// answer.
//
// # Buckets
//
// A store bucket is a bbolt top-level bucket named by Op.Bucket. Names must
// be non-empty and at most MaxKeySize bytes; any bytes are allowed. A bucket
// exists from the first Put into it until a DeleteBucket, even when all of its
// keys have been deleted.
package boltstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicemq/sluice/engine/store"
)

// Limits on keys and bucket names, from bbolt.
const (
	// MaxKeySize is the largest key or bucket name, in bytes.
	MaxKeySize = bolt.MaxKeySize
	// MaxValueSize is the largest value, in bytes.
	MaxValueSize = bolt.MaxValueSize
)

// Defaults used for zero fields of Options.
const (
	// DefaultMaxBatchOps bounds the ops merged into one transaction.
	DefaultMaxBatchOps = 8192
	// DefaultMaxBatchBytes bounds the key, value and bucket-name bytes
	// merged into one transaction.
	DefaultMaxBatchBytes = 16 << 20
	// DefaultLockTimeout is how long Open waits for the file lock.
	DefaultLockTimeout = time.Second
	// DefaultFileMode is the permission of a newly created store file.
	DefaultFileMode os.FileMode = 0o600
)

// ErrInUse is wrapped by the error Open returns when another process (or
// another Store in this process) holds the store file.
var ErrInUse = errors.New("store file locked")

// ErrInvalidOp is wrapped by the error Update returns for a batch with an
// invalid op; such a batch is never applied.
var ErrInvalidOp = errors.New("invalid op")

// Options configures Open. The zero value is ready to use.
type Options struct {
	// MaxBatchOps bounds how many ops the committer merges into one
	// transaction (DefaultMaxBatchOps if zero). One Update is never split:
	// a larger batch is committed alone.
	MaxBatchOps int
	// MaxBatchBytes bounds the key, value and bucket-name bytes merged into
	// one transaction (DefaultMaxBatchBytes if zero). One Update is never
	// split: a larger batch is committed alone.
	MaxBatchBytes int
	// MaxDelay, if positive, makes the committer wait up to this long after
	// the first waiting Update for more to arrive, unless MaxBatchOps are
	// already waiting. Zero (the default) adds no delay: a batch holds
	// whatever queued while the previous commit ran.
	MaxDelay time.Duration
	// LockTimeout is how long Open waits for the exclusive file lock before
	// failing with ErrInUse (DefaultLockTimeout if zero).
	LockTimeout time.Duration
	// FileMode is the permission of a newly created file (DefaultFileMode if
	// zero).
	FileMode os.FileMode
	// InitialMmapSize is passed to bbolt: a map this large from the start
	// means commits that grow the file do not wait for readers to remap.
	InitialMmapSize int
	// TrimInterval is how often the pages that reads mapped into the
	// process are dropped from its resident set (they stay in the page
	// cache); DefaultTrimInterval if zero, never if negative.
	TrimInterval time.Duration
	// Logger receives commit failures and open/close events (slog.Default()
	// if nil).
	Logger *slog.Logger
	// NoSync skips the fdatasync of each commit, for a store whose content
	// can be rebuilt from elsewhere (raftstore's local state, rebuilt from
	// the raft log and snapshots): Update then means visible, and durable
	// against a crash of the process, not of the machine, which may leave
	// the file corrupt. Close syncs.
	NoSync bool

	// hooks lets this package's tests pause the committer and inject
	// failures; nil outside tests.
	hooks *testHooks
}

// testHooks are called by the committer when set (tests only).
type testHooks struct {
	// taken is called after a batch is taken from the queue, before it is
	// applied.
	taken func(n int)
	// apply, if it returns an error, fails applying one caller's ops.
	apply func(ops []store.Op) error
	// commit, if it returns an error, fails a transaction of n callers
	// instead of committing it.
	commit func(n int) error
}

// Store is a store.Store kept in one bbolt file. Open returns it; it is safe
// for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	queue     []*request // waiting Updates, in arrival order
	queuedOps int        // ops in queue, abandoned requests included
	closed    bool

	wake    chan struct{} // cap 1: work queued or store closing
	stopped chan struct{} // closed when the committer returns
	// trimStop stops trimLoop, which closes trimmed when it returns.
	trimStop chan struct{}
	trimmed  chan struct{}

	// Owned by the committer goroutine.
	batch   []*request
	buckets map[string]*bolt.Bucket

	stats counters
}

var _ store.Store = (*Store)(nil)

// Open opens the store file at path, creating it and its directory if
// needed, and starts its committer. It fails with an error wrapping ErrInUse
// if the file stays locked by another process for Options.LockTimeout: two
// brokers must never share a data directory.
func Open(path string, opts Options) (*Store, error) {
	if opts.MaxBatchOps <= 0 {
		opts.MaxBatchOps = DefaultMaxBatchOps
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.FileMode == 0 {
		opts.FileMode = DefaultFileMode
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := bolt.Open(path, opts.FileMode, &bolt.Options{
		Timeout: opts.LockTimeout,
		NoSync:  opts.NoSync, // unless set, every commit is fdatasync'ed: Update means durable
		// The freelist is written with every commit. Without it, Open
		// rebuilds it by walking every page of the file: with a backlog of
		// 2M 1 KiB messages that read 3 GB and took 8 s before the broker
		// could serve anything.
		NoFreelistSync:  false,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: opts.InitialMmapSize,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: data directory %s is in use by another process (no file lock within %v): %w",
			path, dir, opts.LockTimeout, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// bbolt syncs the file it creates but not the directory entry.
	if err := syncDir(dir); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{
		db:      db,
		path:    path,
		opts:    opts,
		log:     opts.Logger.With("store", path),
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		buckets: make(map[string]*bolt.Bucket),

		trimStop: make(chan struct{}),
		trimmed:  make(chan struct{}),
	}
	go s.run()
	switch interval := opts.TrimInterval; {
	case interval == 0:
		go s.trimLoop(DefaultTrimInterval)
	case interval > 0:
		go s.trimLoop(interval)
	default:
		close(s.trimmed)
	}
	s.log.Debug("store opened")
	return s, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Path returns the file the store is kept in.
func (s *Store) Path() string { return s.path }

// Update applies ops atomically and durably; see store.Store.
//
// The batch is checked first: every op needs a known Kind and a non-empty
// Bucket of at most MaxKeySize bytes; Put and Delete need a non-empty Key of
// at most MaxKeySize bytes, and Put a Value of at most MaxValueSize bytes.
// An invalid batch fails with an error wrapping ErrInvalidOp and is not
// applied. An empty batch returns nil at once (or ErrClosed) without a
// commit.
//
// Cancellation: if ctx is done before the committer has taken the batch,
// Update returns ctx.Err() and the batch is never applied. Once the batch is
// taken it is applied, and Update waits for that commit and returns its
// result even if ctx ends meanwhile (the commit holds references to ops
// until it is durable).
func (s *Store) Update(ctx context.Context, ops []store.Op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ops) == 0 {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return store.ErrClosed
		}
		return nil
	}
	size, err := validate(ops)
	if err != nil {
		s.stats.failed.Add(1)
		return err
	}
	r := &request{ops: ops, bytes: size, done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.queue = append(s.queue, r)
	s.queuedOps += len(ops)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			s.stats.cancelled.Add(1)
			return ctx.Err()
		}
		return <-r.done
	}
}

// validate checks ops and returns their key, value and bucket-name bytes.
func validate(ops []store.Op) (int, error) {
	size := 0
	for i := range ops {
		op := &ops[i]
		if err := validateOp(op); err != nil {
			return 0, fmt.Errorf("store update: op %d (%s bucket %q): %w", i, kindName(op.Kind), truncate(op.Bucket), err)
		}
		size += len(op.Bucket) + len(op.Key) + len(op.Value)
	}
	return size, nil
}

func validateOp(op *store.Op) error {
	switch {
	case op.Bucket == "":
		return fmt.Errorf("%w: empty bucket name", ErrInvalidOp)
	case len(op.Bucket) > MaxKeySize:
		return fmt.Errorf("%w: bucket name longer than %d bytes", ErrInvalidOp, MaxKeySize)
	}
	switch op.Kind {
	case store.Put, store.Delete:
		switch {
		case len(op.Key) == 0:
			return fmt.Errorf("%w: empty key", ErrInvalidOp)
		case len(op.Key) > MaxKeySize:
			return fmt.Errorf("%w: key longer than %d bytes", ErrInvalidOp, MaxKeySize)
		case int64(len(op.Value)) > MaxValueSize:
			return fmt.Errorf("%w: value longer than %d bytes", ErrInvalidOp, int64(MaxValueSize))
		}
	case store.DeleteBucket:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidOp, op.Kind)
	}
	return nil
}

func kindName(k store.OpKind) string {
	switch k {
	case store.Put:
		return "put"
	case store.Delete:
		return "delete"
	case store.DeleteBucket:
		return "delete-bucket"
	}
	return fmt.Sprintf("kind-%d", k)
}

// truncate shortens a bucket name for an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// ForEach calls fn for every key of bucket in ascending order; see
// store.Store.
//
// The walk reads the bucket in chunks (up to forEachChunkEntries keys or
// forEachChunkBytes bytes), each from its own read transaction, and calls fn
// outside any transaction on copies that are reused after fn returns. So fn
// may call Update, a long walk does not pin old pages, and keys written
// concurrently with the walk may or may not be seen; each key is visited at
// most once and in ascending order.
func (s *Store) ForEach(bucket string, fn func(key, value []byte) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	var (
		name    = []byte(bucket)
		after   []byte // last key handed to fn
		started bool
		arena   []byte
		entries []entry
	)
	for {
		arena, entries = arena[:0], entries[:0]
		more := false
		err := s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			if !started {
				k, v = c.First()
			} else if k, v = c.Seek(after); k != nil && string(k) == string(after) {
				k, v = c.Next()
			}
			// boltstore makes no nested buckets, so a nil v is an empty
			// value, never a bucket.
			for ; k != nil; k, v = c.Next() {
				if len(entries) == forEachChunkEntries || (len(entries) > 0 && len(arena)+len(k)+len(v) > forEachChunkBytes) {
					more = true
					return nil
				}
				e := entry{k: len(arena)}
				arena = append(arena, k...)
				e.v = len(arena)
				arena = append(arena, v...)
				e.end = len(arena)
				entries = append(entries, e)
			}
			return nil
		})
		if err != nil {
			return s.readErr("for each in bucket "+truncate(bucket), err)
		}
		for _, e := range entries {
			if err := fn(arena[e.k:e.v:e.v], arena[e.v:e.end:e.end]); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		last := entries[len(entries)-1]
		after = append(after[:0], arena[last.k:last.v]...)
		started = true
	}
}

// Bounds of one ForEach chunk.
const (
	forEachChunkEntries = 1024
	forEachChunkBytes   = 4 << 20
)

// entry locates a key and its value in a ForEach arena.
type entry struct{ k, v, end int }

// Buckets calls fn with every bucket name in ascending order; see
// store.Store. The names are read in one read transaction and fn is called
// outside it, so fn may call Update.
func (s *Store) Buckets(fn func(name string) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	var names []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	if err != nil {
		return s.readErr("list buckets", err)
	}
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// readErr wraps an error of a read transaction, turning bbolt's "database
// not open" (a Close that raced the read) into store.ErrClosed.
func (s *Store) readErr(what string, err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return fmt.Errorf("store %s: %s: %w", s.path, what, err)
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops accepting updates (they fail with store.ErrClosed), waits for
// the committer to apply everything already queued, and closes the file.
// Calling Close again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.stopped
	close(s.trimStop)
	<-s.trimmed
	if s.db.NoSync {
		if err := s.db.Sync(); err != nil {
			_ = s.db.Close()
			return fmt.Errorf("close store %s: sync: %w", s.path, err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	s.log.Debug("store closed")
	return nil
}

// Stats is a snapshot of a Store's counters since Open.
type Stats struct {
	// Commits counts read-write transactions committed.
	Commits uint64
	// Updates counts Update calls applied (those that returned nil after a
	// commit).
	Updates uint64
	// Ops counts ops applied.
	Ops uint64
	// Syncs counts fdatasync calls made by commits. bbolt syncs twice per
	// commit (data pages, then the meta page), so this is 2×Commits; the
	// occasional sync when the file grows is not counted.
	Syncs uint64
	// Failed counts Update calls that returned an error other than a
	// cancellation or ErrClosed: invalid batches and failed commits.
	Failed uint64
	// Cancelled counts Update calls whose ctx ended before their batch was
	// taken.
	Cancelled uint64
	// Fallbacks counts merged transactions that failed and were retried
	// without the failing caller or caller by caller.
	Fallbacks uint64
	// CommitTime is the total time spent applying and committing
	// transactions, syncs included.
	CommitTime time.Duration
	// WriteTime is the part of CommitTime bbolt spent writing pages to the
	// file and syncing them: the disk's share.
	WriteTime time.Duration
}

// MeanBatch is the mean number of Update calls per commit.
func (st Stats) MeanBatch() float64 {
	if st.Commits == 0 {
		return 0
	}
	return float64(st.Updates) / float64(st.Commits)
}

// MeanBatchOps is the mean number of ops per commit.
func (st Stats) MeanBatchOps() float64 {
	if st.Commits == 0 {
		return 0
	}
	return float64(st.Ops) / float64(st.Commits)
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	commits := s.stats.commits.Load()
	db := s.db.Stats()
	return Stats{
		Commits:    commits,
		Updates:    s.stats.updates.Load(),
		Ops:        s.stats.ops.Load(),
		Syncs:      2 * commits,
		Failed:     s.stats.failed.Load(),
		Cancelled:  s.stats.cancelled.Load(),
		Fallbacks:  s.stats.fallbacks.Load(),
		CommitTime: time.Duration(s.stats.commitNanos.Load()),
		WriteTime:  db.TxStats.GetWriteTime(),
	}
}

// counters back Stats.
type counters struct {
	commits, updates, ops, failed, cancelled, fallbacks, commitNanos atomic.Uint64
}
