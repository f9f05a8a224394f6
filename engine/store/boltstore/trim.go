package boltstore

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultTrimInterval is how often the store drops its mapping of the
// database file's pages (Options.TrimInterval).
const DefaultTrimInterval = 2 * time.Second

// trimLoop drops, every interval, the pages of the database file that
// reads have mapped into the process. bbolt reads through a shared,
// read-only memory map, so every message read back (paging, recovery) would
// otherwise stay counted in the broker's resident set until the kernel
// needs the memory: a backlog of gigabytes read once would look like
// gigabytes of broker memory. The pages stay in the page cache; the next
// read of a dropped page maps it again from there, without disk I/O.
func (s *Store) trimLoop(interval time.Duration) {
	defer close(s.trimmed)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.trimStop:
			return
		case <-t.C:
		}
		s.ReleaseMemory()
	}
}

// ReleaseMemory drops the pages of the database file that reads have
// mapped into the process now, as trimLoop does every TrimInterval; the
// broker calls it after recovery, which reads every index record.
func (s *Store) ReleaseMemory() {
	if s.isClosed() {
		return
	}
	// A read transaction holds bbolt's remap lock: the mapping cannot
	// move while it is dropped.
	_ = s.db.View(func(tx *bolt.Tx) error {
		dropMapped(s.db.Info().Data, tx.Size())
		return nil
	})
}
