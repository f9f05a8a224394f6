package netserve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
)

// testCert makes a certificate for cn signed by parent (self-signed when
// parent is nil), usable as a CA, a server (127.0.0.1) and a client.
func testCert(t *testing.T, cn string, parent *tls.Certificate) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  parent == nil,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// tlsPair returns the two ends of a TLS connection over TCP on 127.0.0.1;
// the server end is the *tls.Conn a listener hands over, before its
// handshake.
func tlsPair(t *testing.T, server, client *tls.Config) (srv net.Conn, cli *tls.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := tls.NewListener(ln, server).Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	raw, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	client = client.Clone()
	client.ServerName = "127.0.0.1"
	cli = tls.Client(raw, client)
	srv = <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = srv.Close(); _ = cli.Close() })
	_ = srv.SetDeadline(time.Now().Add(10 * time.Second))
	_ = cli.SetDeadline(time.Now().Add(10 * time.Second))
	return srv, cli
}

func TestPeerCertificate(t *testing.T) {
	ca := testCert(t, "test CA", nil)
	serverCert, clientCert := testCert(t, "server", &ca), testCert(t, "app-1", &ca)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	tests := []struct {
		name   string
		auth   tls.ClientAuthType
		client []tls.Certificate
		want   string // the certificate's common name; "" is none
	}{
		{"required and given", tls.RequireAndVerifyClientCert, []tls.Certificate{clientCert}, "app-1"},
		{"requested and given", tls.VerifyClientCertIfGiven, []tls.Certificate{clientCert}, "app-1"},
		{"requested, none", tls.VerifyClientCertIfGiven, nil, ""},
		{"not asked for", tls.NoClientCert, []tls.Certificate{clientCert}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, cli := tlsPair(t,
				&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tt.auth, ClientCAs: pool},
				&tls.Config{RootCAs: pool, Certificates: tt.client})
			clientDone := make(chan error, 1)
			go func() { clientDone <- cli.Handshake() }()
			cert, err := PeerCertificate(context.Background(), srv)
			if err != nil {
				t.Fatalf("PeerCertificate: %v", err)
			}
			got := ""
			if cert != nil {
				got = cert.Subject.CommonName
			}
			if got != tt.want {
				t.Errorf("PeerCertificate = %q, want %q", got, tt.want)
			}
			if err := <-clientDone; err != nil {
				t.Errorf("client handshake: %v", err)
			}
		})
	}

	t.Run("plain connection", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		if cert, err := PeerCertificate(context.Background(), a); cert != nil || err != nil {
			t.Errorf("PeerCertificate of a plain connection = %v, %v; want nil, nil", cert, err)
		}
	})

	t.Run("failed handshake", func(t *testing.T) {
		srv, cli := tlsPair(t,
			&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool},
			&tls.Config{RootCAs: pool})
		go func() { _ = cli.Handshake() }()
		if cert, err := PeerCertificate(context.Background(), srv); cert != nil || err == nil {
			t.Errorf("PeerCertificate without the required certificate = %v, %v; want an error", cert, err)
		}
	})
}

// CloseWrite lets the peer read everything written, then the end of the
// stream, over TCP and TLS alike.
func TestCloseWrite(t *testing.T) {
	ca := testCert(t, "test CA", nil)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	srvTLS, cliTLS := tlsPair(t, &tls.Config{Certificates: []tls.Certificate{testCert(t, "server", &ca)}}, &tls.Config{RootCAs: pool})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cliTCP, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cliTCP.Close()
	srvTCP, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srvTCP.Close()
	_ = cliTCP.SetDeadline(time.Now().Add(10 * time.Second))

	for _, tt := range []struct {
		name     string
		srv, cli net.Conn
	}{{"tcp", srvTCP, cliTCP}, {"tls", srvTLS, cliTLS}} {
		t.Run(tt.name, func(t *testing.T) {
			go func() {
				_, _ = tt.srv.Write([]byte("ERROR\n\n\x00"))
				CloseWrite(tt.srv)
			}()
			got, err := io.ReadAll(tt.cli)
			if err != nil || string(got) != "ERROR\n\n\x00" {
				t.Errorf("the peer read %q, %v; want the frame and the end of the stream", got, err)
			}
		})
	}
}
