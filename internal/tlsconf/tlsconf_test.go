package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/tlsconf/tlstest"
)

// echoServer serves r's configuration on 127.0.0.1:0, echoing what each
// connection sends, until the test ends.
func echoServer(t *testing.T, r *Reloader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	tln := tls.NewListener(ln, r.TLSConfig())
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dial connects with cfg and completes the handshake.
func dial(addr string, cfg *tls.Config) (*tls.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A TLS 1.3 server reports a refused client certificate after the
	// client's handshake is done: one round trip shows it.
	if err := echo(c, "hello"); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// echo writes msg and reads it back.
func echo(c net.Conn, msg string) error {
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echo: got " + string(buf))
	}
	return nil
}

// files is a listener's certificate files in a test directory.
type files struct {
	dir, cert, key, ca string
}

func newFiles(t *testing.T, p tlstest.Pair) files {
	t.Helper()
	f := files{dir: t.TempDir()}
	f.cert, f.key = p.Write(t, f.dir, "server")
	f.ca = filepath.Join(f.dir, "clients.pem")
	return f
}

func (f files) settings() Settings {
	return Settings{Listener: "test", CertFile: f.cert, KeyFile: f.key, MinVersion: tls.VersionTLS12}
}

func sameCert(c *tls.Conn, p tlstest.Pair) bool {
	return bytes.Equal(c.ConnectionState().PeerCertificates[0].Raw, p.TLS.Certificate[0])
}

func TestReloadServesNewCertificateKeepsOldConnections(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	first, second := ca.Server(t, "127.0.0.1"), ca.Server(t, "127.0.0.1")
	f := newFiles(t, first)
	r, err := New(f.settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, r)
	client := &tls.Config{RootCAs: ca.Pool()}

	old, err := dial(addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if !sameCert(old, first) {
		t.Fatal("the first connection was not served the first certificate")
	}

	f2cert, f2key := second.Write(t, f.dir, "server")
	if f2cert != f.cert || f2key != f.key {
		t.Fatal("the files moved")
	}
	if err := r.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if !bytes.Equal(r.Certificate().Raw, second.TLS.Certificate[0]) {
		t.Error("Certificate() is not the new certificate after Reload")
	}
	nc, err := dial(addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !sameCert(nc, second) {
		t.Error("a connection after Reload was not served the new certificate")
	}
	if err := echo(old, "still there"); err != nil {
		t.Errorf("the connection from before the reload: %v", err)
	}
}

func TestFailedReloadKeepsThePair(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	first := ca.Server(t, "127.0.0.1")
	tests := []struct {
		name   string
		damage func(t *testing.T, f files)
		want   string
	}{
		{"key of another certificate", func(t *testing.T, f files) {
			tlstest.WriteFile(t, f.key, ca.Server(t, "127.0.0.1").KeyPEM)
		}, "does not match"},
		{"certificate removed", func(t *testing.T, f files) {
			if err := os.Remove(f.cert); err != nil {
				t.Fatal(err)
			}
		}, "server.crt"},
		{"half-written key", func(t *testing.T, f files) {
			tlstest.WriteFile(t, f.key, first.KeyPEM[:len(first.KeyPEM)/2])
		}, "server.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFiles(t, first)
			r, err := New(f.settings(), nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := echoServer(t, r)
			tt.damage(t, f)
			err = r.Reload()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Reload = %v, want an error containing %q", err, tt.want)
			}
			c, err := dial(addr, &tls.Config{RootCAs: ca.Pool()})
			if err != nil {
				t.Fatalf("a connection after the failed reload: %v", err)
			}
			defer c.Close()
			if !sameCert(c, first) {
				t.Error("a connection after the failed reload was not served the previous certificate")
			}
		})
	}
}

func TestWatchReloadsChangedFiles(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	first, second := ca.Server(t, "127.0.0.1"), ca.Server(t, "127.0.0.1")
	f := newFiles(t, first)
	r, err := New(f.settings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Watch(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()

	// First a certificate without its key: the reload fails and the old
	// pair stays; then the key arrives and the next poll loads both.
	tlstest.WriteFile(t, f.cert, second.CertPEM)
	time.Sleep(50 * time.Millisecond)
	if !bytes.Equal(r.Certificate().Raw, first.TLS.Certificate[0]) {
		t.Fatal("the watcher loaded a certificate without its key")
	}
	tlstest.WriteFile(t, f.key, second.KeyPEM)
	deadline := time.Now().Add(20 * time.Second)
	for !bytes.Equal(r.Certificate().Raw, second.TLS.Certificate[0]) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not load the replaced files")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClientAuth(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	server := ca.Server(t, "127.0.0.1")
	good, stranger := ca.Client(t, "app-1"), other.Client(t, "app-2")
	tests := []struct {
		auth       tls.ClientAuthType
		cert       *tlstest.Pair
		ok         bool
		clientName string
	}{
		{tls.RequireAndVerifyClientCert, nil, false, ""},
		{tls.RequireAndVerifyClientCert, &good, true, "app-1"},
		{tls.RequireAndVerifyClientCert, &stranger, false, ""},
		{tls.VerifyClientCertIfGiven, nil, true, ""},
		{tls.VerifyClientCertIfGiven, &good, true, "app-1"},
		{tls.VerifyClientCertIfGiven, &stranger, false, ""},
		{tls.NoClientCert, &good, true, ""},
	}
	for _, tt := range tests {
		name := tt.auth.String() + "/"
		switch tt.cert {
		case nil:
			name += "no certificate"
		case &good:
			name += "signed by the CA"
		default:
			name += "signed by another CA"
		}
		t.Run(name, func(t *testing.T) {
			f := newFiles(t, server)
			tlstest.WriteFile(t, f.ca, ca.PEM)
			s := f.settings()
			s.ClientAuth, s.ClientCAFile = tt.auth, f.ca
			r, err := New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := echoServer(t, r)
			cfg := &tls.Config{RootCAs: ca.Pool()}
			if tt.cert != nil {
				// Present it whatever CAs the server names (Go's client
				// would otherwise keep a stranger's certificate to itself).
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tt.cert.TLS, nil }
			}
			c, err := dial(addr, cfg)
			if tt.ok != (err == nil) {
				t.Fatalf("dial: %v, want success %v", err, tt.ok)
			}
			if c != nil {
				_ = c.Close()
			}
		})
	}
}

// A reload also replaces the client CA pool.
func TestReloadClientCAs(t *testing.T) {
	ca, next := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "next CA")
	f := newFiles(t, ca.Server(t, "127.0.0.1"))
	tlstest.WriteFile(t, f.ca, ca.PEM)
	s := f.settings()
	s.ClientAuth, s.ClientCAFile = tls.RequireAndVerifyClientCert, f.ca
	r, err := New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, r)
	cert := next.Client(t, "app").TLS
	client := &tls.Config{RootCAs: ca.Pool(),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}
	if c, err := dial(addr, client); err == nil {
		c.Close()
		t.Fatal("a client of the next CA was accepted before the CA file lists it")
	}
	tlstest.WriteFile(t, f.ca, append(append([]byte(nil), ca.PEM...), next.PEM...))
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	c, err := dial(addr, client)
	if err != nil {
		t.Fatalf("a client of the next CA after the reload: %v", err)
	}
	c.Close()
}

func TestMinVersion(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	server := ca.Server(t, "127.0.0.1")
	tests := []struct {
		name     string
		min      uint16
		clientMx uint16
		ok       bool
	}{
		{"1.2 refuses 1.1", tls.VersionTLS12, tls.VersionTLS11, false},
		{"1.2 accepts 1.2", tls.VersionTLS12, tls.VersionTLS12, true},
		{"unset is 1.2", 0, tls.VersionTLS11, false},
		{"1.0 is raised to 1.2", tls.VersionTLS10, tls.VersionTLS11, false},
		{"1.3 refuses 1.2", tls.VersionTLS13, tls.VersionTLS12, false},
		{"1.3 accepts 1.3", tls.VersionTLS13, tls.VersionTLS13, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFiles(t, server).settings()
			s.MinVersion = tt.min
			r, err := New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := echoServer(t, r)
			c, err := dial(addr, &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tt.clientMx})
			if tt.ok != (err == nil) {
				t.Fatalf("dial with TLS up to %s: %v, want success %v", tls.VersionName(tt.clientMx), err, tt.ok)
			}
			if c != nil {
				_ = c.Close()
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	f := newFiles(t, ca.Server(t, "127.0.0.1"))
	other := ca.Server(t, "127.0.0.1")
	_, otherKey := other.Write(t, f.dir, "other")
	empty := filepath.Join(f.dir, "empty.pem")
	tlstest.WriteFile(t, empty, []byte("not a certificate\n"))
	caFile := filepath.Join(f.dir, "ca.pem")
	tlstest.WriteFile(t, caFile, ca.PEM)
	missing := filepath.Join(f.dir, "missing.crt")
	tests := []struct {
		name string
		edit func(*Settings)
		want string // "" is no error
	}{
		{"good", func(*Settings) {}, ""},
		{"good with client CAs", func(s *Settings) { s.ClientCAFile, s.ClientAuth = caFile, tls.RequireAndVerifyClientCert }, ""},
		{"no cert_file", func(s *Settings) { s.CertFile = "" }, "cert_file is not set"},
		{"no key_file", func(s *Settings) { s.KeyFile = "" }, "key_file is not set"},
		{"missing cert_file", func(s *Settings) { s.CertFile = missing }, "cert_file: open " + missing},
		{"mismatched key", func(s *Settings) { s.KeyFile = otherKey }, "cert_file " + f.cert + " with key_file " + otherKey},
		{"key as certificate", func(s *Settings) { s.CertFile = f.key }, "cert_file " + f.key},
		{"CA file with no certificate", func(s *Settings) { s.ClientCAFile = empty }, "client_ca_file " + empty + " holds no PEM certificate"},
		{"missing CA file", func(s *Settings) { s.ClientCAFile = missing }, "client_ca_file: open " + missing},
		{"require without CA", func(s *Settings) { s.ClientAuth = tls.RequireAndVerifyClientCert }, "needs client_ca_file"},
		{"request without CA", func(s *Settings) { s.ClientAuth = tls.VerifyClientCertIfGiven }, "needs client_ca_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.settings()
			tt.edit(&s)
			err := s.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check() = %v, want an error containing %q", err, tt.want)
			}
			if tt.want != "" {
				if _, err := New(s, nil); err == nil {
					t.Error("New accepted settings that Check refuses")
				}
			}
		})
	}
}

func TestSelfSigned(t *testing.T) {
	certPEM, keyPEM, err := SelfSigned([]string{"localhost", "broker.example", "127.0.0.1", "::1"}, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("the certificate and key do not load as a pair: %v", err)
	}
	leaf := pair.Leaf
	if got := strings.Join(leaf.DNSNames, ","); got != "localhost,broker.example" {
		t.Errorf("DNS names %s", got)
	}
	if len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || !leaf.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("IP addresses %v", leaf.IPAddresses)
	}
	if leaf.Subject.CommonName != "localhost" {
		t.Errorf("common name %q", leaf.Subject.CommonName)
	}
	if d := time.Until(leaf.NotAfter); d < 47*time.Hour || d > 48*time.Hour {
		t.Errorf("valid until %v", leaf.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	for _, h := range []string{"localhost", "broker.example", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
			t.Errorf("verify for %s: %v", h, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "elsewhere.example", Roots: roots}); err == nil {
		t.Error("the certificate verifies for a host it does not name")
	}
	for _, bad := range [][]string{nil, {"localhost", " "}} {
		if _, _, err := SelfSigned(bad, time.Hour); err == nil {
			t.Errorf("SelfSigned(%q) made a certificate", bad)
		}
	}
}

// Sessions are not resumed (no session tickets): every connection makes a
// full handshake, with the certificate current at the time.
func TestNoSessionResumption(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			r, err := New(newFiles(t, ca.Server(t, "127.0.0.1")).settings(), nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := echoServer(t, r)
			client := &tls.Config{RootCAs: ca.Pool(), MaxVersion: v, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			for i := range 2 {
				c, err := dial(addr, client)
				if err != nil {
					t.Fatal(err)
				}
				resumed := c.ConnectionState().DidResume
				_ = c.Close()
				if resumed {
					t.Fatalf("connection %d resumed a session", i+1)
				}
			}
		})
	}
}
