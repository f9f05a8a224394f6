package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/internal/config"
)

// disk_free_limit holds producers in a cluster too: a leader short of
// free space holds STOMP sends until it has room again, and a new leader
// holds them from its first instant when its disk is short as well.
func TestClusterDiskWatermarkHoldsProducers(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes")
	}
	var free atomic.Int64
	free.Store(100 << 30)
	usage := func(string) (int64, int64, error) { return free.Load(), 200 << 30, nil }
	c := newTestClusterOpts(t, func(cfg *config.Config) {
		cfg.ConsumeBeforeStore = false
		cfg.Limits.DiskFreeLimit = "1GiB"
	}, startOptions{diskPoll: 300 * time.Millisecond, diskUsage: usage}) // slower than a failover: a new leader held at once was held by the last reading
	l := c.leader(15 * time.Second)
	if got := sendConfirmed(t, c.member(l).STOMP, "roomy", 1); got != 1 {
		t.Fatal("no send confirmed with room on the disk")
	}

	diskBlocked := func(i int) bool {
		eng := c.nodes[i].Engine()
		if eng == nil {
			return false
		}
		blocked, why := eng.Flow().Blocked()
		return blocked && why&engine.FlowDisk != 0
	}
	free.Store(10 << 20)
	waitUntil(t, 5*time.Second, "the leader holds producers for the disk", func() bool { return diskBlocked(l) })
	held := sendAsync(t, c.member(l).STOMP, "short-1")
	select {
	case err := <-held:
		t.Fatalf("SEND answered while the leader's disk is short (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	free.Store(100 << 30)
	if err := waitSend(held); err != nil {
		t.Fatalf("the held send, with room again: %v", err)
	}

	// The next leader opens its engine held: the disk watcher's last
	// reading applies before its next.
	free.Store(10 << 20)
	waitUntil(t, 5*time.Second, "the leader holds producers again", func() bool { return diskBlocked(l) })
	c.stop(l)
	next := -1
	waitUntil(t, 10*time.Second, "another node serves", func() bool {
		for i, b := range c.nodes {
			if b != nil && b.Engine() != nil {
				next = i
				return true
			}
		}
		return false
	})
	if !diskBlocked(next) {
		t.Error("the new leader's engine opened without the disk alarm")
	}
	free.Store(100 << 30)
	if got := sendConfirmed(t, c.member(next).STOMP, "after", 1); got != 1 {
		t.Fatal("the new leader did not confirm a send with room again")
	}
}

// sendAsync sends one persistent message with a receipt on a connection
// of its own and reports the outcome on the channel.
func sendAsync(t *testing.T, addr, body string) <-chan error {
	t.Helper()
	conn, err := dialClusterSTOMP(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Disconnect() })
	done := make(chan error, 1)
	go func() {
		done <- conn.Send("/queue/replicated", "text/plain", []byte(body), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"))
	}()
	return done
}

// waitSend waits up to 10 s for a sendAsync's outcome.
func waitSend(done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return context.DeadlineExceeded
	}
}
