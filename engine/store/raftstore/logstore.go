package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	bolt "go.etcd.io/bbolt"
)

// logBackend is what raft keeps its log and stable values in.
type logBackend interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// walDir is the directory of a node's raft log, under its data directory.
const walDir = "wal"

// openLogBackend opens the raft log of the node in dir: a write-ahead log
// (github.com/hashicorp/raft-wal) under wal/, which appends the entries of
// one write sequentially and syncs once, against bbolt's two syncs and
// B-tree page rewrites. A data directory made before the WAL, with a
// raft.db and no wal/, keeps its bbolt log (logStore).
func openLogBackend(dir string, segmentBytes int, lg hclog.Logger) (logBackend, error) {
	wdir := filepath.Join(dir, walDir)
	_, werr := os.Stat(wdir)
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil && errors.Is(werr, os.ErrNotExist) {
		return openLogStore(filepath.Join(dir, "raft.db"))
	}
	if err := os.MkdirAll(wdir, 0o750); err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", wdir, err)
	}
	meta := &metadb.BoltMetaDB{}
	if segmentBytes <= 0 {
		segmentBytes = wal.DefaultSegmentSize
	}
	w, err := wal.Open(wdir, wal.WithLogger(lg.Named("wal")), wal.WithMetaStore(meta), wal.WithSegmentSize(segmentBytes))
	if err != nil {
		_ = meta.Close()
		return nil, fmt.Errorf("open raft log %s: %w", wdir, err)
	}
	return &walLog{WAL: w, meta: meta}, nil
}

// walLog is the WAL with its meta database, which WAL.Close leaves open
// (raft-wal v0.4.0): Close closes both, so that the node can be opened
// again in the same process.
type walLog struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (l *walLog) Close() error {
	return errors.Join(l.WAL.Close(), l.meta.Close())
}

// logStore is raft's LogStore and StableStore in one bbolt file of its own
// (raft.db in the data directory): the raft log of nodes made before the
// WAL (see openLogBackend). github.com/hashicorp/raft-boltdb/v2 v2.3.1
// would be the ready-made one, but it imports go-metrics/compat, which the
// go-metrics v0.7.0 that raft v1.8.0 requires no longer has, so the two do
// not build together; this is the same idea on the bbolt the broker already
// uses. Every write is one bbolt transaction, synced before it returns.
type logStore struct {
	db *bolt.DB
}

var (
	logsBucket   = []byte("logs")
	stableBucket = []byte("stable")
)

var (
	_ raft.LogStore    = (*logStore)(nil)
	_ raft.StableStore = (*logStore)(nil)
)

func openLogStore(path string) (*logStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open raft log %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{logsBucket, stableBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open raft log %s: %w", path, err)
	}
	return &logStore{db: db}, nil
}

func (l *logStore) Close() error { return l.db.Close() }

func indexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }

// FirstIndex returns the first index written, 0 for none.
func (l *logStore) FirstIndex() (uint64, error) {
	var i uint64
	err := l.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(logsBucket).Cursor().First(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

// LastIndex returns the last index written, 0 for none.
func (l *logStore) LastIndex() (uint64, error) {
	var i uint64
	err := l.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(logsBucket).Cursor().Last(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

// GetLog reads the entry at index into log, or fails with
// raft.ErrLogNotFound.
func (l *logStore) GetLog(index uint64, log *raft.Log) error {
	return l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(logsBucket).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decodeLog(index, v, log)
	})
}

// StoreLog stores one entry.
func (l *logStore) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores entries in one synced transaction.
func (l *logStore) StoreLogs(logs []*raft.Log) error {
	var buf []byte
	return l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(logsBucket)
		for _, log := range logs {
			buf = encodeLog(buf[:0], log)
			// bbolt keeps the value slice until commit: give each its own.
			if err := b.Put(indexKey(log.Index), append([]byte(nil), buf...)); err != nil {
				return fmt.Errorf("store raft log %d: %w", log.Index, err)
			}
		}
		return nil
	})
}

// DeleteRange removes the entries from min to max, inclusive.
func (l *logStore) DeleteRange(min, max uint64) error {
	return l.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(logsBucket).Cursor()
		for k, _ := c.Seek(indexKey(min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return fmt.Errorf("delete raft log %d: %w", binary.BigEndian.Uint64(k), err)
			}
		}
		return nil
	})
}

// Set stores a stable value.
func (l *logStore) Set(key, val []byte) error {
	return l.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(stableBucket).Put(key, val)
	})
}

// Get returns a stable value; nil (and no error) for a missing key.
func (l *logStore) Get(key []byte) ([]byte, error) {
	var out []byte
	err := l.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(stableBucket).Get(key); v != nil {
			out = append([]byte{}, v...)
		}
		return nil
	})
	return out, err
}

// SetUint64 stores a stable number.
func (l *logStore) SetUint64(key []byte, val uint64) error {
	return l.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a stable number; 0 for a missing key.
func (l *logStore) GetUint64(key []byte) (uint64, error) {
	v, err := l.Get(key)
	if err != nil || v == nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft stable value %q: %d bytes, want 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// An entry is stored as: term, type, appended-at (Unix ns), then data and
// extensions, each a uvarint length and the bytes. The index is the key.
func encodeLog(dst []byte, log *raft.Log) []byte {
	dst = binary.AppendUvarint(dst, log.Term)
	dst = append(dst, byte(log.Type))
	var at int64
	if !log.AppendedAt.IsZero() {
		at = log.AppendedAt.UnixNano()
	}
	dst = binary.AppendVarint(dst, at)
	dst = binary.AppendUvarint(dst, uint64(len(log.Data)))
	dst = append(dst, log.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(log.Extensions)))
	return append(dst, log.Extensions...)
}

var errBadLog = errors.New("raftstore: corrupt raft log entry")

func decodeLog(index uint64, b []byte, log *raft.Log) error {
	term, n := binary.Uvarint(b)
	if n <= 0 || len(b) < n+1 {
		return errBadLog
	}
	b = b[n:]
	typ := raft.LogType(b[0])
	b = b[1:]
	at, n := binary.Varint(b)
	if n <= 0 {
		return errBadLog
	}
	b = b[n:]
	bytesField := func() ([]byte, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, false
		}
		v := append([]byte(nil), b[n:n+int(l)]...)
		b = b[n+int(l):]
		return v, true
	}
	data, ok := bytesField()
	if !ok {
		return errBadLog
	}
	ext, ok := bytesField()
	if !ok {
		return errBadLog
	}
	*log = raft.Log{Index: index, Term: term, Type: typ, Data: data, Extensions: ext}
	if at != 0 {
		log.AppendedAt = time.Unix(0, at)
	}
	return nil
}
