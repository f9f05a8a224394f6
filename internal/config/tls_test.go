package config

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/internal/tlsconf/tlstest"
)

// tlsFiles writes a server pair (server.crt, server.key), a second pair's
// key (other.key), a CA file (ca.pem) and a PEM file with no certificate
// (empty.pem) into tls/ under a temporary directory, which it returns.
func tlsFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sub := filepath.Join(dir, "tls")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	ca := tlstest.NewCA(t, "test CA")
	ca.Server(t, "localhost").Write(t, sub, "server")
	ca.Server(t, "localhost").Write(t, sub, "other")
	tlstest.WriteFile(t, filepath.Join(sub, "ca.pem"), ca.PEM)
	tlstest.WriteFile(t, filepath.Join(sub, "empty.pem"), []byte("# no certificate here\n"))
	return dir
}

func TestValidateTLS(t *testing.T) {
	dir := tlsFiles(t)
	good := func(c *Config) {
		c.Dir = dir
		c.TLS.CertFile, c.TLS.KeyFile = "tls/server.crt", "tls/server.key"
	}
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string // substrings of the error; none means valid
	}{
		{"no TLS listener", func(c *Config) {}, nil},
		{"no TLS listener, files unset", func(c *Config) { c.TLS.CertFile = "/nonexistent.crt" }, nil},
		{"stomps and amqps", func(c *Config) {
			good(c)
			c.Listeners.STOMPS, c.Listeners.AMQPS = "127.0.0.1:61614", "127.0.0.1:5671"
		}, nil},
		{"admin over https", func(c *Config) { good(c); c.Listeners.AdminTLS = true }, nil},
		{"admin_tls without an admin address", func(c *Config) { c.Listeners.AdminTLS, c.Listeners.Admin = true, "" }, nil},
		{"absolute paths", func(c *Config) {
			c.TLS.CertFile, c.TLS.KeyFile = filepath.Join(dir, "tls/server.crt"), filepath.Join(dir, "tls/server.key")
			c.Listeners.STOMPS = "127.0.0.1:0"
		}, nil},
		{"client certificates required", func(c *Config) {
			good(c)
			c.TLS.ClientAuth, c.TLS.ClientCAFile = "require", "tls/ca.pem"
			c.Listeners.AMQPS = "127.0.0.1:0"
		}, nil},
		{"TLS 1.3", func(c *Config) { good(c); c.TLS.MinVersion = "1.3"; c.Listeners.AMQPS = "127.0.0.1:0" }, nil},
		{"stomps without certificate", func(c *Config) { c.Listeners.STOMPS = "127.0.0.1:61614" },
			[]string{"listeners.stomps serves TLS but has no cert_file: set tls.cert_file (or tls.listener.stomps.cert_file)",
				"listeners.stomps serves TLS but has no key_file"}},
		{"admin_tls without certificate", func(c *Config) { c.Listeners.AdminTLS = true },
			[]string{"listeners.admin_tls serves TLS but has no cert_file", "tls.listener.admin.key_file"}},
		{"websocket_tls without certificate", func(c *Config) { c.Listeners.WebSocketTLS = true },
			[]string{"listeners.websocket_tls serves TLS but has no cert_file", "tls.listener.websocket.key_file"}},
		{"websocket_tls without a websocket listener", func(c *Config) { c.Listeners.WebSocketTLS, c.Listeners.WebSocket = true, "" }, nil},
		{"websocket_tls with a certificate", func(c *Config) { good(c); c.Listeners.WebSocketTLS = true }, nil},
		{"override for one listener only", func(c *Config) {
			c.Dir = dir
			c.TLS.Listener["amqps"] = TLSOverride{CertFile: "tls/server.crt", KeyFile: "tls/server.key"}
			c.Listeners.STOMPS, c.Listeners.AMQPS = "127.0.0.1:0", "127.0.0.1:0"
		}, []string{"listeners.stomps serves TLS but has no cert_file"}},
		{"missing certificate file", func(c *Config) { good(c); c.TLS.CertFile = "tls/nope.crt"; c.Listeners.STOMPS = "127.0.0.1:0" },
			[]string{"listeners.stomps TLS: cert_file: open " + filepath.Join(dir, "tls/nope.crt")}},
		{"missing key file", func(c *Config) { good(c); c.TLS.KeyFile = "nope.key"; c.Listeners.STOMPS = "127.0.0.1:0" },
			[]string{"key_file: open " + filepath.Join(dir, "nope.key")}},
		{"mismatched key", func(c *Config) { good(c); c.TLS.KeyFile = "tls/other.key"; c.Listeners.STOMPS = "127.0.0.1:0" },
			[]string{"listeners.stomps TLS: cert_file " + filepath.Join(dir, "tls/server.crt") + " with key_file " + filepath.Join(dir, "tls/other.key"),
				"private key does not match public key"}},
		{"CA file without certificate", func(c *Config) {
			good(c)
			c.TLS.ClientAuth, c.TLS.ClientCAFile = "request", "tls/empty.pem"
			c.Listeners.AMQPS = "127.0.0.1:0"
		}, []string{"listeners.amqps TLS: client_ca_file " + filepath.Join(dir, "tls/empty.pem") + " holds no PEM certificate"}},
		{"require without CA file", func(c *Config) { good(c); c.TLS.ClientAuth = "require"; c.Listeners.AMQPS = "127.0.0.1:0" },
			[]string{"listeners.amqps TLS: client_auth request or require needs client_ca_file"}},
		{"client_auth", func(c *Config) { c.TLS.ClientAuth = "optional" },
			[]string{`tls.client_auth "optional": want none, request or require`}},
		{"min_version 1.1", func(c *Config) { c.TLS.MinVersion = "1.1" },
			[]string{`tls.min_version "1.1": TLS versions below 1.2 are refused`}},
		{"min_version 1.0 in an override", func(c *Config) { c.TLS.Listener["admin"] = TLSOverride{MinVersion: "1.0"} },
			[]string{`tls.listener.admin.min_version "1.0": TLS versions below 1.2 are refused`}},
		{"min_version 1.4", func(c *Config) { c.TLS.MinVersion = "1.4" }, []string{`tls.min_version "1.4": want 1.2 or 1.3`}},
		{"unknown listener", func(c *Config) { c.TLS.Listener["stomp"] = TLSOverride{} },
			[]string{"tls.listener.stomp: no such TLS listener; want stomps, amqps, admin, websocket or raft"}},
		{"stomps address", func(c *Config) { good(c); c.Listeners.STOMPS = "127.0.0.1" },
			[]string{"listeners.stomps", "missing port"}},
		{"every problem at once", func(c *Config) {
			c.Listeners.STOMPS, c.Listeners.AMQPS = "127.0.0.1:0", "127.0.0.1:99999"
			c.TLS.Listener["amqps"] = TLSOverride{CertFile: filepath.Join(dir, "tls/server.crt"), KeyFile: filepath.Join(dir, "tls/other.key")}
		}, []string{"listeners.amqps: ", "99999", "listeners.stomps serves TLS but has no cert_file", "listeners.stomps serves TLS but has no key_file",
			"listeners.amqps TLS: cert_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.modify(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestListenerTLS(t *testing.T) {
	c := Default()
	c.Dir = "/etc/sluice"
	c.TLS.CertFile, c.TLS.KeyFile = "tls/server.crt", "/secrets/server.key"
	c.TLS.Listener["amqps"] = TLSOverride{ClientCAFile: "clients.pem", ClientAuth: "Require", MinVersion: "1.3"}
	c.TLS.Listener["admin"] = TLSOverride{CertFile: "admin.crt", KeyFile: "admin.key", ClientAuth: "request", ClientCAFile: "/ca.pem"}
	c.TLS.Listener["websocket"] = TLSOverride{CertFile: "web.crt", KeyFile: "web.key"}

	tests := []struct {
		name string
		want tlsSummary
	}{
		{"stomps", tlsSummary{"/etc/sluice/tls/server.crt", "/secrets/server.key", "", tls.NoClientCert, tls.VersionTLS12}},
		{"amqps", tlsSummary{"/etc/sluice/tls/server.crt", "/secrets/server.key", "/etc/sluice/clients.pem", tls.RequireAndVerifyClientCert, tls.VersionTLS13}},
		{"admin", tlsSummary{"/etc/sluice/admin.crt", "/etc/sluice/admin.key", "/ca.pem", tls.VerifyClientCertIfGiven, tls.VersionTLS12}},
		{"websocket", tlsSummary{"/etc/sluice/web.crt", "/etc/sluice/web.key", "", tls.NoClientCert, tls.VersionTLS12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := c.ListenerTLS(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			got := tlsSummary{s.CertFile, s.KeyFile, s.ClientCAFile, s.ClientAuth, s.MinVersion}
			if got != tt.want || s.Listener != tt.name {
				t.Errorf("ListenerTLS(%q) = %+v (listener %q), want %+v", tt.name, got, s.Listener, tt.want)
			}
		})
	}
	if _, err := c.ListenerTLS("stomp"); err == nil {
		t.Error(`ListenerTLS("stomp") succeeded`)
	}

	// Without a file (Dir empty), relative paths stay relative: to the
	// working directory.
	c = Default()
	c.TLS.CertFile = "server.crt"
	if s, _ := c.ListenerTLS("stomps"); s.CertFile != "server.crt" {
		t.Errorf("without Dir, cert_file = %q", s.CertFile)
	}
}

type tlsSummary struct {
	cert, key, ca string
	auth          tls.ClientAuthType
	min           uint16
}

// A file's relative certificate paths are relative to the file, wherever
// the broker is started.
func TestLoadTLSRelativeToTheFile(t *testing.T) {
	dir := tlsFiles(t)
	file := filepath.Join(dir, "sluice.toml")
	text := `
[listeners]
stomps = "127.0.0.1:61614"
amqps = "127.0.0.1:5671"
admin_tls = true
websocket = "127.0.0.1:15673"
websocket_tls = true

[tls]
cert_file = "tls/server.crt"
key_file = "tls/server.key"

[tls.listener.amqps]
client_auth = "require"
client_ca_file = "tls/ca.pem"
`
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != dir {
		t.Errorf("Dir = %q, want %q", c.Dir, dir)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if got := strings.Join(c.TLSListeners(), ","); got != "stomps,amqps,admin,websocket" {
		t.Errorf("TLSListeners() = %s", got)
	}
	s, err := c.ListenerTLS("amqps")
	if err != nil {
		t.Fatal(err)
	}
	if s.ClientCAFile != filepath.Join(dir, "tls/ca.pem") || s.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("amqps TLS = %+v", s)
	}

	// An override of an unknown listener name is refused by Validate, a
	// key unknown in it by Load.
	if err := os.WriteFile(file, []byte(text+"\n[tls.listener.http]\nclient_auth = \"none\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(file); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tls.listener.http: no such TLS listener") {
		t.Errorf("Validate() = %v, want it to refuse tls.listener.http", err)
	}
	if err := os.WriteFile(file, []byte(text+"verify = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil || !strings.Contains(err.Error(), "unknown keys: tls.listener.amqps.verify") {
		t.Errorf("Load() = %v, want unknown keys: tls.listener.amqps.verify", err)
	}
}

func TestApplyEnvTLSListeners(t *testing.T) {
	env := map[string]string{"SLUICE_STOMPS": "0.0.0.0:61614", "SLUICE_AMQPS": "0.0.0.0:5671"}
	c := Default()
	c.ApplyEnv(func(k string) string { return env[k] })
	if c.Listeners.STOMPS != "0.0.0.0:61614" || c.Listeners.AMQPS != "0.0.0.0:5671" {
		t.Errorf("ApplyEnv: listeners %+v", c.Listeners)
	}
}

// Every examples/*/sluice.toml is valid beside the TLS files it names
// (tls/server.crt, tls/server.key, tls/ca.pem, made here).
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/sluice.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/*/sluice.toml (%v)", err)
	}
	for _, example := range files {
		name := filepath.Base(filepath.Dir(example))
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(example)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(tlsFiles(t), "sluice.toml")
			if err := os.WriteFile(file, text, 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if name != "mtls" {
				return
			}
			if got := strings.Join(c.TLSListeners(), ","); got != "stomps,amqps,admin,websocket" {
				t.Errorf("TLS listeners %s, want stomps,amqps,admin,websocket", got)
			}
			if c.Listeners.STOMP != "" || c.Listeners.AMQP != "" || !c.Listeners.WebSocketTLS {
				t.Errorf("plain-text listeners on: %+v", c.Listeners)
			}
			for _, l := range []string{"stomps", "amqps", "websocket"} {
				if s, _ := c.ListenerTLS(l); s.ClientAuth != tls.RequireAndVerifyClientCert {
					t.Errorf("%s does not require client certificates", l)
				}
			}
		})
	}
}
