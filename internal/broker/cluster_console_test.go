package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrapeCluster reads the sluice_cluster_* samples of a node's /metrics:
// "name" or "name{labels}" → value.
func scrapeCluster(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	resp, err := client.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s/metrics: %d %s", admin, resp.StatusCode, raw)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "sluice_cluster_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s/metrics: %q: %v", admin, line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// clusterView is the part of GET /api/cluster the console shows.
type clusterView struct {
	NodeID, Role, Leader string
	Serving              bool
	Term, CommitIndex    uint64
	AppliedIndex         uint64
	LastIndex            uint64
	Members              []struct {
		ID, Role, Raft, STOMP, Admin string
		Voter, Self                  bool
		LastContactAgeSeconds        *float64
	}
}

func getClusterView(t *testing.T, admin string) clusterView {
	t.Helper()
	resp, err := client.Get("http://" + admin + "/api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v clusterView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s/api/cluster: %v", admin, err)
	}
	return v
}

// Every node of a cluster serves the console's pages, its cluster view
// and /metrics, leader and followers alike; each node's raft series say
// its role, the term and the indexes, and its counters go on across
// terms: after a failover the survivors have counted the new leader and
// the new leader its served term. The leader tells its followers that
// answer its heartbeats from those that do not.
func TestClusterConsoleAndMetricsOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes and an election")
	}
	c := newTestCluster(t)
	l := c.leader(15 * time.Second)
	lm := c.member(l)
	if n := sendConfirmed(t, lm.STOMP, "m", 5); n != 5 {
		t.Fatalf("%d of 5 sends confirmed", n)
	}

	for i := range c.nodes {
		m := c.member(i)
		role := "follower"
		if i == l {
			role = "leader"
		}
		// The console and its session on every node.
		for _, p := range []string{"/", "/ui/app.js", "/api/whoami", "/api/node"} {
			resp, err := client.Get("http://" + m.Admin + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("n%d (%s) %s: %d, want 200", i+1, role, p, resp.StatusCode)
			}
		}
		// A follower has no engine API: 503 naming the leader.
		resp, err := client.Get("http://" + m.Admin + "/api/overview")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i != l && (resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Sluice-Leader") != lm.Admin) {
			t.Errorf("follower n%d /api/overview: %d leader %q, want 503 naming %s", i+1, resp.StatusCode, resp.Header.Get("X-Sluice-Leader"), lm.Admin)
		}

		// The cluster view: roles as this node sees them, its indexes.
		var v clusterView
		waitUntil(t, 10*time.Second, fmt.Sprintf("n%d applies the sends", i+1), func() bool {
			v = getClusterView(t, m.Admin)
			return v.AppliedIndex >= 5 && v.CommitIndex >= v.AppliedIndex
		})
		if v.Role != role || v.Leader != lm.ID || v.Serving != (i == l) || len(v.Members) != 3 || v.LastIndex < v.CommitIndex {
			t.Errorf("n%d's /api/cluster: %+v, want %s, leader %s, 3 members", i+1, v, role, lm.ID)
		}
		for _, mb := range v.Members {
			want := "unknown"
			switch {
			case mb.Self:
				want = role
			case mb.ID == lm.ID:
				want = "leader"
			case i == l:
				want = "follower" // the leader hears each answer its heartbeats
			}
			if mb.Role != want || !mb.Voter || mb.Raft == "" || mb.STOMP == "" || mb.Admin == "" {
				t.Errorf("n%d sees member %+v, want role %s, a voter with its addresses", i+1, mb, want)
			}
			if contact := mb.LastContactAgeSeconds != nil; contact != (i != l && mb.ID == lm.ID) {
				t.Errorf("n%d: member %s last contact %v: want one on a follower's leader entry only", i+1, mb.ID, mb.LastContactAgeSeconds)
			}
		}

		// The raft series, on a follower too.
		s := scrapeCluster(t, m.Admin)
		for k, want := range map[string]float64{
			`sluice_cluster_state{state="` + role + `"}`:  1,
			`sluice_cluster_serving`:                      map[bool]float64{true: 1, false: 0}[i == l],
			`sluice_cluster_has_leader`:                   1,
			`sluice_cluster_members`:                      3,
			`sluice_cluster_voters`:                       3,
			`sluice_cluster_info{node_id="` + m.ID + `"}`: 1,
		} {
			if got, ok := s[k]; !ok || got != want {
				t.Errorf("n%d /metrics %s = %v (present %v), want %v", i+1, k, got, ok, want)
			}
		}
		if s["sluice_cluster_term"] < 1 || s["sluice_cluster_applied_index"] < 5 || s["sluice_cluster_leader_changes_total"] < 1 {
			t.Errorf("n%d /metrics: term %v, applied %v, leader changes %v", i+1, s["sluice_cluster_term"], s["sluice_cluster_applied_index"], s["sluice_cluster_leader_changes_total"])
		}
		if age, ok := s["sluice_cluster_last_contact_seconds"]; !ok || (i == l && age != 0) || age > 5 {
			t.Errorf("n%d /metrics last contact %v (present %v)", i+1, age, ok)
		}
		// (A leader whose write's outcome was unknown reopens its engine in
		// the same term: more than one is no failure.)
		if served := s["sluice_cluster_terms_served_total"]; (i == l) != (served >= 1) {
			t.Errorf("n%d has served %v terms", i+1, served)
		}
	}

	// Failover: the survivors count the new leader, which counts its term;
	// the counters go on from where they were.
	before := map[int]map[string]float64{}
	for i := range c.nodes {
		if i != l {
			before[i] = scrapeCluster(t, c.member(i).Admin)
		}
	}
	c.stop(l)
	nl := c.leader(15 * time.Second)
	for i, b := range before {
		var s map[string]float64
		waitUntil(t, 5*time.Second, fmt.Sprintf("n%d sees the new leader", i+1), func() bool {
			s = scrapeCluster(t, c.member(i).Admin)
			return s["sluice_cluster_leader_changes_total"] > b["sluice_cluster_leader_changes_total"] && s["sluice_cluster_term"] > b["sluice_cluster_term"]
		})
		if i == nl {
			if s[`sluice_cluster_state{state="leader"}`] != 1 || s["sluice_cluster_serving"] != 1 || s["sluice_cluster_terms_served_total"] < 1 {
				t.Errorf("new leader n%d: state %v serving %v terms served %v", i+1, s[`sluice_cluster_state{state="leader"}`], s["sluice_cluster_serving"], s["sluice_cluster_terms_served_total"])
			}
		} else if s[`sluice_cluster_state{state="follower"}`] != 1 {
			t.Errorf("n%d is no longer a follower: %v", i+1, s)
		}
	}
	// The new leader's view: the stopped member is unreachable, the other
	// a follower.
	var v clusterView
	waitUntil(t, 10*time.Second, "the new leader sees the stopped one unreachable", func() bool {
		v = getClusterView(t, c.member(nl).Admin)
		for _, mb := range v.Members {
			if mb.ID == lm.ID {
				return mb.Role == "unreachable"
			}
		}
		return false
	})
	for _, mb := range v.Members {
		if !mb.Self && mb.ID != lm.ID && mb.Role != "follower" {
			t.Errorf("the new leader sees the running n%s as %q, want follower", mb.ID[1:], mb.Role)
		}
	}
	if !regexp.MustCompile(`^n[123]$`).MatchString(v.Leader) || v.Leader == lm.ID {
		t.Errorf("the new leader's view names leader %q", v.Leader)
	}
}
