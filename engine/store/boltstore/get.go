package boltstore

import (
	bolt "go.etcd.io/bbolt"

	"github.com/sluicemq/sluice/engine/store"
)

// Get looks up keys in bucket in one read transaction; see store.Store.
func (s *Store) Get(bucket string, keys [][]byte, fn func(i int, value []byte) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		for i, k := range keys {
			if len(k) == 0 {
				continue
			}
			if v := b.Get(k); v != nil {
				if err := fn(i, v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return s.readErr("get from bucket "+truncate(bucket), err)
	}
	return nil
}

// Range reads up to limit keys of bucket from from in one read
// transaction; see store.Store.
func (s *Store) Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if from == nil {
			k, v = c.First()
		} else {
			k, v = c.Seek(from)
		}
		for n := 0; k != nil && (limit <= 0 || n < limit); n++ {
			if err := fn(k, v); err != nil {
				return err
			}
			k, v = c.Next()
		}
		return nil
	})
	if err != nil {
		return s.readErr("range over bucket "+truncate(bucket), err)
	}
	return nil
}
