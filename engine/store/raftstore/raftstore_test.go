package raftstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/raftstore"
	"github.com/sluicemq/sluice/engine/store/storetest"
)

// quiet discards raft's chatter unless -v asks for it.
func quiet() *slog.Logger {
	if testing.Verbose() && os.Getenv("RAFTSTORE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fast are raft timings for loopback tests.
func fast(o raftstore.Options) raftstore.Options {
	o.HeartbeatTimeout = 150 * time.Millisecond
	o.ElectionTimeout = 150 * time.Millisecond
	o.LeaderLeaseTimeout = 100 * time.Millisecond
	o.CommitTimeout = 5 * time.Millisecond
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = 5 * time.Second
	}
	o.Logger = quiet()
	return o
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openSingle(t *testing.T, dir string, tune func(*raftstore.Options)) *raftstore.Store {
	t.Helper()
	o := fast(raftstore.Options{NodeID: "n1", BindAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true})
	if tune != nil {
		tune(&o)
	}
	s, err := raftstore.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "single node becomes leader", s.IsLeader)
	return s
}

// A bootstrapped single node passes the whole store contract, reopens
// included (its state and log survive Close; it elects itself again).
func TestContractSingleNode(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Store { return openSingle(t, dir, nil) })
}

// Tiny entries and frequent snapshots: batches split at MaxBatchOps, the
// log is truncated constantly, and reopens must not replay applied entries
// over the state.
func TestContractSingleNodeSmallBatchesSnapshots(t *testing.T) {
	storetest.RunConfig(t, func(t *testing.T, dir string) store.Store {
		return openSingle(t, dir, func(o *raftstore.Options) {
			o.MaxBatchOps = 3
			o.SnapshotThreshold = 8
			o.TrailingLogs = 4
			o.SnapshotInterval = 20 * time.Millisecond
		})
	}, storetest.Config{SimSteps: 500})
}

// cluster is n nodes on loopback; node 0 bootstraps, the others join it.
type cluster struct {
	t     testing.TB
	dirs  []string
	addrs []string
	nodes []*raftstore.Store // nil while stopped
	tune  func(*raftstore.Options)
	mu    sync.Mutex
	leads map[string][]raftstore.Leadership // by node ID
}

func newCluster(t testing.TB, n int, tune func(*raftstore.Options)) *cluster {
	t.Helper()
	c := &cluster{t: t, tune: tune, leads: map[string][]raftstore.Leadership{}}
	for i := range n {
		c.dirs = append(c.dirs, t.TempDir())
		c.addrs = append(c.addrs, "127.0.0.1:0")
		c.nodes = append(c.nodes, nil)
		c.start(i)
		if i == 0 {
			waitFor(t, 10*time.Second, "n1 becomes leader", c.nodes[0].IsLeader)
		} else if err := c.nodes[0].AddVoter(c.id(i), c.addrs[i], 5*time.Second); err != nil {
			t.Fatalf("add %s: %v", c.id(i), err)
		}
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *cluster) id(i int) string { return fmt.Sprintf("n%d", i+1) }

// start opens node i on its address (a free port the first time, the same
// one after).
func (c *cluster) start(i int) {
	c.t.Helper()
	id := c.id(i)
	o := fast(raftstore.Options{NodeID: id, BindAddr: c.addrs[i], DataDir: c.dirs[i], Bootstrap: i == 0})
	o.OnLeadership = func(l raftstore.Leadership) {
		c.mu.Lock()
		c.leads[id] = append(c.leads[id], l)
		c.mu.Unlock()
	}
	if c.tune != nil {
		c.tune(&o)
	}
	s, err := raftstore.Open(o)
	if err != nil {
		c.t.Fatalf("open %s: %v", id, err)
	}
	c.addrs[i] = s.Addr()
	c.nodes[i] = s
}

func (c *cluster) stop(i int) {
	c.t.Helper()
	if s := c.nodes[i]; s != nil {
		c.nodes[i] = nil
		if err := s.Close(); err != nil {
			c.t.Errorf("close %s: %v", c.id(i), err)
		}
	}
}

// leader waits for exactly one running leader and returns its index.
func (c *cluster) leader(d time.Duration) int {
	c.t.Helper()
	found := -1
	waitFor(c.t, d, "a leader is elected", func() bool {
		found = -1
		for i, s := range c.nodes {
			if s != nil && s.IsLeader() {
				if found >= 0 {
					return false
				}
				found = i
			}
		}
		return found >= 0
	})
	return found
}

func (c *cluster) leadership(id string) []raftstore.Leadership {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]raftstore.Leadership(nil), c.leads[id]...)
}

func putOp(bucket, k, v string) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: []byte(k), Value: []byte(v)}
}

// write puts keys prefix-0..n-1 into bucket "b" on node i, 8 writers at a
// time.
func write(t *testing.T, s *raftstore.Store, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	for j := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k := fmt.Sprintf("%s-%04d", prefix, j)
			if err := s.Update(context.Background(), []store.Op{putOp("b", k, "v"+k)}); err != nil {
				errs <- fmt.Errorf("update %s: %w", k, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// has reports whether node s holds every key prefix-0..n-1 with its value.
func has(s *raftstore.Store, prefix string, n int) bool {
	keys := make([][]byte, n)
	for j := range keys {
		keys[j] = fmt.Appendf(nil, "%s-%04d", prefix, j)
	}
	found := 0
	err := s.Get("b", keys, func(i int, v []byte) error {
		if string(v) == "v"+string(keys[i]) {
			found++
		}
		return nil
	})
	return err == nil && found == n
}

func count(t *testing.T, s *raftstore.Store) int {
	t.Helper()
	n := 0
	if err := s.ForEach("b", func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// Three nodes: the leader's writes reach the followers; a follower refuses
// writes naming the leader; when the leader stops, another is elected
// within bounded time and takes writes; the old leader, restarted, catches
// up from the log; leadership is signalled with growing epochs.
func TestClusterFailover(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "a", 200)
	for i, s := range c.nodes {
		waitFor(t, 10*time.Second, c.id(i)+" applies the leader's writes", func() bool { return has(s, "a", 200) })
	}

	// A follower refuses writes and names the leader.
	f := (l + 1) % 3
	err := c.nodes[f].Update(context.Background(), []store.Op{putOp("b", "nope", "x")})
	var nle *raftstore.NotLeaderError
	if !errors.As(err, &nle) || !errors.Is(err, raftstore.ErrNotLeader) {
		t.Fatalf("write on follower %s: %v, want a NotLeaderError", c.id(f), err)
	}
	if nle.LeaderAddr != c.addrs[l] || nle.LeaderID != c.id(l) {
		t.Fatalf("follower names leader %s at %q, want %s at %q", nle.LeaderID, nle.LeaderAddr, c.id(l), c.addrs[l])
	}
	if errors.Is(err, raftstore.ErrIndeterminate) {
		t.Fatalf("a refused write is not indeterminate: %v", err)
	}
	if p := c.nodes[f].Submit([]store.Op{putOp("b", "nope", "x")}, 0); !errors.Is(p.Err(), raftstore.ErrNotLeader) {
		t.Fatalf("submit on follower %s: %v, want ErrNotLeader", c.id(f), p.Err())
	}
	if count(t, c.nodes[l]) != 200 {
		t.Fatalf("leader holds %d keys after a refused write, want 200", count(t, c.nodes[l]))
	}
	gained := c.leadership(c.id(l))
	if len(gained) == 0 || !gained[0].Leader || gained[0].Epoch == 0 {
		t.Fatalf("leader %s was signalled %v, want a gain with an epoch", c.id(l), gained)
	}

	// The leader stops: a new one within bounded time, and it takes writes.
	old := l
	stoppedAt := time.Now()
	c.stop(old)
	l = c.leader(10 * time.Second)
	t.Logf("new leader %s elected %v after the old one stopped", c.id(l), time.Since(stoppedAt))
	if l == old {
		t.Fatal("the stopped node is still the leader")
	}
	write(t, c.nodes[l], "b", 100)
	lost := c.leadership(c.id(old))
	if len(lost) < 2 || lost[len(lost)-1].Leader || lost[len(lost)-1].Epoch != gained[0].Epoch {
		t.Errorf("stopped leader was signalled %v, want its gain then a loss of epoch %d", lost, gained[0].Epoch)
	}
	newer := c.leadership(c.id(l))
	if len(newer) == 0 || !newer[len(newer)-1].Leader || newer[len(newer)-1].Epoch <= gained[0].Epoch {
		t.Errorf("new leader was signalled %v, want a gain with an epoch above %d", newer, gained[0].Epoch)
	}

	// The old leader comes back on its address and catches up.
	c.start(old)
	waitFor(t, 10*time.Second, "restarted "+c.id(old)+" catches up", func() bool {
		return has(c.nodes[old], "a", 200) && has(c.nodes[old], "b", 100)
	})
	if n := count(t, c.nodes[old]); n != 300 {
		t.Fatalf("restarted node holds %d keys, want 300", n)
	}
}

// With a small SnapshotThreshold the leader truncates its log while a
// follower is down; the follower, restarted, is brought up to date by a
// snapshot (bbolt file) and then by the log.
func TestClusterSnapshotCatchUp(t *testing.T) {
	c := newCluster(t, 3, func(o *raftstore.Options) {
		o.SnapshotThreshold = 16
		o.TrailingLogs = 4
		o.SnapshotInterval = 20 * time.Millisecond
		o.LogSegmentBytes = 4 << 10 // so that truncation frees segments
	})
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "a", 50)
	f := (l + 1) % 3
	waitFor(t, 10*time.Second, "follower applies", func() bool { return has(c.nodes[f], "a", 50) })
	c.stop(f)
	// Sequential writes: one entry each, so the log outgrows the threshold.
	for j := range 100 {
		k := fmt.Sprintf("c-%04d", j)
		if err := c.nodes[l].Update(context.Background(), []store.Op{putOp("b", k, "v"+k), {Kind: store.Delete, Bucket: "b", Key: fmt.Appendf(nil, "a-%04d", j%50)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nodes[l].Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.start(f)
	waitFor(t, 15*time.Second, "restarted follower catches up", func() bool { return has(c.nodes[f], "c", 100) })
	if n := count(t, c.nodes[f]); n != 100 {
		t.Fatalf("follower holds %d keys, want 100 (the a- keys were all deleted)", n)
	}
	if st := c.nodes[f].Stats(); st.Restores == 0 {
		t.Fatalf("the follower caught up without a snapshot (stats %+v): the test did not test it", st)
	}
	// It keeps following after the restore.
	write(t, c.nodes[l], "d", 20)
	waitFor(t, 10*time.Second, "follower applies after the restore", func() bool { return has(c.nodes[f], "d", 20) })
	// And its restored state survives a restart of its own.
	c.stop(f)
	c.start(f)
	if n := count(t, c.nodes[f]); n != 120 {
		t.Fatalf("follower holds %d keys after restarting, want 120", n)
	}
}

// A leader cut off from both followers cannot commit: its write fails as
// indeterminate, not as a plain failure; it is not refused as not-leader.
func TestIndeterminateWithoutQuorum(t *testing.T) {
	c := newCluster(t, 3, func(o *raftstore.Options) { o.ApplyTimeout = 2 * time.Second })
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "a", 10)
	for i := range 3 {
		if i != l {
			c.stop(i)
		}
	}
	err := c.nodes[l].Update(context.Background(), []store.Op{putOp("b", "lonely", "v")})
	if err == nil {
		t.Fatal("a leader without a quorum confirmed a write")
	}
	if !errors.Is(err, raftstore.ErrIndeterminate) && !errors.Is(err, raftstore.ErrNotLeader) {
		t.Fatalf("write without quorum: %v, want ErrIndeterminate (or ErrNotLeader if it stepped down first)", err)
	}
	t.Logf("write without quorum: %v", err)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Three nodes bootstrapped together from a static peer list (the way a
// configuration file starts them) elect one leader that all agree on.
func TestClusterStaticPeers(t *testing.T) {
	addrs := []string{freePort(t), freePort(t), freePort(t)}
	var nodes []*raftstore.Store
	for i := range 3 {
		var peers []raftstore.Peer
		for j := range 3 {
			if j != i {
				peers = append(peers, raftstore.Peer{ID: fmt.Sprintf("n%d", j+1), Addr: addrs[j]})
			}
		}
		s, err := raftstore.Open(fast(raftstore.Options{NodeID: fmt.Sprintf("n%d", i+1), BindAddr: addrs[i], DataDir: filepath.Join(t.TempDir()), Bootstrap: true, Peers: peers}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		nodes = append(nodes, s)
	}
	waitFor(t, 10*time.Second, "all agree on one leader", func() bool {
		id0, _ := nodes[0].Leader()
		for _, s := range nodes {
			if id, _ := s.Leader(); id == "" || id != id0 {
				return false
			}
		}
		return true
	})
	for _, s := range nodes {
		if s.IsLeader() {
			write(t, s, "x", 10)
		}
	}
	for _, s := range nodes {
		waitFor(t, 10*time.Second, s.ID()+" applies", func() bool { return has(s, "x", 10) })
	}
}

// Concurrent Updates share log entries (one Apply per batch), and an entry
// never holds more than MaxBatchOps ops (one Update is never split).
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxOps   int
		opsEach  int
		maxBatch float64 // most Updates an entry may hold
	}{
		{"Unbounded", 0, 1, raftstore.DefaultMaxBatchOps},
		{"TenOps", 10, 1, 10},
		{"UpdateLargerThanBound", 3, 5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openSingle(t, t.TempDir(), func(o *raftstore.Options) { o.MaxBatchOps = tc.maxOps })
			defer s.Close()
			const writers, each = 64, 10
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						var ops []store.Op
						for j := range tc.opsEach {
							ops = append(ops, putOp("g", fmt.Sprintf("w%02d-%02d-%d", w, i, j), "v"))
						}
						if err := s.Update(context.Background(), ops); err != nil {
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
			st := s.Stats()
			t.Logf("%d updates in %d entries: %.1f per entry", st.Updates, st.Entries, st.MeanBatch())
			if st.Updates != writers*each || st.Ops != writers*each*uint64(tc.opsEach) {
				t.Fatalf("stats %+v, want %d updates", st, writers*each)
			}
			if tc.maxBatch > 1 && st.Entries >= st.Updates {
				t.Errorf("64 concurrent writers made one entry per update (%d): no group commit", st.Entries)
			}
			if min := float64(st.Updates) / tc.maxBatch; float64(st.Entries) < min {
				t.Errorf("%d entries for %d updates: some entry held more than %v updates", st.Entries, st.Updates, tc.maxBatch)
			}
			n := 0
			if err := s.ForEach("g", func(k, v []byte) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n != writers*each*tc.opsEach {
				t.Fatalf("%d keys stored, want %d", n, writers*each*tc.opsEach)
			}
		})
	}
}

// The bucket that holds the applied index is neither visible nor
// writable.
func TestReservedBucketHidden(t *testing.T) {
	s := openSingle(t, t.TempDir(), nil)
	defer s.Close()
	if err := s.Update(context.Background(), []store.Op{putOp("q", "k", "v")}); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := s.Buckets(func(n string) error { names = append(names, n); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[q]" {
		t.Fatalf("Buckets = %q, want only [q]", names)
	}
	if err := s.Update(context.Background(), []store.Op{putOp("\x00raftstore", "applied", "x")}); err == nil {
		t.Fatal("a write to the reserved bucket was accepted")
	}
	n := 0
	if err := s.ForEach("\x00raftstore", func(k, v []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("ForEach of the reserved bucket: %d keys, %v", n, err)
	}
}

// A restart does not replay entries over the state that already holds
// them: raft re-applies the log after the last snapshot once the node
// leads again, and a key overwritten 200 times must never show an older
// value meanwhile.
func TestRestartDoesNotReplayOverState(t *testing.T) {
	dir := t.TempDir()
	s := openSingle(t, dir, nil)
	for i := range 200 {
		if err := s.Update(context.Background(), []store.Op{putOp("r", "k", fmt.Sprintf("%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := raftstore.Open(fast(raftstore.Options{NodeID: "n1", BindAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var led time.Time
	deadline := time.Now().Add(10 * time.Second)
	for led.IsZero() || time.Since(led) < 300*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("restarted node did not lead within 10 s")
		}
		var v string
		if err := s.Get("r", [][]byte{[]byte("k")}, func(_ int, b []byte) error { v = string(b); return nil }); err != nil {
			t.Fatal(err)
		}
		if v != "199" {
			t.Fatalf("after restart k = %q, want the last write 199", v)
		}
		if led.IsZero() && s.IsLeader() {
			led = time.Now()
		}
	}
	if s.AppliedIndex() < 200 {
		t.Fatalf("applied index %d after leading again: the log was not replayed, so the test proved nothing", s.AppliedIndex())
	}
}

// Status names every member, the leader and indexes that grow with the
// writes, on the leader and on a follower.
func TestStatus(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "st", 10)
	f := (l + 1) % 3
	waitFor(t, 10*time.Second, "the follower applies the writes", func() bool { return has(c.nodes[f], "st", 10) })
	for _, i := range []int{l, f} {
		st, err := c.nodes[i].Status()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Members) != 3 || st.LeaderID != c.id(l) || st.LeaderAddr != c.addrs[l] || st.Term == 0 {
			t.Errorf("%s: status %+v, want 3 members and leader %s at %s", c.id(i), st, c.id(l), c.addrs[l])
		}
		if st.AppliedIndex == 0 || st.CommitIndex < st.AppliedIndex || st.LastIndex < st.CommitIndex {
			t.Errorf("%s: indexes applied %d commit %d last %d", c.id(i), st.AppliedIndex, st.CommitIndex, st.LastIndex)
		}
		want := "Follower"
		if i == l {
			want = "Leader"
		}
		if st.State != want {
			t.Errorf("%s: state %s, want %s", c.id(i), st.State, want)
		}
	}
	st, _ := c.nodes[f].Status()
	if st.LastContact.IsZero() || time.Since(st.LastContact) > 5*time.Second {
		t.Errorf("follower's last contact %v", st.LastContact)
	}
}

// The local state is not synced per entry: a node whose state was not
// closed cleanly (no mark: a crash, here its mark removed and the file
// damaged) drops it at the next start and rebuilds it from its snapshot and
// log, with every write that had returned.
func TestUncleanStateIsRebuilt(t *testing.T) {
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snap), func(t *testing.T) {
			dir := t.TempDir()
			tune := func(o *raftstore.Options) {
				if snap {
					o.SnapshotThreshold, o.TrailingLogs = 8, 4
				}
			}
			s := openSingle(t, dir, tune)
			write(t, s, "u", 100)
			if snap {
				if err := s.Snapshot(); err != nil {
					t.Fatal(err)
				}
				write(t, s, "w", 10) // after the snapshot: from the log
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "state.clean")); err != nil {
				t.Fatalf("no clean mark after Close: %v", err)
			}
			// What a crash of the machine may leave of an unsynced file.
			if err := os.WriteFile(filepath.Join(dir, "state.db"), []byte("torn page"), 0o600); err != nil {
				t.Fatal(err)
			}
			s = openSingle(t, dir, tune)
			defer s.Close()
			waitFor(t, 10*time.Second, "the state rebuilt with every write", func() bool { return has(s, "u", 100) })
			if snap {
				waitFor(t, 10*time.Second, "the writes after the snapshot", func() bool { return has(s, "w", 10) })
				if s.Stats().Restores == 0 {
					t.Fatal("rebuilt without restoring the snapshot: the test did not test it")
				}
			}
		})
	}
}

// Applied entries wait in memory for the flusher (Options.FlushInterval);
// a read writes them out first, so it sees every write that returned; a
// small MaxPendingBytes makes the applier write them itself; and a clean
// close writes what is left, so a restart holds everything without a
// rebuild. The flusher never runs here: the interval is an hour.
func TestDeferredApplyIsReadAndKept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPending int
	}{
		{"reads flush", 0},
		{"bounded pending", 4 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, func(o *raftstore.Options) {
				o.FlushInterval = time.Hour
				o.MaxPendingBytes = tc.maxPending
			})
			n := c.nodes[c.leader(10*time.Second)]
			write(t, n, "a", 300)
			if f := n.Stats().Flushes; (f > 0) != (tc.maxPending > 0) {
				t.Errorf("%d flushes before any read with MaxPendingBytes %d", f, tc.maxPending)
			}
			if !has(n, "a", 300) {
				t.Fatal("a read after the writes returned misses some of them")
			}
			write(t, n, "z", 100)
			c.stop(0)
			c.start(0)
			n = c.nodes[c.leader(10*time.Second)]
			if st := n.Stats(); st.Restores != 0 {
				t.Errorf("the restart restored a snapshot (%+v): the clean close did not keep the state", st)
			}
			if !has(n, "a", 300) || !has(n, "z", 100) {
				t.Fatal("after a clean restart the state misses writes that were pending at close")
			}
		})
	}
}

// A writer generation fences its predecessors' writes on every node: once
// Begin has returned a new generation, a write made for an older one fails
// with ErrStale and is applied nowhere, while writes of the current
// generation and unchecked ones (generation 0) apply; the generation
// survives a restart.
func TestGenerationFencesOlderWriters(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader(10 * time.Second)
	ctx := context.Background()
	g1, err := c.nodes[l].Begin(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[l].UpdateGen(ctx, g1, []store.Op{putOp("b", "a-0000", "va-0000")}); err != nil {
		t.Fatalf("a write of the current generation: %v", err)
	}
	g2, err := c.nodes[l].Begin(5 * time.Second)
	if err != nil || g2 <= g1 {
		t.Fatalf("second Begin = %d, %v; want a generation above %d", g2, err, g1)
	}
	err = c.nodes[l].UpdateGen(ctx, g1, []store.Op{putOp("b", "z-0000", "vz-0000")})
	var stale *raftstore.StaleError
	if !errors.Is(err, raftstore.ErrStale) || !errors.As(err, &stale) || stale.Gen != g1 || stale.Current != g2 {
		t.Fatalf("a write of the ended generation %d: %v; want a StaleError naming %d and %d", g1, err, g1, g2)
	}
	p := c.nodes[l].SubmitGen(g1, []store.Op{putOp("b", "z-0001", "vz-0001")}, 0)
	<-p.Done()
	if !errors.Is(p.Err(), raftstore.ErrStale) {
		t.Fatalf("a submitted write of the ended generation: %v", p.Err())
	}
	if err := c.nodes[l].UpdateGen(ctx, g2, []store.Op{putOp("b", "a-0001", "va-0001")}); err != nil {
		t.Fatal(err)
	}
	write(t, c.nodes[l], "u", 3) // generation 0: unchecked
	for i := range c.nodes {
		waitFor(t, 10*time.Second, c.id(i)+" applies", func() bool { return has(c.nodes[i], "a", 2) && has(c.nodes[i], "u", 3) })
		found := false
		_ = c.nodes[i].Get("b", [][]byte{[]byte("z-0000"), []byte("z-0001")}, func(int, []byte) error { found = true; return nil })
		if found {
			t.Fatalf("%s holds a write of the ended generation", c.id(i))
		}
	}
	// Restarted, the leader still knows the generation.
	c.stop(l)
	c.start(l)
	l = c.leader(10 * time.Second)
	if err := c.nodes[l].UpdateGen(ctx, g1, []store.Op{putOp("b", "z-0002", "v")}); !errors.Is(err, raftstore.ErrStale) {
		t.Fatalf("after a restart, a write of the ended generation: %v", err)
	}
	if err := c.nodes[l].UpdateGen(ctx, g2, []store.Op{putOp("b", "a-0002", "va-0002")}); err != nil {
		t.Fatalf("after a restart, a write of the current generation: %v", err)
	}
}
