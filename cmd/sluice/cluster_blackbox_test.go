package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
)

// The Bar of issue #17 with real processes: three `sluice serve` nodes, a
// STOMP producer with a failover list sending persistent messages with
// receipts; the leader is SIGKILLed ten times under that load (and
// restarted as a follower); each time a new leader confirms a send within
// 10 s; at the end every confirmed message is consumed from the leader,
// none delivered twice.
func TestClusterSIGKILLLeaderLosesNothingConfirmed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills three broker processes")
	}
	dir := t.TempDir()
	a := freeAddrs(t, 12)
	var members strings.Builder
	nodes := make([]*blackNode, 3)
	for i := range nodes {
		n := &blackNode{id: fmt.Sprintf("n%d", i+1), stomp: a[4*i+1], admin: a[4*i+3],
			conf: filepath.Join(dir, fmt.Sprintf("node%d.toml", i+1)), data: filepath.Join(dir, fmt.Sprintf("data%d", i+1))}
		nodes[i] = n
		fmt.Fprintf(&members, "\n[[cluster.members]]\nid = %q\nraft = %q\nstomp = %q\namqp = %q\nadmin = %q\n", n.id, a[4*i], n.stomp, a[4*i+2], n.admin)
	}
	for i, n := range nodes {
		conf := fmt.Sprintf("[listeners]\nstomp = %q\namqp = %q\nadmin = %q\nwebsocket = \"\"\n[cluster]\nnode_id = %q\nbootstrap = true\n%s",
			n.stomp, a[4*i+2], n.admin, n.id, members.String())
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
	leader := func(d time.Duration) int { t.Helper(); return leaderOf(t, nodes, d) }
	leader(20 * time.Second)

	// The producer: a failover list of the three STOMP addresses; on any
	// error it moves to the next node. A send without its receipt is not
	// confirmed and is not sent again.
	var ledger blackLedger
	stop := make(chan struct{})
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		seq := 0
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			conn, err := stomp.Dial("tcp", nodes[k%3].stomp, stomp.ConnOpt.HeartBeat(0, 0))
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for {
				select {
				case <-stop:
					_ = conn.Disconnect()
					return
				default:
				}
				seq++
				body := fmt.Sprintf("m-%06d", seq)
				if err := conn.Send("/queue/bar", "text/plain", []byte(body), stomp.SendOpt.Receipt, stomp.SendOpt.Header("persistent", "true")); err != nil {
					_ = conn.MustDisconnect()
					break
				}
				ledger.add(body)
			}
		}
	}()
	defer func() {
		select {
		case <-prodDone:
		default:
			close(stop)
			<-prodDone
		}
	}()

	var failovers []time.Duration
	const rounds = 10
	for round := range rounds {
		base := ledger.count()
		waitCond(t, 20*time.Second, "200 more sends confirmed", func() bool { return ledger.count() >= base+200 })
		l := leader(5 * time.Second)
		killed := time.Now()
		nodes[l].signal(t, syscall.SIGKILL)
		before := ledger.count()
		waitCond(t, 10*time.Second, fmt.Sprintf("round %d: a send confirmed by a new leader after the SIGKILL of %s", round+1, nodes[l].id), func() bool {
			return ledger.count() > before
		})
		ledger.mu.Lock()
		failovers = append(failovers, ledger.last.Sub(killed))
		ledger.mu.Unlock()
		nodes[l].start(t) // back as a follower
	}
	close(stop)
	<-prodDone
	slices.Sort(failovers)
	t.Logf("failover (SIGKILL of the leader → first confirmed send on the new one), %d rounds: median %v, worst %v; %d sends confirmed",
		rounds, failovers[rounds/2].Round(time.Millisecond), failovers[rounds-1].Round(time.Millisecond), ledger.count())

	// Drain from the leader.
	l := leader(20 * time.Second)
	conn, err := stomp.Dial("tcp", nodes[l].stomp, stomp.ConnOpt.HeartBeat(0, 0), stomp.ConnOpt.ReadChannelCapacity(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	sub, err := conn.Subscribe("/queue/bar", stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, b := range ledger.confirmed {
		want[b] = true
	}
	seen := map[string]bool{}
	missing := len(want)
	timeout := time.After(60 * time.Second)
	for missing > 0 {
		select {
		case m := <-sub.C:
			if m.Err != nil {
				t.Fatal(m.Err)
			}
			b := string(m.Body)
			if seen[b] && m.Header.Get("redelivered") != "true" {
				t.Errorf("%s delivered twice, unflagged", b)
			}
			if want[b] && !seen[b] {
				missing--
			}
			seen[b] = true
		case <-timeout:
			t.Fatalf("%d of %d confirmed messages missing after ten SIGKILLs of the leader", missing, len(want))
		}
	}
}
