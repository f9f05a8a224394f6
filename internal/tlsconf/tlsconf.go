// Package tlsconf builds the TLS configuration of one of Sluice's listeners
// from certificate, key and CA files, and reloads those files while the
// broker runs.
//
// A Reloader holds the current certificate pair and client CA pool behind
// an atomic pointer. The *tls.Config it hands out (TLSConfig) never changes:
// its GetConfigForClient serves each new handshake from whatever is current,
// so Reload swaps the files in for new connections only. Connections that
// are already established keep the certificate they were handshaken with and
// are never dropped by a reload; a reload that fails (a missing file, a key
// that does not match its certificate, a CA file with no certificate) logs
// an error and keeps the previous pair, so new connections keep working too.
//
// Watch polls the files' modification times and sizes and reloads when they
// change; the broker also reloads every listener on SIGHUP.
//
// The protocol servers are given the *tls.Conn that tls.NewListener
// accepts. Its handshake runs on the connection's first Read (or Write);
// protocol code that needs the client's certificate calls
// netserve.PeerCertificate, which completes the handshake first.
package tlsconf

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// PollInterval is how often Watch looks at the files when the broker runs
// it.
const PollInterval = 5 * time.Second

// Settings are one listener's TLS settings with every path resolved (the
// configuration makes relative paths relative to its file's directory).
type Settings struct {
	// Listener names the listener (stomps, amqps, admin) in logs.
	Listener string
	// CertFile holds the PEM certificate, followed by any intermediate
	// certificates to send with it.
	CertFile string
	// KeyFile holds the PEM private key of the certificate.
	KeyFile string
	// ClientCAFile holds the PEM certificates that client certificates
	// are verified against; "" is none.
	ClientCAFile string
	// ClientAuth is tls.NoClientCert, tls.VerifyClientCertIfGiven (a
	// certificate a client presents must verify) or
	// tls.RequireAndVerifyClientCert. Both of the latter need
	// ClientCAFile.
	ClientAuth tls.ClientAuthType
	// MinVersion is tls.VersionTLS12 or tls.VersionTLS13; anything lower
	// is raised to TLS 1.2.
	MinVersion uint16
	// NextProtos are the ALPN protocols offered (the admin listener's
	// "h2" and "http/1.1"); nil offers none.
	NextProtos []string
}

// verifies reports whether ClientAuth verifies client certificates.
func (s *Settings) verifies() bool {
	return s.ClientAuth == tls.VerifyClientCertIfGiven || s.ClientAuth == tls.RequireAndVerifyClientCert
}

// Check reads and parses the files once, as a Reloader would, and returns
// what is wrong with them; each error names the key and the file.
func (s Settings) Check() error {
	_, err := load(&s)
	return err
}

// material is what one successful load produced.
type material struct {
	pair *tls.Certificate
	pool *x509.CertPool // client CAs; nil without client_ca_file
	cfg  *tls.Config    // served to the handshakes that start while it is current
}

// fileStamp is what Watch compares: a file's modification time and size,
// or that it could not be looked at.
type fileStamp struct {
	mod  int64
	size int64
	err  bool
}

// Reloader serves a listener's TLS configuration from files that it
// reloads on request. It is safe for concurrent use. Sessions are not
// resumed: every connection makes a full handshake.
type Reloader struct {
	s    Settings
	log  *slog.Logger
	base *tls.Config
	cur  atomic.Pointer[material]

	mu   sync.Mutex   // serializes Reload
	seen [3]fileStamp // the files as they were when last read
}

// New loads the files of s and returns a Reloader serving them. log may be
// nil.
func New(s Settings, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.MinVersion < tls.VersionTLS12 {
		s.MinVersion = tls.VersionTLS12
	}
	r := &Reloader{s: s, log: log.With(slog.String("listener", s.Listener))}
	r.base = &tls.Config{
		MinVersion: s.MinVersion,
		// No session tickets. In TLS 1.3 they arrive after the handshake,
		// while the client may already be writing, and a client that
		// reads and writes one OpenSSL connection from two threads
		// (stomp.py, whose receiver thread reads while the application
		// sends CONNECT) then stalls now and then: 7 of 80 interop runs
		// with tickets, none of 80 without. Broker connections are
		// long-lived, so resumption saves little; RabbitMQ (Erlang's
		// TLS) sends no tickets by default either.
		SessionTicketsDisabled: true,
		ClientAuth:             s.ClientAuth,
		NextProtos:             s.NextProtos,
		GetCertificate:         r.getCertificate,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().cfg, nil
		},
	}
	if err := r.reload(); err != nil {
		return nil, fmt.Errorf("tls of listener %s: %w", s.Listener, err)
	}
	return r, nil
}

// TLSConfig returns the configuration to give tls.NewListener (or an
// http.Server). It is the same value for the Reloader's whole life; what it
// serves follows Reload. Do not modify it.
func (r *Reloader) TLSConfig() *tls.Config { return r.base }

// ClientConfig returns the configuration for dialing a peer that serves
// the name serverName, for a cluster's nodes, which all hold certificates
// of one CA: the current pair is presented as the client certificate, and
// the peer's is verified against the client CA file. It is made anew for
// each call, so a reload applies to the next dial.
func (r *Reloader) ClientConfig(serverName string) *tls.Config {
	m := r.cur.Load()
	return &tls.Config{MinVersion: r.s.MinVersion, Certificates: []tls.Certificate{*m.pair}, RootCAs: m.pool,
		ServerName: serverName, SessionTicketsDisabled: true}
}

// Certificate returns the certificate new handshakes are served, parsed.
func (r *Reloader) Certificate() *x509.Certificate { return r.cur.Load().pair.Leaf }

// getCertificate serves the current pair.
func (r *Reloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load().pair, nil
}

// Reload reads the files again. On success new handshakes get the new
// certificate and client CA pool; on failure it logs the error and keeps
// serving the previous ones. Established connections are not affected
// either way.
func (r *Reloader) Reload() error {
	if err := r.reload(); err != nil {
		r.log.Error("TLS reload failed; still serving the previous certificate", slog.Any("err", err))
		return fmt.Errorf("reload tls of listener %s: %w", r.s.Listener, err)
	}
	return nil
}

func (r *Reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Look at the files before reading them: a change made while they
	// are read shows at the next poll.
	r.seen = stamps(&r.s)
	m, err := load(&r.s)
	if err != nil {
		return err
	}
	cfg := r.base.Clone()
	cfg.GetConfigForClient = nil
	cfg.ClientCAs = m.pool
	m.cfg = cfg
	r.cur.Store(m)
	leaf := m.pair.Leaf
	sum := sha256.Sum256(leaf.Raw)
	r.log.Info("TLS certificate loaded", slog.String("subject", leaf.Subject.String()),
		slog.Time("not_after", leaf.NotAfter), slog.String("sha256", hex.EncodeToString(sum[:])))
	if time.Now().After(leaf.NotAfter) {
		r.log.Warn("TLS certificate has expired", slog.String("cert_file", r.s.CertFile), slog.Time("not_after", leaf.NotAfter))
	}
	return nil
}

// Watch reloads the files whenever their modification time or size
// changes, looking every interval, until ctx ends. A file that is being
// replaced may be read half-written: that reload fails, is logged, and the
// next change (the write completing) is tried again.
func (r *Reloader) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		changed := stamps(&r.s) != r.seen
		r.mu.Unlock()
		if changed {
			r.log.Info("TLS files changed; reloading")
			_ = r.Reload()
		}
	}
}

// stamps looks at the certificate, key and CA files.
func stamps(s *Settings) [3]fileStamp {
	var out [3]fileStamp
	for i, f := range []string{s.CertFile, s.KeyFile, s.ClientCAFile} {
		if f == "" {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			out[i] = fileStamp{err: true}
			continue
		}
		out[i] = fileStamp{mod: fi.ModTime().UnixNano(), size: fi.Size()}
	}
	return out
}

// load reads the files of s; the caller sets the material's cfg.
func load(s *Settings) (*material, error) {
	if s.CertFile == "" {
		return nil, errors.New("cert_file is not set")
	}
	if s.KeyFile == "" {
		return nil, errors.New("key_file is not set")
	}
	certPEM, err := os.ReadFile(s.CertFile)
	if err != nil {
		return nil, fmt.Errorf("cert_file: %w", err)
	}
	keyPEM, err := os.ReadFile(s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("key_file: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("cert_file %s with key_file %s: %w", s.CertFile, s.KeyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cert_file %s: %w", s.CertFile, err)
		}
	}
	m := &material{pair: &pair}
	if s.ClientCAFile != "" {
		caPEM, err := os.ReadFile(s.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("client_ca_file %s holds no PEM certificate", s.ClientCAFile)
		}
		m.pool = pool
	} else if s.verifies() {
		return nil, errors.New("client_auth request or require needs client_ca_file, the CA certificates that client certificates are verified against")
	}
	return m, nil
}
