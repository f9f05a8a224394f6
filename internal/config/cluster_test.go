package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The example cluster of issue #17 item 7: three nodes n1-n3, STOMP on
// 61711-61713, AMQP on 5711-5713, admin on 8711-8713, raft on 7711-7713
// (and STOMP over WebSocket on 15711-15713), the same member list in each
// file, each valid.
func TestClusterExamples(t *testing.T) {
	var first []Member
	for i := 1; i <= 3; i++ {
		file := fmt.Sprintf("../../examples/cluster/node%d.toml", i)
		cfg, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Data = t.TempDir() // given by --data
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		cl := cfg.Cluster
		if cl == nil || cl.NodeID != fmt.Sprintf("n%d", i) || !cl.Bootstrap {
			t.Fatalf("%s: cluster %+v", file, cl)
		}
		want := Listeners{STOMP: fmt.Sprintf("127.0.0.1:6171%d", i), AMQP: fmt.Sprintf("127.0.0.1:571%d", i), Admin: fmt.Sprintf("127.0.0.1:871%d", i),
			WebSocket: fmt.Sprintf("127.0.0.1:1571%d", i)}
		l := cfg.Listeners
		if l.STOMP != want.STOMP || l.AMQP != want.AMQP || l.Admin != want.Admin || l.WebSocket != want.WebSocket {
			t.Errorf("%s: listeners %+v, want %+v", file, l, want)
		}
		if got := cl.RaftAddr(); got != fmt.Sprintf("127.0.0.1:771%d", i) {
			t.Errorf("%s: raft %s", file, got)
		}
		self, _ := cl.Self()
		if self.STOMP != l.STOMP || self.AMQP != l.AMQP || self.Admin != l.Admin || self.WebSocket != l.WebSocket {
			t.Errorf("%s: its member entry %+v does not match its listeners", file, self)
		}
		if i == 1 {
			first = cl.Members
		} else if fmt.Sprint(cl.Members) != fmt.Sprint(first) {
			t.Errorf("%s: members differ from node1.toml's", file)
		}
	}
}

// Every mistake in [cluster] is reported, naming the key.
func TestClusterValidation(t *testing.T) {
	ok := func() *Cluster {
		return &Cluster{NodeID: "n1", Members: []Member{{ID: "n1", Raft: "127.0.0.1:7711"}, {ID: "n2", Raft: "127.0.0.1:7712", STOMP: "h:61712"}}}
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no node id", func(c *Config) { c.Cluster.NodeID = "" }, "cluster.node_id is empty"},
		{"unknown node id", func(c *Config) { c.Cluster.NodeID = "n9" }, `cluster.node_id "n9" is not among cluster.members`},
		{"no members", func(c *Config) { c.Cluster.Members = nil }, "cluster.members is empty"},
		{"duplicate id", func(c *Config) { c.Cluster.Members[1].ID = "n1" }, `cluster.members[1]: id "n1" is also members[0]'s`},
		{"no raft", func(c *Config) { c.Cluster.Members[1].Raft = "" }, `cluster.members[1] ("n2"): raft is empty`},
		{"duplicate raft", func(c *Config) { c.Cluster.Members[1].Raft = "127.0.0.1:7711" }, "is also members[0]'s"},
		{"bad address", func(c *Config) { c.Cluster.Members[1].STOMP = "nohost" }, `cluster.members[1] ("n2").stomp`},
		{"bad port", func(c *Config) { c.Cluster.Members[1].AMQP = "h:99999" }, `cluster.members[1] ("n2").amqp: port "99999"`},
		{"raft port differs", func(c *Config) { c.Cluster.Raft = "0.0.0.0:9999" }, "cluster.raft 0.0.0.0:9999 and this node's members entry"},
		{"negative timeout", func(c *Config) { c.Cluster.ElectionTimeout = -1 }, "must not be negative"},
		{"election before heartbeat", func(c *Config) { c.Cluster.HeartbeatTimeout = Duration(2 * time.Second) }, "election_timeout (1s) must be at least heartbeat_timeout (2s)"},
		{"bad websocket address", func(c *Config) { c.Cluster.Members[1].WebSocket = "h:x" }, `cluster.members[1] ("n2").websocket: port "x"`},
		{"bad stomps address", func(c *Config) { c.Cluster.Members[0].STOMPS = "nohost" }, `cluster.members[0] ("n1").stomps`},
		{"bad follower_clients", func(c *Config) { c.Cluster.FollowerClients = "drop" }, `cluster.follower_clients "drop": want "redirect"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default() // consume_before_store on, as by default: a cluster allows it
			c.Listeners.WebSocket = ""
			c.Cluster = ok()
			if err := c.Validate(); err != nil {
				t.Fatalf("the valid base: %v", err)
			}
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
	c := Default()
	c.Cluster = ok()
	c.Cluster.Raft = "0.0.0.0:7711" // the same port on every interface
	c.Listeners.WebSocket = ""
	if err := c.Validate(); err != nil {
		t.Errorf("bind 0.0.0.0 on the member's port: %v", err)
	}
}
