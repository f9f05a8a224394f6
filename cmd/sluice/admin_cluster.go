package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// admClusterStatus is GET /api/cluster's answer (internal/admin.ClusterStatus).
type admClusterStatus struct {
	NodeID       string     `json:"nodeId"`
	Role         string     `json:"role"`
	Serving      bool       `json:"serving"`
	Epoch        uint64     `json:"epoch"`
	Term         uint64     `json:"term"`
	Leader       string     `json:"leader"`
	LastContact  *time.Time `json:"lastContact"`
	CommitIndex  uint64     `json:"commitIndex"`
	AppliedIndex uint64     `json:"appliedIndex"`
	LastIndex    uint64     `json:"lastIndex"`
	Members      []struct {
		ID     string `json:"id"`
		Raft   string `json:"raft"`
		Voter  bool   `json:"voter"`
		Leader bool   `json:"leader"`
		Self   bool   `json:"self"`
		Role   string `json:"role"`
		STOMP  string `json:"stomp"`
		AMQP   string `json:"amqp"`
		Admin  string `json:"admin"`
	} `json:"members"`
}

// clusterCmd is `sluice admin cluster status|join|leave`.
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
		Short: "Remove a member from the cluster (ask the leader)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var st admClusterStatus
			if err := c.call("DELETE", "/api/cluster/members/"+url.PathEscape(args[0]), nil, &st); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "%s left the cluster\n", args[0])
			c.printCluster(st)
			return nil
		},
	})
	return cmd
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
