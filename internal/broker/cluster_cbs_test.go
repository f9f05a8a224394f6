package broker

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// Consume before store in a cluster (the default): a persistent message
// that the leader's consumer acknowledges before its write is taken is
// never replicated, and its producer is confirmed only once the leader
// has verified, after the acknowledgement, that a majority still follows
// it. So a leader cut off from the others confirms no send made after it
// lost them, and every confirmed message was either consumed or is held
// by the new leader.
func TestClusterConsumeBeforeStoreConfirmsOnlyOnALeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	c := newTestClusterWith(t, nil) // config.Default: consume_before_store on
	l := c.leader(15 * time.Second)
	lm := c.member(l)
	cons, err := dialClusterSTOMP(lm.STOMP)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Disconnect()
	sub, err := cons.Subscribe("/queue/cbs", stomp.AckClientIndividual)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	consumed := map[string]bool{}
	go func() {
		for m := range sub.C {
			if m.Err != nil {
				return
			}
			mu.Lock()
			consumed[string(m.Body)] = true
			mu.Unlock()
			_ = cons.Ack(m)
		}
	}()
	prod, err := dialClusterSTOMP(lm.STOMP)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Disconnect()
	type sent struct {
		body        string
		start, conf time.Time
	}
	confirmed := make(chan sent, 100000)
	failed := make(chan error, 1)
	go func() {
		for j := 0; ; j++ {
			s := sent{body: fmt.Sprintf("m-%d", j), start: time.Now()}
			if err := prod.Send("/queue/cbs", "text/plain", []byte(s.body), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")); err != nil {
				failed <- err
				return
			}
			s.conf = time.Now()
			confirmed <- s
		}
	}()
	waitUntil(t, 10*time.Second, "500 sends confirmed", func() bool { return len(confirmed) >= 500 })
	ops := c.nodes[l].cluster.rs.Stats().Ops
	if n := len(confirmed); ops >= uint64(n) {
		t.Fatalf("%d ops replicated for %d confirmed sends: consume before store did not apply", ops, n)
	}
	for i := range c.nodes {
		if i != l {
			c.stop(i)
		}
	}
	cut := time.Now()
	select {
	case err := <-failed:
		t.Logf("the leader without a majority answered a send with: %v", err)
		// Told the outcome is unknown, or dropped as the node stops
		// serving: either way not confirmed.
		if e := err.Error(); !strings.Contains(e, "outcome unknown") && !strings.Contains(e, "leader") && !strings.Contains(e, "connection closed") {
			t.Errorf("the send failed with an unexpected error: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sends were still confirmed 20 s after the majority went away")
	}
	close(confirmed)
	var all []sent
	for s := range confirmed {
		all = append(all, s)
		if s.start.After(cut) {
			t.Errorf("%s, sent %v after the majority went away, was confirmed (%v after)", s.body, s.start.Sub(cut), s.conf.Sub(cut))
		}
	}
	_ = prod.Disconnect()
	_ = cons.Disconnect()

	mu.Lock()
	missing := map[string]bool{}
	for _, s := range all {
		if !consumed[s.body] {
			missing[s.body] = true
		}
	}
	mu.Unlock()
	c.restartOthersAndReceive(l, "/queue/cbs", missing)
	t.Logf("%d sends confirmed (%d ops replicated at the 500th), each consumed or kept", len(all), ops)
}
