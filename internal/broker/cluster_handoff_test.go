package broker

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// A leader that is shut down hands its leadership over first: with
// heartbeat and election timeouts of 5 s, which an election after a
// silent leader would have to wait out, another node serves within 3 s,
// with every message confirmed before.
func TestClusterStoppingLeaderHandsItsLeadershipOver(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes")
	}
	c := newTestClusterWith(t, func(cfg *config.Config) {
		cfg.ConsumeBeforeStore = false
		cfg.Cluster.HeartbeatTimeout = config.Duration(5 * time.Second)
		cfg.Cluster.ElectionTimeout = config.Duration(5 * time.Second)
	})
	l := c.leader(30 * time.Second)
	const n = 50
	if got := sendConfirmed(t, c.member(l).STOMP, "before", n); got != n {
		t.Fatalf("only %d of %d sends confirmed", got, n)
	}
	stopped := time.Now()
	c.stop(l)
	next := -1
	for time.Since(stopped) < 3*time.Second && next < 0 {
		for i, b := range c.nodes {
			if b != nil && b.Engine() != nil {
				next = i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if next < 0 {
		t.Fatalf("no node serves within 3 s of the leader's shutdown: it did not hand its leadership over")
	}
	t.Logf("n%d stopped; n%d served %v later", l+1, next+1, time.Since(stopped).Round(time.Millisecond))
	info, err := c.nodes[next].Engine().DestinationInfo(message.Destination{Kind: message.Queue, Name: "replicated"})
	if err != nil || info.Messages != n {
		t.Fatalf("the new leader holds %+v (%v), want the %d confirmed messages", info, err, n)
	}
	if got := sendConfirmed(t, c.member(next).STOMP, "after", 1); got != 1 {
		t.Fatal("the new leader did not confirm a send")
	}
}
