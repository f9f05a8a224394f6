package boltstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/storetest"
)

var (
	seedFlag  = flag.Uint64("seed", storetest.DefaultSeed, "seed of the store simulation test")
	stepsFlag = flag.Int("steps", storetest.DefaultSimSteps, "batches applied by the store simulation test")
)

func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// checkFile runs bbolt's consistency check (page reachability, no double
// frees, key order) on the closed store file at path, if it exists.
func checkFile(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open %s for check: %v", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatalf("bbolt check of %s: %v", path, err)
	}
}

// opener opens boltstore stores for the contract suite, checking the file's
// invariants before every open.
func opener(t *testing.T, dir string) store.Store {
	path := filepath.Join(dir, "sluice.db")
	checkFile(t, path)
	s, err := Open(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.RunConfig(t, opener, storetest.Config{Seed: *seedFlag, SimSteps: *stepsFlag})
}

func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietOptions().Logger
	}
	s, err := Open(filepath.Join(t.TempDir(), "data", "sluice.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func put(bucket, key, value string) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: []byte(key), Value: []byte(value)}
}

func keys(t *testing.T, s *Store, bucket string) []string {
	t.Helper()
	var out []string
	if err := s.ForEach(bucket, func(k, _ []byte) error { out = append(out, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.db")
	s, err := Open(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := quietOptions()
	opts.LockTimeout = 100 * time.Millisecond
	start := time.Now()
	s2, err := Open(path, opts)
	if err == nil {
		s2.Close()
		t.Fatal("second Open of the same file succeeded")
	}
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: %v, want ErrInUse", err)
	}
	if !strings.Contains(err.Error(), "data directory "+dir+" is in use by another process") {
		t.Fatalf("unclear error: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second Open took %v", d)
	}
}

func TestInvalidOps(t *testing.T) {
	s := openTest(t, Options{})
	long := strings.Repeat("k", MaxKeySize+1)
	for _, tc := range []struct {
		name string
		op   store.Op
	}{
		{"EmptyBucket", put("", "k", "v")},
		{"LongBucket", put(long, "k", "v")},
		{"EmptyKey", put("b", "", "v")},
		{"LongKey", put("b", long, "v")},
		{"ZeroKind", store.Op{Bucket: "b", Key: []byte("k")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(context.Background(), []store.Op{put("b", "ok", "v"), tc.op})
			if !errors.Is(err, ErrInvalidOp) {
				t.Fatalf("got %v, want ErrInvalidOp", err)
			}
			if got := keys(t, s, "b"); len(got) != 0 {
				t.Fatalf("invalid batch applied: %q", got)
			}
		})
	}
	if st := s.Stats(); st.Failed != 5 || st.Commits != 0 {
		t.Fatalf("stats %+v, want 5 failed and no commit", st)
	}
}

// gate pauses the committer after it has taken a batch, until released.
type gate struct {
	taken   chan int
	release chan struct{}
}

func newGate() *gate {
	return &gate{taken: make(chan int, 100), release: make(chan struct{}, 100)}
}

func (g *gate) hook(n int) {
	g.taken <- n
	<-g.release
}

// TestCancelWhileQueued: an Update whose ctx ends before its batch is taken
// returns ctx.Err() and is never applied, even though the committer takes
// the queue later.
func TestCancelWhileQueued(t *testing.T) {
	g := newGate()
	opts := Options{hooks: &testHooks{taken: g.hook}}
	s := openTest(t, opts)
	ctx := context.Background()

	first := make(chan error, 1)
	go func() { first <- s.Update(ctx, []store.Op{put("b", "first", "")}) }()
	<-g.taken // the committer holds "first" and is paused

	cctx, cancel := context.WithCancel(ctx)
	queued := make(chan error, 1)
	go func() { queued <- s.Update(cctx, []store.Op{put("b", "cancelled", "")}) }()
	waitQueued(t, s, 1)
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Update returned %v", err)
	}
	later := make(chan error, 1)
	go func() { later <- s.Update(ctx, []store.Op{put("b", "later", "")}) }()
	waitQueued(t, s, 2)

	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := <-g.taken; n != 1 {
		t.Fatalf("next batch has %d updates, want 1 (the cancelled one skipped)", n)
	}
	g.release <- struct{}{}
	if err := <-later; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(t, s, "b"), ","); got != "first,later" {
		t.Fatalf("stored %s, want first,later", got)
	}
	if st := s.Stats(); st.Cancelled != 1 || st.Updates != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// waitQueued waits until n requests are in the queue.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		l := len(s.queue)
		s.mu.Unlock()
		if l == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue has %d requests, want %d", l, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCancelAfterTaken: once taken, a batch is applied and Update reports
// the commit's result even if its ctx ends meanwhile.
func TestCancelAfterTaken(t *testing.T) {
	g := newGate()
	s := openTest(t, Options{hooks: &testHooks{taken: g.hook}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Update(ctx, []store.Op{put("b", "k", "v")}) }()
	<-g.taken
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Update returned %v before its taken batch was committed", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatalf("taken Update returned %v, want nil", err)
	}
	if got := keys(t, s, "b"); len(got) != 1 {
		t.Fatalf("stored %q", got)
	}
}

// queueUp pauses the committer on a first update, queues the given batches
// behind it and releases it, so they are merged into one transaction. It
// returns each batch's result.
func queueUp(t *testing.T, s *Store, g *gate, batches [][]store.Op) []error {
	t.Helper()
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- s.Update(ctx, []store.Op{put("pause", "k", "")}) }()
	<-g.taken
	results := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, ops := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Update(ctx, ops)
		}()
		waitQueued(t, s, i+1)
	}
	close(g.release) // release every later batch too
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return results
}

func drain(g *gate) {
	for {
		select {
		case <-g.taken:
		default:
			return
		}
	}
}

// TestGroupCommit: batches queued while a commit runs are merged into one
// transaction, bounded by MaxBatchOps.
func TestGroupCommit(t *testing.T) {
	g := newGate()
	s := openTest(t, Options{MaxBatchOps: 10, hooks: &testHooks{taken: g.hook}})
	var batches [][]store.Op
	for i := range 8 {
		batches = append(batches, []store.Op{put("g", fmt.Sprintf("a%d", i), "v"), put("g", fmt.Sprintf("b%d", i), "v")})
	}
	for i, err := range queueUp(t, s, g, batches) {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	drain(g)
	if got := len(keys(t, s, "g")); got != 16 {
		t.Fatalf("%d keys stored, want 16", got)
	}
	// 1 pausing commit, then 8 batches of 2 ops under a 10-op bound: 5+3.
	st := s.Stats()
	if st.Commits != 3 || st.Updates != 9 || st.Ops != 17 || st.Syncs != 6 {
		t.Fatalf("stats %+v, want 3 commits of 9 updates, 17 ops", st)
	}
}

// TestOneBadBatchInGroup: a batch that fails to apply inside a merged
// transaction fails alone; the others are committed.
func TestOneBadBatchInGroup(t *testing.T) {
	g := newGate()
	boom := errors.New("boom")
	s := openTest(t, Options{hooks: &testHooks{
		taken: g.hook,
		apply: func(ops []store.Op) error {
			if string(ops[0].Key) == "bad" {
				return boom
			}
			return nil
		},
	}})
	batches := [][]store.Op{
		{put("g", "a", "1")},
		{put("g", "bad", "1"), put("g", "bad2", "1")},
		{put("g", "c", "1")},
	}
	results := queueUp(t, s, g, batches)
	drain(g)
	if results[0] != nil || results[2] != nil {
		t.Fatalf("good batches failed: %v", results)
	}
	if !errors.Is(results[1], boom) {
		t.Fatalf("bad batch returned %v", results[1])
	}
	if got := strings.Join(keys(t, s, "g"), ","); got != "a,c" {
		t.Fatalf("stored %s, want a,c", got)
	}
	if st := s.Stats(); st.Fallbacks != 1 || st.Failed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestMergedCommitFails: when the merged commit fails, every batch is
// retried in its own transaction.
func TestMergedCommitFails(t *testing.T) {
	g := newGate()
	s := openTest(t, Options{hooks: &testHooks{
		taken: g.hook,
		commit: func(n int) error {
			if n > 1 {
				return errors.New("injected commit failure")
			}
			return nil
		},
	}})
	batches := [][]store.Op{{put("g", "a", "1")}, {put("g", "b", "1")}, {put("g", "c", "1")}}
	for i, err := range queueUp(t, s, g, batches) {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	drain(g)
	if got := strings.Join(keys(t, s, "g"), ","); got != "a,b,c" {
		t.Fatalf("stored %s", got)
	}
	if st := s.Stats(); st.Fallbacks != 1 || st.Commits != 4 {
		t.Fatalf("stats %+v, want 1 fallback and 4 commits", st)
	}
}

func TestCommitFailsAlone(t *testing.T) {
	s := openTest(t, Options{hooks: &testHooks{
		commit: func(int) error { return errors.New("disk on fire") },
	}})
	err := s.Update(context.Background(), []store.Op{put("g", "a", "1")})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("got %v", err)
	}
	if got := keys(t, s, "g"); len(got) != 0 {
		t.Fatalf("stored %q", got)
	}
}

// TestMaxDelay: with MaxDelay, concurrent updates wait for each other.
func TestMaxDelay(t *testing.T) {
	s := openTest(t, Options{MaxDelay: 50 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Update(context.Background(), []store.Op{put("d", fmt.Sprint(i), "")}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.Commits > 3 {
		t.Fatalf("%d commits for 10 concurrent updates with a 50ms delay", st.Commits)
	}
}

// TestUpdateInsideForEach: fn may write to the store it walks, including
// writes that grow the file (bbolt remaps it).
func TestUpdateInsideForEach(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	var ops []store.Op
	for i := range 1500 {
		ops = append(ops, put("src", fmt.Sprintf("%05d", i), strings.Repeat("x", 100)))
	}
	if err := s.Update(ctx, ops); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("y", 8<<10)
	n := 0
	err := s.ForEach("src", func(k, v []byte) error {
		n++
		return s.Update(ctx, []store.Op{
			put("dst", string(k), big),
			{Kind: store.Delete, Bucket: "src", Key: k},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1500 {
		t.Fatalf("visited %d keys, want 1500", n)
	}
	if got := len(keys(t, s, "src")); got != 0 {
		t.Fatalf("%d keys left in src", got)
	}
	if got := len(keys(t, s, "dst")); got != 1500 {
		t.Fatalf("%d keys in dst", got)
	}
}

func TestCloseTwice(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
