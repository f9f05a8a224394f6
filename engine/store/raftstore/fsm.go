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

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// metaBucket is the reserved bucket of the local state that holds the index
// of the last entry applied (appliedKey), written in the same transaction as
// the entry's ops. Readers never see it; writers may not touch it.
const metaBucket = "\x00raftstore"

var appliedKey = []byte("applied")

// entryVersion is the first byte of every log entry this package writes.
const entryVersion = 1

// fsm applies log entries to the local boltstore. raft calls ApplyBatch,
// Snapshot and Restore from one goroutine, never at the same time.
type fsm struct {
	state    *boltstore.Store
	dir      string
	log      *slog.Logger
	maxOps   int
	maxBytes int

	// mu is held for writing by Restore and for reading by Store's reads.
	mu sync.RWMutex

	// Owned by raft's FSM goroutine (and Open before raft starts).
	applied uint64 // index of the last command entry in state
	failed  error  // the local state could not take an entry

	restores atomic.Uint64
}

var _ raft.BatchingFSM = (*fsm)(nil)

func (f *fsm) readApplied() (uint64, bool, error) {
	var v []byte
	err := f.state.Get(metaBucket, [][]byte{appliedKey}, func(_ int, b []byte) error {
		v = append([]byte(nil), b...)
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("read applied index: %w", err)
	}
	if v == nil {
		return 0, false, nil
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("read applied index: %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

func appliedOp(index uint64) store.Op {
	return store.Op{Kind: store.Put, Bucket: metaBucket, Key: appliedKey, Value: binary.BigEndian.AppendUint64(nil, index)}
}

// Apply applies one entry.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in as few local transactions as the
// batch bounds allow. An entry at or below the applied index is already in
// the state (raft replays the log after the last snapshot on a restart) and
// is skipped. The response of an entry is nil or the error that kept it
// out of the local state.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	resp := make([]any, len(logs))
	var (
		ops   []store.Op
		idx   []int // entries in ops
		bytes int
	)
	flush := func() {
		if len(idx) == 0 {
			return
		}
		last := logs[idx[len(idx)-1]].Index
		err := f.state.Update(context.Background(), append(ops, appliedOp(last)))
		if err != nil && len(idx) > 1 {
			// Give each entry its own answer.
			for _, i := range idx {
				if err := f.applyOne(logs[i]); err != nil {
					resp[i] = err
				}
			}
		} else if err != nil {
			f.fail(logs[idx[0]].Index, err)
			resp[idx[0]] = f.failed
		} else {
			f.applied = last
		}
		ops, idx, bytes = ops[:0], idx[:0], 0
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand || l.Index <= f.applied {
			continue
		}
		if f.failed != nil {
			resp[i] = f.failed
			continue
		}
		dec, err := decodeOps(l.Data)
		if err != nil {
			f.fail(l.Index, err)
			resp[i] = f.failed
			continue
		}
		if len(idx) > 0 && (len(ops)+len(dec) > f.maxOps || bytes+len(l.Data) > f.maxBytes) {
			flush()
		}
		ops = append(ops, dec...)
		idx = append(idx, i)
		bytes += len(l.Data)
	}
	flush()
	return resp
}

func (f *fsm) applyOne(l *raft.Log) error {
	if f.failed != nil {
		return f.failed
	}
	ops, err := decodeOps(l.Data)
	if err == nil {
		err = f.state.Update(context.Background(), append(ops, appliedOp(l.Index)))
	}
	if err != nil {
		f.fail(l.Index, err)
		return f.failed
	}
	f.applied = l.Index
	return nil
}

// fail records that entry index could not be applied: the local state is
// no longer a faithful copy, so no later entry is applied either.
func (f *fsm) fail(index uint64, err error) {
	f.failed = fmt.Errorf("raftstore: entry %d not applied to the local state: %w", index, err)
	f.log.Error("raft entry not applied; this node's state is stale from here on", "index", index, "err", err)
}

// Snapshot opens a bbolt view of the state; Persist writes it out while
// entries keep being applied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
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
	f.mu.Lock()
	defer f.mu.Unlock()
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
		ops     []store.Op
		bytes   int
		applied []byte
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
				if string(k) == string(appliedKey) {
					applied = append([]byte(nil), v...)
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
	var index uint64
	if len(applied) == 8 {
		index = binary.BigEndian.Uint64(applied)
	}
	if err := f.state.Update(ctx, []store.Op{appliedOp(index)}); err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	f.applied = index
	f.failed = nil
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

// decodeOps decodes an entry; the ops' slices point into data.
func decodeOps(data []byte) ([]store.Op, error) {
	if len(data) == 0 || data[0] != entryVersion {
		return nil, errBadEntry
	}
	b := data[1:]
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
