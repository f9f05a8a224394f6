package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCluster is a Cluster whose status the test sets.
type fakeCluster struct {
	mu sync.Mutex
	st ClusterStatus
}

func (f *fakeCluster) set(st ClusterStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
}

func (f *fakeCluster) ClusterStatus() (ClusterStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	st.Members = append([]ClusterMember(nil), f.st.Members...)
	return st, nil
}

func (f *fakeCluster) ClusterJoin(string, string) error { return ErrNotLeader }
func (f *fakeCluster) ClusterLeave(string) error        { return ErrNotLeader }
func (f *fakeCluster) ClusterTransfer(string) (string, error) {
	return "", fmt.Errorf("transfer: %w", ErrNotLeader)
}

// threeNodes is the status of a three-node cluster as self sees it, with
// leader leading (none when "").
func threeNodes(self, role, leader string, term uint64, lastContact *time.Time) ClusterStatus {
	st := ClusterStatus{NodeID: self, Role: role, Term: term, Leader: leader, Serving: role == "leader",
		CommitIndex: 40, AppliedIndex: 39, LastIndex: 41, LastContact: lastContact}
	for _, id := range []string{"n1", "n2", "n3"} {
		st.Members = append(st.Members, ClusterMember{ID: id, Raft: "127.0.0.1:77" + id[1:], Voter: true,
			Leader: id == leader, Self: id == self, Admin: "127.0.0.1:87" + id[1:]})
	}
	return st
}

// leaderSeeing is n1 leading three nodes, n2 answering its heartbeats and
// n3 not, last heard at heard.
func leaderSeeing(heard *time.Time) ClusterStatus {
	st := threeNodes("n1", "leader", "n1", 3, heard)
	yes, no := true, false
	st.Members[1].Reachable = &yes
	st.Members[2].Reachable, st.Members[2].LastContact = &no, heard
	return st
}

// GET /api/cluster gives each member its role as this node sees it, and
// the last contact on the leader's entry (and, on the leader, on an
// unreachable member's); a leader reports none of its own.
func TestClusterStatusView(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	heard := now.Add(-1500 * time.Millisecond)
	for _, tt := range []struct {
		name      string
		st        ClusterStatus
		roles     []string
		contactOf string // the member with a last contact ("" for none)
	}{
		{"on the leader", threeNodes("n1", "leader", "n1", 3, &heard), []string{"leader", RoleUnknown, RoleUnknown}, ""},
		{"on the leader, told who answers", leaderSeeing(&heard), []string{"leader", "follower", RoleUnreachable}, "n3"},
		{"on a follower", threeNodes("n2", "follower", "n1", 3, &heard), []string{"leader", "follower", RoleUnknown}, "n1"},
		{"during an election", threeNodes("n3", "candidate", "", 4, &heard), []string{RoleUnknown, RoleUnknown, "candidate"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.st.view(now)
			for i, m := range v.Members {
				if m.Role != tt.roles[i] {
					t.Errorf("%s: role %q, want %q", m.ID, m.Role, tt.roles[i])
				}
				hasContact := m.LastContact != nil && m.LastContactAgeSeconds != nil
				if hasContact != (m.ID == tt.contactOf) {
					t.Errorf("%s: last contact %v, want it only on %q", m.ID, m.LastContact, tt.contactOf)
				}
				if hasContact && *m.LastContactAgeSeconds != 1.5 {
					t.Errorf("%s: last contact %v s ago, want 1.5", m.ID, *m.LastContactAgeSeconds)
				}
			}
			if leading := tt.st.Role == "leader"; leading == (v.LastContact != nil) {
				t.Errorf("node's last contact %v on a %s", v.LastContact, tt.st.Role)
			}
			if tt.st.Members[0].Role != "" {
				t.Error("view changed the status it was given")
			}
		})
	}
}

// A follower's admin server (a Cluster, no engine) serves the console,
// its session, /api/cluster and /metrics with the node's cluster series,
// behind the same credentials; it has no route for the engine's API.
func TestFollowerServer(t *testing.T) {
	auth, token := testAuth(t)
	fc := &fakeCluster{}
	heard := time.Now().Add(-2 * time.Second)
	fc.set(threeNodes("n2", "follower", "n1", 7, &heard))
	metrics := NewAuthMetrics()
	srv := New(Options{Version: "test", Auth: auth, AuthMetrics: metrics, Cluster: fc, ClusterMetrics: NewClusterMetrics(fc)})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	e := &env{t: t, srv: srv, ts: ts, header: http.Header{}}

	code, _, res := e.do("GET", "/", nil)
	raw, _ := io.ReadAll(res.Body)
	if code != 200 || !strings.Contains(string(raw), "Sluice console") {
		t.Fatalf("follower's console: %d", code)
	}
	if code, _, _ := e.do("GET", "/ui/app.js", nil); code != 200 {
		t.Errorf("follower's /ui/app.js: %d", code)
	}
	e.want("GET", "/api/cluster", nil, 401)
	e.want("GET", "/metrics", nil, 401)
	if code, v, _ := e.do("GET", "/readyz", nil); code != 503 || v.(map[string]any)["status"] != "follower" {
		t.Errorf("follower's /readyz: %d %v, want 503 follower", code, v)
	}

	e.header.Set("Authorization", "Bearer "+token)
	if who := e.want("GET", "/api/whoami", nil, 200); who["role"] != "admin" {
		t.Errorf("whoami on a follower: %v", who)
	}
	// Membership changes and transfers are the leader's: 409 naming where.
	if v := e.want("POST", "/api/cluster/transfer", map[string]string{"to": "n3"}, 409); !strings.Contains(fmt.Sprint(v["error"]), "send it to the leader") {
		t.Errorf("transfer on a follower: %v", v)
	}
	e.want("POST", "/api/cluster/transfer", nil, 409)
	// A body that is not the request's: 400, before the cluster is asked.
	e.want("POST", "/api/cluster/transfer", `{"to": 3}`, 400)
	e.want("POST", "/api/cluster/transfer", `{"leader": "n3"}`, 400)
	e.want("POST", "/api/cluster/transfer", `{"to": "n3"`, 400)
	st := e.want("GET", "/api/cluster", nil, 200)
	members, _ := st["members"].([]any)
	if len(members) != 3 {
		t.Fatalf("members: %v", st["members"])
	}
	var roles []string
	for _, m := range members {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "leader,follower,unknown" {
		t.Errorf("roles %v, want leader, follower, unknown", roles)
	}
	if age, _ := members[0].(map[string]any)["lastContactAgeSeconds"].(float64); age < 2 || age > 60 {
		t.Errorf("the leader's last contact: %v s ago, want about 2", members[0].(map[string]any)["lastContactAgeSeconds"])
	}

	code, _, res = e.do("GET", "/metrics", nil)
	raw, _ = io.ReadAll(res.Body)
	if code != 200 {
		t.Fatalf("follower's /metrics: %d", code)
	}
	for _, want := range []string{
		`sluice_cluster_state{state="follower"} 1`,
		`sluice_cluster_state{state="leader"} 0`,
		`sluice_cluster_info{node_id="n2"} 1`,
		`sluice_cluster_serving 0`,
		`sluice_cluster_has_leader 1`,
		`sluice_cluster_term 7`,
		`sluice_cluster_commit_index 40`,
		`sluice_cluster_applied_index 39`,
		`sluice_cluster_last_index 41`,
		`sluice_cluster_members 3`,
		`sluice_cluster_voters 3`,
		`sluice_cluster_leader_changes_total 1`,
		`sluice_cluster_terms_served_total 0`,
		`sluice_cluster_last_contact_seconds 2.`,
		`sluice_build_info{version="test"} 1`,
		`sluice_auth_attempts_total{protocol="admin",result="success"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("follower's /metrics lacks %q", want)
		}
	}
	if strings.Contains(string(raw), "sluice_destination_") {
		t.Error("a follower's /metrics has engine series")
	}

	// The engine's API is not the follower's: the broker answers it 503
	// naming the leader (internal/broker); this server has no route.
	for _, p := range []string{"/api/overview", "/api/destinations", "/api/connections"} {
		req := httptest.NewRequest("GET", p, nil)
		if srv.Handles(req) {
			t.Errorf("a follower's server handles %s", p)
		}
	}
	for _, p := range []string{"/", "/ui/style.css", "/metrics", "/api/cluster", "/api/whoami", "/api/node", "/healthz"} {
		if !srv.Handles(httptest.NewRequest("GET", p, nil)) {
			t.Errorf("a follower's server does not handle %s", p)
		}
	}
	if !srv.Handles(httptest.NewRequest("POST", "/api/login", nil)) {
		t.Error("a follower's server does not handle the console's login")
	}
}

// The node's cluster series are the same object in every term's admin
// server: a new term's /metrics goes on from the counts of the last.
func TestClusterMetricsOutliveTerms(t *testing.T) {
	fc := &fakeCluster{}
	fc.set(threeNodes("n1", "leader", "n1", 2, nil))
	cm := NewClusterMetrics(fc)
	scrape := func(e *env) string {
		t.Helper()
		code, _, res := e.do("GET", "/metrics", nil)
		raw, _ := io.ReadAll(res.Body)
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		return string(raw)
	}
	withCluster := func(o *Options) { o.Cluster, o.ClusterMetrics = fc, cm }

	first := newEnvWith(t, envOptions{options: withCluster})
	cm.TermServed()
	text := scrape(first)
	for _, want := range []string{`sluice_cluster_state{state="leader"} 1`, `sluice_cluster_serving 1`,
		`sluice_cluster_last_contact_seconds 0`, `sluice_cluster_terms_served_total 1`, `sluice_cluster_leader_changes_total 1`,
		`sluice_messages_enqueued_total 0`} {
		if !strings.Contains(text, want) {
			t.Errorf("first term's /metrics lacks %q", want)
		}
	}

	// The leadership goes to n2 and comes back in term 5: a new engine and
	// a new admin server, the same counters.
	fc.set(threeNodes("n1", "follower", "n2", 3, nil))
	_ = scrape(first)
	fc.set(threeNodes("n1", "leader", "n1", 5, nil))
	second := newEnvWith(t, envOptions{options: withCluster})
	cm.TermServed()
	text = scrape(second)
	for _, want := range []string{`sluice_cluster_terms_served_total 2`, `sluice_cluster_leader_changes_total 3`, `sluice_cluster_term 5`} {
		if !strings.Contains(text, want) {
			t.Errorf("second term's /metrics lacks %q", want)
		}
	}
	if n, err := second.srv.Registry().Gather(); err != nil || len(n) == 0 {
		t.Fatalf("Gather: %d families, %v", len(n), err)
	}
}

// Leader changes: a new leader, or the same one in a new term, counts
// once however often it is seen; no leader counts nothing. Run samples
// between scrapes.
func TestClusterMetricsLeaderChanges(t *testing.T) {
	fc := &fakeCluster{}
	cm := NewClusterMetrics(fc)
	for _, step := range []struct {
		leader string
		term   uint64
		want   uint64
	}{
		{"", 1, 0}, {"n1", 1, 1}, {"n1", 1, 1}, {"", 2, 1}, {"n2", 2, 2}, {"n2", 2, 2}, {"", 3, 2}, {"n2", 4, 3}, {"n1", 4, 4},
	} {
		cm.observe(threeNodes("n3", "follower", step.leader, step.term, nil))
		if got := cm.leaderChanges.Load(); got != step.want {
			t.Fatalf("after leader %q term %d: %d changes, want %d", step.leader, step.term, got, step.want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cm.Run(ctx) }()
	defer func() { cancel(); <-done }()
	fc.set(threeNodes("n3", "leader", "n3", 6, nil))
	deadline := time.Now().Add(5 * time.Second)
	for cm.leaderChanges.Load() != 5 {
		if time.Now().After(deadline) {
			t.Fatalf("Run did not count the new leader: %d changes", cm.leaderChanges.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
