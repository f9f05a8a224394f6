package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"
	"github.com/go-stomp/stomp/v3"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/sluicemq/sluice/internal/config"
)

// freeAddrs returns n loopback addresses whose ports were free a moment
// ago (the members of a cluster must know each other's ports up front).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return addrs
}

// testCluster is three in-process brokers with [cluster] on loopback.
type testCluster struct {
	t     *testing.T
	opts  startOptions
	cfgs  []config.Config
	nodes []*Broker
}

// newTestCluster starts three nodes, each with dests as its
// [[destination]] policies, with consume before store off: every
// persistent message is replicated before its producer hears back.
func newTestCluster(t *testing.T, dests ...config.Destination) *testCluster {
	t.Helper()
	return newTestClusterWith(t, func(cfg *config.Config) { cfg.ConsumeBeforeStore = false }, dests...)
}

// newTestClusterWith is newTestCluster with each node's configuration,
// made from config.Default with the test's listeners and [cluster],
// changed by tune.
func newTestClusterWith(t *testing.T, tune func(*config.Config), dests ...config.Destination) *testCluster {
	t.Helper()
	return newTestClusterOpts(t, tune, startOptions{}, dests...)
}

// newTestClusterOpts is newTestClusterWith with every node started with
// opts (Start's where they are zero).
func newTestClusterOpts(t *testing.T, tune func(*config.Config), opts startOptions, dests ...config.Destination) *testCluster {
	t.Helper()
	a := freeAddrs(t, 12)
	var members []config.Member
	for i := range 3 {
		members = append(members, config.Member{ID: fmt.Sprintf("n%d", i+1), Raft: a[4*i], STOMP: a[4*i+1], AMQP: a[4*i+2], Admin: a[4*i+3]})
	}
	c := &testCluster{t: t, opts: opts}
	for i := range 3 {
		cfg := config.Default()
		cfg.Data = t.TempDir()
		cfg.Listeners = config.Listeners{STOMP: members[i].STOMP, AMQP: members[i].AMQP, Admin: members[i].Admin}
		cfg.Cluster = &config.Cluster{NodeID: members[i].ID, Bootstrap: true, Members: members}
		cfg.Destinations = dests
		if tune != nil {
			tune(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.nodes = append(c.nodes, nil)
	}
	for i := range 3 {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	b, err := startWith(context.Background(), c.cfgs[i], nil, c.opts)
	if err != nil {
		c.t.Fatalf("start n%d: %v", i+1, err)
	}
	c.nodes[i] = b
}

func (c *testCluster) stop(i int) {
	c.t.Helper()
	if b := c.nodes[i]; b != nil {
		c.nodes[i] = nil
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			c.t.Errorf("shutdown n%d: %v", i+1, err)
		}
	}
}

// leader waits up to d for exactly one node serving clients and returns
// its index.
func (c *testCluster) leader(d time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		found, n := -1, 0
		for i, b := range c.nodes {
			if b != nil && b.Engine() != nil {
				found, n = i, n+1
			}
		}
		if n == 1 {
			return found
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no single serving leader within %v", d)
	return -1
}

func (c *testCluster) member(i int) config.Member { return c.cfgs[i].Cluster.Members[i] }

func dialClusterSTOMP(addr string) (*stomp.Conn, error) {
	return stomp.Dial("tcp", addr, stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.WriteChannelCapacity(4096), stomp.ConnOpt.ReadChannelCapacity(4096))
}

// sendConfirmed sends n persistent messages with receipts, body
// prefix-j, and returns how many were confirmed before the first error.
func sendConfirmed(t *testing.T, addr, prefix string, n int) int {
	t.Helper()
	conn, err := dialClusterSTOMP(addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Disconnect()
	for j := range n {
		if err := conn.Send("/queue/replicated", "text/plain", []byte(fmt.Sprintf("%s-%d", prefix, j)),
			stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")); err != nil {
			return j
		}
	}
	return n
}

// The cluster of issue #17 in one process: the leader serves and confirms
// persistent sends; followers refuse STOMP, AMQP 1.0 and AMQP 0-9-1 with
// the leader's address and are not ready; when the leader shuts down a
// new one is elected and serves within 10 s, holding every message
// confirmed before; the old leader comes back as a follower.
func TestClusterFailoverKeepsConfirmedMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)
	lm := c.member(l)
	const n = 200
	if got := sendConfirmed(t, lm.STOMP, "before", n); got != n {
		t.Fatalf("only %d of %d sends confirmed by the leader", got, n)
	}

	f := (l + 1) % 3
	c.checkFollower(f, lm)

	// A consumer on the leader takes some without acknowledging them:
	// their delivery attempts are recorded (replicated) before delivery.
	const unacked = 10
	held, err := dialClusterSTOMP(lm.STOMP)
	if err != nil {
		t.Fatal(err)
	}
	hsub, err := held.Subscribe("/queue/replicated", stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.prefetchSize", strconv.Itoa(unacked)))
	if err != nil {
		t.Fatal(err)
	}
	delivered := map[string]bool{}
	for len(delivered) < unacked {
		select {
		case m := <-hsub.C:
			if m.Err != nil {
				t.Fatal(m.Err)
			}
			delivered[string(m.Body)] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("the leader delivered only %d messages", len(delivered))
		}
	}

	// The leader goes away.
	stopped := time.Now()
	c.stop(l)
	var nl int
	var firstConfirmed time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no new leader confirmed a send within 10 s of the leader's shutdown")
		}
		nl = -1
		for i, b := range c.nodes {
			if b != nil && b.Engine() != nil {
				nl = i
			}
		}
		if nl >= 0 {
			if conn, err := dialClusterSTOMP(c.member(nl).STOMP); err == nil {
				err = conn.Send("/queue/replicated", "text/plain", []byte("after-0"), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"))
				_ = conn.Disconnect()
				if err == nil {
					firstConfirmed = time.Since(stopped)
					break
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("failover: leader n%d shut down, n%d confirmed a send %v later", l+1, nl+1, firstConfirmed.Round(time.Millisecond))

	// Every message confirmed before, and the one after, are there.
	want := map[string]bool{"after-0": true}
	for j := range n {
		want[fmt.Sprintf("before-%d", j)] = true
	}
	conn, err := dialClusterSTOMP(c.member(nl).STOMP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	sub, err := conn.Subscribe("/queue/replicated", stomp.AckClientIndividual)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case m := <-sub.C:
			if m.Err != nil {
				t.Fatal(m.Err)
			}
			body := string(m.Body)
			if !want[body] {
				t.Fatalf("unexpected or duplicate message %q (redelivered %q)", body, m.Header.Get("redelivered"))
			}
			if red := m.Header.Get("redelivered") == "true"; red != delivered[body] {
				t.Errorf("%s: redelivered %v, want %v (delivered by the old leader: %v)", body, red, delivered[body], delivered[body])
			}
			delete(want, body)
			if err := conn.Ack(m); err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatalf("%d confirmed messages missing on the new leader, e.g. %v", len(want), firstKey(want))
		}
	}

	// The old leader returns as a follower of the new one.
	c.start(l)
	waitUntil(t, 15*time.Second, fmt.Sprintf("n%d follows n%d", l+1, nl+1), func() bool {
		id, _ := c.nodes[l].cluster.rs.Leader()
		return id == c.member(nl).ID
	})
	c.checkFollower(l, c.member(nl))
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkFollower checks that node f refuses clients of every protocol
// naming leader's addresses, and that its admin listener says it is a
// follower.
func (c *testCluster) checkFollower(f int, leader config.Member) {
	t := c.t
	t.Helper()
	fm := c.member(f)

	// STOMP: an ERROR frame naming the leader's STOMP address.
	if conn, err := dialClusterSTOMP(fm.STOMP); err == nil {
		_ = conn.Disconnect()
		t.Errorf("n%d (follower) accepted a STOMP connection", f+1)
	} else if !strings.Contains(err.Error(), leader.STOMP) {
		t.Errorf("STOMP refusal %q does not name the leader's %s", err, leader.STOMP)
	}

	// AMQP 1.0: amqp:connection:redirect with network-host and port.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ac, err := amqp.Dial(ctx, "amqp://"+fm.AMQP, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err == nil {
		// The close may come after the open: the first session sees it.
		_, err = ac.NewSession(ctx, nil)
		_ = ac.Close()
	}
	var ce *amqp.ConnError
	host, port, _ := net.SplitHostPort(leader.AMQP)
	switch {
	case err == nil:
		t.Errorf("n%d (follower) accepted an AMQP 1.0 connection", f+1)
	case !errors.As(err, &ce) || ce.RemoteErr == nil:
		t.Errorf("AMQP 1.0 refusal %v (%T) is not a remote connection error", err, err)
	case ce.RemoteErr.Condition != "amqp:connection:redirect":
		t.Errorf("AMQP 1.0 refusal condition %q, want amqp:connection:redirect", ce.RemoteErr.Condition)
	case fmt.Sprint(ce.RemoteErr.Info["network-host"]) != host || fmt.Sprint(ce.RemoteErr.Info["port"]) != port:
		t.Errorf("AMQP 1.0 redirect info %v, want network-host %s port %s", ce.RemoteErr.Info, host, port)
	}

	// AMQP 0-9-1: connection.close naming the leader's AMQP address.
	if c091, err := amqp091.DialConfig("amqp://guest:guest@"+fm.AMQP+"/", amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)}); err == nil {
		_ = c091.Close()
		t.Errorf("n%d (follower) accepted an AMQP 0-9-1 connection", f+1)
	} else if !strings.Contains(err.Error(), leader.AMQP) {
		t.Errorf("AMQP 0-9-1 refusal %q does not name the leader's %s", err, leader.AMQP)
	}

	// Admin: not ready, and /api/cluster names the leader.
	resp, err := client.Get("http://" + fm.Admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("follower /readyz: %d, want 503", resp.StatusCode)
	}
	resp, err = client.Get("http://" + leader.Admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("leader /readyz: %d, want 200", resp.StatusCode)
	}
	var st struct {
		NodeID, Role, Leader string
		Members              []struct{ ID string }
		AppliedIndex         uint64
	}
	// A node just restarted reports applied index 0 until the leader's
	// first heartbeat has it apply (skip) what its state holds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err = client.Get("http://" + fm.Admin + "/api/cluster")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.AppliedIndex > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.NodeID != fm.ID || st.Role != "follower" || st.Leader != leader.ID || len(st.Members) != 3 || st.AppliedIndex == 0 {
		t.Errorf("follower's /api/cluster: %+v, want role follower, leader %s, 3 members, an applied index", st, leader.ID)
	}
	resp2, err := client.Get("http://" + fm.Admin + "/api/destinations")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable || resp2.Header.Get("X-Sluice-Leader") != leader.Admin {
		t.Errorf("follower's /api/destinations: %d leader %q, want 503 naming %s", resp2.StatusCode, resp2.Header.Get("X-Sluice-Leader"), leader.Admin)
	}
}

// A leader that loses its majority (both followers stop) confirms nothing
// more: its sends fail, it stops serving (fenced, clients dropped) and
// refuses new clients with no leader to name; once the followers return,
// the new leader holds every message confirmed before.
func TestClusterLeaderWithoutMajorityConfirmsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)
	lm := c.member(l)
	conn, err := dialClusterSTOMP(lm.STOMP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	confirmed := make(chan string, 100000)
	failed := make(chan error, 1)
	go func() {
		for j := 0; ; j++ {
			body := fmt.Sprintf("m-%d", j)
			err := conn.Send("/queue/majority", "text/plain", []byte(body), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true"))
			if err != nil {
				failed <- err
				return
			}
			confirmed <- body
		}
	}()
	waitUntil(t, 10*time.Second, "50 sends confirmed", func() bool { return len(confirmed) >= 50 })
	for i := range c.nodes {
		if i != l {
			c.stop(i)
		}
	}
	select {
	case err := <-failed:
		t.Logf("the leader without a majority answered a send with: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("sends were still confirmed 20 s after the majority went away")
	}
	waitUntil(t, 15*time.Second, "the old leader stops serving", func() bool { return c.nodes[l].Engine() == nil })
	if conn2, err := dialClusterSTOMP(lm.STOMP); err == nil {
		_ = conn2.Disconnect()
		t.Error("a node without a majority accepted a STOMP client")
	} else if !strings.Contains(err.Error(), "no leader") {
		t.Errorf("refusal without a leader: %v", err)
	}
	n := len(confirmed)
	close(confirmed)

	want := map[string]bool{}
	for b := range confirmed {
		want[b] = true
	}
	got := c.restartOthersAndReceive(l, "/queue/majority", want)
	for b, k := range got {
		if k > 1 {
			t.Errorf("%s delivered %d times", b, k)
		}
	}
	t.Logf("%d sends confirmed before the majority went away, all there", n)
}

// restartOthersAndReceive starts every node but l again, waits for a
// leader and consumes queue from it until every body of want has come
// (20 s at most), and returns how often each body came.
func (c *testCluster) restartOthersAndReceive(l int, queue string, want map[string]bool) map[string]int {
	t := c.t
	t.Helper()
	for i := range c.nodes {
		if i != l {
			c.start(i)
		}
	}
	nl := c.leader(20 * time.Second)
	rc, err := dialClusterSTOMP(c.member(nl).STOMP)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Disconnect()
	sub, err := rc.Subscribe(queue, stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	timeout := time.After(20 * time.Second)
	for missing := len(want); missing > 0; {
		select {
		case m := <-sub.C:
			if m.Err != nil {
				t.Fatal(m.Err)
			}
			got[string(m.Body)]++
			if want[string(m.Body)] && got[string(m.Body)] == 1 {
				missing--
			}
		case <-timeout:
			t.Fatalf("%d of %d confirmed messages missing on the new leader", missing, len(want))
		}
	}
	return got
}
