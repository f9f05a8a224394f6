package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// netLab is a network the test makes: a bridge in the root namespace
// (address .1 of a /24 of 10/8, the test's side) and a network namespace
// per node joined to it by a veth pair (the node's eth0, address .2, .3,
// …). Its names carry a random tag, so runs side by side do not clash;
// t.Cleanup removes it all, whatever the test's outcome.
type netLab struct {
	t      *testing.T
	tag    string
	prefix string   // "10.A.B."
	ns     []string // per node
	bridge string
}

// bogusMAC is the link address a cut puts in a neighbour table: no
// interface has it, so the bridge floods such frames and every port
// drops them.
const bogusMAC = "02:53:4c:00:00:01"

// newNetLab makes the network for n nodes, or skips t when it cannot
// (not root, or no `ip`).
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make network namespaces (ip netns add)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to make network namespaces")
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	lab := &netLab{t: t, tag: hex.EncodeToString(b[:])}
	lab.bridge = "slb" + lab.tag
	// A /24 no interface here has an address in.
	addrs, _ := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	for range 50 {
		x, _ := rand.Int(rand.Reader, big.NewInt(50*256))
		p := fmt.Sprintf("10.%d.%d.", 200+x.Int64()/256, x.Int64()%256)
		if !strings.Contains(string(addrs), " "+p) {
			lab.prefix = p
			break
		}
	}
	if lab.prefix == "" {
		t.Fatal("no free 10.x.y.0/24 found")
	}
	if err := lab.run("link", "add", lab.bridge, "type", "bridge"); err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") {
			t.Skipf("cannot make network devices here (root without CAP_NET_ADMIN?): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(lab.teardown)
	lab.must("addr", "add", lab.prefix+"1/24", "dev", lab.bridge)
	lab.must("link", "set", lab.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("sluice-%s-n%d", lab.tag, i+1)
		veth := fmt.Sprintf("slv%s%d", lab.tag, i+1)
		lab.must("netns", "add", ns)
		lab.ns = append(lab.ns, ns)
		lab.must("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		lab.must("link", "set", veth, "master", lab.bridge, "up")
		lab.must("-n", ns, "addr", "add", lab.addr(i)+"/24", "dev", "eth0")
		lab.must("-n", ns, "link", "set", "eth0", "up")
		lab.must("-n", ns, "link", "set", "lo", "up")
	}
	return lab
}

// addr is node i's address.
func (lab *netLab) addr(i int) string { return fmt.Sprintf("%s%d", lab.prefix, i+2) }

func (lab *netLab) run(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (lab *netLab) must(args ...string) {
	lab.t.Helper()
	if err := lab.run(args...); err != nil {
		lab.t.Fatal(err)
	}
}

// teardown deletes the namespaces (and with them the veth pairs) and
// the bridge.
func (lab *netLab) teardown() {
	for _, ns := range lab.ns {
		if err := lab.run("netns", "del", ns); err != nil {
			lab.t.Errorf("teardown: %v", err)
		}
	}
	if err := lab.run("link", "del", lab.bridge); err != nil {
		lab.t.Errorf("teardown: %v", err)
	}
}

// cut partitions node i from every other node (not from the test): in
// each namespace the other side's address is bound to a link address no
// one has, so their packets to each other, established connections'
// included, are silently lost on the bridge.
func (lab *netLab) cut(i int) {
	lab.t.Helper()
	for j := range lab.ns {
		if j != i {
			lab.must("-n", lab.ns[i], "neigh", "replace", lab.addr(j), "lladdr", bogusMAC, "nud", "permanent", "dev", "eth0")
			lab.must("-n", lab.ns[j], "neigh", "replace", lab.addr(i), "lladdr", bogusMAC, "nud", "permanent", "dev", "eth0")
		}
	}
}

// heal undoes cut(i): the neighbours are learnt again by ARP.
func (lab *netLab) heal(i int) {
	lab.t.Helper()
	for j := range lab.ns {
		if j != i {
			lab.must("-n", lab.ns[i], "neigh", "del", lab.addr(j), "dev", "eth0")
			lab.must("-n", lab.ns[j], "neigh", "del", lab.addr(i), "dev", "eth0")
		}
	}
}

// A real network partition of issue #17: three `sluice serve` processes,
// each in its own network namespace, under a STOMP producer and consumer
// with a failover list over the three (persistent sends with receipts,
// client acknowledgements). Each of five rounds cuts the leader off from the two
// others (the test still reaches all three) while a second producer
// keeps sending to it alone, and checks that
//   - the majority side elects a leader that confirms a send within 10 s;
//   - the old leader stops confirming: its producer's send fails, and
//     nothing it confirms is later than the new leader's first
//     confirmation (no two leaders confirming at once);
//   - the old leader stops serving (not ready, refuses new clients);
//   - healed, the old leader follows, catches up and redirects to the
//     leader.
//
// At the end every confirmed message has been delivered, none twice
// without redelivered:true, and every node stops on SIGTERM.
func TestClusterPartitionLeaderLosesNothingConfirmed(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces and runs three broker processes")
	}
	lab := newNetLab(t, 3)
	dir := t.TempDir()
	// The listeners are not on loopback: the admin API takes a token and
	// the messaging listeners are open (the namespaces are the test's).
	var tb [16]byte
	if _, err := rand.Read(tb[:]); err != nil {
		t.Fatal(err)
	}
	token := hex.EncodeToString(tb[:])
	sum := sha256.Sum256([]byte(token))
	nodes := make([]*blackNode, 3)
	var members strings.Builder
	for i := range nodes {
		ip := lab.addr(i)
		n := &blackNode{id: fmt.Sprintf("n%d", i+1), stomp: ip + ":61613", admin: ip + ":8161", netns: lab.ns[i], token: token,
			conf: filepath.Join(dir, fmt.Sprintf("node%d.toml", i+1)), data: filepath.Join(dir, fmt.Sprintf("data%d", i+1))}
		nodes[i] = n
		fmt.Fprintf(&members, "\n[[cluster.members]]\nid = %q\nraft = %q\nstomp = %q\namqp = %q\nadmin = %q\n", n.id, ip+":7000", n.stomp, ip+":5672", n.admin)
	}
	for i, n := range nodes {
		conf := fmt.Sprintf("[listeners]\nstomp = %q\namqp = %q\nadmin = %q\nwebsocket = \"\"\n"+
			"[security]\nallow_insecure_network = true\n[admin]\ntokens = [\"sha256:%x\"]\n[cluster]\nnode_id = %q\nbootstrap = true\n%s",
			n.stomp, lab.addr(i)+":5672", n.admin, sum, n.id, members.String())
		if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.signal(t, syscall.SIGTERM)
		}
		logTails(t, nodes)
	})
	leaderOf(t, nodes, 30*time.Second)
	addrs := []string{nodes[0].stomp, nodes[1].stomp, nodes[2].stomp}
	load := startLoad("/queue/partition", func() []string { return addrs }, true)
	defer load.stop()

	var firsts []time.Duration
	const rounds = 5
	for round := range rounds {
		base := load.count()
		waitCond(t, 30*time.Second, "200 more sends confirmed", func() bool { return load.count() >= base+200 })
		l := leaderOf(t, nodes, 10*time.Second)
		old := nodes[l]
		// A producer of the old leader's own, connected before the cut.
		stopPin := make(chan struct{})
		pinned := make(chan time.Time, 1)
		pinStarted := make(chan struct{})
		go func() {
			close(pinStarted)
			at, err := load.pin(old.stomp, fmt.Sprintf("o%d", round+1), stopPin)
			if err != nil {
				t.Logf("round %d: the old leader's producer: %v", round+1, err)
			}
			pinned <- at
		}()
		<-pinStarted
		waitCond(t, 10*time.Second, "the pinned producer confirmed on the leader", func() bool {
			for _, c := range load.confirmedSince(time.Now().Add(-time.Second)) {
				if c.addr == old.stomp && strings.HasPrefix(c.body, "o") {
					return true
				}
			}
			return false
		})

		cut := time.Now()
		lab.cut(l)
		cutDone := time.Now()
		var first time.Time
		waitCond(t, 10*time.Second, fmt.Sprintf("round %d: the majority side confirms a send after %s is cut off", round+1, old.id), func() bool {
			for _, c := range load.confirmedSince(cut) {
				if c.addr != old.stomp {
					first = c.at
					return true
				}
			}
			return false
		})
		firsts = append(firsts, first.Sub(cut))

		// The old leader's own producer sees a send fail.
		select {
		case at := <-pinned:
			if at.IsZero() {
				t.Fatalf("round %d: the old leader's producer stopped without a failure", round+1)
			}
			t.Logf("round %d: %s cut off; its producer's send failed %v later; the majority confirmed %v after the cut",
				round+1, old.id, at.Sub(cut).Round(time.Millisecond), first.Sub(cut).Round(time.Millisecond))
		case <-time.After(20 * time.Second):
			close(stopPin)
			t.Fatalf("round %d: the old leader %s still confirmed sends 20 s after the cut", round+1, old.id)
		}
		close(stopPin)
		var late, later int
		for _, c := range load.confirmedSince(cut) {
			if c.addr != old.stomp {
				continue
			}
			late++
			if c.at.After(cutDone) {
				later++
			}
			if !c.at.Before(first) {
				t.Errorf("round %d: %s confirmed %s at cut+%v, after the new leader's first confirmation at cut+%v",
					round+1, old.id, c.body, c.at.Sub(cut), first.Sub(cut))
			}
		}
		if late > 0 {
			t.Logf("round %d: %d sends confirmed by %s after the cut began, %d after it was in place (%v later), all before the new leader's first",
				round+1, late, old.id, later, cutDone.Sub(cut).Round(time.Millisecond))
		}
		waitCond(t, 10*time.Second, fmt.Sprintf("round %d: the cut-off %s no longer ready", round+1, old.id), func() bool { return !old.ready() })
		if conn, err := stomp.Dial("tcp", old.stomp, stomp.ConnOpt.HeartBeat(0, 0)); err == nil {
			_ = conn.Disconnect()
			t.Errorf("round %d: the cut-off %s accepted a STOMP client", round+1, old.id)
		}

		// Heal: the old leader follows whoever leads and redirects to it.
		lab.heal(l)
		var nl int
		waitCond(t, 30*time.Second, fmt.Sprintf("round %d: %s follows the leader after the heal", round+1, old.id), func() bool {
			st, err := old.status()
			if err != nil || st.Role != "follower" || st.Leader == "" || st.Leader == old.id {
				return false
			}
			for i, n := range nodes {
				if n.id == st.Leader && n.ready() {
					nl = i
					return true
				}
			}
			return false
		})
		// It catches up: raft replicates to it again.
		lst, err := nodes[nl].status()
		if err != nil {
			t.Fatal(err)
		}
		healed := time.Now()
		waitCond(t, 20*time.Second, fmt.Sprintf("round %d: healed %s applies the leader's commit index %d", round+1, old.id, lst.CommitIndex), func() bool {
			st, err := old.status()
			return err == nil && st.AppliedIndex >= lst.CommitIndex
		})
		t.Logf("round %d: healed %s caught up with %s's commit index %d in %v", round+1, old.id, nodes[nl].id, lst.CommitIndex, time.Since(healed).Round(time.Millisecond))
		_, err = stomp.Dial("tcp", old.stomp, stomp.ConnOpt.HeartBeat(0, 0))
		if err == nil || !strings.Contains(err.Error(), nodes[nl].stomp) {
			t.Errorf("round %d: healed %s's STOMP refusal %v does not name the leader %s at %s", round+1, old.id, err, nodes[nl].id, nodes[nl].stomp)
		}
	}
	t.Logf("partition of the leader → first confirmed send on the majority side, %d rounds: %s", rounds, medianWorst(firsts))
	load.finish(t, 90*time.Second)

	// Every node, the deposed leaders among them, stops on SIGTERM. (With
	// hashicorp/raft's pipelined replication a deposed leader's
	// replication goroutine could stay blocked once a follower refused an
	// append, and raft's Shutdown waited for it for ever.)
	failed := t.Failed()
	for _, n := range nodes {
		n.signal(t, syscall.SIGTERM)
	}
	if !failed && t.Failed() {
		t.Error("a node did not stop on SIGTERM after the partitions; if its goroutines show raft's netPipeline.AppendEntries " +
			"blocked under pipelineReplicate, it is hashicorp/raft's pipeline deadlock (raftstore must replicate without the pipeline)")
	}
}
