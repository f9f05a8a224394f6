package journal

// Range waits until the records confirmed so far have reached the inner
// store, then reads it; see store.Store. Unlike Get it does not hurry the
// applier: the engine reads ranges ahead of need (paging), so waiting for
// the next regular application (ApplyInterval) costs nobody, while an
// application forced per read would add syncs of the inner store under
// load.
func (s *Store) Range(bucket string, from []byte, limit int, fn func(key, value []byte) error) error {
	s.waitApplied()
	return s.inner.Range(bucket, from, limit, fn)
}

// waitApplied waits until the records confirmed when it is called (not
// those that keep arriving) have been applied to the inner store.
func (s *Store) waitApplied() {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.confirmed
	for s.appliedRecs < target && s.failed == nil && !s.applierGone {
		s.cond.Wait()
	}
}

// ReleaseMemory asks the inner store, if it can, to give back memory that
// only caches what is on disk (see boltstore.Store.ReleaseMemory).
func (s *Store) ReleaseMemory() {
	if r, ok := s.inner.(interface{ ReleaseMemory() }); ok {
		r.ReleaseMemory()
	}
}
