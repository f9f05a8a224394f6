package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// metaBucket is the reserved bucket of the local state that holds the index
// of the last entry applied (appliedKey) and the current writer generation
// (genKey), written in the same transaction as the entries' ops. Readers
// never see it; writers may not touch it.
const metaBucket = "\x00raftstore"

var (
	appliedKey = []byte("applied")
	genKey     = []byte("generation")
)

// The first byte of every log entry this package writes.
const (
	// entryVersion: ops that apply whatever the generation.
	entryVersion = 1
	// entryGenOps: a uvarint generation, then ops that apply only while
	// that generation is the current one.
	entryGenOps = 2
	// entryBegin: nothing more; a new generation begins, numbered by the
	// entry's log index (see Store.Begin).
	entryBegin = 3
)

// StaleError is the error of a write made for a generation that had ended
// when its entry was applied (see Store.Begin): raft committed the entry,
// but every node skipped it, so nothing of it was applied anywhere. It
// matches ErrStale.
type StaleError struct{ Gen, Current uint64 }

func (e *StaleError) Error() string {
	return fmt.Sprintf("raftstore: a write of writer generation %d reached the log after generation %d began: nothing of it was applied", e.Gen, e.Current)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// fsm applies log entries to the local boltstore. raft calls ApplyBatch,
// Snapshot and Restore from one goroutine, never at the same time.
//
// # Deferred application
//
// Raft answers a write only after its entry is applied here, and a bbolt
// commit of a few ops costs far more than their share of a large one (it
// rewrites every B-tree page they touch: 1.3 ms a commit on three nodes
// sharing a disk, most of an entry's latency). So ApplyBatch only decodes
// an entry and appends it to pend, in memory; the flusher goroutine writes
// what is pending to the state in one transaction per FlushInterval (or
// sooner once FlushBytes are pending), with the applied index of its last
// entry. Nothing is lost by the wait: an entry in pend is committed in the
// raft log, synced on a majority, and a node whose state misses entries
// after a crash rebuilds it from its snapshot and log (see stateClean).
// Every read first flushes (flush), so it sees every entry applied before
// it began; a snapshot flushes first, too. While more than MaxPendingBytes
// are pending, ApplyBatch flushes itself, so memory stays bounded.
//
// # Locks
//
// Lock order: flushMu, then mu, then pmu. flushMu serialises flushes (a
// flush takes pend and writes it: two at once could write out of order);
// mu is held for writing by Restore and for reading by reads and flushes;
// pmu guards pend and the flush outcome. Only fsm's methods take them.
type fsm struct {
	state    *boltstore.Store
	dir      string
	log      *slog.Logger
	maxOps   int
	maxBytes int
	// flushBytes starts a flush early; maxPending makes ApplyBatch flush.
	flushBytes, maxPending int

	flushMu sync.Mutex
	mu      sync.RWMutex

	pmu       sync.Mutex
	pend      []pendEntry
	pendBytes int
	failed    error // the local state could not take an entry; read by both goroutines

	// Owned by raft's FSM goroutine (and Open before raft starts).
	applied uint64 // index of the last command entry applied (pending or in state)
	gen     uint64 // the current writer generation (0: none begun)

	kick     chan struct{} // cap 1: flush soon
	stop     chan struct{} // closed by stopFlusher
	stopped  chan struct{} // closed when the flusher returns
	interval time.Duration

	restores, flushes atomic.Uint64
}

// pendEntry is an applied entry not yet written to the state: its ops point
// into the entry's data, which raft does not reuse.
type pendEntry struct {
	index uint64
	gen   uint64 // the generation once it is applied
	ops   []store.Op
	bytes int
}

var _ raft.BatchingFSM = (*fsm)(nil)

// readMeta reads a number of the reserved bucket; ok is false when it is
// not there.
func (f *fsm) readMeta(key []byte) (uint64, bool, error) {
	var v []byte
	err := f.state.Get(metaBucket, [][]byte{key}, func(_ int, b []byte) error {
		v = append([]byte(nil), b...)
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", key, err)
	}
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("read %s: %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// metaOp records a number of the reserved bucket.
func metaOp(key []byte, v uint64) store.Op {
	return store.Op{Kind: store.Put, Bucket: metaBucket, Key: key, Value: binary.BigEndian.AppendUint64(nil, v)}
}

// Apply applies one entry.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries: it queues them for the flusher (see
// Deferred application). An entry at or below the applied index is already
// applied (raft replays the log after the last snapshot on a restart) and
// is skipped. The response of an entry is nil, the new generation (a
// uint64) for a generation's beginning, a *StaleError for a write of an
// ended generation (skipped on every node alike), or the error that keeps
// it, and every entry after it, out of the local state.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	resp := make([]any, len(logs))
	f.pmu.Lock()
	failed := f.failed
	for i, l := range logs {
		if l.Type != raft.LogCommand || l.Index <= f.applied {
			continue
		}
		if failed != nil {
			resp[i] = failed
			continue
		}
		kind, gen, ops, err := decodeEntry(l.Data)
		if err != nil {
			failed = f.failLocked(l.Index, err)
			resp[i] = failed
			continue
		}
		switch {
		case kind == entryBegin:
			f.gen = l.Index
			resp[i] = f.gen
			ops = nil
		case kind == entryGenOps && gen != f.gen:
			resp[i] = &StaleError{Gen: gen, Current: f.gen}
			ops = nil
		}
		f.pend = append(f.pend, pendEntry{index: l.Index, gen: f.gen, ops: ops, bytes: len(l.Data)})
		f.pendBytes += len(l.Data)
		f.applied = l.Index
	}
	n := f.pendBytes
	f.pmu.Unlock()
	switch {
	case n > f.maxPending:
		if err := f.flush(); err != nil {
			// The entries are applied in memory only; the state stopped
			// at the failure. Later entries get the error.
			f.log.Error("raftstore: flush while applying", "err", err)
		}
	case n > f.flushBytes:
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	return resp
}

// failLocked records that entry index could not be applied: the local
// state is no longer a faithful copy, so no later entry is applied either.
// f.pmu is held.
func (f *fsm) failLocked(index uint64, err error) error {
	if f.failed == nil {
		f.failed = fmt.Errorf("raftstore: entry %d not applied to the local state: %w", index, err)
		f.log.Error("raft entry not applied; this node's state is stale from here on", "index", index, "err", err)
	}
	return f.failed
}

// flush writes every pending entry to the state, in transactions bounded
// by maxOps and maxBytes (an entry is never split), each with the applied
// index of its last entry.
func (f *fsm) flush() error {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	f.pmu.Lock()
	pend := f.pend
	f.pend, f.pendBytes = nil, 0
	f.pmu.Unlock()
	if len(pend) == 0 {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	var ops []store.Op
	for i := 0; i < len(pend); {
		ops = ops[:0]
		bytes := 0
		j := i
		for j < len(pend) && (j == i || (len(ops)+len(pend[j].ops) < f.maxOps && bytes+pend[j].bytes <= f.maxBytes)) {
			ops = append(ops, pend[j].ops...)
			bytes += pend[j].bytes
			j++
		}
		last := pend[j-1]
		if err := f.state.Update(context.Background(), append(ops, metaOp(appliedKey, last.index), metaOp(genKey, last.gen))); err != nil {
			f.pmu.Lock()
			err = f.failLocked(pend[i].index, err)
			f.pmu.Unlock()
			return err
		}
		f.flushes.Add(1)
		i = j
	}
	return nil
}

// runFlusher flushes every interval and when kicked, until stopFlusher.
func (f *fsm) runFlusher() {
	defer close(f.stopped)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		case <-f.kick:
		}
		if err := f.flush(); err != nil {
			f.log.Error("raftstore: flush", "err", err)
		}
	}
}

// stopFlusher stops the flusher and writes what is still pending.
func (f *fsm) stopFlusher() error {
	close(f.stop)
	<-f.stopped
	return f.flush()
}

// read runs fn on the state once every entry applied so far is in it.
func (f *fsm) read(fn func(st *boltstore.Store) error) error {
	if err := f.flush(); err != nil {
		return err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fn(f.state)
}

// Snapshot opens a bbolt view of the state; Persist writes it out while
// entries keep being applied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	sn, err := f.state.Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{sn: sn}, nil
}

type fsmSnapshot struct{ sn *boltstore.Snapshot }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.sn.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { _ = s.sn.Close() }

// Restore replaces the local state with a snapshot: the file is copied to
// disk, the state's buckets (the applied index first) are deleted, and the
// snapshot's buckets are written in bounded batches, its applied index last.
// A crash half-way leaves no applied index, so the next start restores the
// snapshot again.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	// What is pending is older than the snapshot, which replaces it.
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pmu.Lock()
	f.pend, f.pendBytes = nil, 0
	f.pmu.Unlock()
	tmp := filepath.Join(f.dir, "restore.tmp")
	if err := copyToFile(tmp, rc); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	defer os.Remove(tmp)
	ctx := context.Background()
	clearOps := []store.Op{{Kind: store.DeleteBucket, Bucket: metaBucket}}
	err := f.state.Buckets(func(name string) error {
		if name != metaBucket {
			clearOps = append(clearOps, store.Op{Kind: store.DeleteBucket, Bucket: name})
		}
		return nil
	})
	if err == nil {
		err = f.state.Update(ctx, clearOps)
	}
	if err != nil {
		return fmt.Errorf("raftstore: restore: clear state: %w", err)
	}
	var (
		ops          []store.Op
		bytes        int
		applied, gen []byte
	)
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := f.state.Update(ctx, ops)
		ops, bytes = ops[:0], 0
		return err
	}
	err = boltstore.ReadSnapshotFile(tmp, func(bucket string, each func(func(k, v []byte) error) error) error {
		n := 0
		err := each(func(k, v []byte) error {
			if bucket == metaBucket {
				switch string(k) {
				case string(appliedKey):
					applied = append([]byte(nil), v...)
				case string(genKey):
					gen = append([]byte(nil), v...)
				}
				return nil
			}
			n++
			ops = append(ops, store.Op{Kind: store.Put, Bucket: bucket, Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
			bytes += len(k) + len(v)
			if len(ops) >= f.maxOps || bytes >= f.maxBytes {
				return flush()
			}
			return nil
		})
		if err == nil && n == 0 && bucket != metaBucket {
			// An empty bucket exists too: a put and a delete create it.
			k := []byte{0}
			ops = append(ops, store.Op{Kind: store.Put, Bucket: bucket, Key: k}, store.Op{Kind: store.Delete, Bucket: bucket, Key: k})
		}
		return err
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	var index, g uint64
	if len(applied) == 8 {
		index = binary.BigEndian.Uint64(applied)
	}
	if len(gen) == 8 {
		g = binary.BigEndian.Uint64(gen)
	}
	// The generation first: the applied index, written last, marks the
	// restore whole.
	if err := f.state.Update(ctx, []store.Op{metaOp(genKey, g)}); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	if err := f.state.Update(ctx, []store.Op{metaOp(appliedKey, index)}); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	f.applied, f.gen = index, g
	f.pmu.Lock()
	f.failed = nil
	f.pmu.Unlock()
	f.restores.Add(1)
	return nil
}

func copyToFile(path string, r io.Reader) error {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(fh, r); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

// An entry is entryVersion and then its ops, each: kind (1 byte), then
// bucket, key and value, each a uvarint length and the bytes.
func encodeOps(dst []byte, ops []store.Op) []byte {
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
	return dst
}

var errBadEntry = errors.New("raftstore: corrupt log entry")

// encodeHeader starts an entry of ops for generation gen (0: any).
func encodeHeader(dst []byte, gen uint64) []byte {
	if gen == 0 {
		return append(dst, entryVersion)
	}
	return binary.AppendUvarint(append(dst, entryGenOps), gen)
}

// decodeEntry decodes an entry: its kind, its generation (entryGenOps) and
// its ops, whose slices point into data.
func decodeEntry(data []byte) (kind byte, gen uint64, ops []store.Op, err error) {
	if len(data) == 0 {
		return 0, 0, nil, errBadEntry
	}
	switch kind, data = data[0], data[1:]; kind {
	case entryVersion:
	case entryGenOps:
		g, n := binary.Uvarint(data)
		if n <= 0 || g == 0 {
			return 0, 0, nil, errBadEntry
		}
		gen, data = g, data[n:]
	case entryBegin:
		if len(data) != 0 {
			return 0, 0, nil, errBadEntry
		}
		return kind, 0, nil, nil
	default:
		return 0, 0, nil, errBadEntry
	}
	ops, err = decodeOps(data)
	return kind, gen, ops, err
}

// decodeOps decodes the ops of an entry, after its header.
func decodeOps(b []byte) ([]store.Op, error) {
	field := func() ([]byte, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, false
		}
		v := b[n : n+int(l) : n+int(l)]
		b = b[n+int(l):]
		return v, true
	}
	var ops []store.Op
	for len(b) > 0 {
		kind := store.OpKind(b[0])
		b = b[1:]
		bucket, ok1 := field()
		key, ok2 := field()
		val, ok3 := field()
		if !ok1 || !ok2 || !ok3 {
			return nil, errBadEntry
		}
		if len(key) == 0 {
			key = nil
		}
		ops = append(ops, store.Op{Kind: kind, Bucket: string(bucket), Key: key, Value: val})
	}
	return ops, nil
}
