package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/go-amqp"
	"github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/tlsconf/tlstest"
)

// tlsSetup is a test's certificates: a CA and the server certificate for
// 127.0.0.1 it signed, in tls/server.crt and tls/server.key under dir, and
// a second CA for client certificates, in tls/clients.pem.
type tlsSetup struct {
	ca, clientCA       *tlstest.CA
	server             tlstest.Pair
	dir                string // the configuration's Dir
	cert, key          string // the server pair, relative to dir
	keyPath            string // the server key, absolute
	clientCAFileConfig string // the client CA file, relative to dir
}

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	s := &tlsSetup{ca: tlstest.NewCA(t, "test CA"), clientCA: tlstest.NewCA(t, "clients CA"), dir: t.TempDir()}
	if err := os.Mkdir(filepath.Join(s.dir, "tls"), 0o700); err != nil {
		t.Fatal(err)
	}
	s.server = s.ca.Server(t, "127.0.0.1", "localhost")
	_, s.keyPath = s.server.Write(t, filepath.Join(s.dir, "tls"), "server")
	s.cert, s.key = "tls/server.crt", "tls/server.key"
	s.clientCAFileConfig = "tls/clients.pem"
	tlstest.WriteFile(t, filepath.Join(s.dir, s.clientCAFileConfig), s.clientCA.PEM)
	return s
}

// config is the default configuration with every messaging listener, plain
// and TLS, on a free port of 127.0.0.1, admin off, and the certificate of s
// by paths relative to the configuration's directory.
func (s *tlsSetup) config(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Dir = s.dir
	cfg.Listeners = config.Listeners{STOMP: "127.0.0.1:0", AMQP: "127.0.0.1:0", STOMPS: "127.0.0.1:0", AMQPS: "127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = s.cert, s.key
	return cfg
}

// client is a TLS client configuration that trusts the test CA.
func (s *tlsSetup) client() *tls.Config {
	return &tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"}
}

// startTLS starts a broker with its log in the test's output on failure.
func startTLS(t *testing.T, cfg config.Config, opts startOptions) *Broker {
	t.Helper()
	if opts.tlsPoll == 0 {
		opts.tlsPoll = time.Hour
	}
	b, err := startWith(context.Background(), cfg, nil, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { shutdown(t, b) })
	return b
}

// dialSTOMP connects a go-stomp client over TLS to the broker's stomps
// listener.
func dialSTOMP(t *testing.T, b *Broker, cfg *tls.Config) (*stomp.Conn, *tls.Conn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", b.Addr("stomps").String(), cfg)
	if err != nil {
		return nil, nil, err
	}
	c, err := stomp.Connect(tc, stomp.ConnOpt.Host("/"))
	if err != nil {
		_ = tc.Close()
		return nil, nil, err
	}
	t.Cleanup(func() { _ = c.Disconnect(); _ = tc.Close() })
	return c, tc, nil
}

// stompRoundTrip sends body to queue on c and receives it back.
func stompRoundTrip(t *testing.T, c *stomp.Conn, queue, body string) {
	t.Helper()
	sub, err := c.Subscribe(queue, stomp.AckAuto)
	if err != nil {
		t.Fatalf("SUBSCRIBE %s: %v", queue, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.Send(queue, "text/plain", []byte(body), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND %s: %v", queue, err)
	}
	select {
	case m := <-sub.C:
		if m.Err != nil {
			t.Fatalf("MESSAGE: %v", m.Err)
		}
		if string(m.Body) != body {
			t.Fatalf("received %q, want %q", m.Body, body)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no MESSAGE on %s within 10s", queue)
	}
}

// dialAMQP connects a go-amqp client to addr (amqps:// or amqp://).
func dialAMQP(addr string, cfg *tls.Config) (*amqp.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return amqp.Dial(ctx, addr, &amqp.ConnOptions{TLSConfig: cfg})
}

// amqpRoundTrip sends body to queue over c and receives it back.
func amqpRoundTrip(t *testing.T, c *amqp.Conn, queue, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer func() { _ = sess.Close(ctx) }()
	snd, err := sess.NewSender(ctx, queue, nil)
	if err != nil {
		t.Fatalf("sender: %v", err)
	}
	if err := snd.Send(ctx, amqp.NewMessage([]byte(body)), nil); err != nil {
		t.Fatalf("send: %v", err)
	}
	rcv, err := sess.NewReceiver(ctx, queue, nil)
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if err := rcv.AcceptMessage(ctx, m); err != nil {
		t.Fatalf("accept: %v", err)
	}
	if string(m.GetData()) != body {
		t.Fatalf("received %q, want %q", m.GetData(), body)
	}
}

// STOMPS and AMQPS carry messages beside the plain listeners, and a
// message crosses from one to the other.
func TestTLSListenersSendAndReceive(t *testing.T) {
	s := newTLSSetup(t)
	b := startTLS(t, s.config(t), startOptions{})
	for _, name := range []string{"stomp", "stomps", "amqp", "amqps"} {
		if b.Addr(name) == nil {
			t.Fatalf("Addr(%q) = nil", name)
		}
	}
	if b.Addr("stomps").String() == b.Addr("stomp").String() || b.Addr("amqps").String() == b.Addr("amqp").String() {
		t.Fatal("a TLS listener shares the plain listener's address")
	}

	sc, tc, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatalf("STOMP over TLS: %v", err)
	}
	if v := tc.ConnectionState().Version; v < tls.VersionTLS12 {
		t.Errorf("negotiated %s", tls.VersionName(v))
	}
	stompRoundTrip(t, sc, "/queue/tls.stomp", "over stomps")

	ac, err := dialAMQP("amqps://"+b.Addr("amqps").String(), s.client())
	if err != nil {
		t.Fatalf("AMQP over TLS: %v", err)
	}
	defer ac.Close()
	amqpRoundTrip(t, ac, "tls.amqp", "over amqps")

	// Sent over STOMPS, received over plain AMQP.
	if err := sc.Send("/queue/tls.cross", "text/plain", []byte("across"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	plain, err := dialAMQP("amqp://"+b.Addr("amqp").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := plain.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "tls.cross", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A text/plain STOMP body is an AMQP string value (a JMS TextMessage).
	if m.Value != "across" {
		t.Fatalf("plain AMQP received %v (%v), want the text sent over STOMPS", m.Value, m.Data)
	}
	_ = rcv.AcceptMessage(ctx, m)
}

// Only a TLS listener can be on: the protocol's server is created for it.
func TestTLSListenerAlone(t *testing.T) {
	s := newTLSSetup(t)
	cfg := s.config(t)
	cfg.Listeners = config.Listeners{STOMPS: "127.0.0.1:0", AMQPS: "127.0.0.1:0"}
	b := startTLS(t, cfg, startOptions{})
	if b.Addr("stomp") != nil || b.Addr("amqp") != nil {
		t.Fatalf("plain listeners on: %v %v", b.Addr("stomp"), b.Addr("amqp"))
	}
	sc, _, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatal(err)
	}
	stompRoundTrip(t, sc, "/queue/alone", "x")
	ac, err := dialAMQP("amqps://"+b.Addr("amqps").String(), s.client())
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	amqpRoundTrip(t, ac, "alone.amqp", "y")
}

// A plain-text client on a TLS port gets no protocol answer and is
// disconnected; the broker carries on serving TLS and plain clients.
func TestPlainTextClientOnTLSPort(t *testing.T) {
	s := newTLSSetup(t)
	b := startTLS(t, s.config(t), startOptions{})
	for _, tt := range []struct {
		listener string
		hello    string
		answer   string // what a plain listener would answer
	}{
		{"stomps", "CONNECT\naccept-version:1.2\nhost:/\n\n\x00", "CONNECTED"},
		{"amqps", "AMQP\x00\x01\x00\x00", "AMQP"},
	} {
		t.Run(tt.listener, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", b.Addr(tt.listener).String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write([]byte(tt.hello)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the broker kept a plain-text client on %s open (read %q)", tt.listener, got)
			}
			if bytes.Contains(got, []byte(tt.answer)) {
				t.Errorf("a plain-text client on %s was answered %q", tt.listener, got)
			}
		})
	}
	sc, _, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatalf("STOMP over TLS after the plain-text clients: %v", err)
	}
	stompRoundTrip(t, sc, "/queue/after.plain", "still up")
	ac, err := dialAMQP("amqps://"+b.Addr("amqps").String(), s.client())
	if err != nil {
		t.Fatalf("AMQP over TLS after the plain-text clients: %v", err)
	}
	defer ac.Close()
	amqpRoundTrip(t, ac, "after.plain", "still up")
}

// peerCert is the certificate a new TLS connection to addr is served.
func peerCert(t *testing.T, addr string, cfg *tls.Config) *x509.Certificate {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

func isCert(c *x509.Certificate, p tlstest.Pair) bool {
	return bytes.Equal(c.Raw, p.TLS.Certificate[0])
}

// ReloadTLS serves replaced files to new connections; connections made
// before keep working; a reload that fails keeps the certificate.
func TestReloadTLS(t *testing.T) {
	s := newTLSSetup(t)
	b := startTLS(t, s.config(t), startOptions{})
	old, _, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatal(err)
	}
	oldAMQP, err := dialAMQP("amqps://"+b.Addr("amqps").String(), s.client())
	if err != nil {
		t.Fatal(err)
	}
	defer oldAMQP.Close()
	stompRoundTrip(t, old, "/queue/reload.before", "before")

	next := s.ca.Server(t, "127.0.0.1")
	next.Write(t, filepath.Join(s.dir, "tls"), "server")
	if err := b.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS: %v", err)
	}
	for _, name := range []string{"stomps", "amqps"} {
		if !isCert(peerCert(t, b.Addr(name).String(), s.client()), next) {
			t.Errorf("a new connection to %s after ReloadTLS was not served the new certificate", name)
		}
	}
	stompRoundTrip(t, old, "/queue/reload.after", "after")
	amqpRoundTrip(t, oldAMQP, "reload.after.amqp", "after")
	fresh, _, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatal(err)
	}
	stompRoundTrip(t, fresh, "/queue/reload.fresh", "fresh")

	// A key that is not the certificate's: the reload fails, naming the
	// files, and the current certificate stays.
	tlstest.WriteFile(t, s.keyPath, s.ca.Server(t, "127.0.0.1").KeyPEM)
	err = b.ReloadTLS()
	if err == nil || !strings.Contains(err.Error(), s.keyPath) || !strings.Contains(err.Error(), "stomps") {
		t.Fatalf("ReloadTLS with a mismatched key = %v, want an error naming stomps and %s", err, s.keyPath)
	}
	if !isCert(peerCert(t, b.Addr("stomps").String(), s.client()), next) {
		t.Error("a failed reload changed the certificate served")
	}
	stompRoundTrip(t, old, "/queue/reload.failed", "after the failed reload")
}

// The file watcher reloads replaced files by itself.
func TestReloadTLSByWatcher(t *testing.T) {
	s := newTLSSetup(t)
	b := startTLS(t, s.config(t), startOptions{tlsPoll: 20 * time.Millisecond})
	old, _, err := dialSTOMP(t, b, s.client())
	if err != nil {
		t.Fatal(err)
	}
	next := s.ca.Server(t, "127.0.0.1")
	next.Write(t, filepath.Join(s.dir, "tls"), "server")
	deadline := time.Now().Add(30 * time.Second)
	for !isCert(peerCert(t, b.Addr("stomps").String(), s.client()), next) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not reload the replaced certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stompRoundTrip(t, old, "/queue/watched", "the old connection still works")
}

// client_auth = "require" refuses a client without a certificate, or with
// one of another CA, and accepts one the client CA signed.
func TestTLSClientAuthRequire(t *testing.T) {
	s := newTLSSetup(t)
	cfg := s.config(t)
	cfg.TLS.ClientAuth, cfg.TLS.ClientCAFile = "require", s.clientCAFileConfig
	b := startTLS(t, cfg, startOptions{})
	good := s.clientCA.Client(t, "app-1")
	stranger := s.ca.Client(t, "app-2") // the server's CA, not the clients'
	withCert := func(p *tlstest.Pair) *tls.Config {
		c := s.client()
		if p != nil {
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &p.TLS, nil }
		}
		return c
	}
	for _, tt := range []struct {
		name string
		cert *tlstest.Pair
		ok   bool
	}{
		{"no certificate", nil, false},
		{"another CA", &stranger, false},
		{"the client CA", &good, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, _, err := dialSTOMP(t, b, withCert(tt.cert))
			if tt.ok != (err == nil) {
				t.Fatalf("STOMP over TLS: %v, want success %v", err, tt.ok)
			}
			if sc != nil {
				stompRoundTrip(t, sc, "/queue/mtls", "with a client certificate")
			}
			ac, err := dialAMQP("amqps://"+b.Addr("amqps").String(), withCert(tt.cert))
			if tt.ok != (err == nil) {
				t.Fatalf("AMQP over TLS: %v, want success %v", err, tt.ok)
			}
			if ac != nil {
				amqpRoundTrip(t, ac, "mtls", "with a client certificate")
				_ = ac.Close()
			}
		})
	}
}

// A client that offers TLS 1.1 at most is refused; with min_version 1.3,
// so is one that offers 1.2 at most.
func TestTLSMinVersion(t *testing.T) {
	s := newTLSSetup(t)
	for _, tt := range []struct {
		min       string
		clientMax uint16
		ok        bool
	}{
		{"1.2", tls.VersionTLS11, false},
		{"1.2", tls.VersionTLS12, true},
		{"1.3", tls.VersionTLS12, false},
		{"1.3", tls.VersionTLS13, true},
	} {
		t.Run(tt.min+"/"+tls.VersionName(tt.clientMax), func(t *testing.T) {
			cfg := s.config(t)
			cfg.TLS.MinVersion = tt.min
			b := startTLS(t, cfg, startOptions{})
			client := s.client()
			client.MinVersion, client.MaxVersion = tls.VersionTLS10, tt.clientMax
			_, _, err := dialSTOMP(t, b, client)
			if tt.ok != (err == nil) {
				t.Fatalf("STOMP over TLS up to %s: %v, want success %v", tls.VersionName(tt.clientMax), err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "version") {
				t.Errorf("refused with %v, want a protocol version error", err)
			}
		})
	}
}

// With admin_tls the admin listener is HTTPS (HTTP/2 and HTTP/1.1) with the
// same certificate handling; plain HTTP gets nothing useful from it.
func TestAdminOverHTTPS(t *testing.T) {
	s := newTLSSetup(t)
	cfg := s.config(t)
	cfg.Listeners = config.Listeners{Admin: "127.0.0.1:0", AdminTLS: true}
	b := startTLS(t, cfg, startOptions{})
	url := "https://" + b.Addr("admin").String() + "/healthz"
	for _, tt := range []struct {
		name  string
		h2    bool
		proto string
	}{{"HTTP/2", true, "HTTP/2.0"}, {"HTTP/1.1", false, "HTTP/1.1"}} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: s.client(), ForceAttemptHTTP2: tt.h2}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			resp, err := hc.Get(url)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Proto != tt.proto {
				t.Errorf("GET %s = %s %s, want 200 over %s", url, resp.Proto, resp.Status, tt.proto)
			}
		})
	}
	if resp, err := client.Get("http://" + b.Addr("admin").String() + "/healthz"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP on the HTTPS admin listener was answered 200")
		}
		resp.Body.Close()
	}
	next := s.ca.Server(t, "127.0.0.1")
	next.Write(t, filepath.Join(s.dir, "tls"), "server")
	if err := b.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if !isCert(peerCert(t, b.Addr("admin").String(), s.client()), next) {
		t.Error("the admin listener was not reloaded")
	}
}

// A TLS listener without a certificate stops Start with an error naming
// the listener and the missing key.
func TestStartTLSWithoutCertificate(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.AMQPS = "127.0.0.1:0"
	_, err := Start(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "listeners.amqps") || !strings.Contains(err.Error(), "cert_file") {
		t.Fatalf("Start = %v, want an error naming listeners.amqps and cert_file", err)
	}
}

// Shutdown closes the TLS listeners and their connections with the plain
// ones: one server serves both.
func TestShutdownClosesTLSListeners(t *testing.T) {
	s := newTLSSetup(t)
	b, err := startWith(context.Background(), s.config(t), nil, startOptions{tlsPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for _, name := range []string{"stomp", "stomps", "amqp", "amqps"} {
		c, err := net.DialTimeout("tcp", b.Addr(name).String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if strings.HasSuffix(name, "s") {
			tc := tls.Client(c, s.client())
			if err := tc.Handshake(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c = tc
		}
		conns = append(conns, c)
	}
	addrs := map[string]string{}
	for _, name := range []string{"stomp", "stomps", "amqp", "amqps"} {
		addrs[name] = b.Addr(name).String()
	}
	shutdown(t, b)
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("connection %d stayed open after Shutdown", i)
			}
		}
	}
	for name, addr := range addrs {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Shutdown", name)
		}
	}
}
