// Package storetest is the contract suite for store.Store implementations.
//
// The engine relies only on what store.Store documents; this package turns
// that documentation into tests so that every implementation (the embedded
// boltstore today, a replicated store later) is held to the same behaviour.
// An implementation's own tests call Run (or RunConfig) with an Opener.
//
// Besides the interface's own words, the suite pins these points:
//
//   - A bucket exists from the first Put into it until a DeleteBucket, even
//     when all of its keys have been deleted; Delete never creates a bucket.
//   - Ops of one batch apply in order, and batches as if one after another.
//   - A batch with an invalid op (an empty bucket name, a Put or Delete with
//     an empty key, an unknown Kind) returns an error and applies nothing.
//   - An empty batch returns nil and changes nothing.
//   - Update with a ctx that is already done returns ctx.Err() and applies
//     nothing; an Update whose ctx ends while it waits either returns nil
//     (applied) or ctx.Err() (not applied), never anything in between.
//   - Update, ForEach and Buckets after Close fail with an error wrapping
//     store.ErrClosed; an Update racing Close either returns nil (and is
//     durable) or fails with store.ErrClosed (and is not applied).
//   - Update does not keep the caller's slices: changing them afterwards
//     changes nothing stored.
//
// The optional interfaces (store.Lingerer, store.Submitter) and the ordering
// of separate calls have their own rules, written at optionalTests; their
// tests skip a store that does not implement the interface.
//
// Durability is checked across Close and a reopen of the same directory;
// crash durability (a killed process) is each implementation's own test.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// Opener opens the store kept in dir. The suite calls it again with the same
// dir after closing the previous store, to check that what was committed is
// still there. The suite closes every store it opens; an Opener should fail t
// rather than return nil.
type Opener func(t *testing.T, dir string) store.Store

// Config tunes RunConfig.
type Config struct {
	// Seed seeds the random simulation (DefaultSeed if zero).
	Seed uint64
	// SimSteps is the number of batches the simulation applies
	// (DefaultSimSteps if zero).
	SimSteps int
}

// Defaults for zero fields of Config.
const (
	DefaultSeed     = 1
	DefaultSimSteps = 2000
)

// Run runs the contract suite against the stores open returns, with the
// default Config.
func Run(t *testing.T, open Opener) {
	RunConfig(t, open, Config{})
}

// RunConfig runs the contract suite against the stores open returns.
func RunConfig(t *testing.T, open Opener, cfg Config) {
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	if cfg.SimSteps <= 0 {
		cfg.SimSteps = DefaultSimSteps
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"PutAndForEach", testPutAndForEach},
		{"Ordering", testOrdering},
		{"ForEachStops", testForEachStops},
		{"Delete", testDelete},
		{"Get", testGet},
		{"Range", testRange},
		{"DeleteBucket", testDeleteBucket},
		{"OpsApplyInOrder", testOpsApplyInOrder},
		{"Atomicity", testAtomicity},
		{"EmptyBatch", testEmptyBatch},
		{"Buckets", testBuckets},
		{"LargeValues", testLargeValues},
		{"Durability", testDurability},
		{"OpsNotRetained", testOpsNotRetained},
		{"Concurrent", testConcurrent},
		{"ContextDone", testContextDone},
		{"ContextRace", testContextRace},
		{"Closed", testClosed},
		{"CloseRace", testCloseRace},
	}
	tests = append(tests, optionalTests()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newHarness(t, open))
		})
	}
	t.Run("Simulation", func(t *testing.T) {
		simulate(t, newHarness(t, open), cfg.Seed, cfg.SimSteps)
	})
}

// harness holds the store under test and can reopen it.
type harness struct {
	t    *testing.T
	open Opener
	dir  string
	s    store.Store
}

func newHarness(t *testing.T, open Opener) *harness {
	h := &harness{t: t, open: open, dir: t.TempDir()}
	h.s = h.mustOpen()
	t.Cleanup(func() {
		if h.s != nil {
			if err := h.s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return h
}

func (h *harness) mustOpen() store.Store {
	h.t.Helper()
	s := h.open(h.t, h.dir)
	if s == nil {
		h.t.Fatal("Opener returned nil")
	}
	return s
}

// close closes the store; the harness then has none until reopen.
func (h *harness) close() {
	h.t.Helper()
	s := h.s
	h.s = nil
	if err := s.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
}

// reopen closes the store and opens the same directory again.
func (h *harness) reopen() {
	h.t.Helper()
	h.close()
	h.s = h.mustOpen()
}

// update applies ops and fails the test on error.
func (h *harness) update(ops ...store.Op) {
	h.t.Helper()
	if err := h.s.Update(context.Background(), ops); err != nil {
		h.t.Fatalf("update %s: %v", describe(ops), err)
	}
}

// kv is one stored pair, copied.
type kv struct{ k, v string }

// dump returns bucket's pairs in the order ForEach gives them.
func (h *harness) dump(bucket string) []kv {
	h.t.Helper()
	var out []kv
	err := h.s.ForEach(bucket, func(k, v []byte) error {
		out = append(out, kv{string(k), string(v)})
		return nil
	})
	if err != nil {
		h.t.Fatalf("for each %q: %v", bucket, err)
	}
	return out
}

// buckets returns the bucket names in the order Buckets gives them.
func (h *harness) buckets() []string {
	h.t.Helper()
	var out []string
	if err := h.s.Buckets(func(n string) error { out = append(out, n); return nil }); err != nil {
		h.t.Fatalf("buckets: %v", err)
	}
	return out
}

// state is the whole content of a store: bucket name to sorted pairs.
type state map[string][]kv

// snapshot returns the store's whole content.
func (h *harness) snapshot() state {
	h.t.Helper()
	st := state{}
	for _, b := range h.buckets() {
		st[b] = h.dump(b)
	}
	return st
}

func (st state) String() string {
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%q: %d keys\n", n, len(st[n]))
	}
	return b.String()
}

func equalState(a, b state) bool {
	if len(a) != len(b) {
		return false
	}
	for n, av := range a {
		bv, ok := b[n]
		if !ok || !slices.Equal(av, bv) {
			return false
		}
	}
	return true
}

func put(bucket, key, value string) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: []byte(key), Value: []byte(value)}
}

func del(bucket, key string) store.Op {
	return store.Op{Kind: store.Delete, Bucket: bucket, Key: []byte(key)}
}

func delBucket(bucket string) store.Op {
	return store.Op{Kind: store.DeleteBucket, Bucket: bucket}
}

func describe(ops []store.Op) string {
	if len(ops) == 1 {
		op := ops[0]
		return fmt.Sprintf("[kind %d %q %q]", op.Kind, op.Bucket, op.Key)
	}
	return fmt.Sprintf("[%d ops]", len(ops))
}

func wantPairs(t *testing.T, h *harness, bucket string, want ...kv) {
	t.Helper()
	got := h.dump(bucket)
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("bucket %q holds %q, want %q", bucket, got, want)
	}
}

func wantBuckets(t *testing.T, h *harness, want ...string) {
	t.Helper()
	got := h.buckets()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("buckets are %q, want %q", got, want)
	}
}

func testPutAndForEach(t *testing.T, h *harness) {
	h.update(put("q", "k1", "v1"))
	wantPairs(t, h, "q", kv{"k1", "v1"})
	h.update(put("q", "k1", "v2"), put("q", "k2", ""))
	wantPairs(t, h, "q", kv{"k1", "v2"}, kv{"k2", ""})
	wantPairs(t, h, "missing")
	h.reopen()
	wantPairs(t, h, "q", kv{"k1", "v2"}, kv{"k2", ""})
}

func testOrdering(t *testing.T, h *harness) {
	keys := []string{"b", "a", "ab", "\x00", "\xff", "\xff\x00", "a\x00", "B", "0", "~", "aa", "\x7f", "\x80"}
	var ops []store.Op
	for i, k := range keys {
		ops = append(ops, put("o", k, fmt.Sprint(i)))
	}
	h.update(ops[:5]...)
	h.update(ops[5:]...)
	sorted := slices.Clone(keys)
	slices.Sort(sorted) // Go string order is byte order
	check := func() {
		t.Helper()
		got := h.dump("o")
		if len(got) != len(sorted) {
			t.Fatalf("got %d keys, want %d", len(got), len(sorted))
		}
		for i, p := range got {
			if p.k != sorted[i] {
				t.Fatalf("key %d is %q, want %q (all: %q)", i, p.k, sorted[i], got)
			}
			if want := fmt.Sprint(slices.Index(keys, p.k)); p.v != want {
				t.Fatalf("key %q holds %q, want %q", p.k, p.v, want)
			}
		}
	}
	check()
	h.reopen()
	check()
}

func testForEachStops(t *testing.T, h *harness) {
	for i := range 10 {
		h.update(put("s", fmt.Sprintf("k%d", i), "v"))
	}
	stop := errors.New("stop")
	n := 0
	err := h.s.ForEach("s", func(k, v []byte) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("ForEach returned %v, want the error from fn", err)
	}
	if n != 3 {
		t.Fatalf("fn called %d times after returning an error at call 3", n)
	}
	err = h.s.Buckets(func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Buckets returned %v, want the error from fn", err)
	}
}

func testDelete(t *testing.T, h *harness) {
	h.update(put("d", "a", "1"), put("d", "b", "2"), put("d", "c", "3"))
	h.update(del("d", "b"))
	wantPairs(t, h, "d", kv{"a", "1"}, kv{"c", "3"})
	h.update(del("d", "b"), del("d", "zzz"))
	wantPairs(t, h, "d", kv{"a", "1"}, kv{"c", "3"})
	h.update(del("nobucket", "a"))
	wantBuckets(t, h, "d")
	h.update(del("d", "a"), del("d", "c"))
	wantPairs(t, h, "d")
	wantBuckets(t, h, "d") // an emptied bucket still exists
	h.reopen()
	wantPairs(t, h, "d")
	wantBuckets(t, h, "d")
}

func testGet(t *testing.T, h *harness) {
	get := func(bucket string, keys ...string) map[int]string {
		t.Helper()
		ks := make([][]byte, len(keys))
		for i, k := range keys {
			ks[i] = []byte(k)
		}
		got := map[int]string{}
		if err := h.s.Get(bucket, ks, func(i int, v []byte) error {
			got[i] = string(v)
			return nil
		}); err != nil {
			t.Fatalf("Get(%s): %v", bucket, err)
		}
		return got
	}
	h.update(put("g", "a", "1"), put("g", "c", "3"))
	if got := get("g", "c", "b", "a"); len(got) != 2 || got[0] != "3" || got[2] != "1" {
		t.Fatalf("Get = %v, want {0:3 2:1}", got)
	}
	if got := get("missing", "a"); len(got) != 0 {
		t.Fatalf("Get of a missing bucket = %v", got)
	}
	h.update(del("g", "a"))
	if got := get("g", "a"); len(got) != 0 {
		t.Fatalf("Get after delete = %v", got)
	}
	h.reopen()
	if got := get("g", "c"); got[0] != "3" {
		t.Fatalf("Get after reopen = %v", got)
	}
}

func testRange(t *testing.T, h *harness) {
	rng := func(bucket, from string, limit int) string {
		t.Helper()
		var f []byte
		if from != "" {
			f = []byte(from)
		}
		var out []string
		if err := h.s.Range(bucket, f, limit, func(k, v []byte) error {
			out = append(out, string(k)+"="+string(v))
			return nil
		}); err != nil {
			t.Fatalf("Range(%s, %q, %d): %v", bucket, from, limit, err)
		}
		return strings.Join(out, " ")
	}
	h.update(put("r", "b", "2"), put("r", "d", "4"), put("r", "a", "1"), put("r", "c", "3"), put("other", "z", "9"))
	tests := []struct {
		from  string
		limit int
		want  string
	}{
		{"", 0, "a=1 b=2 c=3 d=4"},
		{"", 2, "a=1 b=2"},
		{"b", 0, "b=2 c=3 d=4"},
		{"bb", 1, "c=3"},
		{"d", 5, "d=4"},
		{"e", 0, ""},
	}
	for _, tc := range tests {
		if got := rng("r", tc.from, tc.limit); got != tc.want {
			t.Errorf("Range(r, %q, %d) = %q, want %q", tc.from, tc.limit, got, tc.want)
		}
	}
	if got := rng("missing", "", 0); got != "" {
		t.Errorf("Range of a missing bucket = %q", got)
	}
	stop := errors.New("stop")
	n := 0
	if err := h.s.Range("r", nil, 0, func(k, v []byte) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 2 {
		t.Errorf("Range stopped by fn: err %v after %d calls, want stop after 2", err, n)
	}
	// A confirmed delete is seen at once, and so is the state after a reopen.
	h.update(del("r", "b"))
	if got := rng("r", "", 0); got != "a=1 c=3 d=4" {
		t.Errorf("Range after delete = %q", got)
	}
	h.reopen()
	if got := rng("r", "c", 0); got != "c=3 d=4" {
		t.Errorf("Range after reopen = %q", got)
	}
}

func testDeleteBucket(t *testing.T, h *harness) {
	h.update(put("x", "a", "1"), put("x", "b", "2"), put("y", "a", "1"))
	h.update(delBucket("x"))
	wantPairs(t, h, "x")
	wantPairs(t, h, "y", kv{"a", "1"})
	wantBuckets(t, h, "y")
	h.update(delBucket("x"), delBucket("never"))
	wantBuckets(t, h, "y")
	h.update(put("x", "c", "3"))
	wantPairs(t, h, "x", kv{"c", "3"})
	h.reopen()
	wantPairs(t, h, "x", kv{"c", "3"})
	wantBuckets(t, h, "x", "y")
}

func testOpsApplyInOrder(t *testing.T, h *harness) {
	h.update(put("o", "k", "1"), put("o", "k", "2"), del("o", "j"), put("o", "j", "3"))
	wantPairs(t, h, "o", kv{"j", "3"}, kv{"k", "2"})
	h.update(put("o", "k", "4"), delBucket("o"), put("o", "m", "5"))
	wantPairs(t, h, "o", kv{"m", "5"})
	h.update(put("p", "k", "1"), del("p", "k"))
	wantPairs(t, h, "p")
	wantBuckets(t, h, "o", "p")
	h.update(put("q", "k", "1"), delBucket("q"))
	wantBuckets(t, h, "o", "p")
	h.reopen()
	wantPairs(t, h, "o", kv{"m", "5"})
	wantBuckets(t, h, "o", "p")
}

func testAtomicity(t *testing.T, h *harness) {
	h.update(put("a", "keep", "1"))
	before := h.snapshot()
	valid := []store.Op{put("a", "new", "2"), put("fresh", "k", "v"), del("a", "keep"), delBucket("a")}
	invalid := []struct {
		name string
		op   store.Op
	}{
		{"EmptyBucketPut", put("", "k", "v")},
		{"EmptyBucketDelete", del("", "k")},
		{"EmptyBucketDeleteBucket", delBucket("")},
		{"PutEmptyKey", put("a", "", "v")},
		{"DeleteEmptyKey", del("a", "")},
		{"ZeroKind", store.Op{Bucket: "a", Key: []byte("k")}},
		{"UnknownKind", store.Op{Kind: 200, Bucket: "a", Key: []byte("k")}},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			for _, at := range []int{0, 2, len(valid)} {
				ops := slices.Insert(slices.Clone(valid), at, tc.op)
				if err := h.s.Update(context.Background(), ops); err == nil {
					t.Fatalf("batch with an invalid op at %d returned nil", at)
				}
				if got := h.snapshot(); !equalState(got, before) {
					t.Fatalf("failed batch changed the store:\n%vwant\n%v", got, before)
				}
			}
		})
	}
	h.reopen()
	if got := h.snapshot(); !equalState(got, before) {
		t.Fatalf("after reopen:\n%vwant\n%v", got, before)
	}
	// A failed batch does not poison the store.
	h.update(valid[:2]...)
	wantPairs(t, h, "a", kv{"keep", "1"}, kv{"new", "2"})
}

func testEmptyBatch(t *testing.T, h *harness) {
	h.update(put("e", "k", "v"))
	for _, ops := range [][]store.Op{nil, {}} {
		if err := h.s.Update(context.Background(), ops); err != nil {
			t.Fatalf("empty batch: %v", err)
		}
	}
	wantBuckets(t, h, "e")
	wantPairs(t, h, "e", kv{"k", "v"})
}

func testBuckets(t *testing.T, h *harness) {
	wantBuckets(t, h)
	names := []string{"queue/orders", "topic/prices", "a", "Z", "queue/ordersX", "δ", "sub:1:2", "\x01"}
	for _, n := range names {
		h.update(put(n, "k", n))
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	wantBuckets(t, h, sorted...)
	for _, n := range names {
		wantPairs(t, h, n, kv{"k", n})
	}
	h.update(delBucket("a"), delBucket("δ"))
	sorted = slices.DeleteFunc(sorted, func(n string) bool { return n == "a" || n == "δ" })
	wantBuckets(t, h, sorted...)
	h.reopen()
	wantBuckets(t, h, sorted...)
}

func testLargeValues(t *testing.T, h *harness) {
	const size = 1 << 20
	vals := make([]string, 3)
	for i := range vals {
		b := make([]byte, size+i)
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		vals[i] = string(b)
	}
	h.update(put("big", "0", vals[0]))
	h.update(put("big", "1", vals[1]), put("big", "2", vals[2]))
	want := []kv{{"0", vals[0]}, {"1", vals[1]}, {"2", vals[2]}}
	check := func() {
		t.Helper()
		got := h.dump("big")
		if len(got) != len(want) {
			t.Fatalf("got %d large values, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("large value %q differs (len %d, want %d)", want[i].k, len(got[i].v), len(want[i].v))
			}
		}
	}
	check()
	h.reopen()
	check()
	h.update(del("big", "1"))
	want = slices.Delete(want, 1, 2)
	check()
	h.reopen()
	check()
}

func testDurability(t *testing.T, h *harness) {
	var model = map[string]string{}
	for i := range 50 {
		k := fmt.Sprintf("m%03d", i)
		h.update(put("dur", k, "v"+k), put("other", k, k))
		model[k] = "v" + k
		if i%5 == 0 {
			h.update(del("dur", k))
			delete(model, k)
		}
	}
	h.update(delBucket("other"))
	h.reopen()
	var want []kv
	for k, v := range model {
		want = append(want, kv{k, v})
	}
	slices.SortFunc(want, func(a, b kv) int { return cmpString(a.k, b.k) })
	wantPairs(t, h, "dur", want...)
	wantBuckets(t, h, "dur")
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testOpsNotRetained(t *testing.T, h *harness) {
	key, val := []byte("key"), []byte("value")
	ops := []store.Op{{Kind: store.Put, Bucket: "r", Key: key, Value: val}}
	h.update(ops...)
	copy(key, "XXX")
	copy(val, "YYYYY")
	ops[0].Bucket = "other"
	wantPairs(t, h, "r", kv{"key", "value"})
	h.reopen()
	wantPairs(t, h, "r", kv{"key", "value"})
	wantBuckets(t, h, "r")
}

func testConcurrent(t *testing.T, h *harness) {
	const (
		writers = 64
		each    = 20
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg      sync.WaitGroup
		readers sync.WaitGroup
		errs    = make(chan error, writers+2)
	)
	// Readers walk while writers write; every pair seen must be whole.
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for ctx.Err() == nil {
				err := h.s.ForEach("pairs", func(k, v []byte) error {
					if !bytes.HasPrefix(v, k) {
						return fmt.Errorf("key %q holds %q", k, v)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := fmt.Sprintf("w%02d-%03d", w, i)
				ops := []store.Op{put("pairs", k, k+"=v"), put("index", k, "")}
				if i > 0 && i%4 == 0 {
					prev := fmt.Sprintf("w%02d-%03d", w, i-1)
					ops = append(ops, del("pairs", prev), del("index", prev))
				}
				if err := h.s.Update(context.Background(), ops); err != nil {
					errs <- fmt.Errorf("writer %d update %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []kv
	var wantIndex []kv
	for w := range writers {
		for i := range each {
			if i%4 == 3 && i+1 < each {
				continue // deleted by the next update
			}
			k := fmt.Sprintf("w%02d-%03d", w, i)
			want = append(want, kv{k, k + "=v"})
			wantIndex = append(wantIndex, kv{k, ""})
		}
	}
	check := func() {
		t.Helper()
		wantPairs(t, h, "pairs", want...)
		wantPairs(t, h, "index", wantIndex...)
	}
	check()
	h.reopen()
	check()
}

func testContextDone(t *testing.T, h *harness) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"Cancelled", cancelled, context.Canceled},
		{"DeadlineExceeded", expired, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.s.Update(tc.ctx, []store.Op{put("c", tc.name, "v")})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Update returned %v, want %v", err, tc.want)
			}
			wantBuckets(t, h)
		})
	}
	h.reopen()
	wantBuckets(t, h)
}

func testContextRace(t *testing.T, h *harness) {
	const n = 200
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(time.Duration(i%20)*50*time.Microsecond, cancel)
			results[i] = h.s.Update(ctx, []store.Op{put("race", fmt.Sprintf("k%03d", i), "v"), put("race2", fmt.Sprintf("k%03d", i), "v")})
		}()
	}
	wg.Wait()
	check := func() {
		t.Helper()
		present := map[string]bool{}
		for _, p := range h.dump("race") {
			present[p.k] = true
		}
		present2 := map[string]bool{}
		for _, p := range h.dump("race2") {
			present2[p.k] = true
		}
		applied := 0
		for i, err := range results {
			k := fmt.Sprintf("k%03d", i)
			switch {
			case err == nil:
				applied++
				if !present[k] || !present2[k] {
					t.Fatalf("update %d returned nil but is not (wholly) stored", i)
				}
			case errors.Is(err, context.Canceled):
				if present[k] || present2[k] {
					t.Fatalf("update %d returned %v but was applied", i, err)
				}
			default:
				t.Fatalf("update %d returned %v", i, err)
			}
		}
		if len(present) != applied || len(present2) != applied {
			t.Fatalf("%d/%d keys stored, %d updates applied", len(present), len(present2), applied)
		}
	}
	check()
	h.reopen()
	check()
}

func testClosed(t *testing.T, h *harness) {
	h.update(put("c", "k", "v"))
	s := h.s
	h.close()
	ctx := context.Background()
	if err := s.Update(ctx, []store.Op{put("c", "k2", "v")}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Update after Close: %v, want ErrClosed", err)
	}
	if err := s.Update(ctx, nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("empty Update after Close: %v, want ErrClosed", err)
	}
	if err := s.ForEach("c", func(k, v []byte) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("ForEach after Close: %v, want ErrClosed", err)
	}
	if err := s.Buckets(func(string) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Buckets after Close: %v, want ErrClosed", err)
	}
	h.s = h.mustOpen()
	wantPairs(t, h, "c", kv{"k", "v"})
}

func testCloseRace(t *testing.T, h *harness) {
	const n = 64
	results := make([]error, n)
	applied := make([]int, n)
	s := h.s
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range 1000 {
				k := fmt.Sprintf("k%02d-%04d", i, j)
				err := s.Update(context.Background(), []store.Op{put("cr", k, "v")})
				if err != nil {
					results[i] = err
					return
				}
				applied[i]++
			}
		}()
	}
	close(start)
	time.Sleep(5 * time.Millisecond)
	h.s = nil
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	wg.Wait()
	for i, err := range results {
		if err != nil && !errors.Is(err, store.ErrClosed) {
			t.Fatalf("writer %d: %v, want nil or ErrClosed", i, err)
		}
	}
	h.s = h.mustOpen()
	// Each writer's keys must be a gap-free prefix: every Update that
	// returned nil before Close is stored, and nothing after the first
	// ErrClosed.
	last := make([]int, n)
	for i := range last {
		last[i] = -1
	}
	for _, p := range h.dump("cr") {
		var w, j int
		if _, err := fmt.Sscanf(p.k, "k%02d-%04d", &w, &j); err != nil {
			t.Fatalf("unexpected key %q", p.k)
		}
		if j != last[w]+1 {
			t.Fatalf("writer %d: key %d stored after key %d", w, j, last[w])
		}
		last[w] = j
	}
	for i := range n {
		if last[i]+1 != applied[i] {
			t.Fatalf("writer %d: %d updates returned nil but %d keys are stored", i, applied[i], last[i]+1)
		}
	}
}
