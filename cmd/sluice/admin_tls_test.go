package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/broker"
	"github.com/sluicemq/sluice/internal/config"
)

// loadPair loads dir/server.crt and dir/server.key as a TLS pair.
func loadPair(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatalf("server.crt and server.key do not load as a pair: %v", err)
	}
	return pair.Leaf
}

func TestAdminGenCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls") // created by gen-cert
	out, err := execute("admin", "gen-cert", "--host", "localhost, broker.example,127.0.0.1,::1", "--out", dir, "--days", "30")
	if err != nil {
		t.Fatalf("gen-cert: %v (%s)", err, out)
	}
	if !strings.Contains(out, filepath.Join(dir, "server.crt")) {
		t.Errorf("gen-cert printed %q", out)
	}
	leaf := loadPair(t, dir)
	if got := strings.Join(leaf.DNSNames, ","); got != "localhost,broker.example" {
		t.Errorf("DNS names %s, want localhost,broker.example", got)
	}
	if len(leaf.IPAddresses) != 2 || leaf.IPAddresses[0].String() != "127.0.0.1" || leaf.IPAddresses[1].String() != "::1" {
		t.Errorf("IP addresses %v, want 127.0.0.1 and ::1", leaf.IPAddresses)
	}
	if d := time.Until(leaf.NotAfter); d < 29*24*time.Hour || d > 30*24*time.Hour {
		t.Errorf("valid until %v, want 30 days from now", leaf.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots}); err != nil {
		t.Errorf("the certificate does not verify against itself for 127.0.0.1: %v", err)
	}
	for name, want := range map[string]os.FileMode{"server.key": 0o600, "server.crt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}

	// Existing files stay unless --force.
	if _, err := execute("admin", "gen-cert", "--out", dir); err == nil || !strings.Contains(err.Error(), "server.crt exists: use --force") {
		t.Errorf("gen-cert over existing files = %v, want a refusal", err)
	}
	if !loadPair(t, dir).Equal(leaf) {
		t.Error("a refused gen-cert changed the files")
	}
	if err := os.Remove(filepath.Join(dir, "server.crt")); err != nil {
		t.Fatal(err)
	}
	if _, err := execute("admin", "gen-cert", "--out", dir); err == nil || !strings.Contains(err.Error(), "server.key exists") {
		t.Errorf("gen-cert over an existing key = %v, want a refusal", err)
	}
	if _, err := execute("admin", "gen-cert", "--out", dir, "--force"); err != nil {
		t.Fatalf("gen-cert --force: %v", err)
	}
	leaf2 := loadPair(t, dir)
	if leaf2.Equal(leaf) {
		t.Error("gen-cert --force did not replace the certificate")
	}
	if got := strings.Join(leaf2.DNSNames, ","); got != "localhost" || len(leaf2.IPAddresses) != 1 || leaf2.Subject.CommonName != "localhost" {
		t.Errorf("default hosts: DNS %s, IPs %v, CN %q; want localhost, 127.0.0.1", got, leaf2.IPAddresses, leaf2.Subject.CommonName)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("gen-cert left %d files in %s, want 2", len(entries), dir)
	}

	for _, args := range [][]string{{"--days", "0"}, {"--host", ""}, {"--host", "localhost,,127.0.0.1"}} {
		if _, err := execute(append([]string{"admin", "gen-cert", "--out", t.TempDir()}, args...)...); err == nil {
			t.Errorf("gen-cert %v succeeded", args)
		}
	}
}

// `sluice admin --ca-file` talks to an admin listener over HTTPS whose
// certificate gen-cert made.
func TestAdminCAFile(t *testing.T) {
	clearEnv(t)
	t.Setenv("SLUICE_ADMIN_CA", "")
	dir := t.TempDir()
	if _, err := execute("admin", "gen-cert", "--out", dir); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Dir = dir
	cfg.Listeners = config.Listeners{Admin: "127.0.0.1:0", AdminTLS: true}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = "server.crt", "server.key"
	b, err := broker.Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	}()
	url := "https://" + b.Addr("admin").String()
	if out, err := execute("admin", "--url", url, "--ca-file", filepath.Join(dir, "server.crt"), "destinations"); err != nil {
		t.Errorf("admin destinations with --ca-file: %v (%s)", err, out)
	}
	if _, err := execute("admin", "--url", url, "destinations"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("admin destinations without --ca-file = %v, want a certificate error", err)
	}
	if _, err := execute("admin", "--url", url, "--ca-file", filepath.Join(dir, "server.key"), "destinations"); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("admin with a key as --ca-file = %v", err)
	}
}

// SIGHUP makes a running `sluice serve` reload its certificate files (and
// does not end it); SIGTERM then stops it cleanly.
func TestServeSIGHUPReloadsTLS(t *testing.T) {
	dir := t.TempDir()
	if _, err := execute("admin", "gen-cert", "--out", filepath.Join(dir, "tls")); err != nil {
		t.Fatal(err)
	}
	stomps := freeAddr(t)
	file := filepath.Join(dir, "sluice.toml")
	text := "data = \"" + filepath.Join(dir, "data") + "\"\n[listeners]\nstomp = \"\"\namqp = \"\"\nadmin = \"\"\nwebsocket = \"\"\nstomps = \"" + stomps + "\"\n" +
		"[tls]\ncert_file = \"tls/server.crt\"\nkey_file = \"tls/server.key\"\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainProcess$")
	cmd.Env = append(os.Environ(), "SLUICE_TEST_MAIN_ARGS="+strings.Join([]string{"serve", "--config", file}, "\n"))
	for _, k := range []string{"SLUICE_DATA", "SLUICE_STOMP", "SLUICE_AMQP", "SLUICE_STOMPS", "SLUICE_AMQPS", "SLUICE_ADMIN", "SLUICE_WEBSOCKET", "SLUICE_LOG_LEVEL"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	logs := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case logs <- sc.Text():
			default:
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // fails harmlessly once it has exited
	// waitLog waits for a log line containing s.
	var seen []string
	waitLog := func(s string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l := <-logs:
				seen = append(seen, l)
				if strings.Contains(l, s) {
					return
				}
			case err := <-exited:
				t.Fatalf("sluice serve exited (%v) before logging %q:\n%s", err, s, strings.Join(seen, "\n"))
			case <-deadline:
				t.Fatalf("sluice serve did not log %q:\n%s", s, strings.Join(seen, "\n"))
			}
		}
	}
	served := func() *x509.Certificate {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", stomps, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("TLS dial %s: %v", stomps, err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	waitLog("sluice started")
	first := served()

	if _, err := execute("admin", "gen-cert", "--out", filepath.Join(dir, "tls"), "--force"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("SIGHUP: reloading")
	waitLog("TLS certificate loaded")
	if served().Equal(first) {
		t.Error("after SIGHUP, new connections still get the old certificate")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-logs:
		case err := <-exited:
			if err != nil {
				t.Fatalf("sluice serve after SIGTERM: %v", err)
			}
			return
		case <-time.After(20 * time.Second):
			t.Fatal("sluice serve did not exit after SIGTERM")
		}
	}
}
