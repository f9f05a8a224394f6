package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/tlsconf/tlstest"
)

// cluster.tls: the nodes' raft transport is mutual TLS with the
// certificate of [tls] and the CA of tls.listener.raft.client_ca_file; the
// cluster elects a leader and confirms sends as over plain TCP. Without a
// client CA the configuration is refused, naming the key.
func TestClusterRaftOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("three raft nodes")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	ca := tlstest.NewCA(t, "cluster CA")
	ca.Node(t, "127.0.0.1").Write(t, filepath.Join(dir, "tls"), "node")
	tlstest.WriteFile(t, filepath.Join(dir, "tls", "ca.pem"), ca.PEM)
	secure := func(cfg *config.Config) {
		cfg.ConsumeBeforeStore = false
		cfg.Dir = dir
		cfg.TLS.CertFile, cfg.TLS.KeyFile = "tls/node.crt", "tls/node.key"
		cfg.TLS.Listener = map[string]config.TLSOverride{"raft": {ClientCAFile: "tls/ca.pem"}}
		cfg.Cluster.TLS = true
	}

	bad := config.Default()
	bad.Data = t.TempDir()
	bad.Listeners.WebSocket = ""
	bad.Cluster = &config.Cluster{NodeID: "n1", Members: []config.Member{{ID: "n1", Raft: "127.0.0.1:7799"}}}
	secure(&bad)
	bad.TLS.Listener = nil
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "cluster.tls verifies every peer's certificate but has no client_ca_file") {
		t.Fatalf("cluster.tls without a client CA: %v", err)
	}

	c := newTestClusterWith(t, secure)
	l := c.leader(15 * time.Second)
	if got := sendConfirmed(t, c.member(l).STOMP, "tls", 10); got != 10 {
		t.Fatalf("%d of 10 sends confirmed over a TLS raft transport", got)
	}
	for i, b := range c.nodes {
		if _, ok := b.tls["raft"]; !ok {
			t.Errorf("n%d has no raft TLS", i+1)
		}
	}
}
