package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// memberSet is the STOMP addresses the load's clients try: the live
// members.
type memberSet struct {
	mu    sync.Mutex
	addrs []string
}

func (m *memberSet) get() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.addrs)
}

func (m *memberSet) set(nodes ...*blackNode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addrs = nil
	for _, n := range nodes {
		m.addrs = append(m.addrs, n.stomp)
	}
}

// Membership changes of issue #17 under load, with real processes and the
// real CLI: three nodes serve a STOMP producer and consumer (failover
// lists; persistent sends with receipts); a fourth node, started without
// bootstrap, is added with `sluice admin cluster join` and catches up (its
// applied index reaches the leader's commit index); an original follower
// is removed with `cluster leave` and stopped; the leader is SIGKILLed and
// the remaining members (the new node among them) elect a leader that
// confirms a send within 10 s; the killed node comes back as a follower;
// then the leader removes itself with `cluster leave` and the leadership
// moves to one of the two left. At the end every confirmed message has
// been delivered, none twice without redelivered:true.
func TestClusterJoinLeaveUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills four broker processes")
	}
	dir := t.TempDir()
	a := freeAddrs(t, 16)
	nodes := make([]*blackNode, 4)
	member := make([]string, 4)
	for i := range nodes {
		n := &blackNode{id: fmt.Sprintf("n%d", i+1), stomp: a[4*i+1], amqp: a[4*i+2], admin: a[4*i+3],
			conf: filepath.Join(dir, fmt.Sprintf("node%d.toml", i+1)), data: filepath.Join(dir, fmt.Sprintf("data%d", i+1))}
		nodes[i] = n
		member[i] = fmt.Sprintf("\n[[cluster.members]]\nid = %q\nraft = %q\nstomp = %q\namqp = %q\nadmin = %q\n", n.id, a[4*i], n.stomp, a[4*i+2], n.admin)
	}
	for i, n := range nodes {
		// The first three bootstrap a cluster of three; the fourth knows
		// them all and waits to be added.
		members, bootstrap := strings.Join(member[:3], ""), i < 3
		if i == 3 {
			members = strings.Join(member, "")
		}
		conf := fmt.Sprintf("[listeners]\nstomp = %q\namqp = %q\nadmin = %q\nwebsocket = \"\"\n[cluster]\nnode_id = %q\nbootstrap = %v\n%s",
			n.stomp, a[4*i+2], n.admin, n.id, bootstrap, members)
		if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes[:3] {
		n.start(t)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.signal(t, syscall.SIGTERM)
		}
		logTails(t, nodes)
	})
	leader := func(d time.Duration) *blackNode { return nodes[leaderOf(t, nodes, d)] }
	l := leader(30 * time.Second)
	var live memberSet
	live.set(nodes[:3]...)
	load := startLoad("/queue/members", live.get, true)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(load.describe())
		}
	})
	defer load.stop()
	more := func(what string, k int) {
		t.Helper()
		base := load.count()
		waitCond(t, 30*time.Second, what, func() bool { return load.count() >= base+k })
	}
	more("200 sends confirmed by the first three", 200)

	// Join n4.
	n4 := nodes[3]
	n4.start(t)
	out := admMust(t, "http://"+l.admin, "", "cluster", "join", n4.id, a[12])
	if !strings.Contains(out, n4.id+" joined at "+a[12]) {
		t.Errorf("cluster join output:\n%s", out)
	}
	joined := time.Now()
	lst, err := l.status()
	if err != nil {
		t.Fatal(err)
	}
	waitCond(t, 30*time.Second, fmt.Sprintf("n4 applies the leader's commit index %d", lst.CommitIndex), func() bool {
		st, err := n4.status()
		return err == nil && st.Role == "follower" && st.Leader == l.id && st.AppliedIndex >= lst.CommitIndex
	})
	t.Logf("n4 joined and applied the leader's commit index %d in %v", lst.CommitIndex, time.Since(joined).Round(time.Millisecond))
	out = admMust(t, "http://"+n4.admin, "", "cluster", "status")
	for _, n := range nodes {
		if !strings.Contains(out, n.id) {
			t.Errorf("n4's cluster status does not list %s:\n%s", n.id, out)
		}
	}
	if !strings.Contains(out, "node n4: follower, serving false") {
		t.Errorf("n4's cluster status:\n%s", out)
	}
	live.set(nodes...)
	more("200 sends confirmed with four members", 200)

	// An original follower leaves and stops.
	var gone *blackNode
	for _, n := range nodes[:3] {
		if n != l {
			gone = n
			break
		}
	}
	out = admMust(t, "http://"+l.admin, "", "cluster", "leave", gone.id)
	if !strings.Contains(out, gone.id+" left the cluster") {
		t.Errorf("cluster leave output:\n%s", out)
	}
	lst, err = l.status()
	if err != nil {
		t.Fatal(err)
	}
	var after []string
	for _, m := range lst.Members {
		after = append(after, m.ID)
	}
	if len(after) != 3 || slices.Contains(after, gone.id) {
		t.Errorf("members after %s left: %v", gone.id, after)
	}
	gone.signal(t, syscall.SIGTERM)
	var rest []*blackNode
	for _, n := range nodes {
		if n != gone {
			rest = append(rest, n)
		}
	}
	live.set(rest...)
	more(fmt.Sprintf("200 sends confirmed after %s left", gone.id), 200)

	// One message confirmed over each AMQP protocol by this leader, to be
	// received at the end from the last.
	if err := amqp10SendConfirmed(l.amqp, "members.amqp10", "over 1.0"); err != nil {
		t.Fatalf("AMQP 1.0 send to the leader %s: %v", l.id, err)
	}
	if err := amqp091SendConfirmed(l.amqp, "members.amqp091", "over 0-9-1"); err != nil {
		t.Fatalf("AMQP 0-9-1 send to the leader %s: %v", l.id, err)
	}

	// The leader dies; the two others of the three elect.
	killed := time.Now()
	l.signal(t, syscall.SIGKILL)
	waitCond(t, 10*time.Second, fmt.Sprintf("a send confirmed by a new leader within 10 s of the SIGKILL of %s", l.id), func() bool {
		for _, c := range load.confirmedSince(killed) {
			if c.addr != l.stomp {
				return true
			}
		}
		return false
	})
	nl := leader(10 * time.Second)
	t.Logf("%s killed; %s leads and confirmed a send %v later", l.id, nl.id, load.confirmedSince(killed)[0].at.Sub(killed).Round(time.Millisecond))
	if nl == l || nl == gone {
		t.Fatalf("%s leads", nl.id)
	}
	l.start(t)
	waitCond(t, 30*time.Second, fmt.Sprintf("%s, restarted, follows %s", l.id, nl.id), func() bool {
		st, err := l.status()
		return err == nil && st.Role == "follower" && st.Leader == nl.id
	})
	more("200 sends confirmed after the SIGKILL", 200)

	// The leader leaves: `cluster leave` hands its leadership to one of
	// the two left, which removes it.
	left := time.Now()
	out, err = admRun(t, "http://"+nl.admin, "", "", "cluster", "leave", nl.id)
	leaveTook := time.Since(left)
	if err != nil || !strings.Contains(out, nl.id+" left the cluster") {
		t.Errorf("`cluster leave %s` on %s itself: %v\n%s", nl.id, nl.id, err, out)
	}
	var rest2 []*blackNode
	for _, n := range rest {
		if n != nl {
			rest2 = append(rest2, n)
		}
	}
	live.set(rest2...)
	var next *blackNode
	var nextAt time.Time
	waitCond(t, 10*time.Second, fmt.Sprintf("a send confirmed by another leader within 10 s of %s leaving", nl.id), func() bool {
		for _, c := range load.confirmedSince(left) {
			for _, n := range rest2 {
				if c.addr == n.stomp {
					next, nextAt = n, c.at
					return true
				}
			}
		}
		return false
	})
	t.Logf("%s left (`cluster leave` took %v); %s leads and confirmed a send %v after the leave began",
		nl.id, leaveTook.Round(time.Millisecond), next.id, nextAt.Sub(left).Round(time.Millisecond))
	st, err := next.status()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range st.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{rest2[0].id, rest2[1].id}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("members after %s left: %v, want %v", nl.id, ids, want)
	}
	if st, err := nl.status(); err == nil {
		t.Logf("%s after leaving: role %s, leader %q, serving %v, %d members", nl.id, st.Role, st.Leader, st.Serving, len(st.Members))
	}
	if nl.ready() {
		t.Errorf("%s, removed, still says it is ready", nl.id)
	}
	if conn, err := stomp.Dial("tcp", nl.stomp, stomp.ConnOpt.HeartBeat(0, 0)); err == nil {
		_ = conn.Disconnect()
		t.Errorf("%s, removed, accepted a STOMP client", nl.id)
	}
	nl.signal(t, syscall.SIGTERM)
	more("200 sends confirmed by the two left", 200)
	load.finish(t, 90*time.Second)
	for _, x := range []struct {
		proto, queue, want string
		recv               func(addr, queue string) (string, error)
	}{
		{"AMQP 1.0", "members.amqp10", "over 1.0", amqp10Receive},
		{"AMQP 0-9-1", "members.amqp091", "over 0-9-1", amqp091Receive},
	} {
		if got, err := x.recv(next.amqp, x.queue); err != nil || got != x.want {
			t.Errorf("%s message confirmed by %s, received from %s two leaders later: %q, %v; want %q", x.proto, l.id, next.id, got, err, x.want)
		}
	}
}
