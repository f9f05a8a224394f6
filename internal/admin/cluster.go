package admin

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// ErrNotLeader is matched (errors.Is) by the errors of a Cluster's Join,
// Leave and Transfer on a node that is not the leader; the API answers
// them 409.
var ErrNotLeader = errors.New("not the leader")

// ErrRefused is matched by the errors of a Cluster's operation that the
// cluster's membership does not allow (a transfer with no voter to take
// the leadership); the API answers them 409 with the error's text.
var ErrRefused = errors.New("refused")

// Cluster is a clustered broker's node (internal/broker), for
// /api/cluster.
type Cluster interface {
	// ClusterStatus reports the node's view of the cluster.
	ClusterStatus() (ClusterStatus, error)
	// ClusterJoin adds a voting member (on the leader).
	ClusterJoin(id, raftAddr string) error
	// ClusterLeave removes a member (on the leader).
	ClusterLeave(id string) error
	// ClusterTransfer hands the leadership (on the leader) to the voter
	// to, or to the most up-to-date one when to is "", and returns the
	// new leader's ID.
	ClusterTransfer(to string) (string, error)
}

// ClusterStatus is GET /api/cluster's answer.
type ClusterStatus struct {
	NodeID string `json:"nodeId"`
	// Role is raft's state of this node: leader, follower, candidate or
	// shutdown.
	Role string `json:"role"`
	// Serving is true while this node's engine serves clients (the leader,
	// once its engine is open); Epoch is that engine's raft term.
	Serving bool   `json:"serving"`
	Epoch   uint64 `json:"epoch,omitempty"`
	// Term is the current raft term; Leader the leader's node ID ("" when
	// none is known).
	Term   uint64 `json:"term"`
	Leader string `json:"leader"`
	// LastContact is when this node last heard from the leader (absent on
	// the leader, and before any contact); LastContactAgeSeconds is how
	// long ago that was, by this node's clock.
	LastContact           *time.Time `json:"lastContact,omitempty"`
	LastContactAgeSeconds *float64   `json:"lastContactAgeSeconds,omitempty"`
	// CommitIndex, AppliedIndex and LastIndex are raft's log indexes here.
	CommitIndex  uint64          `json:"commitIndex"`
	AppliedIndex uint64          `json:"appliedIndex"`
	LastIndex    uint64          `json:"lastIndex"`
	Members      []ClusterMember `json:"members"`
}

// ClusterMember is one member of the raft configuration, with the client
// addresses the configuration gives it.
type ClusterMember struct {
	ID     string `json:"id"`
	Raft   string `json:"raft"`
	Voter  bool   `json:"voter"`
	Leader bool   `json:"leader"`
	Self   bool   `json:"self"`
	// The advertised addresses of its listeners, from cluster.members.
	STOMP     string `json:"stomp,omitempty"`
	STOMPS    string `json:"stomps,omitempty"`
	AMQP      string `json:"amqp,omitempty"`
	AMQPS     string `json:"amqps,omitempty"`
	AMQP091   string `json:"amqp091,omitempty"`
	WebSocket string `json:"websocket,omitempty"`
	Admin     string `json:"admin,omitempty"`
	// Reachable is given by the leader for each other member: whether it
	// answers the leader's heartbeats (raft tells a leader when they start
	// to fail and when they resume).
	Reachable *bool `json:"reachable,omitempty"`
	// Role is the member's role as this node sees it: this node's own raft
	// state, "leader" for the leader it knows; on the leader, "follower"
	// for a member that answers its heartbeats and "unreachable" for one
	// that does not; elsewhere "unknown", whose state raft does not report
	// here (their own /api/cluster does).
	Role string `json:"role"`
	// LastContact and LastContactAgeSeconds are when this node last heard
	// from the member: on a follower's answer, for the leader; on the
	// leader's, for an unreachable member (raft reports no contact time
	// for a follower that answers, only that it does).
	LastContact           *time.Time `json:"lastContact,omitempty"`
	LastContactAgeSeconds *float64   `json:"lastContactAgeSeconds,omitempty"`
}

// The roles of members that are not this node and not its leader:
// RoleUnknown for one this node cannot see, RoleUnreachable for one that
// does not answer the leader's heartbeats.
const (
	RoleUnknown     = "unknown"
	RoleUnreachable = "unreachable"
)

// view completes st as GET /api/cluster answers it at now: the members'
// roles, the last contact on the leader's entry and its age. On the leader
// raft's last contact is the time it stopped being a follower, which says
// nothing: it is left out.
func (st ClusterStatus) view(now time.Time) ClusterStatus {
	if st.Role == "leader" {
		st.LastContact = nil
	}
	var age *float64
	if st.LastContact != nil {
		a := max(0, now.Sub(*st.LastContact).Seconds())
		age = &a
	}
	st.LastContactAgeSeconds = age
	members := make([]ClusterMember, len(st.Members))
	for i, m := range st.Members {
		switch {
		case m.Self:
			m.Role = st.Role
		case m.Leader:
			m.Role = "leader"
			m.LastContact, m.LastContactAgeSeconds = st.LastContact, age
		case st.Role == "leader" && m.Reachable != nil && *m.Reachable:
			m.Role, m.LastContact = "follower", nil
		case st.Role == "leader" && m.Reachable != nil:
			m.Role = RoleUnreachable
			if m.LastContact != nil {
				a := max(0, now.Sub(*m.LastContact).Seconds())
				m.LastContactAgeSeconds = &a
			}
		default:
			m.Role, m.LastContact = RoleUnknown, nil
		}
		members[i] = m
	}
	st.Members = members
	return st
}

// clusterRoutes serves /api/cluster; without Options.Cluster it answers
// 404 saying the broker is a single node.
func (s *Server) clusterRoutes() {
	s.handle("GET /api/cluster", s.clusterStatus)
	s.handle("POST /api/cluster/members", s.clusterJoin)
	s.handle("DELETE /api/cluster/members/{id}", s.clusterLeave)
	s.handle("POST /api/cluster/transfer", s.clusterTransfer)
}

func (s *Server) noCluster(w http.ResponseWriter) bool {
	if s.opts.Cluster != nil {
		return false
	}
	writeError(w, http.StatusNotFound, "this broker is a single node: its configuration has no [cluster] section")
	return true
}

func (s *Server) clusterStatus(w http.ResponseWriter, _ *http.Request) {
	if s.noCluster(w) {
		return
	}
	st, err := s.opts.Cluster.ClusterStatus()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st.view(time.Now()))
}

func (s *Server) clusterJoin(w http.ResponseWriter, r *http.Request) {
	if s.noCluster(w) {
		return
	}
	var req struct {
		ID   string `json:"id"`
		Raft string `json:"raft"`
	}
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.ID == "" {
		writeError(w, http.StatusBadRequest, "id is empty: name the new node (its cluster.node_id)")
		return
	}
	if _, _, err := net.SplitHostPort(req.Raft); err != nil {
		writeError(w, http.StatusBadRequest, "raft: want the host:port of the new node's raft transport: "+err.Error())
		return
	}
	s.membership(w, s.opts.Cluster.ClusterJoin(req.ID, req.Raft))
}

func (s *Server) clusterLeave(w http.ResponseWriter, r *http.Request) {
	if s.noCluster(w) {
		return
	}
	s.membership(w, s.opts.Cluster.ClusterLeave(r.PathValue("id")))
}

// clusterTransfer is POST /api/cluster/transfer {"to": ID}: the leader
// hands its leadership over (to ID, or, with none, to the most up-to-date
// voter), then answers this node's status, which names the new leader.
func (s *Server) clusterTransfer(w http.ResponseWriter, r *http.Request) {
	if s.noCluster(w) {
		return
	}
	var req struct {
		To string `json:"to"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, w, &req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	_, err := s.opts.Cluster.ClusterTransfer(req.To)
	s.membership(w, err)
}

// membership answers a join, a leave or a transfer with the status after
// it.
func (s *Server) membership(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotLeader):
		writeError(w, http.StatusConflict, err.Error()+" (send it to the leader: GET /api/cluster names it)")
		return
	case errors.Is(err, ErrRefused):
		writeError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.clusterStatus(w, nil)
}
