package journal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// ObserveSync hears one duration per log sync: as many as Stats counts
// commits, each a real (positive) time.
func TestObserveSyncOncePerCommit(t *testing.T) {
	var mu sync.Mutex
	var syncs []time.Duration
	s := open(t, t.TempDir(), journal.Options{ObserveSync: func(d time.Duration) {
		mu.Lock()
		syncs = append(syncs, d)
		mu.Unlock()
	}})
	defer s.Close()
	for i := range 5 {
		op := store.Op{Kind: store.Put, Bucket: "b", Key: []byte{byte(i)}, Value: []byte("v")}
		if err := s.Update(context.Background(), []store.Op{op}); err != nil {
			t.Fatal(err)
		}
	}
	commits := s.(*journal.Store).Stats().Commits
	mu.Lock()
	defer mu.Unlock()
	if uint64(len(syncs)) != commits || commits < 5 {
		t.Fatalf("%d syncs observed, %d commits; want one per commit, at least 5", len(syncs), commits)
	}
	for _, d := range syncs {
		if d <= 0 {
			t.Fatalf("a sync took %v", d)
		}
	}
}
