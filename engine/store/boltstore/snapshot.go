package boltstore

import (
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicemq/sluice/engine/store"
)

// Snapshot is a consistent, point-in-time view of the whole store that can be
// written out as a bbolt file (package raftstore sends it to followers and
// keeps it for log truncation). It holds a bbolt read transaction until
// Close: writes go on meanwhile, but a commit that must grow the file's
// memory map waits for it, so a Snapshot should be written out and closed
// promptly.
type Snapshot struct {
	s  *Store
	tx *bolt.Tx
}

// Snapshot opens a consistent view of the store as of the last commit;
// every Update that has returned is in it. It fails with store.ErrClosed on
// a closed store. The caller must Close it.
func (s *Store) Snapshot() (*Snapshot, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, s.readErr("begin snapshot", err)
	}
	return &Snapshot{s: s, tx: tx}, nil
}

// Size is the size in bytes of the file WriteTo writes.
func (sn *Snapshot) Size() int64 { return sn.tx.Size() }

// WriteTo writes the view as a complete bbolt database file to w (bbolt's
// Tx.WriteTo): a file that OpenSnapshotFile, or Open itself, can read.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := sn.tx.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("store %s: write snapshot: %w", sn.s.path, err)
	}
	return n, nil
}

// Close ends the view; calling it again does nothing.
func (sn *Snapshot) Close() error {
	if sn.tx == nil {
		return nil
	}
	err := sn.tx.Rollback()
	sn.tx = nil
	if err != nil {
		return fmt.Errorf("store %s: close snapshot: %w", sn.s.path, err)
	}
	return nil
}

// ReadSnapshotFile walks a bbolt file written by Snapshot.WriteTo, read-only:
// fn is called for every bucket in ascending order, with a function that
// walks that bucket's keys in ascending order. Keys and values are valid only
// during the call. An error from either function stops the walk and is
// returned. A restore (package raftstore) replays the file into a live Store
// through Update with it, in bounded batches.
func ReadSnapshotFile(path string, fn func(bucket string, each func(fn func(key, value []byte) error) error) error) error {
	db, err := bolt.Open(path, DefaultFileMode, &bolt.Options{ReadOnly: true, Timeout: DefaultLockTimeout})
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return fn(string(name), func(kv func(key, value []byte) error) error {
				return b.ForEach(func(k, v []byte) error {
					if v == nil {
						return nil // a nested bucket: never written by Store
					}
					return kv(k, v)
				})
			})
		})
	})
	if err != nil {
		return fmt.Errorf("read snapshot %s: %w", path, err)
	}
	return nil
}
