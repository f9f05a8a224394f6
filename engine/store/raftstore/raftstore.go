// Package raftstore is the replicated store of issue #17: a store.Store whose
// writes are entries of a github.com/hashicorp/raft log, applied on every
// member to a local bbolt store (package boltstore). The engine sees only
// store.Store; which node leads, and how the others follow, stays in here.
//
// # Writes
//
// Update validates its batch with boltstore's rules, encodes it (the
// caller's slices are not kept) and queues it. One batcher goroutine takes
// everything that is waiting, up to Options.MaxBatchOps and
// Options.MaxBatchBytes, and hands it to raft as ONE log entry (one Apply per
// batch): a group commit, so the sends and acknowledgements of many callers
// share one round of replication and one sync of the log. Up to
// Options.MaxInFlight entries are replicated at a time; what queues meanwhile
// forms the next batch. Update returns nil once the entry is committed on a
// majority and applied to this node's local state, so every read on this
// node (Get, ForEach, Range, Buckets) sees it. Entries are applied in log
// order, so a later Update is never applied before an earlier one that had
// returned, nor a later Submit before an earlier one. Submit
// (store.Submitter) queues the same way and returns at once; its Pending can
// be withdrawn until the batcher hands it to raft. UpdateLinger
// (store.Lingerer) is Update.
//
// A write on a node that is not the leader fails at once with a
// *NotLeaderError (errors.Is ErrNotLeader) naming the leader, if one is
// known; nothing of it was applied. A write whose outcome raft cannot know —
// leadership lost after the entry was appended, no answer within
// Options.ApplyTimeout — fails with an error wrapping store.ErrIndeterminate
// (ErrIndeterminate here is the same value): it may or may not be committed,
// and may yet be applied. store.Store allows that outcome for that error
// only; the engine answers it by fencing itself (engine.ErrFenced), and the
// broker rebuilds it from the store.
//
// # State, snapshots and restarts
//
// The local state is a boltstore file (state.db), written in bulk by a
// flusher (see fsm: applied entries wait in memory up to
// Options.FlushInterval; reads write them out first); the raft log and its
// stable values are a write-ahead log under wal/ (openLogBackend; a node
// made before it keeps its bbolt raft.db); raft snapshots go under
// snapshots/. Each flush also records the index of its last entry, and the
// writer generation, in a reserved bucket (metaBucket, hidden from readers and
// refused to writers) in the same bbolt transaction, so a restart does not
// replay entries the state already holds (a replay of older entries would
// briefly show older values). A snapshot is the state file itself, written
// by bbolt's Tx.WriteTo; Restore replaces the local state with one in
// bounded batches, clearing the applied index first so that a crash half-way
// makes the next start restore again. Raft truncates its log after a
// snapshot (Options.SnapshotThreshold, TrailingLogs, SnapshotInterval).
// While a snapshot is written out it holds a bbolt read transaction, so an
// apply that must grow the state file's memory map waits for it. A start
// also restores when the newest snapshot ends in entries that are not
// writes (an election's no-op), which is correct but slower than needed.
//
// # Writer generations
//
// Begin starts a writer generation (numbered by its entry's log index);
// writes made with UpdateGen or SubmitGen for an older generation that
// reach the log after it are skipped by every node's FSM alike and fail
// with a *StaleError (ErrStale): a fence carried in the entries
// themselves, so that a replaced writer's queued writes cannot land under
// its successor. Update and Submit (generation 0) are not checked.
//
// # Leadership
//
// Options.OnLeadership is told, in order, when this node gains leadership —
// after a barrier, so its state holds every committed entry — and when it
// loses it, with the raft term of that leadership as its epoch.
//
// # Locks
//
// Store.mu guards the write queue; fsm's locks (their order is written on
// fsm) are taken by fsm's methods only. No goroutine holds Store.mu and
// one of fsm's. A read's fn runs under fsm.mu's read lock (Buckets'
// excepted), so it must not wait for a write to be applied on this node.
package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// logCacheEntries is how many of the latest log entries are kept in memory.
const logCacheEntries = 512

// Defaults for zero fields of Options.
const (
	DefaultMaxBatchOps   = 8192
	DefaultMaxBatchBytes = 4 << 20
	DefaultMaxInFlight   = 4
	DefaultApplyTimeout  = 10 * time.Second
	// DefaultSnapshotRetain is how many snapshots are kept on disk.
	DefaultSnapshotRetain = 2
	// DefaultFlushInterval spaces the writes of applied entries to the
	// local state (see fsm's Deferred application).
	DefaultFlushInterval = 100 * time.Millisecond
	// DefaultMaxPendingBytes bounds the applied entries not yet written to
	// the local state.
	DefaultMaxPendingBytes = 64 << 20
)

// ErrNotLeader is matched (errors.Is) by the *NotLeaderError of a write on a
// node that is not the leader. Nothing of such a write was applied.
var ErrNotLeader = errors.New("raftstore: not the leader")

// ErrIndeterminate is store.ErrIndeterminate, kept under this name for
// compatibility. It is wrapped by the error of a write whose outcome is
// unknown: raft had taken the entry when leadership was lost, or no outcome
// came within Options.ApplyTimeout. The write may or may not be committed and
// applied. Callers must not undo anything in memory on it; they must treat
// their view as unknown and rebuild it from the store of a current leader.
var ErrIndeterminate = store.ErrIndeterminate

// ErrStale is matched (errors.Is) by the *StaleError of a write made for
// a writer generation that had ended when its entry was applied (see
// Begin). Nothing of such a write was applied, on any node.
var ErrStale = errors.New("raftstore: write of an ended writer generation")

// NotLeaderError is the error of a write on a node that is not the leader.
type NotLeaderError struct {
	// LeaderAddr and LeaderID name the current leader as this node knows
	// it; both are empty when it knows none (an election is under way).
	LeaderAddr string
	LeaderID   string
	// Cause is raft's error, if raft refused the write.
	Cause error
}

func (e *NotLeaderError) Error() string {
	if e.LeaderAddr == "" {
		return "raftstore: not the leader (no leader known)"
	}
	return fmt.Sprintf("raftstore: not the leader; the leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Unwrap returns raft's error, if any.
func (e *NotLeaderError) Unwrap() error { return e.Cause }

// Peer is another voting member of the initial configuration.
type Peer struct {
	ID   string
	Addr string // host:port of its raft transport
}

// Leadership is a change of this node's role.
type Leadership struct {
	// Leader is true when this node became the leader, false when it
	// stopped being it.
	Leader bool
	// Epoch is the raft term of the leadership gained or lost; every
	// leadership has a greater epoch than the ones before it.
	Epoch uint64
}

// Options configure Open.
type Options struct {
	// NodeID names this node in the cluster; it must not change.
	NodeID string
	// BindAddr is the host:port raft listens on ("127.0.0.1:0" picks a free
	// port; Addr reports it).
	BindAddr string
	// Advertise is the host:port peers dial, when it is not BindAddr (one
	// that binds every interface, 0.0.0.0); its port 0 is BindAddr's.
	Advertise string
	// TLS, when set, makes the transport mutual TLS.
	TLS *TLS
	// DataDir holds state.db, wal/ (raft.db on nodes made before the WAL)
	// and snapshots/.
	DataDir string
	// Bootstrap makes a node with no raft state yet start a new cluster of
	// itself and Peers. A node with state ignores it.
	Bootstrap bool
	// Peers are the other voters of the initial configuration (Bootstrap).
	Peers []Peer

	// Raft timing; raft's defaults when zero (1 s, 1 s, 500 ms, 50 ms).
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// ApplyTimeout bounds how long a write waits for its entry's outcome
	// before failing with ErrIndeterminate (DefaultApplyTimeout if zero).
	ApplyTimeout time.Duration

	// MaxBatchOps and MaxBatchBytes bound one log entry (defaults if
	// zero); one Update is never split.
	MaxBatchOps   int
	MaxBatchBytes int
	// MaxInFlight bounds the entries being replicated at once
	// (DefaultMaxInFlight if zero).
	MaxInFlight int

	// Snapshots and log truncation; raft's defaults when zero (8192
	// entries, 120 s, 10240 trailing entries).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// SnapshotRetain is how many snapshots are kept (DefaultSnapshotRetain
	// if zero).
	SnapshotRetain int

	// FlushInterval is how often applied entries are written to the local
	// state in one transaction (DefaultFlushInterval if zero); reads and
	// snapshots write them at once. MaxPendingBytes bounds what waits
	// (DefaultMaxPendingBytes if zero).
	FlushInterval   time.Duration
	MaxPendingBytes int

	// LogSegmentBytes is the size of the raft log's segment files (the
	// WAL's default, 64 MiB, if zero). Truncation after a snapshot frees
	// whole segments; entries still in a segment stay readable, so a
	// follower that is behind may be sent them instead of a snapshot.
	LogSegmentBytes int

	// OnLeadership, if set, is told of every change of this node's role,
	// in order, from one goroutine. It must not block for long.
	OnLeadership func(Leadership)
	// Logger receives raft's and this store's messages (slog.Default() if
	// nil).
	Logger *slog.Logger
}

// Stats are a Store's counters since Open.
type Stats struct {
	Updates  uint64 // Update calls handed to raft
	Entries  uint64 // log entries they made
	Ops      uint64 // ops in them
	Restores uint64 // snapshots restored into the local state
	Flushes  uint64 // transactions that wrote applied entries to the local state
}

// MeanBatch is the mean number of Updates per log entry.
func (st Stats) MeanBatch() float64 {
	if st.Entries == 0 {
		return 0
	}
	return float64(st.Updates) / float64(st.Entries)
}

// Store is a replicated store.Store; Open returns it. It is safe for
// concurrent use.
type Store struct {
	opts  Options
	log   *slog.Logger
	raft  *raft.Raft
	trans *raft.NetworkTransport
	logs  logBackend
	fsm   *fsm

	mu     sync.Mutex
	queue  []*request
	closed bool

	wake     chan struct{} // cap 1: work queued or closing
	slots    chan struct{} // MaxInFlight tokens
	stopped  chan struct{} // closed when the batcher returns
	inflight sync.WaitGroup
	stopLead chan struct{}
	leadDone chan struct{}
	peers    peerWatch     // the leader's news of its followers (peers.go)
	peerDone chan struct{} // closed when the peer observer has stopped (after stopLead)

	// Leadership verification (Verify): vmu guards vnext and vrunning; it
	// is never held with mu.
	vmu      sync.Mutex
	vnext    *verifyRound // the round that callers join; not started yet
	vrunning bool         // a goroutine runs rounds
	begun    atomic.Pointer[begunGen]

	updates, entries, ops atomic.Uint64
}

// begunGen is the writer generation this node began last (Begin), and the
// raft term it led in then; term is 0 when leadership changed meanwhile.
type begunGen struct{ gen, term uint64 }

var _ store.Store = (*Store)(nil)

type request struct {
	gen  uint64 // the writer generation it was made for (0: any)
	data []byte // encoded ops
	nops int
	done chan error // cap 1; Update's
	sub  *pending   // Submit's, told instead of done
	// A held write (HoldFunc): not taken before until unless a write
	// queued after it is; makeOps makes its ops when it is taken.
	until   time.Time
	makeOps func() []store.Op
}

// held reports whether r is a held write whose hold has not passed at now.
func (r *request) held(now time.Time) bool { return !r.until.IsZero() && now.Before(r.until) }

// finish answers the request; only the one who took it out of the queue
// (the batcher's await, or Withdraw) calls it.
func (r *request) finish(err error) {
	r.data, r.makeOps = nil, nil
	if r.sub != nil {
		r.sub.err = err
		close(r.sub.fin)
		return
	}
	r.done <- err
}

// pending is a store.Pending.
type pending struct {
	s   *Store
	r   *request
	fin chan struct{}
	err error
}

// end answers a write refused before it was queued.
func (p *pending) end(err error) store.Pending {
	p.err = err
	close(p.fin)
	return p
}

func (p *pending) Done() <-chan struct{} { return p.fin }
func (p *pending) Err() error            { return p.err }

// Withdraw takes the write out of the queue if the batcher has not handed
// it to raft yet.
func (p *pending) Withdraw() bool {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.r == nil {
		return false
	}
	for i, q := range s.queue {
		if q == p.r {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			q.finish(store.ErrWithdrawn)
			return true
		}
	}
	return false
}

var (
	_ store.Lingerer  = (*Store)(nil)
	_ store.Submitter = (*Store)(nil)
	_ store.Holder    = (*Store)(nil)
)

// UpdateLinger is Update (store.Lingerer): a batch starts as soon as an
// in-flight slot is free, without waiting for linger, since the
// replication of the entries in flight already gathers company.
func (s *Store) UpdateLinger(ctx context.Context, ops []store.Op, _ time.Duration) error {
	return s.Update(ctx, ops)
}

// Submit queues ops like Update and returns at once (store.Submitter); the
// Pending's Err is what Update would have returned. Linger is not waited
// for (see UpdateLinger), so Withdraw succeeds only while the batch waits
// for an in-flight slot.
func (s *Store) Submit(ops []store.Op, linger time.Duration) store.Pending {
	return s.SubmitGen(0, ops, linger)
}

// SubmitGen is Submit for writer generation gen (see Begin); 0 is any.
func (s *Store) SubmitGen(gen uint64, ops []store.Op, _ time.Duration) store.Pending {
	p := &pending{s: s, fin: make(chan struct{})}
	if err := validate(ops); err != nil {
		return p.end(err)
	}
	if len(ops) == 0 {
		return p.end(nil)
	}
	if err := s.refuse(); err != nil {
		return p.end(err)
	}
	return s.enqueue(p, &request{gen: gen, data: encodeOps(nil, ops), nops: len(ops), sub: p})
}

// refuse returns why a write cannot be queued now (the store is closed,
// or this node does not lead), or nil.
func (s *Store) refuse() error {
	if s.isClosed() {
		return fmt.Errorf("raftstore: submit: %w", store.ErrClosed)
	}
	if s.raft.State() != raft.Leader {
		return s.notLeader(nil)
	}
	return nil
}

// enqueue queues r, whose Pending is p, and wakes the batcher.
func (s *Store) enqueue(p *pending, r *request) store.Pending {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return p.end(fmt.Errorf("raftstore: submit: %w", store.ErrClosed))
	}
	p.r = r
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return p
}

// HoldFunc queues a write that the batcher does not take before hold has
// passed, so that it can still be withdrawn (the engine's consume before
// store holds a message's first write so), and returns at once. A write
// queued after it that is taken earlier takes it along, since the log
// keeps the order of the queue. makeOps makes its ops when the batcher
// takes it, so a write withdrawn before then is never encoded; it must
// only read what does not change. The Pending's Err is what Update would
// have returned, or the ops' validation error.
func (s *Store) HoldFunc(makeOps func() []store.Op, hold time.Duration) store.Pending {
	return s.HoldFuncGen(0, makeOps, hold)
}

// HoldFuncGen is HoldFunc for writer generation gen (see Begin); 0 is any.
func (s *Store) HoldFuncGen(gen uint64, makeOps func() []store.Op, hold time.Duration) store.Pending {
	p := &pending{s: s, fin: make(chan struct{})}
	if err := s.refuse(); err != nil {
		return p.end(err)
	}
	return s.enqueue(p, &request{gen: gen, sub: p, makeOps: makeOps, until: time.Now().Add(max(hold, 0))})
}

// Open opens (creating if needed) the node kept in opts.DataDir, starts its
// raft transport on opts.BindAddr and joins or bootstraps the cluster.
func Open(opts Options) (*Store, error) {
	if opts.NodeID == "" || opts.DataDir == "" || opts.BindAddr == "" {
		return nil, errors.New("raftstore: open: NodeID, DataDir and BindAddr are required")
	}
	if opts.MaxBatchOps <= 0 {
		opts.MaxBatchOps = DefaultMaxBatchOps
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.ApplyTimeout <= 0 {
		opts.ApplyTimeout = DefaultApplyTimeout
	}
	if opts.SnapshotRetain <= 0 {
		opts.SnapshotRetain = DefaultSnapshotRetain
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	lg := opts.Logger.With("raft_node", opts.NodeID)
	if err := os.MkdirAll(opts.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", opts.DataDir, err)
	}
	var closers []io.Closer
	fail := func(err error) (*Store, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i].Close()
		}
		return nil, fmt.Errorf("raftstore: open %s: %w", opts.DataDir, err)
	}
	// The local state is not synced on each applied entry (the raft log
	// is): only a clean close marks it whole (stateClean). A state file
	// without the mark may miss entries or, after a crash of the machine,
	// be corrupt: it is dropped and rebuilt from the latest snapshot and
	// the log.
	statePath := filepath.Join(opts.DataDir, "state.db")
	cleanPath := filepath.Join(opts.DataDir, stateClean)
	if _, err := os.Stat(statePath); err == nil {
		if _, err := os.Stat(cleanPath); err != nil {
			lg.Warn("raftstore: the local state was not closed cleanly: rebuilding it from the snapshot and the log", "dir", opts.DataDir)
			if err := os.Remove(statePath); err != nil {
				return fail(err)
			}
		}
	}
	if err := os.Remove(cleanPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	state, err := boltstore.Open(statePath, boltstore.Options{Logger: lg, NoSync: true})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, state)
	f := &fsm{state: state, dir: opts.DataDir, log: lg, maxOps: opts.MaxBatchOps, maxBytes: opts.MaxBatchBytes,
		flushBytes: min(opts.MaxBatchBytes, opts.MaxPendingBytes/4), maxPending: opts.MaxPendingBytes,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}), interval: opts.FlushInterval}
	applied, ok, err := f.readMeta(appliedKey)
	if err != nil {
		return fail(err)
	}
	f.applied = applied
	if f.gen, _, err = f.readMeta(genKey); err != nil {
		return fail(err)
	}
	logs, err := openLogBackend(opts.DataDir, opts.LogSegmentBytes, hclogFor(lg))
	if err != nil {
		return fail(err)
	}
	closers = append(closers, logs)
	rlog := &raftLog{log: lg}
	snaps, err := raft.NewFileSnapshotStore(opts.DataDir, opts.SnapshotRetain, rlog)
	if err != nil {
		return fail(err)
	}
	metas, err := snaps.List()
	if err != nil {
		return fail(err)
	}
	// The local state is durable and at least as new as any snapshot
	// taken from it, so raft need not restore one on start — unless the
	// state lost its applied index (a restore cut short, a lost file) or
	// is older than a snapshot a leader installed.
	restoreOnStart := len(metas) > 0 && (!ok || applied < metas[0].Index)
	trans, err := newTransport(opts.BindAddr, opts.Advertise, opts.TLS, lg)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, trans)

	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(opts.NodeID)
	setDur(&conf.HeartbeatTimeout, opts.HeartbeatTimeout)
	setDur(&conf.ElectionTimeout, opts.ElectionTimeout)
	setDur(&conf.LeaderLeaseTimeout, opts.LeaderLeaseTimeout)
	setDur(&conf.CommitTimeout, opts.CommitTimeout)
	setDur(&conf.SnapshotInterval, opts.SnapshotInterval)
	if opts.SnapshotThreshold > 0 {
		conf.SnapshotThreshold = opts.SnapshotThreshold
	}
	if opts.TrailingLogs > 0 {
		conf.TrailingLogs = opts.TrailingLogs
	}
	conf.NoSnapshotRestoreOnStart = !restoreOnStart
	conf.BatchApplyCh = true
	notify := make(chan bool, 64)
	conf.NotifyCh = notify
	conf.Logger = hclogFor(lg)
	go f.runFlusher()
	// The latest entries stay in memory, so that replicating them to the
	// followers does not read them back from the log.
	cached, err := raft.NewLogCache(logCacheEntries, logs)
	if err != nil {
		return fail(err)
	}
	r, err := raft.NewRaft(conf, f, cached, logs, snaps, noPipeline{trans})
	if err != nil {
		_ = f.stopFlusher()
		return fail(err)
	}
	s := &Store{
		opts:     opts,
		log:      lg,
		raft:     r,
		trans:    trans,
		logs:     logs,
		fsm:      f,
		wake:     make(chan struct{}, 1),
		slots:    make(chan struct{}, opts.MaxInFlight),
		stopped:  make(chan struct{}),
		stopLead: make(chan struct{}),
		leadDone: make(chan struct{}),
		peerDone: make(chan struct{}),
	}
	if opts.Bootstrap {
		servers := []raft.Server{{ID: conf.LocalID, Address: trans.LocalAddr()}}
		for _, p := range opts.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = r.Shutdown().Error()
			_ = f.stopFlusher()
			return fail(err)
		}
	}
	s.peers.observe(r, s.stopLead, s.peerDone)
	go s.run()
	go s.watchLeadership(notify)
	lg.Debug("raft store opened", "addr", trans.LocalAddr(), "applied", applied, "restore_on_start", restoreOnStart)
	return s, nil
}

func setDur(dst *time.Duration, v time.Duration) {
	if v > 0 {
		*dst = v
	}
}

// ID returns this node's ID.
func (s *Store) ID() string { return s.opts.NodeID }

// Addr returns the address of this node's raft transport.
func (s *Store) Addr() string { return string(s.trans.LocalAddr()) }

// IsLeader reports whether this node is the leader now.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the current leader's ID and address as this node knows
// them; empty when none is known.
func (s *Store) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// AppliedIndex returns the index of the last log entry applied here.
func (s *Store) AppliedIndex() uint64 { return s.raft.AppliedIndex() }

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Updates:  s.updates.Load(),
		Entries:  s.entries.Load(),
		Ops:      s.ops.Load(),
		Restores: s.fsm.restores.Load(),
		Flushes:  s.fsm.flushes.Load(),
	}
}

// AddVoter adds a voting member (on the leader), waiting up to timeout.
func (s *Store) AddVoter(id, addr string, timeout time.Duration) error {
	if err := s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error(); err != nil {
		return s.classify("add voter "+id, err)
	}
	return nil
}

// RemoveServer removes a member (on the leader), waiting up to timeout.
func (s *Store) RemoveServer(id string, timeout time.Duration) error {
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, timeout).Error(); err != nil {
		return s.classify("remove server "+id, err)
	}
	return nil
}

// ErrNoTransferTarget is TransferLeadership's error when no other voter
// is there to take the leadership, or the one named is not one.
var ErrNoTransferTarget = errors.New("raftstore: no voting member to hand the leadership to")

// TransferLeadership hands this node's leadership (on the leader) to the
// voter with ID to, or to raft's pick of the most up to date when to is
// "": raft brings it up to date, then has it start an election at once,
// so the cluster has a new leader after a round trip instead of an
// election timeout. While the transfer runs, new writes are refused
// (a NotLeaderError). It waits up to timeout for a new leader to be
// known here, and returns its ID.
func (s *Store) TransferLeadership(to string, timeout time.Duration) (string, error) {
	if s.raft.State() != raft.Leader {
		return "", s.notLeader(raft.ErrNotLeader)
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return "", fmt.Errorf("raftstore: transfer leadership: %w", err)
	}
	var target *raft.Server
	others := 0
	for _, srv := range cf.Configuration().Servers {
		if srv.ID == raft.ServerID(s.opts.NodeID) || srv.Suffrage != raft.Voter {
			continue
		}
		others++
		if string(srv.ID) == to {
			target = &srv
		}
	}
	switch {
	case others == 0:
		return "", ErrNoTransferTarget
	case to != "" && target == nil:
		return "", fmt.Errorf("%w: %q is not one of the other voters", ErrNoTransferTarget, to)
	}
	var fut raft.Future
	if target != nil {
		fut = s.raft.LeadershipTransferToServer(target.ID, target.Address)
	} else {
		fut = s.raft.LeadershipTransfer()
	}
	err, done := s.wait(fut)
	if !done {
		err = fmt.Errorf("no answer within %v", s.opts.ApplyTimeout)
	}
	if err != nil {
		return "", fmt.Errorf("raftstore: transfer leadership: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		if id, _ := s.Leader(); id != "" && id != s.opts.NodeID {
			return id, nil
		}
		if !time.Now().Before(deadline) {
			return "", fmt.Errorf("raftstore: transfer leadership: no new leader known within %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Snapshot takes a raft snapshot now and truncates the log behind it.
func (s *Store) Snapshot() error {
	if err := s.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("raftstore: snapshot: %w", err)
	}
	return nil
}

// Update replicates ops as part of one log entry and returns once it is
// committed and applied here; see the package comment for its errors. A ctx
// that ends while the batch is still queued withdraws it (ctx.Err(), nothing
// applied); once raft has it, Update waits for the outcome.
func (s *Store) Update(ctx context.Context, ops []store.Op) error {
	return s.UpdateGen(ctx, 0, ops)
}

// UpdateGen is Update for writer generation gen (see Begin); 0 is any. A
// write that reaches the log after another generation has begun fails with
// a *StaleError, applied nowhere.
func (s *Store) UpdateGen(ctx context.Context, gen uint64, ops []store.Op) error {
	if s.isClosed() {
		return fmt.Errorf("raftstore: update: %w", store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validate(ops); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	if s.raft.State() != raft.Leader {
		return s.notLeader(nil)
	}
	r := &request{gen: gen, data: encodeOps(nil, ops), nops: len(ops), done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("raftstore: update: %w", store.ErrClosed)
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	for i, q := range s.queue {
		if q == r {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.mu.Unlock()
			return ctx.Err()
		}
	}
	s.mu.Unlock()
	return <-r.done
}

func validate(ops []store.Op) error {
	if err := boltstore.Validate(ops); err != nil {
		return fmt.Errorf("raftstore: update: %w", err)
	}
	for i := range ops {
		if ops[i].Bucket == metaBucket {
			return fmt.Errorf("raftstore: update: op %d: bucket %q is reserved: %w", i, metaBucket, boltstore.ErrInvalidOp)
		}
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// run is the batcher: it turns whatever is queued into one log entry at a
// time, with at most MaxInFlight entries awaiting their outcome.
func (s *Store) run() {
	defer close(s.stopped)
	for {
		s.mu.Lock()
		ready, wait := s.plan(time.Now())
		for ready == 0 && !(s.closed && len(s.queue) == 0) {
			s.mu.Unlock()
			s.sleep(wait)
			s.mu.Lock()
			ready, wait = s.plan(time.Now())
		}
		if ready == 0 {
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		// Wait for a free slot first: what queues meanwhile joins this
		// entry.
		s.slots <- struct{}{}
		s.mu.Lock()
		ready, _ = s.plan(time.Now())
		n, nops, size := 0, 0, 0
		for n < ready {
			r := s.queue[n]
			if n > 0 && (r.gen != s.queue[0].gen || nops+r.nops > s.opts.MaxBatchOps || size+len(r.data) > s.opts.MaxBatchBytes) {
				break
			}
			n++
			nops += r.nops // a held write's ops are not made yet: the bounds are soft for them
			size += len(r.data)
		}
		if n == 0 { // all withdrawn while we waited for the slot
			s.mu.Unlock()
			<-s.slots
			continue
		}
		batch := append([]*request(nil), s.queue[:n]...)
		rest := copy(s.queue, s.queue[n:])
		clear(s.queue[rest:])
		s.queue = s.queue[:rest]
		s.mu.Unlock()

		batch, nops, size = makeHeld(batch, nops, size)
		if len(batch) == 0 {
			<-s.slots
			continue
		}
		n = len(batch)
		entry := encodeHeader(make([]byte, 0, 11+size), batch[0].gen)
		for _, r := range batch {
			entry = append(entry, r.data...)
		}
		s.updates.Add(uint64(n))
		s.entries.Add(1)
		s.ops.Add(uint64(nops))
		fut := s.raft.Apply(entry, s.opts.ApplyTimeout)
		s.inflight.Add(1)
		go s.await(fut, batch)
	}
	s.inflight.Wait()
}

// plan says how many requests at the head of the queue the batcher may
// take at now: every one up to the last that is not held (or whose hold
// has passed), all of them once the store is closing. wait is how long
// until the earliest hold of the others passes (negative: none is held).
// Called under s.mu.
func (s *Store) plan(now time.Time) (ready int, wait time.Duration) {
	wait = -1
	for i, r := range s.queue {
		if s.closed || !r.held(now) {
			ready = i + 1
		} else if d := r.until.Sub(now); wait < 0 || d < wait {
			wait = d
		}
	}
	return ready, wait
}

// sleep waits for the batcher's wake-up, or for wait when it is not
// negative.
func (s *Store) sleep(wait time.Duration) {
	if wait < 0 {
		<-s.wake
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.wake:
	case <-t.C:
	}
}

// makeHeld makes the ops of batch's held writes, which can no longer be
// withdrawn, and drops (answering them) those whose ops are invalid; it
// returns the batch and its ops and bytes counted again.
func makeHeld(batch []*request, nops, size int) ([]*request, int, int) {
	out := batch[:0]
	for _, r := range batch {
		if r.makeOps != nil {
			ops := r.makeOps()
			r.makeOps = nil
			if err := validate(ops); err != nil {
				r.finish(err)
				continue
			}
			if len(ops) == 0 {
				r.finish(nil)
				continue
			}
			r.data, r.nops = encodeOps(nil, ops), len(ops)
			nops += r.nops
			size += len(r.data)
		}
		out = append(out, r)
	}
	clear(batch[len(out):])
	return out, nops, size
}

// await answers the callers of one entry with its outcome.
func (s *Store) await(fut raft.ApplyFuture, batch []*request) {
	defer s.inflight.Done()
	err := s.outcome(fut)
	<-s.slots
	for _, r := range batch {
		r.finish(err)
	}
}

func (s *Store) outcome(fut raft.ApplyFuture) error {
	err, ok := s.wait(fut)
	switch {
	case !ok:
		return fmt.Errorf("%w (update): no outcome within %v", ErrIndeterminate, s.opts.ApplyTimeout)
	case err != nil:
		return s.classify("update", err)
	}
	if stale, ok := fut.Response().(*StaleError); ok {
		return stale
	}
	if rerr, ok := fut.Response().(error); ok && rerr != nil {
		// Committed, but this node could not apply it.
		return fmt.Errorf("%w (update): committed but not applied here: %w", ErrIndeterminate, rerr)
	}
	return nil
}

// wait waits for fut's error, at most Options.ApplyTimeout; ok is false
// when none came in time (raft answers later; nobody listens).
func (s *Store) wait(fut raft.Future) (err error, ok bool) {
	res := make(chan error, 1)
	go func() { res <- fut.Error() }()
	t := time.NewTimer(s.opts.ApplyTimeout)
	defer t.Stop()
	select {
	case err := <-res:
		return err, true
	case <-t.C:
		return nil, false
	}
}

// classify maps raft's error for an entry to this package's: refused
// before it reached the log (not applied), or indeterminate.
func (s *Store) classify(what string, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeader(err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		// Apply gave up before raft took the entry.
		return fmt.Errorf("raftstore: %s: %w", what, err)
	}
	return fmt.Errorf("%w (%s): %w", ErrIndeterminate, what, err)
}

func (s *Store) notLeader(cause error) error {
	addr, id := s.raft.LeaderWithID()
	return &NotLeaderError{LeaderAddr: string(addr), LeaderID: string(id), Cause: cause}
}

// watchLeadership turns raft's notifications into Options.OnLeadership
// calls.
func (s *Store) watchLeadership(notify <-chan bool) {
	defer close(s.leadDone)
	var epoch uint64
	leading := false
	for {
		var up bool
		select {
		case <-s.stopLead:
			return
		case up = <-notify:
		}
		switch {
		case up && !leading:
			term := s.raft.CurrentTerm()
			// Serve only once every committed entry is applied here.
			// raft may never answer a barrier queued as it shuts down.
			res := make(chan error, 1)
			go func() { res <- s.raft.Barrier(s.opts.ApplyTimeout).Error() }()
			var err error
			select {
			case err = <-res:
			case <-s.stopLead:
				return
			}
			if err != nil {
				s.log.Warn("raft leadership gained but barrier failed", "err", err)
				continue
			}
			if s.raft.CurrentTerm() != term {
				continue // lost and regained meanwhile: the next notice tells
			}
			leading, epoch = true, term
			s.log.Info("raft leadership gained", "epoch", epoch)
			if fn := s.opts.OnLeadership; fn != nil {
				fn(Leadership{Leader: true, Epoch: epoch})
			}
		case !up && leading:
			leading = false
			s.log.Info("raft leadership lost", "epoch", epoch)
			if fn := s.opts.OnLeadership; fn != nil {
				fn(Leadership{Leader: false, Epoch: epoch})
			}
		}
	}
}

// ForEach reads the local state; see store.Store.
func (s *Store) ForEach(bucket string, fn func(key, value []byte) error) error {
	if bucket == metaBucket {
		return s.hidden()
	}
	return s.fsm.read(func(st *boltstore.Store) error { return st.ForEach(bucket, fn) })
}

// Get reads the local state; see store.Store.
func (s *Store) Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error {
	if bucket == metaBucket {
		return s.hidden()
	}
	return s.fsm.read(func(st *boltstore.Store) error { return st.Get(bucket, keys, fn) })
}

// Range reads the local state; see store.Store.
func (s *Store) Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error {
	if bucket == metaBucket {
		return s.hidden()
	}
	return s.fsm.read(func(st *boltstore.Store) error { return st.Range(bucket, from, limit, fn) })
}

// Buckets lists the local state's buckets, without the reserved one.
func (s *Store) Buckets(fn func(name string) error) error {
	var names []string
	err := s.fsm.read(func(st *boltstore.Store) error {
		return st.Buckets(func(n string) error {
			if n != metaBucket {
				names = append(names, n)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// hidden answers a read of the reserved bucket: nothing, or ErrClosed.
func (s *Store) hidden() error {
	if s.isClosed() {
		return store.ErrClosed
	}
	return nil
}

// Close refuses further writes (store.ErrClosed), waits for the queued and
// in-flight ones, shuts raft down and closes the files. Calling it again
// returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.leadDone
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.stopped
	var errs []error
	if err := s.raft.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
	}
	close(s.stopLead)
	<-s.leadDone
	<-s.peerDone
	if err := s.trans.Close(); err != nil {
		errs = append(errs, fmt.Errorf("raft transport: %w", err))
	}
	if err := s.logs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("raft log: %w", err))
	}
	flushErr := s.fsm.stopFlusher()
	if flushErr != nil {
		errs = append(errs, flushErr)
	}
	// A state whose pending entries could not be written is not whole:
	// without the mark, the next start rebuilds it.
	if err := s.fsm.state.Close(); err != nil {
		errs = append(errs, err)
	} else if flushErr == nil {
		if err := markClean(s.opts.DataDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("raftstore: close: %w", err)
	}
	return nil
}

// stateClean is the file a clean close leaves beside state.db: the state
// was synced and is whole.
const stateClean = "state.clean"

// markClean writes the clean mark durably.
func markClean(dir string) error {
	f, err := os.Create(filepath.Join(dir, stateClean))
	if err != nil {
		return fmt.Errorf("mark the local state clean: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("mark the local state clean: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mark the local state clean: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mark the local state clean: %w", err)
	}
	defer d.Close()
	return d.Sync()
}

// noPipeline is the TCP transport without pipelined replication.
// hashicorp/raft v1.8.0's pipeline can deadlock once a follower answers an
// append with Success=false, routine after a partition heals:
// pipelineDecode returns, the send loop then blocks on the pipeline's
// in-progress queue while its decoder blocks on the done queue, the
// replication goroutine never returns, and raft's Shutdown waits for it
// for ever (a deposed leader that does not stop on SIGTERM; found by
// cmd/sluice TestClusterPartitionLeaderLosesNothingConfirmed; the same
// deadlock made grafana/pyroscope turn the pipeline off). Without it, each
// follower is sent one AppendEntries at a time, carrying every entry
// waiting (up to raft's MaxAppendEntries); measured on the example
// cluster, the throughput did not change.
type noPipeline struct{ *raft.NetworkTransport }

// AppendEntriesPipeline refuses, so raft replicates without a pipeline.
func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// hclogFor is an hclog.Logger (raft's and its WAL's) writing to lg.
func hclogFor(lg *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Output: &raftLog{log: lg}, Level: hclog.Info})
}

// raftLog carries raft's log lines (hclog text) to slog: errors and
// warnings at their level, the rest at debug.
type raftLog struct{ log *slog.Logger }

func (l *raftLog) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	switch {
	case bytes.Contains(p, []byte("[ERROR]")):
		l.log.Error(line)
	case bytes.Contains(p, []byte("[WARN]")):
		l.log.Warn(line)
	default:
		l.log.Debug(line)
	}
	return len(p), nil
}

// Member is one server of the raft configuration.
type Member struct {
	ID    string
	Addr  string
	Voter bool
	// Unreachable, reported by the leader for another member, is true
	// while its heartbeats to it fail; LastContact is then when it last
	// answered (zero when it did not answer this leader). A partitioned
	// member shows only once a heartbeat gives up (the transport's
	// timeout); a stopped one at once.
	Unreachable bool
	LastContact time.Time
}

// Status is what this node knows of the cluster now, for operators.
type Status struct {
	// State is raft's state of this node: Leader, Follower, Candidate or
	// Shutdown.
	State string
	// Term is the current raft term.
	Term uint64
	// LeaderID and LeaderAddr name the leader as this node knows it.
	LeaderID, LeaderAddr string
	// CommitIndex, AppliedIndex and LastIndex are raft's indexes here:
	// committed, applied to the local state, and the last log entry. After
	// a restart AppliedIndex counts from the newest snapshot (0 without
	// one) until the leader's first contact has raft pass over what the
	// state already holds.
	CommitIndex, AppliedIndex, LastIndex uint64
	// LastContact is when this node last heard from a leader (zero on the
	// leader itself and before any contact).
	LastContact time.Time
	// Members is the latest raft configuration.
	Members []Member
}

// Status reports this node's view of the cluster.
func (s *Store) Status() (Status, error) {
	st := Status{
		State:        s.raft.State().String(),
		Term:         s.raft.CurrentTerm(),
		CommitIndex:  s.raft.CommitIndex(),
		AppliedIndex: s.raft.AppliedIndex(),
		LastIndex:    s.raft.LastIndex(),
		LastContact:  s.raft.LastContact(),
	}
	st.LeaderID, st.LeaderAddr = s.Leader()
	fut := s.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return st, fmt.Errorf("raftstore: configuration: %w", err)
	}
	leading := s.raft.State() == raft.Leader
	for _, srv := range fut.Configuration().Servers {
		m := Member{ID: string(srv.ID), Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter}
		if leading && m.ID != s.opts.NodeID {
			m.LastContact, m.Unreachable = s.peers.failingSince(m.ID)
		}
		st.Members = append(st.Members, m)
	}
	return st, nil
}

// Begin starts a new writer generation, on the leader, and returns its
// number: from the moment its entry is applied, every write made for an
// earlier generation (UpdateGen, SubmitGen) that reaches the log is
// skipped on every node and fails with a *StaleError. A writer that is
// replaced (an engine fenced, or of an earlier leadership) thus cannot
// change the state under its successor, even with writes it had queued
// before it was replaced. Begin is also a barrier: when it returns, every
// entry before it is applied here. Elsewhere it fails with a
// *NotLeaderError.
func (s *Store) Begin(timeout time.Duration) (uint64, error) {
	if s.isClosed() {
		return 0, fmt.Errorf("raftstore: begin: %w", store.ErrClosed)
	}
	term := s.raft.CurrentTerm()
	fut := s.raft.Apply([]byte{entryBegin}, timeout)
	if err := fut.Error(); err != nil {
		return 0, s.classify("begin", err)
	}
	switch r := fut.Response().(type) {
	case uint64:
		// Verify confirms this generation only in the leadership that
		// began it.
		b := &begunGen{gen: r, term: term}
		if s.raft.CurrentTerm() != term || s.raft.State() != raft.Leader {
			b.term = 0
		}
		s.begun.Store(b)
		return r, nil
	case error:
		return 0, fmt.Errorf("%w (begin): committed but not applied here: %w", ErrIndeterminate, r)
	default:
		return 0, fmt.Errorf("raftstore: begin: unexpected response %T", r)
	}
}

// Barrier waits, on the leader, until every entry appended before it is
// applied here (or timeout): after it, no write of an earlier Update whose
// outcome was unknown is still pending. Elsewhere it fails with a
// *NotLeaderError.
func (s *Store) Barrier(timeout time.Duration) error {
	if err := s.raft.Barrier(timeout).Error(); err != nil {
		return s.classify("barrier", err)
	}
	return nil
}
