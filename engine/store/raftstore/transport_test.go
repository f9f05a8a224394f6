package raftstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/raftstore"
)

// testCA signs node certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// node returns the mutual TLS of a node whose certificate this CA signs,
// verifying peers against trust.
func (ca *testCA) node(t *testing.T, id string, trust *x509.CertPool) *raftstore.TLS {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: id},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &raftstore.TLS{
		Server: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: trust, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		Client: func(addr string) *tls.Config {
			host, _, _ := net.SplitHostPort(addr)
			return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: trust, ServerName: host, MinVersion: tls.VersionTLS12}
		},
	}
}

// Over mutual TLS three nodes replicate as over TCP; a node whose
// certificate another CA signed is added to the configuration but gets
// nothing, and a plain-text peer gets no answer.
func TestTLSTransport(t *testing.T) {
	ca, rogue := newTestCA(t, "cluster CA"), newTestCA(t, "another CA")
	c := newCluster(t, 3, func(o *raftstore.Options) { o.TLS = ca.node(t, o.NodeID, ca.pool) })
	l := c.leader(10 * time.Second)
	write(t, c.nodes[l], "tls", 20)
	for i, s := range c.nodes {
		waitFor(t, 10*time.Second, c.id(i)+" has the writes", func() bool { return has(s, "tls", 20) })
	}

	// A node with a certificate of another CA, trusting that CA.
	o := fast(raftstore.Options{NodeID: "n9", BindAddr: "127.0.0.1:0", DataDir: t.TempDir(), TLS: rogue.node(t, "n9", rogue.pool)})
	r, err := raftstore.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if err := c.nodes[l].AddVoter("n9", r.Addr(), 5*time.Second); err != nil {
		t.Fatalf("add n9 (a majority without it commits the change): %v", err)
	}
	write(t, c.nodes[l], "after", 5)
	time.Sleep(500 * time.Millisecond)
	if n := count(t, r); n != 0 {
		t.Errorf("the node of another CA holds %d keys", n)
	}

	// Plain text on a TLS raft port: the handshake fails, nothing answers.
	conn, err := net.DialTimeout("tcp", c.nodes[l].Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := conn.Read(make([]byte, 64)); n > 0 && err == nil {
		t.Errorf("a plain-text peer got %d bytes back", n)
	}
}

// A node may bind every interface when it advertises the address peers
// dial.
func TestTransportAdvertise(t *testing.T) {
	s := openSingle(t, t.TempDir(), func(o *raftstore.Options) { o.BindAddr, o.Advertise = "0.0.0.0:0", "127.0.0.1:0" })
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || strings.HasSuffix(s.Addr(), ":0") {
		t.Fatalf("advertised %s, want 127.0.0.1 and the bound port", s.Addr())
	}
	waitFor(t, 10*time.Second, "it leads", s.IsLeader)
	if err := s.Update(context.Background(), []store.Op{putOp("b", "k", "v")}); err != nil {
		t.Fatal(err)
	}
	_, err := raftstore.Open(raftstore.Options{NodeID: "x", BindAddr: "0.0.0.0:0", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "binds every interface") {
		t.Fatalf("0.0.0.0 without an advertised address: %v", err)
	}
}
