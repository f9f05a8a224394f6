package broker

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/sluicemq/sluice/internal/admin"
	"github.com/sluicemq/sluice/internal/config"
)

// wsClient is a raw STOMP client over WebSocket.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

// dialWS opens url (ws:// or wss://) with the v12.stomp subprotocol.
func dialWS(t *testing.T, url string, opts *websocket.DialOptions) (*wsClient, *http.Response, error) {
	t.Helper()
	if opts == nil {
		opts = &websocket.DialOptions{}
	}
	opts.Subprotocols = []string{"v12.stomp"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, c: c}, resp, nil
}

// send writes a frame in one text message.
func (w *wsClient) send(cmd, body string, headers ...string) {
	w.t.Helper()
	var b strings.Builder
	b.WriteString(cmd + "\n")
	for i := 0; i+1 < len(headers); i += 2 {
		b.WriteString(headers[i] + ":" + headers[i+1] + "\n")
	}
	b.WriteString("\n" + body + "\x00")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(b.String())); err != nil {
		w.t.Fatalf("write %s: %v", cmd, err)
	}
}

// next returns the command line and the rest of the next message that is
// not a heart-beat.
func (w *wsClient) next() (cmd, rest string) {
	w.t.Helper()
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, data, err := w.c.Read(ctx)
		cancel()
		if err != nil {
			w.t.Fatalf("read: %v", err)
		}
		if string(data) == "\n" {
			continue
		}
		cmd, rest, _ = strings.Cut(string(data), "\n")
		return cmd, rest
	}
	w.t.Fatal("only heart-beats")
	return "", ""
}

// connect logs in with CONNECT (headers: login, passcode, …) and returns
// the answer's command.
func (w *wsClient) connect(headers ...string) (cmd, rest string) {
	w.t.Helper()
	w.send("CONNECT", "", append([]string{"accept-version", "1.2", "host", "sluice", "heart-beat", "0,0"}, headers...)...)
	return w.next()
}

func wsURL(scheme string, b *Broker, name string) string {
	return scheme + "://" + b.Addr(name).String() + "/ws"
}

// The websocket listener is the STOMP front-end: a message sent by a
// browser-style client over WebSocket reaches a TCP STOMP consumer, and
// the other way round. Other paths are not found.
func TestWebSocketListener(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners.STOMP, cfg.Listeners.WebSocket = "127.0.0.1:0", "127.0.0.1:0"
	b := start(t, cfg)
	defer shutdown(t, b)
	if b.Addr("websocket") == nil {
		t.Fatal("no websocket address")
	}

	tcp, err := stomp.Dial("tcp", b.Addr("stomp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.MustDisconnect()
	sub, err := tcp.Subscribe("/queue/from-browser", stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	w, _, err := dialWS(t, wsURL("ws", b, "websocket"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmd, rest := w.connect(); cmd != "CONNECTED" || !strings.Contains(rest, "server:Sluice/") {
		t.Fatalf("CONNECT: %s %q", cmd, rest)
	}
	w.send("SEND", "hello from a page", "destination", "/queue/from-browser", "receipt", "r1")
	if cmd, _ := w.next(); cmd != "RECEIPT" {
		t.Fatalf("SEND: %s, want RECEIPT", cmd)
	}
	select {
	case m := <-sub.C:
		if m.Err != nil || string(m.Body) != "hello from a page" {
			t.Fatalf("TCP consumer got %q (%v)", m.Body, m.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the TCP consumer got nothing")
	}

	w.send("SUBSCRIBE", "", "id", "1", "destination", "/topic/to-browser", "receipt", "s1")
	if cmd, _ := w.next(); cmd != "RECEIPT" {
		t.Fatalf("SUBSCRIBE: %s, want RECEIPT", cmd)
	}
	if err := tcp.Send("/topic/to-browser", "text/plain", []byte("hello page"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	if cmd, rest := w.next(); cmd != "MESSAGE" || !strings.HasSuffix(rest, "\n\nhello page\x00") {
		t.Fatalf("WebSocket subscriber got %s %q", cmd, rest)
	}

	resp, err := client.Get("http://" + b.Addr("websocket").String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / on the websocket listener: %s, want 404", resp.Status)
	}
}

// websocket_tls serves wss with the listener's certificate; a plain
// ws:// client gets nowhere.
func TestWebSocketOverTLS(t *testing.T) {
	s := newTLSSetup(t)
	cfg := s.config(t)
	cfg.Listeners = config.Listeners{WebSocket: "127.0.0.1:0", WebSocketTLS: true}
	b := startTLS(t, cfg, startOptions{})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: s.client()}}
	w, _, err := dialWS(t, wsURL("wss", b, "websocket"), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatalf("wss dial: %v", err)
	}
	if cmd, _ := w.connect(); cmd != "CONNECTED" {
		t.Fatalf("CONNECT over wss: %s", cmd)
	}
	if _, _, err := dialWS(t, wsURL("ws", b, "websocket"), nil); err == nil {
		t.Error("a ws:// client was served on the wss listener")
	}
}

// admin_websocket serves STOMP over WebSocket at /ws of the admin listener
// (over HTTPS there with admin_tls), next to the API, which keeps its own
// credentials: the WebSocket client logs in with CONNECT.
func TestAdminWebSocket(t *testing.T) {
	s := newTLSSetup(t)
	hash, err := admin.HashPassword("app-pw")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config(t)
	cfg.Listeners = config.Listeners{Admin: "127.0.0.1:0", AdminTLS: true, AdminWebSocket: true}
	cfg.Security.Users = []config.SecurityUser{{Name: "app", PasswordHash: hash, Roles: []string{"app"}}}
	cfg.Security.Grants = []config.SecurityGrant{{Role: "app", Match: "*", Actions: []string{"*"}}}
	cfg.Security.FailureDelay = config.Duration(time.Millisecond)
	b := startTLS(t, cfg, startOptions{})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: s.client()}, Timeout: 5 * time.Second}

	w, _, err := dialWS(t, wsURL("wss", b, "admin"), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatalf("wss dial of the admin listener: %v", err)
	}
	if cmd, rest := w.connect("login", "app", "passcode", "wrong"); cmd != "ERROR" || !strings.Contains(rest, "authentication failed") {
		t.Fatalf("CONNECT with a wrong passcode: %s %q", cmd, rest)
	}
	w, _, err = dialWS(t, wsURL("wss", b, "admin"), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if cmd, _ := w.connect("login", "app", "passcode", "app-pw"); cmd != "CONNECTED" {
		t.Fatalf("CONNECT as app: %s", cmd)
	}
	conns := b.Engine().Connections()
	if len(conns) != 1 || conns[0].User != "app" || !strings.HasPrefix(conns[0].RemoteAddr, "127.0.0.1:") {
		t.Fatalf("engine connections %+v, want app from 127.0.0.1", conns)
	}

	// The admin API is still there, still asking for its credentials.
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/api/destinations": http.StatusUnauthorized} {
		resp, err := hc.Get("https://" + b.Addr("admin").String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
}

// Without admin_websocket the admin listener has no /ws.
func TestAdminWithoutWebSocket(t *testing.T) {
	b := start(t, testConfig(t.TempDir()))
	defer shutdown(t, b)
	if _, resp, err := dialWS(t, wsURL("ws", b, "admin"), nil); err == nil || resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		t.Fatalf("dial of the admin listener's /ws: %v, want a refusal", err)
	}
}

// A loopback websocket listener with security off answers only requests
// addressed to this machine (a DNS-rebound page name is refused); with
// users configured, the name does not matter, since every client logs in.
func TestWebSocketLoopbackGuard(t *testing.T) {
	hash, err := admin.HashPassword("app-pw")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		security bool
		ok       bool
	}{
		{"security off", false, false},
		{"security on", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.Listeners = config.Listeners{WebSocket: "127.0.0.1:0"}
			if tt.security {
				cfg.Security.Users = []config.SecurityUser{{Name: "app", PasswordHash: hash, Roles: []string{"app"}}}
				cfg.Security.Grants = []config.SecurityGrant{{Role: "app", Match: "*", Actions: []string{"*"}}}
			}
			b := start(t, cfg)
			defer shutdown(t, b)
			host := "rebound.example.com:" + strings.Split(b.Addr("websocket").String(), ":")[1]
			h := http.Header{"Origin": []string{"http://" + host}}
			_, resp, err := dialWS(t, wsURL("ws", b, "websocket"), &websocket.DialOptions{Host: host, HTTPHeader: h})
			if tt.ok && err != nil {
				t.Fatalf("dial with Host %s: %v", host, err)
			}
			if !tt.ok && (err == nil || resp == nil || resp.StatusCode != http.StatusForbidden) {
				t.Fatalf("dial with Host %s: %v, want 403", host, err)
			}
		})
	}
}

// Shutdown closes the WebSocket clients (a normal closure) and frees the
// port.
func TestShutdownClosesWebSocketClients(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listeners = config.Listeners{WebSocket: "127.0.0.1:0"}
	b := start(t, cfg)
	w, _, err := dialWS(t, wsURL("ws", b, "websocket"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmd, _ := w.connect(); cmd != "CONNECTED" {
		t.Fatalf("CONNECT: %s", cmd)
	}
	shutdown(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = w.c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
		t.Fatalf("after Shutdown: %v, want a normal closure", err)
	}
	if _, _, err := dialWS(t, wsURL("ws", b, "websocket"), nil); err == nil {
		t.Error("dial after Shutdown succeeded")
	}
}
