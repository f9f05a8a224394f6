package broker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store/boltstore"
	"github.com/sluicemq/sluice/internal/config"
)

// testConfig is the default configuration with only the admin listener, on
// a free port, and the store in dir.
func testConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.Data = dir
	cfg.Listeners = config.Listeners{Admin: "127.0.0.1:0"}
	return cfg
}

func start(t *testing.T, cfg config.Config) *Broker {
	t.Helper()
	b, err := Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return b
}

func shutdown(t *testing.T, b *Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

// getJSON fetches an admin URL and decodes its JSON object.
func getJSON(t *testing.T, url string) (int, map[string]string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, want application/json", url, ct)
	}
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return resp.StatusCode, body
}

func TestStartServesHealthAndReadiness(t *testing.T) {
	dir := t.TempDir()
	b := start(t, testConfig(dir))

	addr := b.Addr("admin")
	if addr == nil {
		t.Fatal(`Addr("admin") = nil`)
	}
	if tcp, ok := addr.(*net.TCPAddr); !ok || tcp.Port == 0 || !tcp.IP.IsLoopback() {
		t.Fatalf(`Addr("admin") = %v, want a loopback address with its bound port`, addr)
	}
	for _, name := range []string{"stomp", "amqp", "nosuch"} {
		if a := b.Addr(name); a != nil {
			t.Errorf("Addr(%q) = %v, want nil for a disabled listener", name, a)
		}
	}
	if b.Engine() == nil {
		t.Error("Engine() = nil")
	}
	if _, err := os.Stat(filepath.Join(dir, "sluice.db")); err != nil {
		t.Errorf("store file: %v", err)
	}

	base := "http://" + addr.String()
	code, body := getJSON(t, base+"/healthz")
	if code != http.StatusOK || body["status"] != "ok" || body["version"] != Version {
		t.Errorf("/healthz = %d %v, want 200 {status: ok, version: %s}", code, body, Version)
	}
	code, body = getJSON(t, base+"/readyz")
	if code != http.StatusOK || body["status"] != "ready" {
		t.Errorf("/readyz = %d %v, want 200 {status: ready}", code, body)
	}

	shutdown(t, b)
	if resp, err := client.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("/healthz answered %s after Shutdown", resp.Status)
	}

	// The data directory is free again: a second broker starts on it.
	b2 := start(t, testConfig(dir))
	code, _ = getJSON(t, "http://"+b2.Addr("admin").String()+"/readyz")
	if code != http.StatusOK {
		t.Errorf("/readyz after restart = %d, want 200", code)
	}
	shutdown(t, b2)
}

// With a STOMP address the front-end is bound and answers CONNECT.
func TestStartSTOMPListener(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.STOMP = "127.0.0.1:0"
	b := start(t, cfg)
	defer shutdown(t, b)
	addr := b.Addr("stomp")
	if addr == nil {
		t.Fatal(`Addr("stomp") = nil`)
	}
	conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("CONNECT\naccept-version:1.2\nhost:/\n\n\x00")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "CONNECTED\n" {
		t.Errorf("answer to CONNECT: %q, %v; want CONNECTED", line, err)
	}
}

func TestStartCreatesDataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	cfg := testConfig(dir)
	cfg.Listeners = config.Listeners{} // no listeners at all
	b := start(t, cfg)
	if b.Addr("admin") != nil {
		t.Errorf(`Addr("admin") = %v with the admin listener disabled`, b.Addr("admin"))
	}
	shutdown(t, b)
	if _, err := os.Stat(filepath.Join(dir, "sluice.db")); err != nil {
		t.Errorf("store file: %v", err)
	}
}

// Two brokers on one data directory: one wins, the other fails within the
// store's lock timeout with an error saying the directory is in use.
func TestStartTwiceOnOneDataDirectory(t *testing.T) {
	dir := t.TempDir()
	type result struct {
		b   *Broker
		err error
		d   time.Duration
	}
	var (
		wg      sync.WaitGroup
		ready   = make(chan struct{})
		results = make([]result, 2)
	)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			t0 := time.Now()
			b, err := Start(context.Background(), testConfig(dir), nil)
			results[i] = result{b, err, time.Since(t0)}
		}()
	}
	close(ready)
	wg.Wait()

	var winner *Broker
	var failure result
	for _, r := range results {
		if r.err == nil {
			if winner != nil {
				shutdown(t, winner)
				shutdown(t, r.b)
				t.Fatal("both brokers started on the same data directory")
			}
			winner = r.b
		} else {
			failure = r
		}
	}
	if winner == nil {
		t.Fatalf("neither broker started: %v / %v", results[0].err, results[1].err)
	}
	defer shutdown(t, winner)
	if !errors.Is(failure.err, boltstore.ErrInUse) {
		t.Errorf("second Start error = %v, want boltstore.ErrInUse", failure.err)
	}
	if msg := failure.err.Error(); !strings.Contains(msg, "in use") || !strings.Contains(msg, dir) {
		t.Errorf("second Start error = %q, want it to say %s is in use", msg, dir)
	}
	if limit := boltstore.DefaultLockTimeout + 4*time.Second; failure.d > limit {
		t.Errorf("second Start took %v to fail, want under %v", failure.d, limit)
	}

	// The winner is unaffected.
	code, _ := getJSON(t, "http://"+winner.Addr("admin").String()+"/readyz")
	if code != http.StatusOK {
		t.Errorf("/readyz of the running broker = %d", code)
	}
}

func TestStartInvalidConfiguration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := testConfig(dir)
	cfg.LogLevel = "loud"
	_, err := Start(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "invalid configuration") || !strings.Contains(err.Error(), `log_level "loud"`) {
		t.Fatalf("Start = %v, want an invalid configuration error naming log_level", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start with an invalid configuration touched the data directory: %v", err)
	}
}

func TestStartDataDirectoryIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), testConfig(file), nil)
	if err == nil || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Fatalf("Start = %v, want an error saying %s is not a directory", err, file)
	}
}

// A listener that cannot bind fails Start, and the store is released: a
// broker with a free address starts on the same directory at once.
func TestStartAdminAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Listeners.Admin = ln.Addr().String()
	_, err = Start(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "admin listener "+ln.Addr().String()) {
		t.Fatalf("Start = %v, want an admin listener error", err)
	}

	t0 := time.Now()
	b := start(t, testConfig(dir))
	shutdown(t, b)
	if d := time.Since(t0); d >= boltstore.DefaultLockTimeout {
		t.Errorf("restart took %v: the failed Start kept the store locked", d)
	}
}
