package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// clusterNode starts a clustered broker node with only an admin listener
// and a raft transport, both on the addresses given.
func clusterNode(t *testing.T, id, raft, adminAddr string, bootstrap bool, members []config.Member) *broker.Broker {
	t.Helper()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.ConsumeBeforeStore = false
	cfg.Listeners = config.Listeners{Admin: adminAddr}
	cfg.Cluster = &config.Cluster{NodeID: id, Bootstrap: bootstrap, Members: members}
	b, err := broker.Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("shutdown %s: %v", id, err)
		}
	})
	return b
}

// `sluice admin cluster`: status on the leader of a one-node cluster; join
// adds a second node, which then reports itself a follower of the first;
// transfer makes it the leader; leave on it, the leader, hands the
// leadership back and has the first node remove it.
func TestAdminCluster(t *testing.T) {
	a := freeAddrs(t, 4)
	n1 := config.Member{ID: "n1", Raft: a[0], Admin: a[1]}
	n2 := config.Member{ID: "n2", Raft: a[2], Admin: a[3]}
	clusterNode(t, "n1", n1.Raft, n1.Admin, true, []config.Member{n1})
	url1, url2 := "http://"+n1.Admin, "http://"+n2.Admin

	var out string
	deadline := time.Now().Add(15 * time.Second)
	for {
		var err error
		out, err = admRun(t, url1, "", "", "cluster", "status")
		if err == nil && strings.Contains(out, "node n1: leader, serving true") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 does not lead within 15 s: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "n1 *") || !strings.Contains(out, n1.Raft) {
		t.Errorf("status does not list n1 at %s:\n%s", n1.Raft, out)
	}

	clusterNode(t, "n2", n2.Raft, n2.Admin, false, []config.Member{n1, n2})
	out = admMust(t, url1, "", "cluster", "join", "n2", n2.Raft)
	if !strings.Contains(out, "n2 joined at "+n2.Raft) || !strings.Contains(out, "n2") {
		t.Errorf("join output:\n%s", out)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		out, _ = admRun(t, url2, "", "", "cluster", "status")
		if strings.Contains(out, "node n2: follower") && strings.Contains(out, "leader n1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 does not follow n1 within 15 s:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := admRun(t, url2, "", "", "cluster", "leave", "n1"); err == nil || !strings.Contains(out+err.Error(), "not the leader") {
		t.Errorf("leave on a follower: %v\n%s", err, out)
	}

	if out, err := admRun(t, url2, "", "", "cluster", "transfer"); err == nil || !strings.Contains(out+err.Error(), "not the leader") {
		t.Errorf("transfer on a follower: %v\n%s", err, out)
	}
	if out, err := admRun(t, url1, "", "", "cluster", "transfer", "n9"); err == nil || !strings.Contains(out+err.Error(), `"n9" is not one of the other voters`) {
		t.Errorf("transfer to a non-member: %v\n%s", err, out)
	}

	// transfer: n2 leads at once (no election timeout to wait out).
	out = admMust(t, url1, "", "cluster", "transfer", "n2")
	if !strings.Contains(out, "leadership handed to n2") {
		t.Errorf("transfer output:\n%s", out)
	}
	waitStatus := func(url, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			out, _ := admRun(t, url, "", "", "cluster", "status")
			if strings.Contains(out, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status at %s does not say %q within 15 s:\n%s", url, want, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus(url2, "node n2: leader, serving true")

	// The leader leaves: it hands its leadership back to n1, which is
	// asked to remove it.
	out = admMust(t, url2, "", "cluster", "leave", "n2")
	if !strings.Contains(out, "n2 left the cluster") || !strings.Contains(out, "node n1: leader") || strings.Contains(out, n2.Raft) {
		t.Errorf("leave output:\n%s", out)
	}
	waitStatus(url1, "node n1: leader, serving true")
}
