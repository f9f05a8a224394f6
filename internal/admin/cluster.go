package admin

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// ErrNotLeader is matched (errors.Is) by the errors of a Cluster's Join
// and Leave on a node that is not the leader; the API answers them 409.
var ErrNotLeader = errors.New("not the leader")

// Cluster is a clustered broker's node (internal/broker), for
// /api/cluster.
type Cluster interface {
	// ClusterStatus reports the node's view of the cluster.
	ClusterStatus() (ClusterStatus, error)
	// ClusterJoin adds a voting member (on the leader).
	ClusterJoin(id, raftAddr string) error
	// ClusterLeave removes a member (on the leader).
	ClusterLeave(id string) error
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
	// the leader).
	LastContact *time.Time `json:"lastContact,omitempty"`
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
	STOMP  string `json:"stomp,omitempty"`
	AMQP   string `json:"amqp,omitempty"`
	Admin  string `json:"admin,omitempty"`
}

// clusterRoutes serves /api/cluster; without Options.Cluster it answers
// 404 saying the broker is a single node.
func (s *Server) clusterRoutes() {
	s.handle("GET /api/cluster", s.clusterStatus)
	s.handle("POST /api/cluster/members", s.clusterJoin)
	s.handle("DELETE /api/cluster/members/{id}", s.clusterLeave)
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
	writeJSON(w, http.StatusOK, st)
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

// membership answers a join or a leave with the status after it.
func (s *Server) membership(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrNotLeader):
		writeError(w, http.StatusConflict, err.Error()+" (send it to the leader: GET /api/cluster names it)")
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.clusterStatus(w, nil)
}
