package boltstore

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicemq/sluice/engine/store"
)

// States of a request; the caller and the committer race to move it out of
// stateQueued, and whoever wins decides whether the batch is applied.
const (
	stateQueued    uint32 = iota // waiting in the queue
	stateTaken                   // taken by the committer: will be applied
	stateAbandoned               // the caller's ctx ended first: never applied
)

// request is one waiting Update call.
type request struct {
	ops   []store.Op
	bytes int           // key, value and bucket-name bytes of ops
	state atomic.Uint32 // stateQueued, stateTaken or stateAbandoned
	done  chan error    // cap 1: the result, sent once
}

// run is the committer goroutine: it takes batches until the store is closed
// and the queue is empty.
func (s *Store) run() {
	defer close(s.stopped)
	for {
		batch, ok := s.next()
		if !ok {
			return
		}
		if len(batch) > 0 {
			s.commit(batch)
			s.yield()
		}
	}
}

// next waits for queued requests and takes the next batch: the oldest
// requests within MaxBatchOps and MaxBatchBytes (at least one), skipping
// abandoned ones. It reports false once the store is closed and drained.
func (s *Store) next() ([]*request, bool) {
	s.mu.Lock()
	for len(s.queue) == 0 {
		if s.closed {
			s.mu.Unlock()
			return nil, false
		}
		s.mu.Unlock()
		<-s.wake
		s.mu.Lock()
	}
	if s.opts.MaxDelay > 0 && s.queuedOps < s.opts.MaxBatchOps && !s.closed {
		s.mu.Unlock()
		s.linger()
		s.mu.Lock()
	}

	batch := s.batch[:0]
	ops, bytes := 0, 0
	i := 0
	for ; i < len(s.queue); i++ {
		r := s.queue[i]
		if len(batch) > 0 && (ops+len(r.ops) > s.opts.MaxBatchOps || bytes+r.bytes > s.opts.MaxBatchBytes) {
			break
		}
		s.queuedOps -= len(r.ops)
		if !r.state.CompareAndSwap(stateQueued, stateTaken) {
			continue // abandoned: its caller has already returned ctx.Err()
		}
		batch = append(batch, r)
		ops += len(r.ops)
		bytes += r.bytes
	}
	n := copy(s.queue, s.queue[i:])
	clear(s.queue[n:])
	s.queue = s.queue[:n]
	s.mu.Unlock()
	s.batch = batch
	return batch, true
}

// linger waits up to MaxDelay for MaxBatchOps to queue or the store to close.
func (s *Store) linger() {
	t := time.NewTimer(s.opts.MaxDelay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case <-s.wake:
			s.mu.Lock()
			full := s.queuedOps >= s.opts.MaxBatchOps || s.closed
			s.mu.Unlock()
			if full {
				return
			}
		}
	}
}

// commit applies batch in one transaction and answers every caller. If one
// caller's ops fail to apply, that caller gets the error and the rest are
// committed again without it; if the commit itself fails, every caller's
// ops are retried in a transaction of their own.
func (s *Store) commit(batch []*request) {
	if h := s.opts.hooks; h != nil && h.taken != nil {
		h.taken(len(batch))
	}
	for len(batch) > 0 {
		bad, err := s.commitTx(batch)
		if err == nil {
			for _, r := range batch {
				r.done <- nil
			}
			clear(batch)
			return
		}
		s.stats.fallbacks.Add(1)
		if bad >= 0 {
			s.log.Warn("store update failed; committing the rest of its group without it",
				"group", len(batch), "err", err)
			s.fail(batch[bad], err)
			batch = append(batch[:bad], batch[bad+1:]...)
			continue
		}
		if len(batch) == 1 {
			s.log.Error("store commit failed", "err", err)
			s.fail(batch[0], err)
			return
		}
		s.log.Error("store group commit failed; retrying each update alone",
			"group", len(batch), "err", err)
		for _, r := range batch {
			if _, err := s.commitTx([]*request{r}); err != nil {
				s.fail(r, err)
			} else {
				r.done <- nil
			}
		}
		clear(batch)
		return
	}
}

func (s *Store) fail(r *request, err error) {
	s.stats.failed.Add(1)
	r.done <- err
}

// commitTx applies batch in one read-write transaction and commits it.
// On failure it reports the index of the request whose ops failed to apply,
// or -1 if the transaction as a whole failed.
func (s *Store) commitTx(batch []*request) (bad int, err error) {
	start := time.Now()
	tx, err := s.db.Begin(true)
	if err != nil {
		return -1, fmt.Errorf("store %s: begin transaction: %w", s.path, err)
	}
	clear(s.buckets)
	ops := 0
	for i, r := range batch {
		if err := s.apply(tx, r.ops); err != nil {
			_ = tx.Rollback()
			return i, fmt.Errorf("store %s: %w", s.path, err)
		}
		ops += len(r.ops)
	}
	if h := s.opts.hooks; h != nil && h.commit != nil {
		if err := h.commit(len(batch)); err != nil {
			_ = tx.Rollback()
			return -1, fmt.Errorf("store %s: commit: %w", s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		_ = tx.Rollback() // usually already rolled back by Commit
		return -1, fmt.Errorf("store %s: commit: %w", s.path, err)
	}
	clear(s.buckets)
	s.stats.commits.Add(1)
	s.stats.updates.Add(uint64(len(batch)))
	s.stats.ops.Add(uint64(ops))
	s.stats.commitNanos.Add(uint64(time.Since(start)))
	return -1, nil
}

// apply applies one caller's ops to tx, in order.
func (s *Store) apply(tx *bolt.Tx, ops []store.Op) error {
	if h := s.opts.hooks; h != nil && h.apply != nil {
		if err := h.apply(ops); err != nil {
			return err
		}
	}
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case store.Put:
			b := s.buckets[op.Bucket]
			if b == nil {
				var err error
				if b, err = tx.CreateBucketIfNotExists([]byte(op.Bucket)); err != nil {
					return opErr(op, err)
				}
				s.buckets[op.Bucket] = b
			}
			if err := b.Put(op.Key, op.Value); err != nil {
				return opErr(op, err)
			}
		case store.Delete:
			b := s.buckets[op.Bucket]
			if b == nil {
				if b = tx.Bucket([]byte(op.Bucket)); b == nil {
					continue
				}
				s.buckets[op.Bucket] = b
			}
			if err := b.Delete(op.Key); err != nil {
				return opErr(op, err)
			}
		case store.DeleteBucket:
			delete(s.buckets, op.Bucket)
			if err := tx.DeleteBucket([]byte(op.Bucket)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
				return opErr(op, err)
			}
		default:
			return opErr(op, fmt.Errorf("%w: unknown kind %d", ErrInvalidOp, op.Kind))
		}
	}
	return nil
}

func opErr(op *store.Op, err error) error {
	return fmt.Errorf("%s bucket %q: %w", kindName(op.Kind), truncate(op.Bucket), err)
}

// maxYields bounds the yields after a commit.
const maxYields = 4

// yield lets the callers just answered run before the next batch is taken,
// so that those that queue their next Update at once join it instead of
// waiting out a whole commit. Without it the callers split into two cohorts
// that commit alternately, each half the size. It yields the processor
// while the queue is still growing, at most maxYields times: no timer, and
// no wait at all when nothing else is runnable.
func (s *Store) yield() {
	n := s.queueLen()
	for range maxYields {
		runtime.Gosched()
		m := s.queueLen()
		if m == n {
			return
		}
		n = m
	}
}

func (s *Store) queueLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}
