//go:build webtest

// Package webtest runs @stomp/stompjs in a real browser against a real
// broker: `sluice serve` on free loopback ports, with a user and the test
// page's origin allowed; the page (page/, with stompjs's UMD bundle from
// node_modules) served by an httptest server of another origin; Debian's
// headless Chromium driven by playwright-core (drive.mjs). The page
// connects over WebSocket, subscribes with a selector, sends one order
// that matches and one that does not, and so on (page/page.js); the test
// checks what a user of the page would see. A second page, from an origin
// the broker does not allow, must not get a connection.
//
// Run: make websocket-test (builds bin/sluice, runs npm ci here when
// needed). Needs: apt-get install chromium; Node 20 and npm. SLUICE_BIN
// names the sluice binary (else the test builds one), CHROMIUM the
// browser. Without Chromium or the Node packages the test is skipped,
// except under CI (CI set), where that fails.
package webtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Credentials of the page's user.
const (
	login    = "webapp"
	passcode = "webapp-secret"
)

// need skips the test, or fails it under CI, when something it runs is
// missing.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing", what)
	}
	t.Skipf("%s is missing", what)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sluiceBinary is $SLUICE_BIN, or a sluice built for this test.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("SLUICE_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluicemq/sluice/cmd/sluice")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build sluice: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pageServer serves the test page and stompjs's bundle.
func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "page/index.html") })
	mux.HandleFunc("GET /page.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "page/page.js") })
	mux.HandleFunc("GET /stomp.umd.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, "node_modules/@stomp/stompjs/bundles/stomp.umd.min.js")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// startBroker runs `sluice serve` with a WebSocket listener that lets
// pages of allowedOrigin in, and a user; it returns the ws:// URL.
func startBroker(t *testing.T, bin, allowedOrigin string) string {
	t.Helper()
	dir := t.TempDir()
	hashCmd := exec.Command(bin, "admin", "hash-password")
	hashCmd.Stdin = strings.NewReader(passcode + "\n")
	hash, err := hashCmd.Output()
	if err != nil {
		t.Fatalf("sluice admin hash-password: %v", err)
	}
	wsPort, adminPort := freePort(t), freePort(t)
	config := fmt.Sprintf(`data = %q
log_level = "info"
[listeners]
stomp = ""
amqp = ""
admin = "127.0.0.1:%d"
websocket = "127.0.0.1:%d"
websocket_allowed_origins = [%q]

[[security.users]]
name = %q
password_hash = %q
roles = ["webapp"]

[[security.grants]]
role = "webapp"
kind = "queue"
match = "webtest.*"
actions = ["send", "consume", "create"]
`, filepath.Join(dir, "data"), adminPort, wsPort, allowedOrigin, login, strings.TrimSpace(string(hash)))
	file := filepath.Join(dir, "sluice.toml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--config", file)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = os.Environ()
	for _, k := range []string{"SLUICE_DATA", "SLUICE_STOMP", "SLUICE_AMQP", "SLUICE_STOMPS", "SLUICE_AMQPS", "SLUICE_ADMIN", "SLUICE_WEBSOCKET", "SLUICE_LOG_LEVEL"} {
		cmd.Env = append(cmd.Env, k+"=") // the file decides
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sluice serve:\n%s", logs.String())
		}
	})
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", adminPort)
	for i := 0; ; i++ {
		select {
		case err := <-exited:
			t.Fatalf("sluice serve exited: %v\n%s", err, logs.String())
		default:
		}
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i == 150 {
			t.Fatalf("sluice serve not ready within 15s\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("ws://127.0.0.1:%d/ws", wsPort)
}

// pageRun is what drive.mjs reports of one page.
type pageRun struct {
	URL        string          `json:"url"`
	Result     json.RawMessage `json:"result"`
	Failure    string          `json:"failure"`
	Console    []string        `json:"console"`
	PageErrors []string        `json:"pageErrors"`
	Log        string          `json:"log"`
}

// mainResult is what page.js's main scenario finds.
type mainResult struct {
	Version     string `json:"version"`
	Subprotocol string `json:"subprotocol"`
	Server      string `json:"server"`
	Red         []struct {
		Body        string `json:"body"`
		Color       string `json:"color"`
		Bytes       []int  `json:"bytes"`
		ContentType string `json:"contentType"`
	} `json:"red"`
	Rest        []string `json:"rest"`
	LargeOK     bool     `json:"largeOK"`
	LargeLength int      `json:"largeLength"`
	FromBinary  string   `json:"fromBinary"`
	BadLogin    string   `json:"badLogin"`
	Types       []string `json:"types"`
}

func TestStompJSInChromium(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	need(t, "Chromium ("+chromium+"; apt-get install chromium)", exists(chromium))
	_, err := exec.LookPath("node")
	need(t, "node", err == nil)
	need(t, "node_modules (npm ci in protocol/stomp/ws/webtest)",
		exists("node_modules/playwright-core") && exists("node_modules/@stomp/stompjs/bundles/stomp.umd.min.js"))

	bin := sluiceBinary(t)
	allowed := pageServer(t)
	other := pageServer(t) // another port: another origin, not allowed
	wsURL := startBroker(t, bin, allowed.URL)

	query := func(scenario string) string {
		return "?" + url.Values{"ws": {wsURL}, "login": {login}, "passcode": {passcode}, "scenario": {scenario}}.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "drive.mjs", allowed.URL+"/"+query("main"), other.URL+"/"+query("refused"))
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node drive.mjs: %v\n%s", err, stderr.String())
	}
	var runs []pageRun
	if err := json.Unmarshal(out, &runs); err != nil || len(runs) != 2 {
		t.Fatalf("drive.mjs printed %q (%v)", out, err)
	}
	for _, r := range runs {
		if r.Failure != "" || len(r.PageErrors) > 0 {
			t.Fatalf("page %s failed: %s %v\nconsole: %q\nlog:\n%s", r.URL, r.Failure, r.PageErrors, r.Console, r.Log)
		}
	}

	var m mainResult
	if err := json.Unmarshal(runs[0].Result, &m); err != nil {
		t.Fatal(err)
	}
	t.Logf("main page: %s", runs[0].Result)
	if m.Version != "1.2" || m.Subprotocol != "v12.stomp" || !strings.HasPrefix(m.Server, "Sluice/") {
		t.Errorf("connected with STOMP %q over subprotocol %q to %q, want 1.2 over v12.stomp to Sluice", m.Version, m.Subprotocol, m.Server)
	}
	// Only the red orders, the text one and the binary one, came through
	// the selector.
	if len(m.Red) != 2 || m.Red[0].Body != "red order" || m.Red[0].Color != "red" || m.Red[1].Color != "red" ||
		!reflect.DeepEqual(m.Red[1].Bytes, []int{0, 1, 2, 0xff, 0xfe, 0, 10}) || m.Red[1].ContentType != "application/octet-stream" {
		t.Errorf("the selector color = 'red' let through %+v, want the red text order and the red binary one", m.Red)
	}
	if !reflect.DeepEqual(m.Rest, []string{"blue order"}) {
		t.Errorf("left in the queue: %q, want the blue order only", m.Rest)
	}
	if !m.LargeOK || m.FromBinary != "sent in a binary message" {
		t.Errorf("a frame split across messages arrived intact: %v (%d chars); a frame in a binary message: %q",
			m.LargeOK, m.LargeLength, m.FromBinary)
	}
	if !strings.Contains(m.BadLogin, "authentication failed") {
		t.Errorf("a wrong passcode: %q, want the authentication ERROR", m.BadLogin)
	}
	// The server sent text messages for text frames and a binary message
	// for the frame with the non-UTF-8 body.
	binaries := 0
	for _, typ := range m.Types {
		if typ == "binary" {
			binaries++
		}
	}
	if binaries != 1 || len(m.Types) < 8 {
		t.Errorf("the page received %d WebSocket messages, %d binary: %q; want text ones and one binary", len(m.Types), binaries, m.Types)
	}

	// The page of the other origin got no connection: the handshake's 403
	// shows in the browser's console.
	var refused struct {
		Connected bool   `json:"connected"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(runs[1].Result, &refused); err != nil {
		t.Fatal(err)
	}
	if refused.Connected {
		t.Errorf("a page of %s, an origin not allowed, connected", other.URL)
	}
	if !strings.Contains(strings.Join(runs[1].Console, "\n"), "403") {
		t.Errorf("the refused page's console does not show the 403: %q", runs[1].Console)
	}
}
