package config

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sluicemq/sluice/internal/tlsconf"
)

// TLS is the [tls] section: the certificate, key and client authentication
// of every TLS listener (listeners.stomps, listeners.amqps,
// listeners.admin with admin_tls, listeners.websocket with
// websocket_tls, and a cluster's raft transport with cluster.tls). A
// [tls.listener.NAME] section overrides them for one listener, key by key.
type TLS struct {
	// CertFile is the PEM certificate the listeners serve, followed by
	// any intermediate certificates.
	CertFile string `toml:"cert_file"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `toml:"key_file"`
	// ClientCAFile holds the PEM CA certificates that client certificates
	// are verified against.
	ClientCAFile string `toml:"client_ca_file"`
	// ClientAuth is none, request or require (see TLSOverride).
	ClientAuth string `toml:"client_auth"`
	// MinVersion is the lowest TLS version accepted: "1.2" or "1.3".
	MinVersion string `toml:"min_version"`
	// Listener are the per-listener overrides by listener name: stomps,
	// amqps, admin, websocket or raft.
	Listener map[string]TLSOverride `toml:"listener"`
}

// settings are the keys of [tls] itself.
func (t *TLS) settings() TLSOverride {
	return TLSOverride{CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFile: t.ClientCAFile,
		ClientAuth: t.ClientAuth, MinVersion: t.MinVersion}
}

// TLSOverride is a [tls.listener.NAME] section, with the keys of [tls]. In an
// override, a key left out (empty) is taken from [tls]. Relative paths are
// relative to the configuration file's directory (Config.Dir).
type TLSOverride struct {
	// CertFile is the PEM certificate the listener serves, followed by
	// any intermediate certificates.
	CertFile string `toml:"cert_file"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `toml:"key_file"`
	// ClientCAFile holds the PEM CA certificates that client certificates
	// are verified against.
	ClientCAFile string `toml:"client_ca_file"`
	// ClientAuth is none (no client certificate asked for), request (a
	// client certificate is asked for; one that is presented must verify
	// against ClientCAFile) or require (a client without a certificate
	// that verifies is refused).
	ClientAuth string `toml:"client_auth"`
	// MinVersion is the lowest TLS version accepted: "1.2" or "1.3".
	MinVersion string `toml:"min_version"`
}

// TLSListenerNames are the listeners that can serve TLS, the NAMEs of
// [tls.listener.NAME].
func TLSListenerNames() []string { return []string{"stomps", "amqps", "admin", "websocket", "raft"} }

// tlsListenerList is TLSListenerNames for an error message: "stomps,
// amqps, admin, websocket or raft".
func tlsListenerList() string {
	n := TLSListenerNames()
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// defaultTLS is [tls] with nothing configured.
func defaultTLS() TLS {
	return TLS{ClientAuth: "none", MinVersion: "1.2", Listener: map[string]TLSOverride{}}
}

// TLSListeners returns the names of the listeners that serve TLS in this
// configuration: stomps and amqps when they have an address, admin when it
// has one and admin_tls is set, websocket when it has one and
// websocket_tls is set.
func (c *Config) TLSListeners() []string {
	var out []string
	if c.Listeners.STOMPS != "" {
		out = append(out, "stomps")
	}
	if c.Listeners.AMQPS != "" {
		out = append(out, "amqps")
	}
	if c.Listeners.AdminTLS && c.Listeners.Admin != "" {
		out = append(out, "admin")
	}
	if c.Listeners.WebSocketTLS && c.Listeners.WebSocket != "" {
		out = append(out, "websocket")
	}
	if c.Cluster != nil && c.Cluster.TLS {
		out = append(out, "raft")
	}
	return out
}

// ListenerTLS returns the TLS settings of the listener name (stomps,
// amqps, admin, websocket, raft): [tls] with [tls.listener.NAME] over it,
// paths joined to Dir. It checks the values of client_auth and
// min_version, not the files (Validate does). The raft transport's
// (cluster.tls) always requires and verifies the peer's certificate,
// against client_ca_file, whatever client_auth says.
func (c *Config) ListenerTLS(name string) (tlsconf.Settings, error) {
	if !slices.Contains(TLSListenerNames(), name) {
		return tlsconf.Settings{}, fmt.Errorf("no TLS listener %q: want %s", name, tlsListenerList())
	}
	m := c.TLS.settings()
	if o, ok := c.TLS.Listener[name]; ok {
		for _, f := range []struct {
			dst *string
			v   string
		}{
			{&m.CertFile, o.CertFile}, {&m.KeyFile, o.KeyFile}, {&m.ClientCAFile, o.ClientCAFile},
			{&m.ClientAuth, o.ClientAuth}, {&m.MinVersion, o.MinVersion},
		} {
			if f.v != "" {
				*f.dst = f.v
			}
		}
	}
	s := tlsconf.Settings{
		Listener:     name,
		CertFile:     c.path(m.CertFile),
		KeyFile:      c.path(m.KeyFile),
		ClientCAFile: c.path(m.ClientCAFile),
	}
	var err error
	if s.ClientAuth, err = parseClientAuth(m.ClientAuth); err != nil {
		return s, err
	}
	if name == "raft" {
		s.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if s.MinVersion, err = parseTLSVersion(m.MinVersion); err != nil {
		return s, err
	}
	return s, nil
}

// path resolves a file name of the configuration: relative to Dir.
func (c *Config) path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Dir == "" {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func parseClientAuth(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return tls.NoClientCert, nil
	case "request":
		return tls.VerifyClientCertIfGiven, nil
	case "require":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("client_auth %q: want none, request or require", s)
}

func parseTLSVersion(s string) (uint16, error) {
	switch s {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	case "1.0", "1.1":
		return 0, fmt.Errorf("min_version %q: TLS versions below 1.2 are refused; want 1.2 or 1.3", s)
	}
	return 0, fmt.Errorf("min_version %q: want 1.2 or 1.3", s)
}

// validateTLS checks [tls], its overrides, and the files of every TLS
// listener that is enabled.
func (c *Config) validateTLS() []error {
	var errs []error
	check := func(section string, s TLSOverride) {
		if _, err := parseClientAuth(s.ClientAuth); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", section, err))
		}
		if _, err := parseTLSVersion(s.MinVersion); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", section, err))
		}
	}
	check("tls", c.TLS.settings())
	names := make([]string, 0, len(c.TLS.Listener))
	for name := range c.TLS.Listener {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(TLSListenerNames(), name) {
			errs = append(errs, fmt.Errorf("tls.listener.%s: no such TLS listener; want %s", name, tlsListenerList()))
			continue
		}
		check("tls.listener."+name, c.TLS.Listener[name])
	}
	if len(errs) > 0 {
		return errs // the files are checked once the values are right
	}
	for _, name := range c.TLSListeners() {
		key := "listeners." + name
		switch name {
		case "admin", "websocket":
			key = "listeners." + name + "_tls"
		case "raft":
			key = "cluster.tls"
			if s, err := c.ListenerTLS(name); err == nil && s.ClientCAFile == "" {
				errs = append(errs, fmt.Errorf("cluster.tls verifies every peer's certificate but has no client_ca_file: set tls.client_ca_file (or tls.listener.raft.client_ca_file) to the CA that signs the nodes' certificates"))
			}
		}
		s, err := c.ListenerTLS(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			continue
		}
		for _, f := range []struct{ key, v string }{{"cert_file", s.CertFile}, {"key_file", s.KeyFile}} {
			if f.v == "" {
				errs = append(errs, fmt.Errorf("%s serves TLS but has no %s: set tls.%s (or tls.listener.%s.%s)", key, f.key, f.key, name, f.key))
			}
		}
		if s.CertFile == "" || s.KeyFile == "" {
			continue
		}
		if err := s.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%s TLS: %w", key, err))
		}
	}
	return errs
}
