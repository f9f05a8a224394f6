//go:build interop

// TLS interop: stomp.py and Qpid Proton through Sluice's TLS listeners
// (listeners.stomps and listeners.amqps). The same pattern as
// stomp_test.go: an in-process broker, here with both TLS listeners on
// 127.0.0.1:0 and a self-signed certificate for localhost and 127.0.0.1
// made for the test (tlsconf.SelfSigned, what `sluice admin gen-cert`
// writes), and a client script run with the TLS port as its first argument.
// The script finds the certificate, its CA file, in SLUICE_TLS_CA, and a
// certificate it must not trust in SLUICE_TLS_OTHER_CA.

package interop

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
	"github.com/sluicemq/sluice/internal/tlsconf"
)

// tlsSluice is an in-process broker with its TLS listeners on.
type tlsSluice struct {
	stompsPort, amqpsPort int
}

// startTLSSluice starts a broker with only the stomps and amqps listeners
// and points SLUICE_TLS_CA and SLUICE_TLS_OTHER_CA at the files the
// scripts trust and distrust. It sets environment variables, so its tests
// do not run in parallel.
func startTLSSluice(t *testing.T) *tlsSluice {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, name := range []string{"server", "other"} {
		certPEM, keyPEM, err := tlsconf.SelfSigned([]string{"localhost", "127.0.0.1"}, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".crt", certPEM)
		write(name+".key", keyPEM)
	}
	t.Setenv("SLUICE_TLS_CA", filepath.Join(dir, "server.crt"))
	t.Setenv("SLUICE_TLS_OTHER_CA", filepath.Join(dir, "other.crt"))

	logs := &syncBuffer{}
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Dir = dir
	cfg.LogLevel = "debug"
	cfg.Listeners = config.Listeners{STOMPS: "127.0.0.1:0", AMQPS: "127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = "server.crt", "server.key"
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := broker.Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("broker shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("broker log:\n%s", logs.String())
		}
	})
	s := &tlsSluice{}
	for name, port := range map[string]*int{"stomps": &s.stompsPort, "amqps": &s.amqpsPort} {
		addr, ok := b.Addr(name).(*net.TCPAddr)
		if !ok || addr.Port == 0 {
			t.Fatalf("%s listener address %v", name, b.Addr(name))
		}
		*port = addr.Port
	}
	for _, name := range []string{"stomp", "amqp", "admin"} {
		if b.Addr(name) != nil {
			t.Fatalf("%s listening on %v, want it off", name, b.Addr(name))
		}
	}
	return s
}

// TestStompPyTLS sends and receives with stomp.py over STOMP over TLS.
func TestStompPyTLS(t *testing.T) {
	py := pythonWith(t, "stomp", "'.'.join(map(str, stomp.__version__))", "stomp.py", "python3-stomp")
	s := startTLSSluice(t)
	runScript(t, s.stompsPort, "tls", py, filepath.Join("python", "stomp_py.py"))
}

// TestProtonPyTLS sends and receives with Qpid Proton over amqps://.
func TestProtonPyTLS(t *testing.T) {
	py := pythonWith(t, "proton", "'.'.join(map(str, proton.VERSION))", "Qpid Proton Python", "python3-qpid-proton")
	s := startTLSSluice(t)
	runAMQPScript(t, &amqpSluice{t: t, amqpPort: s.amqpsPort, stompPort: s.stompsPort}, "tls", py, filepath.Join("python", "proton_py.py"))
}
