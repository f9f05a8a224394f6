package stomp_test

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
	"testing"
	"time"

	gostomp "github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/stomp"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a certificate for cn: a server one for 127.0.0.1, or a
// client one.
func (ca *testCA) issue(t *testing.T, cn string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Over TLS, a client that sends no login authenticates with the client
// certificate the handshake verified, as the user with its subject; a
// login, when sent, wins over the certificate; a certificate no user has
// is refused with the same generic ERROR as a wrong password.
func TestClientCertificateAuthentication(t *testing.T) {
	ca := newTestCA(t)
	opts := realmOptions(t)
	opts.Users = append(opts.Users, security.User{Name: "svc-a", CertificateSubject: "CN=svc-a", Roles: []string{"trader"}})
	realm := newRealm(t, opts)
	eng, err := engine.New(context.Background(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateDestination(context.Background(), ordersA); err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "127.0.0.1", true)},
		ClientAuth:   tls.VerifyClientCertIfGiven, ClientCAs: ca.pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := stomp.NewServer(eng, stomp.Options{Realm: realm})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = eng.Close()
	})

	svcA, stranger := ca.issue(t, "svc-a", false), ca.issue(t, "stranger", false)
	cases := []struct {
		name  string
		certs []tls.Certificate
		login []func(*gostomp.Conn) error
		user  string // "" is refused
	}{
		{"certificate", []tls.Certificate{svcA}, nil, "svc-a"},
		{"login wins over the certificate", []tls.Certificate{svcA}, []func(*gostomp.Conn) error{gostomp.ConnOpt.Login("bob", bobPW)}, "bob"},
		{"certificate of no user", []tls.Certificate{stranger}, nil, ""},
		{"no certificate, no login", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.pool, Certificates: tc.certs, ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c, err := gostomp.Connect(nc, append(tc.login, gostomp.ConnOpt.Header("client-id", tc.name))...)
			if tc.user == "" {
				if got := errText(err); got != security.ErrAuthentication.Error() {
					t.Fatalf("got %q, want the generic refusal", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.MustDisconnect()
			if err := c.Send("/queue/orders.a", "text/plain", []byte("m"), gostomp.SendOpt.Receipt); err != nil {
				t.Fatalf("send as %s: %v", tc.user, err)
			}
			var user string
			for _, ci := range eng.Connections() {
				if ci.ClientID == tc.name {
					user = ci.User
				}
			}
			if user != tc.user {
				t.Fatalf("connected as %q, want %q", user, tc.user)
			}
		})
	}
}
