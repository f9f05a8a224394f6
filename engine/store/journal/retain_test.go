package journal_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// A Pending outlives its write (the engine keeps a message's first write
// until the message is settled), so neither a durable nor a withdrawn
// Pending may keep the ops it was submitted with: the caller's encoded
// message would stay in memory twice.
func TestPendingDropsOps(t *testing.T) {
	s := open(t, t.TempDir(), journal.Options{})
	defer s.Close()
	sub := s.(store.Submitter)
	for _, withdraw := range []bool{false, true} {
		value := make([]byte, 1<<20)
		freed := make(chan struct{})
		runtime.AddCleanup(&value[0], func(ch chan struct{}) { close(ch) }, freed)
		op := store.Op{Kind: store.Put, Bucket: "b", Key: []byte("k"), Value: value}
		var p store.Pending
		if withdraw {
			p = s.(*journal.Store).Hold([]store.Op{op}, time.Hour)
		} else {
			p = sub.Submit([]store.Op{op}, 0)
		}
		value, op = nil, store.Op{}
		if withdraw && !p.Withdraw() {
			t.Fatal("Withdraw of a write held for an hour: false")
		}
		<-p.Done()
		if err := p.Err(); (err != nil) != withdraw {
			t.Fatalf("withdraw %v: Err %v", withdraw, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !isClosed(freed) {
			if time.Now().After(deadline) {
				t.Fatalf("withdraw %v: the submitted value is still reachable through its Pending", withdraw)
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		runtime.KeepAlive(p)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
