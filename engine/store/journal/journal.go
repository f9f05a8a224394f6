// Package journal puts a write-ahead log in front of another store.Store.
//
// A bbolt commit syncs the disk twice and rewrites B-tree pages, so a
// persistent send confirmed by bbolt alone waits for two random writes. The
// journal confirms an Update once its ops are appended to a sequential log
// file and synced once (group commit: every Update waiting meanwhile shares
// that sync), then applies them to the inner store in large batches in the
// background, off the critical path. When the inner store has made a log
// segment's records durable, the segment is deleted. On Open, the records
// still in the log are applied to the inner store again before anything else
// happens; puts, deletes and bucket deletes are blind writes, so applying a
// suffix of the log again over a state that already contains part of it
// yields the same state.
//
// The engine reads the store only at start-up (recovery); ForEach and
// Buckets first wait until every journaled Update has reached the inner
// store, so they always see every confirmed write.
//
// The journal is a store.Store itself, so the engine does not know it is
// there; a replicated store can sit under it, or replace it, later.
package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// Defaults for zero Options fields.
const (
	DefaultSegmentSize = 32 << 20
	DefaultMaxPending  = 32 << 20
	DefaultApplyBatch  = 16384
	// DefaultApplyBatchBytes bounds the log bytes of one application: a
	// transaction of the inner store holds what it writes in memory until
	// it commits, so 16384 puts of 64 KiB messages would hold 1 GiB.
	DefaultApplyBatchBytes = 8 << 20
	// DefaultApplyInterval spaces the applier's commits to the inner store,
	// so that its syncs do not compete with the log's for the disk.
	DefaultApplyInterval = 50 * time.Millisecond
)

// Options configure a journal.
type Options struct {
	// SegmentSize is the size at which the log moves to a new segment file.
	SegmentSize int64
	// MaxPending bounds the bytes confirmed but not yet applied to the inner
	// store; Updates wait while it is exceeded.
	MaxPending int64
	// ApplyBatch bounds the ops applied to the inner store in one Update.
	ApplyBatch int
	// ApplyBatchBytes bounds the log bytes applied in one Update (one
	// record, however large, is always applied whole).
	ApplyBatchBytes int64
	// ApplyInterval is the least time between two applications to the inner
	// store while the log is not filling up; negative applies at once.
	ApplyInterval time.Duration
	// Validate checks a batch before it is journaled, with the inner
	// store's rules, so that a batch the inner store would refuse fails its
	// caller instead of failing in the background. Nil accepts any batch
	// with known kinds and non-empty bucket names.
	Validate func(ops []store.Op) error
	// Logger receives background failures; nil discards.
	Logger *slog.Logger
	// ObserveSync, when set, is told how long each sync of the log took
	// (the fdatasync that makes a group commit durable): the store's fsync
	// latency metric. It runs on the commit loop, so it must be cheap.
	ObserveSync func(time.Duration)
}

// Stats are the journal's counters.
type Stats struct {
	Commits uint64 // log syncs
	Updates uint64 // Update calls confirmed
	Ops     uint64 // ops confirmed
	Bytes   uint64 // log bytes written
	Applied uint64 // ops applied to the inner store
	// Compacted counts journaled ops never applied: a later op of the same
	// application (a delete after a put of the same key) made them moot.
	Compacted uint64
}

// Store is a store.Store with a write-ahead log in front of an inner store.
type Store struct {
	inner store.Store
	dir   string
	opts  Options
	log   *slog.Logger

	mu      sync.Mutex
	cond    *sync.Cond // signalled when pending shrinks or the applier idles
	queue   []*request
	closed  bool
	failed  error // a log write failed: the journal refuses further updates
	pending int64 // bytes confirmed, not yet applied
	// committing counts batches taken from queue and not yet in applyQ.
	committing  int
	applierGone bool
	confirmed   uint64 // records confirmed so far
	appliedRecs uint64 // records applied to the inner store so far
	urgent      int    // drain and Close waiting: apply without pausing
	spareBusy   bool
	spareReady  bool
	spareSize   int64
	applyQ      []record
	active      uint64 // the segment being written
	stats       Stats
	// lastArrival is when the latest write that is not held arrived:
	// whether a lingering write has company coming (lingerFor).
	lastArrival time.Time
	// sleepUntil is when the committer, asleep for a deadline, wakes by
	// itself; zero while it is not so asleep (see needsWake).
	sleepUntil time.Time

	wake      chan struct{}
	applyWake chan struct{}
	applyNow  chan struct{} // ends the applier's pause (drain, Close, back-pressure)
	stopped   chan struct{}
	applied   chan struct{}

	// Owned by the applier: the inner store's buckets, for compact.
	buckets map[string]bool

	// Owned by the committer.
	seg     *os.File
	segSize int64 // bytes written to seg
	segCap  int64 // its zeroed size: past it, the next segment
	buf     []byte
}

type request struct {
	// ops are the caller's; dropped once the request is answered, since
	// a Pending, and so the request, may live as long as its message.
	ops []store.Op
	// makeOps, for HoldFunc, makes ops when the committer takes the
	// request; dropped with ops.
	makeOps func() []store.Op
	done    chan error
	until   time.Time  // lingering: the commit may wait for company until then
	hold    bool       // Hold: until is a deadline, not a wish for company
	sub     *submitted // for Submit: told instead of done
}

// Lingering.
//
// A write that may linger (UpdateLinger, Submit with a linger) waits for
// company only when company is likely: when another write arrived less
// than its linger before it, so that writes are coming in a stream (many
// consumers' acknowledgements, a busy producer). A write that arrives
// alone is committed at once: at a light load, waiting would only add
// the linger to its latency, with nothing to share the sync with. A
// write queued while a commit is in flight waits for that commit anyway,
// and shares the next one with whatever arrives meanwhile.
//
// A held write (Hold) is different: it waits so that it can be taken back
// (consume before store), not for company. It never makes the committer
// commit before its deadline, and it does not count as company for
// others; but a commit that takes a write queued after it takes it too,
// since the log keeps the order of the writes.

// lingerFor is how long a write asking to linger for linger may wait:
// linger when hold, or when another write that seeks company arrived
// sinceOther before it (negative: none yet) and that is less than linger;
// 0, commit at once, otherwise.
func lingerFor(linger time.Duration, hold bool, sinceOther time.Duration) time.Duration {
	switch {
	case linger <= 0:
		return 0
	case hold:
		return linger
	case sinceOther >= 0 && sinceOther < linger:
		return linger
	}
	return 0
}

// plan decides what the committer does with queue q at now: commit its
// first n requests (n > 0), or wait up to wait for a deadline or a new
// arrival (n == 0). Once any request is due (no linger left), the commit
// takes every request up to the last one that is due or seeks company;
// held requests after it stay queued, still withdrawable. The order of
// the log is the order of the queue.
func plan(q []*request, now time.Time) (n int, wait time.Duration) {
	due := func(r *request) bool { return r.until.IsZero() || !now.Before(r.until) }
	var first time.Time
	anyDue := false
	for i, r := range q {
		if due(r) {
			anyDue = true
		} else if first.IsZero() || r.until.Before(first) {
			first = r.until
		}
		if !r.hold || due(r) {
			n = i + 1
		}
	}
	if anyDue {
		return n, 0
	}
	return 0, first.Sub(now)
}

// finish answers the request and drops its ops. It runs on the committer,
// which owns the request once it has taken it from the queue.
func (r *request) finish(err error) {
	r.ops, r.makeOps = nil, nil
	if r.sub != nil {
		r.sub.err = err
		close(r.sub.fin)
		return
	}
	r.done <- err
}

// submitted is a store.Pending.
type submitted struct {
	s   *Store
	r   *request
	fin chan struct{}
	err error
}

func (p *submitted) Done() <-chan struct{} { return p.fin }
func (p *submitted) Err() error            { return p.err }

// Withdraw removes the request from the queue if the committer has not
// taken it.
func (p *submitted) Withdraw() bool {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.queue {
		if r == p.r {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			r.ops, r.makeOps = nil, nil
			p.err = store.ErrWithdrawn
			close(p.fin)
			return true
		}
	}
	return false
}

// Submit queues ops to be made durable, lingering up to linger for company,
// and returns at once (store.Submitter). Invalid ops, a closed or failed
// journal give a Pending that is already done with the error.
func (s *Store) Submit(ops []store.Op, linger time.Duration) store.Pending {
	return s.submit(ops, linger, false)
}

var _ store.Holder = (*Store)(nil)

// Hold queues ops to be made durable within hold, and returns at once.
// Until then the write can be withdrawn (Pending.Withdraw); it is
// committed earlier only along with a write queued after it. The engine
// holds the first write of a message it hands to a waiting consumer, so
// that an acknowledgement within hold takes it back and the message is
// never written.
func (s *Store) Hold(ops []store.Op, hold time.Duration) store.Pending {
	return s.submit(ops, hold, true)
}

// HoldFunc is Hold for ops that makeOps makes only once the committer
// takes the write, on the committer's goroutine, with nothing locked: a
// write withdrawn before then never makes them. The engine holds a
// message's first write this way, so that a message consumed within the
// hold is never even encoded. makeOps must only read what does not change
// meanwhile; its ops are validated then, and a batch that fails fails
// this write alone.
func (s *Store) HoldFunc(makeOps func() []store.Op, hold time.Duration) store.Pending {
	p := &submitted{s: s, fin: make(chan struct{})}
	return s.enqueue(p, &request{makeOps: makeOps, sub: p, hold: true}, hold)
}

func (s *Store) submit(ops []store.Op, linger time.Duration, hold bool) store.Pending {
	p := &submitted{s: s, fin: make(chan struct{})}
	if err := s.validate(ops); err != nil {
		p.err = err
		close(p.fin)
		return p
	}
	if len(ops) == 0 {
		ops = nil
	}
	return s.enqueue(p, &request{ops: ops, sub: p, hold: hold}, linger)
}

// enqueue queues r, whose Pending is p, lingering (or held) for linger.
// A request with neither ops nor makeOps is answered at once.
func (s *Store) enqueue(p *submitted, r *request, linger time.Duration) store.Pending {
	fail := func(err error) store.Pending {
		p.err = err
		close(p.fin)
		return p
	}
	p.r = r
	s.mu.Lock()
	s.arrive(r, linger)
	switch {
	case s.closed:
		s.mu.Unlock()
		return fail(store.ErrClosed)
	case s.failed != nil:
		err := s.failed
		s.mu.Unlock()
		return fail(err)
	case r.ops == nil && r.makeOps == nil:
		s.mu.Unlock()
		return fail(nil)
	}
	s.queue = append(s.queue, r)
	wake := s.needsWake(r)
	s.mu.Unlock()
	if wake {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return p
}

// needsWake reports whether the committer must be woken for r, just
// queued: not when it is already asleep until a deadline no later than
// r's (it will look at r then), which spares a goroutine switch per
// message while held writes come and go. Called under s.mu.
func (s *Store) needsWake(r *request) bool {
	return r.until.IsZero() || s.sleepUntil.IsZero() || r.until.Before(s.sleepUntil)
}

// record is one confirmed Update waiting to be applied: its encoded ops
// (the applier decodes them, so callers' slices are never retained) and the
// segment that holds it.
type record struct {
	data []byte
	ops  int
	seg  uint64
}

var _ store.Store = (*Store)(nil)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Open opens (creating if needed) the journal in dir over inner, replays
// whatever the log still holds into inner, and starts the committer and the
// applier. Closing the journal closes inner.
func Open(ctx context.Context, dir string, inner store.Store, opts Options) (*Store, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.ApplyBatch <= 0 {
		opts.ApplyBatch = DefaultApplyBatch
	}
	if opts.ApplyBatchBytes <= 0 {
		opts.ApplyBatchBytes = DefaultApplyBatchBytes
	}
	if opts.ApplyInterval == 0 {
		opts.ApplyInterval = DefaultApplyInterval
	}
	s := &Store{inner: inner, dir: dir, opts: opts, log: opts.Logger,
		wake: make(chan struct{}, 1), applyWake: make(chan struct{}, 1), applyNow: make(chan struct{}, 1),
		stopped: make(chan struct{}), applied: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.cond = sync.NewCond(&s.mu)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("open journal %s: %w", dir, err)
	}
	_ = os.Remove(filepath.Join(dir, spareName)) // a spare left by a crash is remade
	last, err := s.replay(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.openSegment(last + 1); err != nil {
		return nil, err
	}
	s.buckets = map[string]bool{}
	if err := inner.Buckets(func(name string) error { s.buckets[name] = true; return nil }); err != nil {
		return nil, fmt.Errorf("open journal %s: list buckets: %w", dir, err)
	}
	go s.commitLoop()
	go s.applyLoop()
	return s, nil
}

func segName(seq uint64) string { return fmt.Sprintf("journal-%016d.log", seq) }

// segments lists the segment numbers in dir, ascending.
func (s *Store) segments() ([]uint64, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list journal %s: %w", s.dir, err)
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "journal-") || !strings.HasSuffix(name, ".log") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "journal-"), ".log"), 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, n)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// replay applies every record left in the log to inner, makes it durable
// there, and removes the segments. It returns the last segment number.
func (s *Store) replay(ctx context.Context) (uint64, error) {
	seqs, err := s.segments()
	if err != nil {
		return 0, err
	}
	var last uint64
	var batch []store.Op
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.inner.Update(ctx, batch)
		batch = nil
		return err
	}
	records := 0
	for i, seq := range seqs {
		last = seq
		path := filepath.Join(s.dir, segName(seq))
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("read journal segment %s: %w", path, err)
		}
		off := 0
		for off < len(data) {
			payload, n, ok := readRecord(data[off:])
			if !ok {
				if allZero(data[off:]) {
					break // the unused, zeroed end of the segment
				}
				if i != len(seqs)-1 {
					return 0, fmt.Errorf("journal segment %s is corrupt at offset %d (not the last segment: refusing to guess)", path, off)
				}
				// A torn write at the tail: it was never confirmed.
				s.log.Warn("journal: discarding a torn record at the end of the log", slog.String("segment", path), slog.Int("offset", off), slog.Int("bytes", len(data)-off))
				break
			}
			ops, err := decodeOps(payload)
			if err != nil {
				return 0, fmt.Errorf("journal segment %s offset %d: %w", path, off, err)
			}
			batch = append(batch, ops...)
			records++
			if len(batch) >= s.opts.ApplyBatch {
				if err := flush(); err != nil {
					return 0, fmt.Errorf("replay journal: %w", err)
				}
			}
			off += n
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("replay journal: %w", err)
	}
	for _, seq := range seqs {
		if err := os.Remove(filepath.Join(s.dir, segName(seq))); err != nil {
			return 0, fmt.Errorf("remove replayed journal segment: %w", err)
		}
	}
	if records > 0 {
		s.log.Info("journal replayed", slog.Int("records", records), slog.Int("segments", len(seqs)))
	}
	return last, syncDir(s.dir)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync journal directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync journal directory %s: %w", dir, err)
	}
	return nil
}

func (s *Store) openSegment(seq uint64) error {
	path := filepath.Join(s.dir, segName(seq))
	// A segment is written over zeros laid down in advance: syncing data
	// into blocks that already exist does not change the file's size or
	// extents, so the sync need not commit file-system metadata, which
	// roughly halves its cost.
	// Segments start small and double up to SegmentSize, so that a
	// short-lived broker (a test) does not write megabytes of zeros.
	spare, size := s.takeSpare()
	if spare == "" {
		size = min(s.opts.SegmentSize, initialSegmentSize)
		var err error
		if spare, err = s.makeSpare(size); err != nil {
			return err
		}
	}
	if err := os.Rename(spare, path); err != nil {
		return fmt.Errorf("create journal segment %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open journal segment %s: %w", path, err)
	}
	if err := syncDir(s.dir); err != nil {
		_ = f.Close()
		return err
	}
	if s.seg != nil {
		_ = s.seg.Close()
	}
	s.seg, s.segSize, s.segCap = f, 0, size
	s.mu.Lock()
	s.active = seq
	s.mu.Unlock()
	s.prepareSpare(min(2*size, s.opts.SegmentSize))
	return nil
}

// initialSegmentSize is the size of the first segment after Open.
const initialSegmentSize = 1 << 20

const spareName = "journal-spare.tmp"

// makeSpare writes a zero-filled, synced file of size bytes.
func (s *Store) makeSpare(size int64) (string, error) {
	path := filepath.Join(s.dir, spareName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("prepare journal segment: %w", err)
	}
	defer f.Close()
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.Write(zeros[:n]); err != nil {
			return "", fmt.Errorf("prepare journal segment: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("prepare journal segment: %w", err)
	}
	return path, nil
}

// prepareSpare makes the next segment's file in the background.
func (s *Store) prepareSpare(size int64) {
	s.mu.Lock()
	if s.spareBusy {
		s.mu.Unlock()
		return
	}
	s.spareBusy = true
	s.spareReady = false
	s.spareSize = size
	s.mu.Unlock()
	go func() {
		_, err := s.makeSpare(size)
		s.mu.Lock()
		s.spareBusy = false
		s.spareReady = err == nil
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("journal: prepare the next segment", slog.Any("err", err))
		}
	}()
}

// takeSpare returns the prepared segment file and its size, waiting for
// one being made; "" means none: the caller makes it.
func (s *Store) takeSpare() (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.spareBusy {
		s.cond.Wait()
	}
	if !s.spareReady {
		return "", 0
	}
	s.spareReady = false
	return filepath.Join(s.dir, spareName), s.spareSize
}

// Update journals ops and returns once they are durable in the log.
func (s *Store) Update(ctx context.Context, ops []store.Op) error {
	return s.update(ctx, ops, 0)
}

// UpdateLinger is Update for a write that may wait up to linger for other
// writes to share its sync (store.Lingerer).
func (s *Store) UpdateLinger(ctx context.Context, ops []store.Op, linger time.Duration) error {
	return s.update(ctx, ops, linger)
}

func (s *Store) update(ctx context.Context, ops []store.Op, linger time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.validate(ops); err != nil {
		return err
	}
	r := &request{ops: ops, done: make(chan error, 1)}
	s.mu.Lock()
	s.arrive(r, linger)
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	if s.failed != nil {
		s.mu.Unlock()
		return s.failed
	}
	if len(ops) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return <-r.done
}

func (s *Store) validate(ops []store.Op) error {
	if s.opts.Validate != nil {
		return s.opts.Validate(ops)
	}
	for i, op := range ops {
		if op.Bucket == "" || (op.Kind != store.Put && op.Kind != store.Delete && op.Kind != store.DeleteBucket) {
			return fmt.Errorf("journal update: op %d is invalid (kind %d, bucket %q)", i, op.Kind, op.Bucket)
		}
	}
	return nil
}

// arrive sets r's deadline for a linger of linger (see lingerFor) and
// notes its arrival; called under s.mu.
func (s *Store) arrive(r *request, linger time.Duration) {
	now := time.Now()
	since := time.Duration(-1)
	if !s.lastArrival.IsZero() {
		since = now.Sub(s.lastArrival)
	}
	if l := lingerFor(linger, r.hold, since); l > 0 {
		r.until = now.Add(l)
	}
	if !r.hold {
		s.lastArrival = now
	}
}

// commitLoop appends waiting Updates to the log, one sync per round.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		if len(s.queue) == 0 && s.closed {
			s.mu.Unlock()
			return
		}
		// Only lingering or held writes waiting: wait for the earliest
		// deadline, or for a write that makes a commit due.
		n, wait := len(s.queue), time.Duration(0)
		if !s.closed {
			n, wait = plan(s.queue, time.Now())
		}
		if n == 0 {
			s.sleepUntil = time.Now().Add(wait)
			s.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-s.wake:
			case <-t.C:
			}
			t.Stop()
			s.mu.Lock()
			s.sleepUntil = time.Time{}
			s.mu.Unlock()
			continue
		}
		// Back-pressure: let the applier catch up before confirming more.
		for s.pending > s.opts.MaxPending && s.failed == nil {
			s.pokeApplier()
			s.cond.Wait()
		}
		if !s.closed {
			// Withdrawals may have shortened the queue meanwhile.
			n, _ = plan(s.queue, time.Now())
			if n == 0 {
				s.mu.Unlock()
				continue
			}
		}
		n = min(n, len(s.queue))
		batch := append([]*request(nil), s.queue[:n]...)
		rest := copy(s.queue, s.queue[n:])
		clear(s.queue[rest:])
		s.queue = s.queue[:rest]
		if rest == 0 {
			s.queue = nil
		}
		s.committing++
		s.mu.Unlock()
		s.commit(batch)
		s.mu.Lock()
		s.committing--
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

func (s *Store) commit(batch []*request) {
	// HoldFunc's writes make their ops now; one whose ops are refused
	// fails alone, one with none is done.
	kept := batch[:0]
	for _, r := range batch {
		if r.makeOps != nil {
			r.ops, r.makeOps = r.makeOps(), nil
			if err := s.validate(r.ops); err != nil {
				r.finish(err)
				continue
			}
			if len(r.ops) == 0 {
				r.finish(nil)
				continue
			}
		}
		kept = append(kept, r)
	}
	clear(batch[len(kept):])
	batch = kept
	if len(batch) == 0 {
		return
	}
	s.buf = s.buf[:0]
	recs := make([]record, 0, len(batch))
	nops := 0
	for _, r := range batch {
		start := len(s.buf)
		s.buf = appendRecord(s.buf, r.ops)
		recs = append(recs, record{ops: len(r.ops), data: s.buf[start:]})
		nops += len(r.ops)
	}
	if s.segSize > 0 && s.segSize+int64(len(s.buf)) > s.segCap {
		s.mu.Lock()
		next := s.active + 1
		s.mu.Unlock()
		if err := s.openSegment(next); err != nil {
			s.fail(batch, err)
			return
		}
	}
	_, err := s.seg.WriteAt(s.buf, s.segSize)
	if err == nil {
		start := time.Now()
		err = fdatasync(s.seg)
		if obs := s.opts.ObserveSync; obs != nil && err == nil {
			obs(time.Since(start))
		}
	}
	if err != nil {
		s.fail(batch, fmt.Errorf("journal write: %w", err))
		return
	}
	s.segSize += int64(len(s.buf))
	s.mu.Lock()
	seg := s.active
	for i := range recs {
		// The committer reuses buf: the applier gets its own copy.
		recs[i].data = append([]byte(nil), recs[i].data...)
		recs[i].seg = seg
		s.pending += int64(len(recs[i].data))
	}
	s.applyQ = append(s.applyQ, recs...)
	s.confirmed += uint64(len(recs))
	s.stats.Commits++
	s.stats.Updates += uint64(len(batch))
	s.stats.Ops += uint64(nops)
	s.stats.Bytes += uint64(len(s.buf))
	s.mu.Unlock()
	for _, r := range batch {
		r.finish(nil)
	}
	select {
	case s.applyWake <- struct{}{}:
	default:
	}
}

// fail answers a batch whose log write failed and refuses every later
// Update: bytes of a failed write may sit in the log, and records appended
// after them could not be read back.
func (s *Store) fail(batch []*request, err error) {
	s.log.Error("journal write failed; refusing further updates", slog.Any("err", err))
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	for _, r := range batch {
		r.finish(err)
	}
}

// applyLoop applies confirmed records to the inner store and deletes the
// segments whose records are all durable there.
func (s *Store) applyLoop() {
	defer func() {
		s.mu.Lock()
		s.applierGone = true
		s.cond.Broadcast()
		s.mu.Unlock()
		close(s.applied)
	}()
	var lastApply time.Time
	for {
		s.mu.Lock()
		for len(s.applyQ) == 0 {
			if s.closed && len(s.queue) == 0 && s.isStopped() {
				s.mu.Unlock()
				return
			}
			s.cond.Broadcast() // idle: wake ForEach and Close waiters
			s.mu.Unlock()
			select {
			case <-s.applyWake:
			case <-s.stopped:
			}
			s.mu.Lock()
		}
		// Let records accumulate: one large application costs the disk
		// far less than many small ones, and nobody waits for it.
		if wait := s.opts.ApplyInterval - time.Since(lastApply); wait > 0 && s.urgent == 0 && !s.closed &&
			s.pending < s.opts.MaxPending/2 {
			s.mu.Unlock()
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-s.applyNow:
			}
			timer.Stop()
			s.mu.Lock()
		}
		n, nops, nbytes := 0, 0, int64(0)
		for n < len(s.applyQ) && (nops == 0 || (nops+s.applyQ[n].ops <= s.opts.ApplyBatch &&
			nbytes+int64(len(s.applyQ[n].data)) <= s.opts.ApplyBatchBytes)) {
			nops += s.applyQ[n].ops
			nbytes += int64(len(s.applyQ[n].data))
			n++
		}
		take := append([]record(nil), s.applyQ[:n]...)
		s.mu.Unlock()

		ops := make([]store.Op, 0, nops)
		var size int64
		for _, rec := range take {
			payload, _, _ := readRecord(rec.data)
			dec, err := decodeOps(payload)
			if err != nil {
				// Cannot happen: the committer encoded it.
				s.log.Error("journal: undecodable record", slog.Any("err", err))
			}
			ops = append(ops, dec...)
			size += int64(len(rec.data))
		}
		nJournaled := len(ops)
		ops = compact(ops, func(b string) bool { return s.buckets[b] })
		for attempt := 0; ; attempt++ {
			err := s.inner.Update(context.Background(), ops)
			if err == nil {
				break
			}
			if errors.Is(err, store.ErrClosed) {
				s.log.Error("journal: inner store closed with records unapplied; they stay in the log", slog.Int("ops", len(ops)))
				return
			}
			s.log.Error("journal: applying to the inner store failed; retrying", slog.Any("err", err), slog.Int("attempt", attempt))
			time.Sleep(min(time.Duration(attempt+1)*50*time.Millisecond, 2*time.Second))
		}

		for _, op := range ops {
			switch op.Kind {
			case store.Put:
				s.buckets[op.Bucket] = true
			case store.DeleteBucket:
				delete(s.buckets, op.Bucket)
			}
		}
		lastApply = time.Now()
		s.mu.Lock()
		s.applyQ = s.applyQ[n:]
		s.appliedRecs += uint64(n)
		s.pending -= size
		s.stats.Applied += uint64(len(ops))
		s.stats.Compacted += uint64(nJournaled - len(ops))
		oldest := s.active
		if len(s.applyQ) > 0 {
			oldest = s.applyQ[0].seg
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		s.removeBefore(oldest)
	}
}

func (s *Store) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// removeBefore deletes the segments older than seq: all their records are
// durable in the inner store.
func (s *Store) removeBefore(seq uint64) {
	seqs, err := s.segments()
	if err != nil {
		s.log.Warn("journal: list segments", slog.Any("err", err))
		return
	}
	for _, n := range seqs {
		if n >= seq {
			break
		}
		if err := os.Remove(filepath.Join(s.dir, segName(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("journal: remove applied segment", slog.Any("err", err))
		}
	}
}

// drain waits until every Update confirmed (or being confirmed) when it is
// called has reached the inner store.
func (s *Store) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urgent++
	defer func() { s.urgent-- }()
	s.pokeApplier()
	for (len(s.queue) > 0 || s.committing > 0 || len(s.applyQ) > 0) && s.failed == nil && !s.applierGone {
		s.cond.Wait()
	}
}

// pokeApplier ends a pause of the applier.
func (s *Store) pokeApplier() {
	select {
	case s.applyNow <- struct{}{}:
	default:
	}
}

// ForEach waits for the applier, then reads the inner store.
func (s *Store) ForEach(bucket string, fn func(key, value []byte) error) error {
	s.drain()
	return s.inner.ForEach(bucket, fn)
}

// Get waits for the applier when records are pending, then reads the inner
// store. It hurries the applier: the scheduler's pager reads messages due
// within its lookahead, which must not wait for the next regular
// application.
func (s *Store) Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error {
	// Wait only for the records confirmed so far, not for those that keep
	// arriving: Get must see every Update that has returned.
	s.mu.Lock()
	target := s.confirmed
	if s.appliedRecs < target {
		s.urgent++
		s.pokeApplier()
		for s.appliedRecs < target && s.failed == nil && !s.applierGone {
			s.cond.Wait()
		}
		s.urgent--
	}
	s.mu.Unlock()
	return s.inner.Get(bucket, keys, fn)
}

// Buckets waits for the applier, then lists the inner store's buckets.
func (s *Store) Buckets(fn func(name string) error) error {
	s.drain()
	return s.inner.Buckets(fn)
}

// Stats returns the journal's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Inner returns the store under the journal.
func (s *Store) Inner() store.Store { return s.inner }

// Close confirms what is queued, applies everything to the inner store,
// removes the log and closes the inner store.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.pokeApplier()
	<-s.stopped
	<-s.applied
	var errs []error
	s.mu.Lock()
	clean := len(s.applyQ) == 0 && s.failed == nil
	s.mu.Unlock()
	if s.seg != nil {
		if err := s.seg.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close journal segment: %w", err))
		}
	}
	if clean {
		s.removeBefore(^uint64(0))
	}
	s.mu.Lock()
	for s.spareBusy {
		s.cond.Wait()
	}
	s.mu.Unlock()
	_ = os.Remove(filepath.Join(s.dir, spareName))
	if err := s.inner.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Record format: length (4 bytes, of the payload), CRC-32C of the payload
// (4 bytes), payload. Payload: op count (uvarint), then per op: kind (1
// byte), bucket, key, value (each a uvarint length and the bytes).

func appendRecord(dst []byte, ops []store.Op) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(ops)))
	for i := range ops {
		op := &ops[i]
		dst = append(dst, byte(op.Kind))
		dst = binary.AppendUvarint(dst, uint64(len(op.Bucket)))
		dst = append(dst, op.Bucket...)
		dst = binary.AppendUvarint(dst, uint64(len(op.Key)))
		dst = append(dst, op.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
		dst = append(dst, op.Value...)
	}
	payload := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

// readRecord returns the payload of the record at the start of b and its
// total length; ok is false when b holds no whole, intact record.
func readRecord(b []byte) (payload []byte, n int, ok bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	size := int(binary.LittleEndian.Uint32(b))
	if size == 0 || size > len(b)-8 {
		return nil, 0, false // a record is never empty: zeros are unused space
	}
	payload = b[8 : 8+size]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return payload, 8 + size, true
}

var errCorrupt = errors.New("journal record is malformed")

func decodeOps(p []byte) ([]store.Op, error) {
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p)) {
		return nil, errCorrupt
	}
	p = p[n:]
	ops := make([]store.Op, 0, count)
	field := func() ([]byte, error) {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return nil, errCorrupt
		}
		f := p[n : n+int(l)]
		p = p[n+int(l):]
		return f, nil
	}
	for i := uint64(0); i < count; i++ {
		if len(p) == 0 {
			return nil, errCorrupt
		}
		op := store.Op{Kind: store.OpKind(p[0])}
		p = p[1:]
		b, err := field()
		if err != nil {
			return nil, err
		}
		op.Bucket = string(b)
		if op.Key, err = field(); err != nil {
			return nil, err
		}
		if op.Value, err = field(); err != nil {
			return nil, err
		}
		if len(op.Key) == 0 {
			op.Key = nil
		}
		if len(op.Value) == 0 {
			op.Value = nil
		}
		ops = append(ops, op)
	}
	if len(p) != 0 {
		return nil, errCorrupt
	}
	return ops, nil
}
