package broker

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// With follower_clients = "refuse" only the node that serves clients has
// its messaging listeners bound: a follower's STOMP and AMQP ports refuse
// the connection, and when the leadership moves the listeners move with
// it, every confirmed message on the new leader.
func TestClusterFollowersRefuseConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes")
	}
	c := newTestClusterWith(t, func(cfg *config.Config) {
		cfg.ConsumeBeforeStore = false
		cfg.Cluster.FollowerClients = config.FollowerRefuse
	})
	l := c.leader(15 * time.Second)
	refused := func(addr string) bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	for i := range c.nodes {
		m := c.member(i)
		for _, addr := range []string{m.STOMP, m.AMQP} {
			if i == l {
				waitUntil(t, 5*time.Second, "the leader accepts on "+addr, func() bool { return !refused(addr) })
			} else if !refused(addr) {
				t.Errorf("follower n%d accepted a connection on %s", i+1, addr)
			}
		}
	}
	const n = 20
	if got := sendConfirmed(t, c.member(l).STOMP, "before", n); got != n {
		t.Fatalf("only %d of %d sends confirmed", got, n)
	}

	next, err := c.nodes[l].cluster.ClusterTransfer("")
	if err != nil {
		t.Fatal(err)
	}
	nl := int(next[1] - '1')
	waitUntil(t, 10*time.Second, "the old leader refuses connections", func() bool { return refused(c.member(l).STOMP) && refused(c.member(l).AMQP) })
	waitUntil(t, 10*time.Second, "the new leader accepts them", func() bool { return !refused(c.member(nl).STOMP) && c.nodes[nl].Engine() != nil })
	if got := sendConfirmed(t, c.member(nl).STOMP, "after", 1); got != 1 {
		t.Fatal("the new leader did not confirm a send")
	}
	info, err := c.nodes[nl].Engine().DestinationInfo(message.Destination{Kind: message.Queue, Name: "replicated"})
	if err != nil || info.Messages != n+1 {
		t.Fatalf("the new leader holds %+v (%v), want %d messages", info, err, n+1)
	}
}
