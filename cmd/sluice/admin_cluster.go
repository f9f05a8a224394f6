package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// admClusterStatus is GET /api/cluster's answer (internal/admin.ClusterStatus).
type admClusterStatus struct {
	NodeID       string             `json:"nodeId"`
	Role         string             `json:"role"`
	Serving      bool               `json:"serving"`
	Epoch        uint64             `json:"epoch"`
	Term         uint64             `json:"term"`
	Leader       string             `json:"leader"`
	LastContact  *time.Time         `json:"lastContact"`
	CommitIndex  uint64             `json:"commitIndex"`
	AppliedIndex uint64             `json:"appliedIndex"`
	LastIndex    uint64             `json:"lastIndex"`
	Members      []admClusterMember `json:"members"`
}

// admClusterMember is one of admClusterStatus's members.
type admClusterMember struct {
	ID     string `json:"id"`
	Raft   string `json:"raft"`
	Voter  bool   `json:"voter"`
	Leader bool   `json:"leader"`
	Self   bool   `json:"self"`
	Role   string `json:"role"`
	STOMP  string `json:"stomp"`
	AMQP   string `json:"amqp"`
	Admin  string `json:"admin"`
}

// clusterCmd is `sluice admin cluster status|join|leave|transfer`.
func (c *adminClient) clusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show a cluster's members and roles; add or remove a member (docs/cluster.md)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show this node's role, the leader, the raft term and indexes, and every member",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var st admClusterStatus
			if err := c.call("GET", "/api/cluster", nil, &st); err != nil || c.json {
				return err
			}
			c.printCluster(st)
			return nil
		},
	}, &cobra.Command{
		Use:   "join ID RAFT-ADDRESS",
		Short: "Add a node as a voting member (ask the leader; the new node starts without bootstrap)",
		Args:  cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			var st admClusterStatus
			body := map[string]string{"id": args[0], "raft": args[1]}
			if err := c.call("POST", "/api/cluster/members", body, &st); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "%s joined at %s\n", args[0], args[1])
			c.printCluster(st)
			return nil
		},
	}, &cobra.Command{
		Use:   "leave ID",
		Short: "Remove a member from the cluster (ask the leader; a leader that leaves hands its leadership over first)",
		Long: `Remove a member from the cluster. Ask the leader. When the member is the
leader itself, it first hands its leadership to another voter (as
"cluster transfer" does), and the new leader, at the admin address its
members entry gives, is asked to remove it: the cluster is not left
without a leader for an election timeout.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id := args[0]
			at := c
			if here, err := c.clusterStatus(); err == nil && here.NodeID == id && here.Leader == id {
				var st admClusterStatus
				if err := c.fetch("POST", "/api/cluster/transfer", map[string]string{}, &st); err != nil {
					return fmt.Errorf("hand %s's leadership over before it leaves: %w", id, err)
				}
				next := st.member(st.Leader)
				if st.Leader == "" || st.Leader == id || next.Admin == "" {
					return fmt.Errorf("%s handed its leadership to %s, whose admin address is not in cluster.members: ask that node to remove %s", id, admDash(st.Leader), id)
				}
				if at, err = c.at(next.Admin); err != nil {
					return err
				}
				fmt.Fprintf(c.errOut, "%s handed its leadership to %s; asking %s to remove it\n", id, st.Leader, next.Admin)
			}
			var st admClusterStatus
			if err := at.call("DELETE", "/api/cluster/members/"+url.PathEscape(id), nil, &st); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "%s left the cluster\n", id)
			c.printCluster(st)
			return nil
		},
	}, &cobra.Command{
		Use:   "transfer [ID]",
		Short: "Hand the leadership to another voting member: ID, or the most up-to-date one (ask the leader)",
		Long: `Hand the leadership to another voting member, before maintenance of the
leader's machine: ID, or with none the most up-to-date voter. The new
leader is elected at once instead of after the heartbeat timeout; the
old leader's clients are disconnected and find the new leader by the
redirects. (A leader stopped with SIGTERM hands its leadership over by
itself.)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			body := map[string]string{}
			if len(args) == 1 {
				body["to"] = args[0]
			}
			var st admClusterStatus
			if err := c.call("POST", "/api/cluster/transfer", body, &st); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "leadership handed to %s\n", admDash(st.Leader))
			c.printCluster(st)
			return nil
		},
	})
	return cmd
}

// clusterStatus is GET /api/cluster of the node at c.url, not printed.
func (c *adminClient) clusterStatus() (admClusterStatus, error) {
	var st admClusterStatus
	err := c.fetch("GET", "/api/cluster", nil, &st)
	return st, err
}

// member returns the member with ID id (zero when there is none).
func (st admClusterStatus) member(id string) admClusterMember {
	for _, m := range st.Members {
		if m.ID == id {
			return m
		}
	}
	return admClusterMember{}
}

// at returns a client of the admin listener at host:port addr, with c's
// scheme, credentials and options.
func (c *adminClient) at(addr string) (*adminClient, error) {
	u, err := url.Parse(c.url)
	if err != nil {
		return nil, fmt.Errorf("admin URL %q: %w", c.url, err)
	}
	u.Host = addr
	o := *c
	o.url = u.String()
	return &o, nil
}

func (c *adminClient) printCluster(st admClusterStatus) {
	contact := "-"
	if st.LastContact != nil {
		contact = time.Since(*st.LastContact).Round(time.Millisecond).String() + " ago"
	}
	fmt.Fprintf(c.out, "node %s: %s, serving %v, term %d, leader %s, last contact %s\n", st.NodeID, st.Role, st.Serving, st.Term, admDash(st.Leader), contact)
	fmt.Fprintf(c.out, "log: commit %d, applied %d, last %d\n", st.CommitIndex, st.AppliedIndex, st.LastIndex)
	var rows [][]string
	for _, m := range st.Members {
		// The node's own view: its own role, the leader it knows, and
		// "unknown" for members it cannot see (raft does not tell).
		role := m.Role
		switch {
		case role != "":
		case m.Leader:
			role = "leader"
		default:
			role = "follower"
		}
		if !m.Voter {
			role += " (non-voter)"
		}
		id := m.ID
		if m.Self {
			id += " *"
		}
		rows = append(rows, []string{id, role, m.Raft, admDash(m.STOMP), admDash(m.AMQP), admDash(m.Admin)})
	}
	c.table("ID\tROLE\tRAFT\tSTOMP\tAMQP\tADMIN", rows)
}
