package raftstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/raftstore"
)

// waitPending waits up to d for p to be done and returns its error.
func waitPending(t *testing.T, p store.Pending, d time.Duration, what string) error {
	t.Helper()
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(d):
		t.Fatalf("%s: not done within %v", what, d)
		return nil
	}
}

// TestVerifyConfirmsOnlyALeaderOfAMajority: Verify (what the engine asks
// before it confirms a message consumed before it was stored) succeeds
// on the leader, for the generation it began in its current leadership;
// it fails on a follower, for another generation, and on a leader cut
// off from the others.
func TestVerifyConfirmsOnlyALeaderOfAMajority(t *testing.T) {
	c := newCluster(t, 3, func(o *raftstore.Options) { o.ApplyTimeout = 3 * time.Second })
	l := c.leader(10 * time.Second)
	gen, err := c.nodes[l].Begin(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := waitPending(t, c.nodes[l].Verify(), 5*time.Second, "verify"); err != nil {
			t.Fatalf("round %d: the leader did not verify: %v", i, err)
		}
		if err := waitPending(t, c.nodes[l].VerifyGen(gen), 5*time.Second, "verify gen"); err != nil {
			t.Fatalf("round %d: the leader did not verify its generation %d: %v", i, gen, err)
		}
	}
	// Many callers at once share rounds, and all are answered.
	ps := make([]store.Pending, 200)
	for i := range ps {
		ps[i] = c.nodes[l].VerifyGen(gen)
	}
	for i, p := range ps {
		if err := waitPending(t, p, 5*time.Second, "concurrent verify"); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if err := waitPending(t, c.nodes[l].VerifyGen(gen+1), time.Second, "verify of another generation"); !errors.Is(err, store.ErrIndeterminate) {
		t.Fatalf("verify of a generation this leader did not begin: %v, want ErrIndeterminate", err)
	}
	f := (l + 1) % 3
	if err := waitPending(t, c.nodes[f].Verify(), time.Second, "verify on a follower"); !errors.Is(err, store.ErrIndeterminate) {
		t.Fatalf("verify on a follower: %v, want ErrIndeterminate", err)
	}
	// A new generation ends the old one's verification.
	gen2, err := c.nodes[l].Begin(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitPending(t, c.nodes[l].VerifyGen(gen), time.Second, "verify of an ended generation"); !errors.Is(err, store.ErrIndeterminate) {
		t.Fatalf("verify of the ended generation %d (now %d): %v", gen, gen2, err)
	}
	// Cut off: the others stop, and the leader confirms nothing.
	for i := range 3 {
		if i != l {
			c.stop(i)
		}
	}
	start := time.Now()
	if err := waitPending(t, c.nodes[l].VerifyGen(gen2), 10*time.Second, "verify without a majority"); !errors.Is(err, store.ErrIndeterminate) {
		t.Fatalf("a leader without a majority verified: %v", err)
	}
	t.Logf("without a majority, verify failed after %v", time.Since(start).Round(time.Millisecond))
}

// TestHoldFuncIsWithdrawableAndOrdered: a held write is not taken before
// its hold passes, so it can be withdrawn and is then never made; a write
// queued after a held one takes it along, in order; an unwithdrawn one is
// committed once its hold passes.
func TestHoldFuncIsWithdrawableAndOrdered(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader(10 * time.Second)
	s := c.nodes[l]
	var made atomic.Int32
	mk := func(k string) func() []store.Op {
		return func() []store.Op { made.Add(1); return []store.Op{putOp("h", k, "v-"+k)} }
	}
	// Withdrawn within its hold: never made, never applied.
	p := s.HoldFunc(mk("gone"), time.Second)
	time.Sleep(20 * time.Millisecond)
	if !p.Withdraw() {
		t.Fatal("a held write could not be withdrawn within its hold")
	}
	if err := waitPending(t, p, time.Second, "withdrawn"); !errors.Is(err, store.ErrWithdrawn) {
		t.Fatalf("withdrawn write: %v", err)
	}
	// Passed its hold: committed.
	p = s.HoldFunc(mk("kept"), 30*time.Millisecond)
	if err := waitPending(t, p, 5*time.Second, "held write"); err != nil {
		t.Fatalf("held write: %v", err)
	}
	if p.Withdraw() {
		t.Fatal("a committed write was withdrawn")
	}
	// A later write takes a held one along, before it, at once.
	held := s.HoldFunc(mk("first"), time.Hour)
	start := time.Now()
	if err := s.Update(context.Background(), []store.Op{putOp("h", "first", "overwritten"), putOp("h", "second", "v")}); err != nil {
		t.Fatal(err)
	}
	if err := waitPending(t, held, 5*time.Second, "held write taken along"); err != nil {
		t.Fatalf("held write taken along: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the later write waited %v", d)
	}
	if made.Load() != 2 {
		t.Fatalf("ops made %d times, want 2 (the withdrawn write's never)", made.Load())
	}
	got := map[string]string{}
	if err := s.ForEach("h", func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kept": "v-kept", "first": "overwritten", "second": "v"}
	if len(got) != len(want) {
		t.Fatalf("state %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q (the held write must be applied before the later one)", k, got[k], v)
		}
	}
	// Close commits what is still held, at once.
	last := s.HoldFunc(mk("at-close"), time.Hour)
	c.stop(l)
	if err := waitPending(t, last, 5*time.Second, "held write at close"); err != nil {
		t.Fatalf("a write held when the store closed: %v", err)
	}
}
