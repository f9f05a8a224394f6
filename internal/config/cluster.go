package config

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// Cluster is the [cluster] section: this node's place in a replicated
// broker (docs/cluster.md). Without it (nil) the broker is one node on its
// own store, as before.
type Cluster struct {
	// NodeID is this node's ID; it must be one of Members' and must never
	// change for the data directory.
	NodeID string `toml:"node_id"`
	// Raft is the address this node's raft transport binds. Empty: this
	// node's member entry's raft address.
	Raft string `toml:"raft"`
	// Bootstrap makes a node without raft state start a new cluster of
	// every member listed (set it on one node, or on all of a fresh
	// cluster with the same members). A node with state ignores it.
	Bootstrap bool `toml:"bootstrap"`
	// HeartbeatTimeout and ElectionTimeout are raft's timeouts (1 s each
	// when zero): a follower that hears nothing from its leader for about
	// this long starts an election.
	HeartbeatTimeout Duration `toml:"heartbeat_timeout"`
	ElectionTimeout  Duration `toml:"election_timeout"`
	// FollowerClients is what a node that serves no clients does with
	// them: FollowerRedirect (the default, also for "") keeps its
	// messaging listeners bound and refuses each client in its protocol,
	// naming the leader; FollowerRefuse binds them only while it serves,
	// so that a client's connection is refused and a client with a list of
	// addresses tries the next at once.
	FollowerClients string `toml:"follower_clients"`
	// TLS makes the raft transport mutual TLS: this node serves, and
	// presents when it dials, the certificate of [tls] (or
	// [tls.listener.raft]), and verifies every peer's against its
	// client_ca_file, the CA that signs the nodes' certificates. Without
	// it the raft port takes plain-text RPCs from anyone who can reach it:
	// bind it to a private network.
	TLS bool `toml:"tls"`
	// Members are the nodes of the cluster, this one included: the same
	// list on every node. Each names its raft address and the addresses
	// clients reach it on, which followers name in their redirects.
	Members []Member `toml:"members"`
}

// The values of Cluster.FollowerClients.
const (
	FollowerRedirect = "redirect"
	FollowerRefuse   = "refuse"
)

// Refuses reports whether a node that serves no clients closes its
// messaging listeners (follower_clients = "refuse").
func (c *Cluster) Refuses() bool { return c.FollowerClients == FollowerRefuse }

// Member is one [[cluster.members]] entry.
type Member struct {
	// ID is the node's ID (its node_id).
	ID string `toml:"id"`
	// Raft is the host:port of its raft transport.
	Raft string `toml:"raft"`
	// STOMP, STOMPS, AMQP, AMQPS, AMQP091, WebSocket and Admin are the
	// host:port clients and operators reach its listeners of those names
	// on (advertised addresses: a listener bound to 0.0.0.0 is reached on
	// a real host name). A follower refuses a client naming the leader's
	// address for the listener the client came in on, so that a TLS
	// client is sent to TLS. Empty: redirects to this node from that
	// listener name no address.
	STOMP     string `toml:"stomp"`
	STOMPS    string `toml:"stomps"`
	AMQP      string `toml:"amqp"`
	AMQPS     string `toml:"amqps"`
	AMQP091   string `toml:"amqp091"`
	WebSocket string `toml:"websocket"`
	Admin     string `toml:"admin"`
}

// Addr returns the member's advertised address for the listener named
// listener (as in [listeners]: "stomp", "stomps", "amqp", "amqps",
// "amqp091", "websocket", "admin"); "" when it has none.
func (m Member) Addr(listener string) string {
	for _, a := range m.addrs() {
		if a.key == listener {
			return a.addr
		}
	}
	return ""
}

// addrs lists the member's addresses by their keys.
func (m Member) addrs() []struct{ key, addr string } {
	return []struct{ key, addr string }{{"raft", m.Raft}, {"stomp", m.STOMP}, {"stomps", m.STOMPS}, {"amqp", m.AMQP},
		{"amqps", m.AMQPS}, {"amqp091", m.AMQP091}, {"websocket", m.WebSocket}, {"admin", m.Admin}}
}

// Self returns this node's member entry.
func (c *Cluster) Self() (Member, bool) {
	for _, m := range c.Members {
		if m.ID == c.NodeID {
			return m, true
		}
	}
	return Member{}, false
}

// RaftAddr is the address this node's raft transport binds.
func (c *Cluster) RaftAddr() string {
	if c.Raft != "" {
		return c.Raft
	}
	m, _ := c.Self()
	return m.Raft
}

// Member returns the member with raft ID id.
func (c *Cluster) Member(id string) (Member, bool) {
	for _, m := range c.Members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// validateCluster checks the [cluster] section and what a cluster rules
// out elsewhere.
func (c *Config) validateCluster() []error {
	cl := c.Cluster
	if cl == nil {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("cluster."+format, a...)) }
	if cl.NodeID == "" {
		bad("node_id is empty: name this node (the id of one of cluster.members)")
	}
	if len(cl.Members) == 0 {
		bad("members is empty: list every node of the cluster, this one included, as [[cluster.members]] with id and raft (and stomp, amqp, admin)")
	}
	ids, rafts := map[string]int{}, map[string]int{}
	for i, m := range cl.Members {
		switch {
		case m.ID == "":
			bad("members[%d]: id is empty", i)
		case ids[m.ID] > 0:
			bad("members[%d]: id %q is also members[%d]'s", i, m.ID, ids[m.ID]-1)
		default:
			ids[m.ID] = i + 1
		}
		if m.Raft == "" {
			bad("members[%d] (%q): raft is empty: want the host:port of its raft transport", i, m.ID)
		} else if j := rafts[m.Raft]; j > 0 {
			bad("members[%d] (%q): raft %s is also members[%d]'s", i, m.ID, m.Raft, j-1)
		} else {
			rafts[m.Raft] = i + 1
		}
		for _, a := range m.addrs() {
			if a.addr == "" {
				continue
			}
			if err := checkHostPort(a.addr); err != nil {
				bad("members[%d] (%q).%s: %v", i, m.ID, a.key, err)
			}
		}
	}
	self, ok := cl.Self()
	if cl.NodeID != "" && len(cl.Members) > 0 && !ok {
		bad("node_id %q is not among cluster.members", cl.NodeID)
	}
	if cl.Raft != "" {
		if err := checkHostPort(cl.Raft); err != nil {
			bad("raft: %v", err)
		} else if ok && self.Raft != "" && self.Raft != cl.Raft {
			// Peers dial the member address; a different bind address is
			// allowed only when its port is the same (0.0.0.0 and a name).
			_, p1, _ := net.SplitHostPort(cl.Raft)
			_, p2, _ := net.SplitHostPort(self.Raft)
			if p1 != p2 {
				bad("raft %s and this node's members entry (raft %s) differ in port: the other nodes dial the members entry", cl.Raft, self.Raft)
			}
		}
	}
	switch cl.FollowerClients {
	case "", FollowerRedirect, FollowerRefuse:
	default:
		bad("follower_clients %q: want %q (refuse clients naming the leader) or %q (no client listeners while not leading)", cl.FollowerClients, FollowerRedirect, FollowerRefuse)
	}
	if cl.HeartbeatTimeout < 0 || cl.ElectionTimeout < 0 {
		bad("heartbeat_timeout and election_timeout must not be negative")
	}
	for _, d := range []Duration{cl.HeartbeatTimeout, cl.ElectionTimeout} {
		if d > 0 && time.Duration(d) < 5*time.Millisecond {
			bad("heartbeat_timeout and election_timeout must be at least 5ms")
			break
		}
	}
	hb, el := time.Duration(cl.HeartbeatTimeout), time.Duration(cl.ElectionTimeout)
	if hb <= 0 {
		hb = time.Second
	}
	if el <= 0 {
		el = time.Second
	}
	if el < hb {
		bad("election_timeout (%v) must be at least heartbeat_timeout (%v)", el, hb)
	}
	return errs
}

// checkHostPort checks that addr is host:port with a numeric port.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q of %s: want a number from 0 to 65535", port, addr)
	}
	return nil
}
