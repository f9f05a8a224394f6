package raftstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store/raftstore"
)

// TransferLeadership hands the leadership to the named voter (or raft's
// pick) with every confirmed write on it, and is refused on a follower, for
// a non-member and with no other voter.
func TestTransferLeadership(t *testing.T) {
	// Heartbeats that would take seconds to miss: a new leader within the
	// bounds below is one the transfer made, not an election timeout.
	slow := func(o *raftstore.Options) {
		o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 2*time.Second
	}
	c := newCluster(t, 3, slow)
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "before", 50)

	f := (l + 1) % 3
	var nl *raftstore.NotLeaderError
	if _, err := c.nodes[f].TransferLeadership("", time.Second); !errors.As(err, &nl) {
		t.Fatalf("transfer on a follower: %v, want a NotLeaderError", err)
	}
	if _, err := c.nodes[l].TransferLeadership("n9", time.Second); !errors.Is(err, raftstore.ErrNoTransferTarget) {
		t.Fatalf("transfer to a non-member: %v, want ErrNoTransferTarget", err)
	}
	if _, err := c.nodes[l].TransferLeadership(c.id(l), time.Second); !errors.Is(err, raftstore.ErrNoTransferTarget) {
		t.Fatalf("transfer to itself: %v, want ErrNoTransferTarget", err)
	}

	id, err := c.nodes[l].TransferLeadership(c.id(f), 2*time.Second)
	if err != nil || id != c.id(f) {
		t.Fatalf("transfer to %s: %q, %v", c.id(f), id, err)
	}
	waitFor(t, 2*time.Second, c.id(f)+" leads", c.nodes[f].IsLeader)
	if !has(c.nodes[f], "before", 50) {
		t.Fatal("the new leader lacks writes confirmed before the transfer")
	}
	write(t, c.nodes[f], "after", 50)

	// raft's pick, back from f.
	id, err = c.nodes[f].TransferLeadership("", 2*time.Second)
	if err != nil || id == c.id(f) || id == "" {
		t.Fatalf("transfer from %s: %q, %v", c.id(f), id, err)
	}

	single := openSingle(t, t.TempDir(), nil)
	if _, err := single.TransferLeadership("", time.Second); !errors.Is(err, raftstore.ErrNoTransferTarget) {
		t.Fatalf("transfer on a single node: %v, want ErrNoTransferTarget", err)
	}
}

// The leader's Status marks a follower whose heartbeats fail unreachable,
// with when it last answered, and clears the mark once it answers again.
func TestStatusMarksUnreachableFollowers(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader(10 * time.Second)
	f := (l + 1) % 3
	member := func(id string) raftstore.Member {
		st, err := c.nodes[l].Status()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Members {
			if m.ID == id {
				return m
			}
		}
		t.Fatalf("%s is not in the leader's status", id)
		return raftstore.Member{}
	}
	waitFor(t, 5*time.Second, "heartbeats reach "+c.id(f), func() bool { return !member(c.id(f)).Unreachable })
	before := time.Now()
	c.stop(f)
	waitFor(t, 10*time.Second, c.id(f)+" marked unreachable", func() bool { return member(c.id(f)).Unreachable })
	m := member(c.id(f))
	if m.LastContact.IsZero() || m.LastContact.After(time.Now()) || before.Sub(m.LastContact) > 2*time.Second {
		t.Errorf("%s last answered at %v, want shortly before it stopped (%v)", c.id(f), m.LastContact, before)
	}
	if other := member(c.id((l + 2) % 3)); other.Unreachable {
		t.Errorf("the running follower is marked unreachable: %+v", other)
	}
	c.start(f)
	waitFor(t, 10*time.Second, c.id(f)+" reachable again", func() bool { return !member(c.id(f)).Unreachable })
}
