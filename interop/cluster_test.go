//go:build interop

// Real clients against a three-node cluster (docs/cluster.md, "What clients
// do with the redirects"): each is given the nodes followers first and
// reaches the leader the way the documentation tells its users to.

package interop

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// startCluster starts three clustered brokers in this process, each with a
// STOMP and an AMQP listener and the follower_clients given, and returns
// each protocol's node addresses, followers first and the leader last.
func startCluster(t *testing.T, followerClients string) (stompNodes, amqpNodes []string) {
	t.Helper()
	var lns []net.Listener
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		return ln.Addr().String()
	}
	var members []config.Member
	for i := range 3 {
		members = append(members, config.Member{ID: fmt.Sprintf("n%d", i+1), Raft: free(), STOMP: free(), AMQP: free()})
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	// The data directories first: their removal, a cleanup too, must
	// come after the shutdowns below (cleanups run last first).
	var dirs []string
	for range members {
		dirs = append(dirs, t.TempDir())
	}
	logs := &syncBuffer{}
	var nodes []*broker.Broker
	t.Cleanup(func() {
		for _, b := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if err := b.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			cancel()
		}
		if t.Failed() {
			t.Logf("brokers' log:\n%s", logs.String())
		}
	})
	for i, m := range members {
		cfg := config.Default()
		cfg.Data = dirs[i]
		cfg.Listeners = config.Listeners{STOMP: m.STOMP, AMQP: m.AMQP}
		cfg.Cluster = &config.Cluster{NodeID: m.ID, Bootstrap: true, Members: members, FollowerClients: followerClients}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", m.ID)
		b, err := broker.Start(context.Background(), cfg, log)
		if err != nil {
			t.Fatalf("start %s: %v", m.ID, err)
		}
		nodes = append(nodes, b)
	}
	leader := -1
	for deadline := time.Now().Add(20 * time.Second); leader < 0; {
		if time.Now().After(deadline) {
			t.Fatal("no node serves clients within 20 s")
		}
		for i, b := range nodes {
			if b.Engine() != nil {
				leader = i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, m := range members {
		if i != leader {
			stompNodes, amqpNodes = append(stompNodes, m.STOMP), append(amqpNodes, m.AMQP)
		}
	}
	return append(stompNodes, members[leader].STOMP), append(amqpNodes, members[leader].AMQP)
}

// TestClusterClients: stomp.py, pika and Qpid Proton Python, each given a
// follower first, reach the leader and have a message confirmed and
// delivered there: with the followers' redirects (follower_clients =
// "redirect"), and with their ports refusing connections ("refuse"), where
// the clients' own address lists do it.
func TestClusterClients(t *testing.T) {
	script := filepath.Join("python", "cluster_py.py")
	stompPy := []string{"stomp", "'.'.join(map(str, stomp.__version__))", "stomp.py", "python3-stomp"}
	proton := []string{"proton", "'.'.join(map(str, proton.VERSION))", "Qpid Proton Python", "python3-qpid-proton"}
	for _, c := range []struct {
		scenario, followers string
		client              []string
	}{
		{"stomp-py", config.FollowerRedirect, stompPy},
		{"pika", config.FollowerRedirect, []string{"pika", "pika.__version__", "pika", "python3-pika"}},
		{"proton", config.FollowerRedirect, proton},
		{"stomp-py-list", config.FollowerRefuse, stompPy},
		{"proton-urls", config.FollowerRefuse, proton},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			py := pythonWith(t, c.client[0], c.client[1], c.client[2], c.client[3])
			stompNodes, amqpNodes := startCluster(t, c.followers)
			t.Setenv("SLUICE_CLUSTER_STOMP", strings.Join(stompNodes, ","))
			t.Setenv("SLUICE_CLUSTER_AMQP", strings.Join(amqpNodes, ","))
			runScript(t, 0, c.scenario, py, script)
		})
	}
}
