package journal

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// A write that may linger waits for company only when writes are
// arriving; alone, it is committed at once.
func TestLingerFor(t *testing.T) {
	const l = 500 * time.Microsecond
	for _, tc := range []struct {
		name       string
		linger     time.Duration
		hold       bool
		sinceOther time.Duration
		want       time.Duration
	}{
		{"no linger asked", 0, false, 10 * time.Microsecond, 0},
		{"the first write ever: alone", l, false, -1, 0},
		{"the last write long ago: alone", l, false, 50 * time.Millisecond, 0},
		{"the last write just over a linger ago: alone", l, false, l, 0},
		{"another write 100 µs before: a stream, linger", l, false, 100 * time.Microsecond, l},
		{"another write at the same instant: linger", l, false, 0, l},
		{"held: waits for its deadline whatever arrives", time.Millisecond, true, -1, time.Millisecond},
		{"held, long after the last write", time.Millisecond, true, time.Second, time.Millisecond},
		{"held with no hold time: at once", 0, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lingerFor(tc.linger, tc.hold, tc.sinceOther); got != tc.want {
				t.Errorf("lingerFor(%v, hold %v, %v after another) = %v, want %v", tc.linger, tc.hold, tc.sinceOther, got, tc.want)
			}
		})
	}
}

// The committer commits once a write is due, taking every write up to
// the last one that is due or seeks company, and leaves held writes
// after it in the queue; while none is due it waits for the earliest
// deadline.
func TestPlan(t *testing.T) {
	now := time.Unix(100, 0)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	due := &request{}                                         // no linger
	lingering := &request{until: at(300 * time.Microsecond)}  // for company
	held := &request{until: at(time.Millisecond), hold: true} // to be withdrawn
	heldSoon := &request{until: at(200 * time.Microsecond), hold: true}
	expired := &request{until: at(-time.Microsecond)} // linger over
	heldExpired := &request{until: at(-time.Microsecond), hold: true}
	for _, tc := range []struct {
		name  string
		q     []*request
		wantN int
		wait  time.Duration
	}{
		{"one write due", []*request{due}, 1, 0},
		{"a lingering write waits", []*request{lingering}, 0, 300 * time.Microsecond},
		{"a held write waits for its deadline", []*request{held}, 0, time.Millisecond},
		{"the earliest deadline counts", []*request{held, lingering, heldSoon}, 0, 200 * time.Microsecond},
		{"a write due takes the lingering one after it", []*request{due, lingering}, 2, 0},
		{"a write due takes the held one before it", []*request{held, due}, 2, 0},
		{"a held write after the last due one stays", []*request{due, held}, 1, 0},
		{"held writes after a lingering one that is swept stay", []*request{held, due, lingering, held, heldSoon}, 3, 0},
		{"a lingering write whose time is up", []*request{expired, held}, 1, 0},
		{"a held write whose time is up", []*request{heldExpired}, 1, 0},
		{"a held write whose time is up takes what is before it", []*request{lingering, held, heldExpired, held}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, wait := plan(tc.q, now)
			if n != tc.wantN || (n == 0 && wait != tc.wait) {
				t.Errorf("plan = (%d, %v), want (%d, %v)", n, wait, tc.wantN, tc.wait)
			}
		})
	}
}

// A write alone is not kept waiting for its linger: with nothing to share
// the sync with, UpdateLinger returns once it is durable, however long
// the linger it asked for.
func TestLoneLingeringWriteCommitsAtOnce(t *testing.T) {
	s := openPlain(t)
	done := make(chan error, 1)
	go func() {
		done <- s.UpdateLinger(context.Background(), []store.Op{{Kind: store.Put, Bucket: "b", Key: []byte("k"), Value: []byte("v")}}, time.Hour)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a lone write asking to linger an hour was still waiting after 20 s")
	}
}

// A held write waits to be withdrawn; a write queued after it takes it
// along (the log keeps their order), and both are durable.
func TestHeldWrite(t *testing.T) {
	s := openPlain(t)
	put := func(k string) []store.Op {
		return []store.Op{{Kind: store.Put, Bucket: "b", Key: []byte(k), Value: []byte("v")}}
	}
	alone := s.Hold(put("alone"), time.Hour)
	time.Sleep(20 * time.Millisecond)
	if !alone.Withdraw() {
		t.Fatal("a held write was committed before its deadline with nothing queued after it")
	}
	held := s.Hold(put("held"), time.Hour)
	if err := s.Update(context.Background(), put("after")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a held write was not committed with the write queued after it")
	}
	if err := held.Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.ForEach("b", func(k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != "after" || keys[1] != "held" {
		t.Errorf("stored keys %q, want [after held] (the withdrawn write never stored)", keys)
	}
}

func openPlain(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	inner, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), filepath.Join(dir, "journal"), inner, Options{Validate: boltstore.Validate})
	if err != nil {
		_ = inner.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A write held with HoldFunc makes its ops only when it is committed: a
// withdrawn one never does; one committed with the write queued after it
// does so once, and is durable. Ops it makes that the store refuses fail
// that write alone.
func TestHeldWriteMadeAtCommit(t *testing.T) {
	s := openPlain(t)
	put := func(k string) []store.Op {
		return []store.Op{{Kind: store.Put, Bucket: "b", Key: []byte(k), Value: []byte("v")}}
	}
	var made atomic.Int32
	makeOps := func(k string) func() []store.Op {
		return func() []store.Op { made.Add(1); return put(k) }
	}
	withdrawn := s.HoldFunc(makeOps("withdrawn"), time.Hour)
	if !withdrawn.Withdraw() {
		t.Fatal("Withdraw of a write held for an hour: false")
	}
	held := s.HoldFunc(makeOps("held"), time.Hour)
	refused := s.HoldFunc(func() []store.Op { return []store.Op{{Kind: store.Put, Key: []byte("k")}} }, time.Hour)
	if err := s.Update(context.Background(), put("after")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.Pending{held, refused} {
		select {
		case <-p.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("a held write was not committed with the write queued after it")
		}
	}
	if err := held.Err(); err != nil {
		t.Fatal(err)
	}
	if refused.Err() == nil {
		t.Error("a held write whose ops have no bucket was committed")
	}
	if n := made.Load(); n != 1 {
		t.Errorf("ops made %d times, want once (the withdrawn write never)", n)
	}
	var keys []string
	if err := s.ForEach("b", func(k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != "after" || keys[1] != "held" {
		t.Errorf("stored keys %q, want [after held]", keys)
	}
}
