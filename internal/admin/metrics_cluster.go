package admin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClusterMetrics serve a cluster node's raft state as sluice_cluster_*
// metrics. A clustered broker makes one per node, for the node's whole
// life, and hands it to every admin server it runs (Options.ClusterMetrics):
// the follower's and each leadership term's. Its counters are the node's,
// so they do not restart when a term's engine and admin server do. The
// gauges are read from the Cluster at scrape time.
type ClusterMetrics struct {
	cluster Cluster
	now     func() time.Time

	leaderChanges atomic.Uint64
	termsServed   atomic.Uint64

	mu         sync.Mutex // guards lastLeader and lastTerm
	lastLeader string
	lastTerm   uint64

	info, state, serving, hasLeader, term *prometheus.Desc
	commitIndex, appliedIndex, lastIndex  *prometheus.Desc
	lastContact, members, voters          *prometheus.Desc
	leaderChangesDesc, termsServedDesc    *prometheus.Desc
}

// ClusterSampleInterval is how often ClusterMetrics.Run looks at the
// leader: a leadership shorter than that may go uncounted.
const ClusterSampleInterval = 100 * time.Millisecond

// NewClusterMetrics makes the metrics of c's node.
func NewClusterMetrics(c Cluster) *ClusterMetrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &ClusterMetrics{
		cluster:      c,
		now:          time.Now,
		info:         d("sluice_cluster_info", "This node's cluster node ID; the value is always 1.", "node_id"),
		state:        d("sluice_cluster_state", "1 for this node's raft state (leader, follower, candidate, shutdown), 0 for the others.", "state"),
		serving:      d("sluice_cluster_serving", "1 while this node's engine serves clients (the leader, once its engine is open), else 0."),
		hasLeader:    d("sluice_cluster_has_leader", "1 while this node knows a leader, else 0 (an election, or no majority)."),
		term:         d("sluice_cluster_term", "The current raft term as this node knows it."),
		commitIndex:  d("sluice_cluster_commit_index", "The index of the last raft log entry this node knows committed."),
		appliedIndex: d("sluice_cluster_applied_index", "The index of the last raft log entry applied to this node's state."),
		lastIndex:    d("sluice_cluster_last_index", "The index of the last entry in this node's raft log."),
		lastContact: d("sluice_cluster_last_contact_seconds",
			"Time since this node last heard from the leader; 0 on the leader; absent before the first contact."),
		members: d("sluice_cluster_members", "Members of the raft configuration, voters and non-voters."),
		voters:  d("sluice_cluster_voters", "Voting members of the raft configuration."),
		leaderChangesDesc: d("sluice_cluster_leader_changes_total",
			"Leaders this node has seen take office (a new leader or a new term), since it started; sampled every 100 ms and at each scrape."),
		termsServedDesc: d("sluice_cluster_terms_served_total",
			"Leadership terms in which this node opened its engine and served clients, since it started."),
	}
}

// Run samples the leader every ClusterSampleInterval until ctx is done,
// counting leader changes between scrapes.
func (m *ClusterMetrics) Run(ctx context.Context) {
	t := time.NewTicker(ClusterSampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, _ := m.cluster.ClusterStatus() // partial on error: the leader and term are still read
		m.observe(st)
	}
}

// observe counts a leader not seen before: another node, or the same one
// in a new term (it lost the leadership and won it back).
func (m *ClusterMetrics) observe(st ClusterStatus) {
	if st.Leader == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Leader == m.lastLeader && st.Term == m.lastTerm {
		return
	}
	m.lastLeader, m.lastTerm = st.Leader, st.Term
	m.leaderChanges.Add(1)
}

// TermServed counts a leadership term whose engine opened and served.
func (m *ClusterMetrics) TermServed() { m.termsServed.Add(1) }

// Describe sends every descriptor.
func (m *ClusterMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.info, m.state, m.serving, m.hasLeader, m.term, m.commitIndex, m.appliedIndex,
		m.lastIndex, m.lastContact, m.members, m.voters, m.leaderChangesDesc, m.termsServedDesc} {
		ch <- d
	}
}

// Collect reads the node's cluster status.
func (m *ClusterMetrics) Collect(ch chan<- prometheus.Metric) {
	st, err := m.cluster.ClusterStatus()
	m.observe(st)
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	bit := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(m.info, gauge, 1, st.NodeID)
	for _, s := range []string{"leader", "follower", "candidate", "shutdown"} {
		ch <- prometheus.MustNewConstMetric(m.state, gauge, bit(st.Role == s), s)
	}
	ch <- prometheus.MustNewConstMetric(m.serving, gauge, bit(st.Serving))
	ch <- prometheus.MustNewConstMetric(m.hasLeader, gauge, bit(st.Leader != ""))
	ch <- prometheus.MustNewConstMetric(m.term, gauge, float64(st.Term))
	ch <- prometheus.MustNewConstMetric(m.commitIndex, gauge, float64(st.CommitIndex))
	ch <- prometheus.MustNewConstMetric(m.appliedIndex, gauge, float64(st.AppliedIndex))
	ch <- prometheus.MustNewConstMetric(m.lastIndex, gauge, float64(st.LastIndex))
	switch {
	case st.Role == "leader":
		ch <- prometheus.MustNewConstMetric(m.lastContact, gauge, 0)
	case st.LastContact != nil:
		ch <- prometheus.MustNewConstMetric(m.lastContact, gauge, max(0, m.now().Sub(*st.LastContact).Seconds()))
	}
	if err == nil { // without the configuration the members are not known
		voters := 0
		for _, mb := range st.Members {
			if mb.Voter {
				voters++
			}
		}
		ch <- prometheus.MustNewConstMetric(m.members, gauge, float64(len(st.Members)))
		ch <- prometheus.MustNewConstMetric(m.voters, gauge, float64(voters))
	}
	ch <- prometheus.MustNewConstMetric(m.leaderChangesDesc, counter, float64(m.leaderChanges.Load()))
	ch <- prometheus.MustNewConstMetric(m.termsServedDesc, counter, float64(m.termsServed.Load()))
}
