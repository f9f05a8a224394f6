package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// The optional interfaces, and ordering between separate calls. What the
// suite holds an implementation to:
//
//   - Lingerer: UpdateLinger is Update. When it returns nil its writes are
//     visible to Get, ForEach and Range at once and durable across a
//     reopen; a ctx already done returns ctx.Err() and applies nothing; after
//     Close it fails with store.ErrClosed.
//   - Submitter/Pending: Done is closed exactly once the write is durable,
//     failed, or withdrawn; Err is then nil (durable and visible),
//     store.ErrWithdrawn (taken back), or the failure (nothing applied).
//     Invalid ops, an empty batch and a closed store give a Pending that is
//     already done (with an error, nil, and an error wrapping
//     store.ErrClosed). Withdraw returns true only while the commit has not
//     begun: then Done is already closed, Err is ErrWithdrawn, and nothing of
//     the write is ever applied (not after a reopen either). When it returns
//     false the write completes as if Withdraw had not been called, and a
//     Pending already done keeps its Err. Withdrawing twice returns false
//     the second time. The suite never assumes that a Withdraw succeeds: a
//     store may begin every commit at once. Close waits for every submitted
//     write: when it returns, each Pending is done, with nil (durable) or a
//     store.ErrClosed (not applied).
//   - Holder: HoldFunc's Pending is a Submitter's. Within its hold, and
//     with no write queued after it, Withdraw takes the write back and
//     its ops are never made; otherwise the ops are made once and the
//     write is durable once Done, after its hold or with a later write,
//     which is applied after it. Close waits for held writes too.
//   - Verifier: on a store that may write (an open store, a single node
//     that leads itself), Verify's Pending is done with Err nil, and
//     Withdraw of it returns false.
//   - Ordering: a later write by the same caller is never applied before an
//     earlier one that had returned (Update, UpdateLinger) or had been
//     submitted (Submit). So a caller reads its own writes, readers never see
//     a caller's key go back to an older value, and once a write is visible
//     every earlier write of its caller is too.
func optionalTests() []struct {
	name string
	fn   func(t *testing.T, h *harness)
} {
	return []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"OrderSameCaller", testOrderSameCaller},
		{"LingerVisibleAndDurable", testLingerVisible},
		{"LingerContextAndClose", testLingerContextAndClose},
		{"SubmitDone", testSubmitDone},
		{"SubmitAlreadyDone", testSubmitAlreadyDone},
		{"SubmitWithdraw", testSubmitWithdraw},
		{"SubmitCloseWaits", testSubmitCloseWaits},
		{"OrderSubmitChain", testOrderSubmitChain},
		{"OrderSubmitThenUpdate", testOrderSubmitThenUpdate},
		{"HoldWithdraw", testHoldWithdraw},
		{"HoldCommitsInOrder", testHoldCommitsInOrder},
		{"HoldCloseWaits", testHoldCloseWaits},
		{"Verify", testVerify},
	}
}

func holder(t *testing.T, h *harness) store.Holder {
	t.Helper()
	s, ok := h.s.(store.Holder)
	if !ok {
		t.Skipf("%T does not implement store.Holder", h.s)
	}
	return s
}

// opsOnce returns a makeOps for HoldFunc that puts bucket/key=value and
// counts its calls in n.
func opsOnce(n *atomic.Int32, bucket, key, value string) func() []store.Op {
	return func() []store.Op {
		n.Add(1)
		return []store.Op{put(bucket, key, value)}
	}
}

// A held write is withdrawable within its hold, and its ops are then
// never made nor applied, across a reopen too.
func testHoldWithdraw(t *testing.T, h *harness) {
	hs := holder(t, h)
	var made atomic.Int32
	p := hs.HoldFunc(opsOnce(&made, "hold", "gone", "v"), 10*time.Second)
	time.Sleep(5 * time.Millisecond)
	if !p.Withdraw() {
		t.Fatal("Withdraw within the hold, with no later write, returned false")
	}
	if err := await(t, p, "withdrawn hold"); !errors.Is(err, store.ErrWithdrawn) {
		t.Fatalf("withdrawn hold: Err %v, want ErrWithdrawn", err)
	}
	if p.Withdraw() {
		t.Fatal("a second Withdraw returned true")
	}
	if made.Load() != 0 {
		t.Fatalf("the withdrawn write's ops were made %d times", made.Load())
	}
	h.reopen()
	if _, ok := h.getOne("hold", "gone"); ok {
		t.Fatal("a withdrawn held write was applied")
	}
}

// A held write is made once and committed after its hold, or at once
// with a later write, which is applied after it.
func testHoldCommitsInOrder(t *testing.T, h *harness) {
	hs := holder(t, h)
	var made atomic.Int32
	p := hs.HoldFunc(opsOnce(&made, "hold", "short", "v"), 20*time.Millisecond)
	if err := await(t, p, "short hold"); err != nil {
		t.Fatalf("short hold: Err %v", err)
	}
	if v, ok := h.getOne("hold", "short"); !ok || v != "v" {
		t.Fatal("a held write is done but not visible")
	}
	long := hs.HoldFunc(opsOnce(&made, "hold", "k", "held"), time.Hour)
	if err := h.s.Update(context.Background(), []store.Op{put("hold", "k", "later")}); err != nil {
		t.Fatal(err)
	}
	if err := await(t, long, "hold taken by a later write"); err != nil {
		t.Fatalf("hold taken by a later write: Err %v", err)
	}
	if v, _ := h.getOne("hold", "k"); v != "later" {
		t.Fatalf("k = %q: the held write was applied after the later one", v)
	}
	if made.Load() != 2 {
		t.Fatalf("ops made %d times, want once per committed write (2)", made.Load())
	}
	bad := hs.HoldFunc(func() []store.Op { return []store.Op{put("", "k", "v")} }, 0)
	if err := await(t, bad, "invalid hold"); err == nil || errors.Is(err, store.ErrWithdrawn) {
		t.Fatalf("a held write with invalid ops: Err %v, want its validation error", err)
	}
	h.reopen()
	if v, _ := h.getOne("hold", "k"); v != "later" {
		t.Fatalf("after reopen k = %q, want \"later\"", v)
	}
}

// Close waits for held writes: each is then done, durable or not applied.
func testHoldCloseWaits(t *testing.T, h *harness) {
	hs := holder(t, h)
	var made atomic.Int32
	const n = 20
	ps := make([]store.Pending, n)
	for i := range n {
		ps[i] = hs.HoldFunc(opsOnce(&made, "holdcw", fmt.Sprintf("k%02d", i), "v"), time.Hour)
	}
	closeWaits(t, h, "hold", "holdcw", ps, func(i int) string { return fmt.Sprintf("k%02d", i) })
}

// closeWaits closes h's store and checks that every one of ps (writes to
// bucket, the i-th of key key(i)) is done, durable or not applied, and
// that the reopened store holds exactly those that were confirmed.
func closeWaits(t *testing.T, h *harness, what, bucket string, ps []store.Pending, key func(i int) string) {
	t.Helper()
	h.close()
	ok := map[string]bool{}
	for i, p := range ps {
		select {
		case <-p.Done():
		default:
			t.Fatalf("%s %d: not done when Close returned", what, i)
		}
		switch err := p.Err(); {
		case err == nil:
			ok[key(i)] = true
		case errors.Is(err, store.ErrClosed):
		default:
			t.Fatalf("%s %d: Err %v, want nil or ErrClosed", what, i, err)
		}
	}
	h.s = h.mustOpen()
	got := h.dump(bucket)
	if len(got) != len(ok) {
		t.Fatalf("%d writes (%s) stored, %d confirmed", len(got), what, len(ok))
	}
	for _, p := range got {
		if !ok[p.k] {
			t.Fatalf("%s stored but its Pending failed", p.k)
		}
	}
}

// An open store that may write verifies it.
func testVerify(t *testing.T, h *harness) {
	v, ok := h.s.(store.Verifier)
	if !ok {
		t.Skipf("%T does not implement store.Verifier", h.s)
	}
	for i := range 3 {
		p := v.Verify()
		if err := await(t, p, "verify"); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
		if p.Withdraw() {
			t.Fatalf("verify %d: Withdraw returned true", i)
		}
	}
}

// pendingWait bounds every wait for a Pending in the suite.
const pendingWait = 20 * time.Second

func lingerer(t *testing.T, h *harness) store.Lingerer {
	t.Helper()
	l, ok := h.s.(store.Lingerer)
	if !ok {
		t.Skipf("%T does not implement store.Lingerer", h.s)
	}
	return l
}

func submitter(t *testing.T, h *harness) store.Submitter {
	t.Helper()
	s, ok := h.s.(store.Submitter)
	if !ok {
		t.Skipf("%T does not implement store.Submitter", h.s)
	}
	return s
}

// await waits (bounded) for p and returns its Err.
func await(t *testing.T, p store.Pending, what string) error {
	t.Helper()
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(pendingWait):
		t.Fatalf("%s: Pending not done within %v", what, pendingWait)
		return nil
	}
}

// getOne returns bucket/key's value and whether it is present.
func (h *harness) getOne(bucket, key string) (string, bool) {
	h.t.Helper()
	var v string
	found := false
	if err := h.s.Get(bucket, [][]byte{[]byte(key)}, func(_ int, b []byte) error {
		v, found = string(b), true
		return nil
	}); err != nil {
		h.t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	return v, found
}

// A caller reads its own writes at once, and a reader never sees a
// caller's key go back, with Update (and UpdateLinger, when the store
// has it) from many callers at once.
func testOrderSameCaller(t *testing.T, h *harness) {
	const (
		writers = 16
		each    = 30
	)
	lg, _ := h.s.(store.Lingerer)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, writers+2)
	var readers, wg sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			last := make([]string, writers)
			keys := make([][]byte, writers)
			for w := range keys {
				keys[w] = fmt.Appendf(nil, "w%02d", w)
			}
			for ctx.Err() == nil {
				err := h.s.Get("order", keys, func(i int, v []byte) error {
					if string(v) < last[i] {
						return fmt.Errorf("writer %d's key went back from %q to %q", i, last[i], v)
					}
					last[i] = string(v)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("w%02d", w)
			for i := range each {
				val := fmt.Sprintf("%03d", i)
				ops := []store.Op{put("order", key, val), put("order-log", fmt.Sprintf("%s-%s", key, val), "")}
				var err error
				if lg != nil && i%2 == 1 {
					err = lg.UpdateLinger(context.Background(), ops, time.Millisecond)
				} else {
					err = h.s.Update(context.Background(), ops)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d write %d: %w", w, i, err)
					return
				}
				var got string
				if err := h.s.Get("order", [][]byte{[]byte(key)}, func(_ int, v []byte) error { got = string(v); return nil }); err != nil {
					errs <- err
					return
				}
				if got != val {
					errs <- fmt.Errorf("writer %d read %q right after its write of %q returned", w, got, val)
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
	h.reopen()
	for w := range writers {
		if v, _ := h.getOne("order", fmt.Sprintf("w%02d", w)); v != fmt.Sprintf("%03d", each-1) {
			t.Fatalf("after reopen writer %d's key holds %q, want its last write", w, v)
		}
	}
	if n := len(h.dump("order-log")); n != writers*each {
		t.Fatalf("after reopen %d writes logged, want %d", n, writers*each)
	}
}

// Concurrent UpdateLinger calls are each visible when they return, and
// durable.
func testLingerVisible(t *testing.T, h *harness) {
	lg := lingerer(t, h)
	const (
		writers = 32
		each    = 10
	)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := fmt.Sprintf("w%02d-%02d", w, i)
				if err := lg.UpdateLinger(context.Background(), []store.Op{put("linger", k, k), put("linger2", k, "")}, 2*time.Millisecond); err != nil {
					errs <- fmt.Errorf("UpdateLinger %s: %w", k, err)
					return
				}
				found := 0
				err := h.s.Get("linger", [][]byte{[]byte(k)}, func(_ int, v []byte) error {
					if string(v) == k {
						found++
					}
					return nil
				})
				if err == nil && found != 1 {
					err = fmt.Errorf("UpdateLinger %s returned nil but Get does not see it", k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(h.dump("linger")); n != writers*each {
		t.Fatalf("ForEach sees %d lingered writes, want %d", n, writers*each)
	}
	h.reopen()
	if n, n2 := len(h.dump("linger")), len(h.dump("linger2")); n != writers*each || n2 != writers*each {
		t.Fatalf("after reopen %d/%d lingered writes stored, want %d", n, n2, writers*each)
	}
}

func testLingerContextAndClose(t *testing.T, h *harness) {
	lg := lingerer(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lg.UpdateLinger(ctx, []store.Op{put("lc", "k", "v")}, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("UpdateLinger with a cancelled ctx: %v, want context.Canceled", err)
	}
	wantBuckets(t, h)
	s := h.s
	h.close()
	if err := s.(store.Lingerer).UpdateLinger(context.Background(), []store.Op{put("lc", "k", "v")}, time.Millisecond); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("UpdateLinger after Close: %v, want ErrClosed", err)
	}
	h.s = h.mustOpen()
	wantBuckets(t, h)
}

// Submitted writes become durable and visible, with a nil Err, lingering
// or not; Withdraw after Done changes nothing.
func testSubmitDone(t *testing.T, h *harness) {
	sub := submitter(t, h)
	var ps []store.Pending
	for i := range 50 {
		linger := time.Duration(i%3) * time.Millisecond
		ps = append(ps, sub.Submit([]store.Op{put("sub", fmt.Sprintf("k%02d", i), "v")}, linger))
	}
	for i, p := range ps {
		if err := await(t, p, fmt.Sprintf("submit %d", i)); err != nil {
			t.Fatalf("submit %d: Err %v", i, err)
		}
		if v, ok := h.getOne("sub", fmt.Sprintf("k%02d", i)); !ok || v != "v" {
			t.Fatalf("submit %d is done but not visible", i)
		}
		if p.Withdraw() {
			t.Fatalf("submit %d: Withdraw after Done returned true", i)
		}
		if err := p.Err(); err != nil {
			t.Fatalf("submit %d: Err changed to %v by a late Withdraw", i, err)
		}
	}
	h.reopen()
	if n := len(h.dump("sub")); n != len(ps) {
		t.Fatalf("after reopen %d submitted writes stored, want %d", n, len(ps))
	}
}

// Invalid ops, an empty batch and a closed store give a Pending that is
// done at once.
func testSubmitAlreadyDone(t *testing.T, h *harness) {
	sub := submitter(t, h)
	done := func(p store.Pending) bool {
		select {
		case <-p.Done():
			return true
		default:
			return false
		}
	}
	bad := sub.Submit([]store.Op{put("ok", "k", "v"), put("", "k", "v")}, time.Millisecond)
	if !done(bad) || bad.Err() == nil || errors.Is(bad.Err(), store.ErrWithdrawn) {
		t.Fatalf("Submit of an invalid batch: done %v, Err %v; want done with a failure", done(bad), bad.Err())
	}
	if bad.Withdraw() {
		t.Fatal("Withdraw of a failed submit returned true")
	}
	empty := sub.Submit(nil, time.Millisecond)
	if !done(empty) || empty.Err() != nil {
		t.Fatalf("Submit of an empty batch: done %v, Err %v; want done with nil", done(empty), empty.Err())
	}
	wantBuckets(t, h)
	s := h.s
	h.close()
	closed := s.(store.Submitter).Submit([]store.Op{put("ok", "k", "v")}, 0)
	if !done(closed) || !errors.Is(closed.Err(), store.ErrClosed) {
		t.Fatalf("Submit after Close: done %v, Err %v; want done with ErrClosed", done(closed), closed.Err())
	}
	h.s = h.mustOpen()
	wantBuckets(t, h)
}

// Writes withdrawn (Withdraw true) are never applied; the others are
// durable. A stream of lingering submits gives the store writes it can
// take back, but the suite does not require that any Withdraw succeeds.
func testSubmitWithdraw(t *testing.T, h *harness) {
	sub := submitter(t, h)
	const n = 400
	ps := make([]store.Pending, n)
	withdrawn := make([]bool, n)
	for i := range n {
		ps[i] = sub.Submit([]store.Op{put("wd", fmt.Sprintf("k%03d", i), "v"), put("wd2", fmt.Sprintf("k%03d", i), "v")}, 5*time.Millisecond)
		if i%2 == 1 {
			withdrawn[i] = ps[i].Withdraw()
			if withdrawn[i] {
				select {
				case <-ps[i].Done():
				default:
					t.Fatalf("submit %d: Withdraw returned true but Done is not closed", i)
				}
				if !errors.Is(ps[i].Err(), store.ErrWithdrawn) {
					t.Fatalf("submit %d: withdrawn, Err %v", i, ps[i].Err())
				}
				if ps[i].Withdraw() {
					t.Fatalf("submit %d: a second Withdraw returned true", i)
				}
			}
		}
	}
	taken := 0
	for i, p := range ps {
		err := await(t, p, fmt.Sprintf("submit %d", i))
		switch {
		case withdrawn[i]:
			taken++
			if !errors.Is(err, store.ErrWithdrawn) {
				t.Fatalf("submit %d: withdrawn, then Err %v", i, err)
			}
		case err != nil:
			t.Fatalf("submit %d: not withdrawn, Err %v", i, err)
		}
	}
	t.Logf("%d of %d withdrawals took the write back", taken, n/2)
	check := func() {
		t.Helper()
		for _, b := range []string{"wd", "wd2"} {
			stored := map[string]bool{}
			for _, p := range h.dump(b) {
				stored[p.k] = true
			}
			for i := range n {
				if k := fmt.Sprintf("k%03d", i); stored[k] == withdrawn[i] {
					t.Fatalf("%s/%s: stored %v, withdrawn %v", b, k, stored[k], withdrawn[i])
				}
			}
		}
	}
	check()
	h.reopen()
	check()
}

// Close waits for what was submitted: every Pending is done when it
// returns, durable if its Err is nil.
func testSubmitCloseWaits(t *testing.T, h *harness) {
	sub := submitter(t, h)
	const n = 200
	ps := make([]store.Pending, n)
	for i := range n {
		ps[i] = sub.Submit([]store.Op{put("cw", fmt.Sprintf("k%03d", i), "v")}, 10*time.Millisecond)
	}
	closeWaits(t, h, "submit", "cw", ps, func(i int) string { return fmt.Sprintf("k%03d", i) })
}

// One caller's chain of submits applies in order: a reader never sees the
// chain go back, and once it sees link j every earlier link is stored.
func testOrderSubmitChain(t *testing.T, h *harness) {
	sub := submitter(t, h)
	const n = 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		last := ""
		for ctx.Err() == nil {
			var cur string
			if err := h.s.Get("chain", [][]byte{[]byte("head")}, func(_ int, v []byte) error { cur = string(v); return nil }); err != nil {
				errs <- err
				return
			}
			if cur < last {
				errs <- fmt.Errorf("chain went back from %q to %q", last, cur)
				return
			}
			last = cur
			if cur != "" {
				var j int
				fmt.Sscanf(cur, "%04d", &j)
				links := make([][]byte, j+1)
				for i := range links {
					links[i] = fmt.Appendf(nil, "%04d", i)
				}
				seen := 0
				if err := h.s.Get("links", links, func(int, []byte) error { seen++; return nil }); err != nil {
					errs <- err
					return
				}
				if seen != j+1 {
					errs <- fmt.Errorf("chain head at %d but only %d of links 0..%d stored", j, seen, j)
					return
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	ps := make([]store.Pending, n)
	for i := range n {
		v := fmt.Sprintf("%04d", i)
		ps[i] = sub.Submit([]store.Op{put("links", v, ""), put("chain", "head", v)}, time.Duration(i%4)*time.Millisecond)
	}
	for i, p := range ps {
		if err := await(t, p, fmt.Sprintf("link %d", i)); err != nil {
			t.Fatalf("link %d: %v", i, err)
		}
	}
	cancel()
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := h.getOne("chain", "head"); v != fmt.Sprintf("%04d", n-1) {
		t.Fatalf("chain head %q after every link is done, want the last", v)
	}
	h.reopen()
	if v, _ := h.getOne("chain", "head"); v != fmt.Sprintf("%04d", n-1) {
		t.Fatalf("chain head %q after reopen, want the last", v)
	}
}

// An Update that returns after a Submit of the same caller means the
// submitted write is applied too.
func testOrderSubmitThenUpdate(t *testing.T, h *harness) {
	sub := submitter(t, h)
	for i := range 50 {
		k := fmt.Sprintf("k%02d", i)
		p := sub.Submit([]store.Op{put("stu", k, "submitted")}, 5*time.Millisecond)
		if err := h.s.Update(context.Background(), []store.Op{put("stu-after", k, "")}); err != nil {
			t.Fatal(err)
		}
		if v, ok := h.getOne("stu", k); !ok || v != "submitted" {
			t.Fatalf("round %d: an Update returned but the write submitted before it is not applied", i)
		}
		if err := await(t, p, "submit before update"); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}
