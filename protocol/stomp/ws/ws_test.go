package ws_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/internal/tlsconf/tlstest"
	"github.com/sluicemq/sluice/protocol/stomp"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
	"github.com/sluicemq/sluice/protocol/stomp/ws"
)

// setup is how a test's server is made.
type setup struct {
	stomp stomp.Options
	ws    ws.Options
	tls   *tls.Config // serve wss with it
}

// server is a STOMP server behind the WebSocket handler at /ws of an
// httptest server on 127.0.0.1:0, over an in-memory engine.
type server struct {
	url  string // ws://127.0.0.1:PORT/ws (wss:// with TLS)
	eng  *engine.Broker
	stop func() // shuts the STOMP server down now
	http *httptest.Server
}

func start(t *testing.T, s setup) *server {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Config{AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := stomp.NewServer(eng, s.stomp)
	h, err := ws.NewHandler(srv, s.ws)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(ws.Path, h)
	hs := httptest.NewUnstartedServer(mux)
	scheme := "ws://"
	if s.tls != nil {
		hs.TLS = s.tls
		hs.StartTLS()
		scheme = "wss://"
	} else {
		hs.Start()
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	t.Cleanup(func() {
		stop()
		hs.Close()
		_ = eng.Close()
	})
	return &server{url: scheme + hs.Listener.Addr().String() + ws.Path, eng: eng, stop: stop, http: hs}
}

// client is a WebSocket client speaking raw STOMP.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, url string, opts *websocket.DialOptions) (*client, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &client{t: t, ws: c}, resp, nil
}

func mustDial(t *testing.T, url string, opts *websocket.DialOptions) *client {
	t.Helper()
	c, _, err := dial(t, url, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return c
}

// send writes one message.
func (c *client) send(typ websocket.MessageType, data string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, typ, []byte(data)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// received is one message from the server.
type received struct {
	typ  websocket.MessageType
	data []byte
	f    *frame.Frame // the frame it holds; nil for a heart-beat
}

// next reads one message and parses it: it must hold exactly one frame or
// one heart-beat.
func (c *client) next(wait time.Duration) (received, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return received{}, err
	}
	m := received{typ: typ, data: data}
	if string(data) == "\n" {
		return m, nil
	}
	rd := frame.NewReader(bytes.NewReader(data), frame.Limits{})
	rd.SetVersion(frame.V12)
	ev, err := rd.Next()
	if err != nil || ev.Frame == nil {
		c.t.Fatalf("message %q is not a frame: %v", data, err)
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		c.t.Fatalf("message %q holds more than one frame", data)
	}
	m.f = ev.Frame
	return m, nil
}

// frame returns the next message's frame, skipping heart-beats.
func (c *client) frame() *frame.Frame {
	c.t.Helper()
	for range 100 {
		m, err := c.next(5 * time.Second)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		if m.f != nil {
			return m.f
		}
	}
	c.t.Fatal("only heart-beats")
	return nil
}

// expect reads the next frame and checks its command.
func (c *client) expect(cmd frame.Command) *frame.Frame {
	c.t.Helper()
	f := c.frame()
	if f.Command != cmd {
		msg, _ := f.Get("message")
		c.t.Fatalf("got %s (%s %q), want %s", f.Command, msg, f.Body, cmd)
	}
	return f
}

// connect sends CONNECT for STOMP 1.2 with extra headers and waits for
// CONNECTED.
func (c *client) connect(headers ...string) *frame.Frame {
	c.t.Helper()
	c.send(websocket.MessageText, raw("CONNECT", "", append([]string{"accept-version", "1.2", "host", "sluice", "heart-beat", "0,0"}, headers...)...))
	return c.expect(frame.CmdConnected)
}

// raw encodes a client frame.
func raw(cmd, body string, headers ...string) string {
	var b strings.Builder
	b.WriteString(cmd + "\n")
	for i := 0; i+1 < len(headers); i += 2 {
		b.WriteString(headers[i] + ":" + headers[i+1] + "\n")
	}
	b.WriteString("\n" + body + "\x00")
	return b.String()
}

func header(f *frame.Frame, name string) string {
	v, _ := f.Get(name)
	return v
}

// The subprotocol answered is the highest STOMP one the client offers; a
// client offering none, or only others, is served all the same, and CONNECT
// negotiates the STOMP version either way.
func TestSubprotocolNegotiation(t *testing.T) {
	s := start(t, setup{})
	tests := []struct {
		name   string
		offers []string
		want   string
	}{
		{"offers none", nil, ""},
		{"offers v10.stomp", []string{"v10.stomp"}, "v10.stomp"},
		{"offers v11.stomp and v12.stomp", []string{"v11.stomp", "v12.stomp"}, "v12.stomp"},
		{"offers all, lowest first", []string{"v10.stomp", "v11.stomp", "v12.stomp"}, "v12.stomp"},
		{"offers an unknown one", []string{"mqtt"}, ""},
		{"offers an unknown one and v11.stomp", []string{"mqtt", "v11.stomp"}, "v11.stomp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustDial(t, s.url, &websocket.DialOptions{Subprotocols: tt.offers})
			if got := c.ws.Subprotocol(); got != tt.want {
				t.Errorf("subprotocol %q, want %q", got, tt.want)
			}
			if v := header(c.connect(), "version"); v != "1.2" {
				t.Errorf("CONNECTED version %q, want 1.2", v)
			}
		})
	}
	// Without accept-version the client speaks STOMP 1.0, whatever the
	// subprotocol.
	c := mustDial(t, s.url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	c.send(websocket.MessageText, raw("CONNECT", ""))
	if f := c.expect(frame.CmdConnected); header(f, "version") != "1.0" {
		t.Errorf("CONNECT without accept-version: version %q, want 1.0", header(f, "version"))
	}
}

// Frames are read as a stream: one split across messages, several (and
// heart-beats) in one message, text and binary messages mixed.
func TestFramesAcrossAndWithinMessages(t *testing.T) {
	s := start(t, setup{})
	c := mustDial(t, s.url, nil)
	connect := raw("CONNECT", "", "accept-version", "1.2", "heart-beat", "0,0")
	c.send(websocket.MessageText, connect[:4])
	c.send(websocket.MessageBinary, connect[4:20])
	c.send(websocket.MessageText, connect[20:])
	c.expect(frame.CmdConnected)

	c.send(websocket.MessageText, raw("SUBSCRIBE", "", "id", "s", "destination", "/queue/split", "receipt", "sub")+"\n"+
		raw("SEND", "one", "destination", "/queue/split")+"\n\n"+
		raw("SEND", "two", "destination", "/queue/split", "receipt", "sent"))
	two := raw("SEND", "three", "destination", "/queue/split")
	c.send(websocket.MessageBinary, two[:len(two)-3])
	c.send(websocket.MessageText, two[len(two)-3:])

	bodies := map[string]bool{}
	receipts := map[string]bool{}
	for range 5 {
		switch f := c.frame(); f.Command {
		case frame.CmdMessage:
			bodies[string(f.Body)] = true
		case frame.CmdReceipt:
			receipts[header(f, "receipt-id")] = true
		default:
			t.Fatalf("unexpected %s %q", f.Command, header(f, "message"))
		}
	}
	if !bodies["one"] || !bodies["two"] || !bodies["three"] || !receipts["sub"] || !receipts["sent"] {
		t.Fatalf("got messages %v and receipts %v, want one, two, three and receipts sub, sent", bodies, receipts)
	}
}

// The server writes one frame per message, even when it writes many frames
// at once: text for a frame that is valid UTF-8, binary for one that is
// not; bodies arrive intact, NULs and all, large ones too.
func TestOneFramePerMessageTextOrBinary(t *testing.T) {
	s := start(t, setup{})
	c := mustDial(t, s.url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	c.connect()
	c.send(websocket.MessageText, raw("SUBSCRIBE", "", "id", "s", "destination", "/queue/kinds", "receipt", "sub"))
	c.expect(frame.CmdReceipt)

	large := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB, past the STOMP writer's buffer
	binary := "\x00\xff\xfe binary \x00"
	var burst strings.Builder
	const n = 50
	for i := range n {
		burst.WriteString(raw("SEND", "text "+string(rune('a'+i%26)), "destination", "/queue/kinds"))
	}
	burst.WriteString(raw("SEND", large, "destination", "/queue/kinds"))
	burst.WriteString(raw("SEND", binary, "destination", "/queue/kinds", "content-length", strconv.Itoa(len(binary)), "content-type", "application/octet-stream"))
	c.send(websocket.MessageBinary, burst.String())

	for i := range n + 2 {
		m, err := c.next(5 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.f == nil || m.f.Command != frame.CmdMessage {
			t.Fatalf("message %d: %q, want a MESSAGE frame", i, m.data)
		}
		body := string(m.f.Body)
		wantType := websocket.MessageText
		switch {
		case i < n:
			if want := "text " + string(rune('a'+i%26)); body != want {
				t.Fatalf("message %d: body %q, want %q", i, body, want)
			}
		case i == n:
			if body != large {
				t.Fatalf("large body: %d octets, want %d", len(body), len(large))
			}
		default:
			if body != binary {
				t.Fatalf("binary body %q, want %q", body, binary)
			}
			wantType = websocket.MessageBinary
		}
		if m.typ != wantType {
			t.Errorf("message %d: %v message, want %v", i, m.typ, wantType)
		}
	}
}

// Heart-beats work as over TCP: the server's each come as a message of
// their own, the client's keep the connection open, and a client that
// falls silent gets an ERROR and is disconnected.
func TestHeartBeats(t *testing.T) {
	hb := 100 * time.Millisecond
	s := start(t, setup{stomp: stomp.Options{HeartBeat: frame.HeartBeat{Send: hb, Receive: hb}}})
	c := mustDial(t, s.url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	c.send(websocket.MessageText, raw("CONNECT", "", "accept-version", "1.2", "heart-beat", "100,100"))
	if f := c.expect(frame.CmdConnected); header(f, "heart-beat") != "100,100" {
		t.Fatalf("CONNECTED heart-beat %q, want 100,100", header(f, "heart-beat"))
	}

	// The client beats for 2 s, more than twice the server's timeout of
	// 2×100ms+1s; the server beats all along, one LF per message.
	// (Stopped by a channel: a cancelled write would close the connection.)
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for range 40 {
			select {
			case <-stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := c.ws.Write(ctx, websocket.MessageText, []byte("\n"))
				cancel()
				if err != nil {
					return
				}
			}
		}
	}()
	beats := 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		m, err := c.next(time.Second)
		if err != nil {
			close(stop)
			t.Fatalf("while beating, after %d server heart-beats: %v", beats, err)
		}
		if m.f != nil {
			close(stop)
			t.Fatalf("while beating: %s %q", m.f.Command, header(m.f, "message"))
		}
		if m.typ != websocket.MessageText {
			t.Errorf("heart-beat in a %v message, want text", m.typ)
		}
		beats++
	}
	close(stop)
	<-beating
	if beats < 10 {
		t.Errorf("%d server heart-beats in 2s at 100ms, want at least 10", beats)
	}

	// Silent now: the ERROR comes within the timeout, then the close.
	f := c.expect(frame.CmdError)
	if !strings.Contains(header(f, "message"), "heart-beat") {
		t.Errorf("ERROR %q, want a heart-beat timeout", header(f, "message"))
	}
	for range 100 {
		m, err := c.next(10 * time.Second)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
				t.Errorf("closed with %v (%v), want a normal closure", st, err)
			}
			return
		}
		if m.f != nil {
			t.Fatalf("after the ERROR: %s", m.f.Command)
		}
	}
	t.Fatal("the connection stays open after the ERROR")
}

// A client that sends no CONNECT in time gets an ERROR saying so (the read
// deadline leaves the connection writable, as on TCP).
func TestConnectTimeout(t *testing.T) {
	s := start(t, setup{stomp: stomp.Options{ConnectTimeout: 200 * time.Millisecond}})
	c := mustDial(t, s.url, nil)
	f := c.expect(frame.CmdError)
	if !strings.Contains(header(f, "message"), "no CONNECT frame") {
		t.Errorf("ERROR %q, want the CONNECT timeout", header(f, "message"))
	}
}

// Pages of the request's own host and of the allowed origins may connect;
// others get 403. A request without an Origin is not from a browser and is
// served.
func TestOrigins(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origin  string // "self": the server's own address
		ok      bool
	}{
		{"no Origin header", nil, "", true},
		{"same host", nil, "self", true},
		{"another origin by default", nil, "https://app.example.com", false},
		{"an allowed origin", []string{"https://app.example.com"}, "https://app.example.com", true},
		{"an allowed origin, other scheme", []string{"https://app.example.com"}, "http://app.example.com", false},
		{"an allowed origin, other port", []string{"https://app.example.com"}, "https://app.example.com:8443", false},
		{"an allowed host, any scheme", []string{"app.example.com"}, "http://app.example.com", true},
		{"a pattern", []string{"https://*.example.com"}, "https://ops.example.com", true},
		{"a pattern, other domain", []string{"https://*.example.com"}, "https://example.org", false},
		{"a null origin", []string{"https://app.example.com"}, "null", false},
		{"every origin", []string{"*"}, "https://anything.example.net", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, setup{ws: ws.Options{AllowedOrigins: tt.allowed}})
			h := http.Header{}
			switch tt.origin {
			case "":
			case "self":
				h.Set("Origin", "http://"+strings.TrimSuffix(strings.TrimPrefix(s.url, "ws://"), ws.Path))
			default:
				h.Set("Origin", tt.origin)
			}
			c, resp, err := dial(t, s.url, &websocket.DialOptions{HTTPHeader: h})
			if tt.ok {
				if err != nil {
					t.Fatalf("dial with Origin %q: %v", tt.origin, err)
				}
				c.connect()
				return
			}
			if err == nil {
				t.Fatalf("dial with Origin %q succeeded, want 403", tt.origin)
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial with Origin %q: %v, want 403 Forbidden", tt.origin, err)
			}
		})
	}
}

// A loopback listener that lets clients in without credentials answers
// only requests addressed to this machine: a page whose own name resolves
// to 127.0.0.1 (DNS rebinding) passes the Origin check but not this one.
func TestLoopbackOnly(t *testing.T) {
	s := start(t, setup{ws: ws.Options{LoopbackOnly: true}})
	port := s.http.Listener.Addr().(*net.TCPAddr).Port
	tests := []struct {
		host string
		ok   bool
	}{
		{"", true}, // the URL's: 127.0.0.1:PORT
		{"localhost:" + strconv.Itoa(port), true},
		{"[::1]:" + strconv.Itoa(port), true},
		{"rebound.example.com:" + strconv.Itoa(port), false},
		{"10.1.2.3:" + strconv.Itoa(port), false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			h := http.Header{}
			if tt.host != "" {
				h.Set("Origin", "http://"+tt.host) // the page's own host: the Origin check passes
			}
			c, resp, err := dial(t, s.url, &websocket.DialOptions{Host: tt.host, HTTPHeader: h})
			if tt.ok {
				if err != nil {
					t.Fatalf("dial with Host %q: %v", tt.host, err)
				}
				c.connect()
				return
			}
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial with Host %q: %v, want 403 Forbidden", tt.host, err)
			}
		})
	}
}

// An allowed origin that could never match (a path) or is not a pattern is
// refused when the handler is made.
func TestAllowedOriginsChecked(t *testing.T) {
	for _, o := range []string{"https://app.example.com/", "https://app.example.com/ui", "", "https://", "://x", "https://[a-"} {
		if _, err := ws.NewHandler(nil, ws.Options{AllowedOrigins: []string{o}}); err == nil {
			t.Errorf("allowed origin %q accepted", o)
		}
	}
	for _, o := range []string{"*", "https://app.example.com", "http://localhost:3000", "*.example.com", "chrome-extension://abc"} {
		if err := ws.CheckOrigin(o); err != nil {
			t.Errorf("CheckOrigin(%q) = %v", o, err)
		}
	}
}

// A request that is not a WebSocket handshake (a browser visiting the URL)
// is told to upgrade.
func TestPlainRequest(t *testing.T) {
	s := start(t, setup{})
	resp, err := http.Get("http" + strings.TrimPrefix(s.url, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("GET %s: %s, want 426 Upgrade Required", s.url, resp.Status)
	}
}

// With security on, CONNECT's login and passcode decide, as over TCP: a
// wrong passcode gets the one authentication ERROR, then the close.
func TestLogin(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("app-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	realm, err := security.New(security.Options{
		Users:        []security.User{{Name: "app", PasswordHash: string(hash), Roles: []string{"app"}}},
		Grants:       []security.Grant{{Role: "app", Match: "*", Actions: []string{"*"}}},
		FailureDelay: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, setup{stomp: stomp.Options{Realm: realm}})

	c := mustDial(t, s.url, nil)
	c.send(websocket.MessageText, raw("CONNECT", "", "accept-version", "1.2", "login", "app", "passcode", "wrong"))
	f := c.expect(frame.CmdError)
	if !strings.Contains(header(f, "message"), "authentication failed") {
		t.Fatalf("ERROR %q, want authentication failed", header(f, "message"))
	}
	if _, err := c.next(10 * time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the refusal: %v, want a normal closure", err)
	}

	ok := mustDial(t, s.url, nil)
	ok.connect("login", "app", "passcode", "app-pw")
	conns := s.eng.Connections()
	if len(conns) != 1 || conns[0].User != "app" {
		t.Fatalf("engine connections %+v, want one of user app", conns)
	}
}

// The engine sees the TCP peer's address, whatever X-Forwarded-For says.
func TestRemoteAddrIsThePeer(t *testing.T) {
	s := start(t, setup{})
	h := http.Header{}
	h.Set("X-Forwarded-For", "203.0.113.9")
	c := mustDial(t, s.url, &websocket.DialOptions{HTTPHeader: h})
	c.connect()
	conns := s.eng.Connections()
	if len(conns) != 1 {
		t.Fatalf("%d engine connections, want 1", len(conns))
	}
	if got := conns[0].RemoteAddr; !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("remote address %q, want the client's 127.0.0.1:PORT", got)
	}
	if got := conns[0].Protocol; got != "stomp/1.2" {
		t.Errorf("protocol %q, want stomp/1.2", got)
	}
}

// wss: STOMP over WebSocket over TLS, with a test CA; a client certificate
// the handshake verified logs the client in as its user.
func TestWSS(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	pair := ca.Server(t, "127.0.0.1")
	clientPair := ca.Client(t, "svc-a")
	realm, err := security.New(security.Options{
		Users:        []security.User{{Name: "svc-a", CertificateSubject: "CN=svc-a", Roles: []string{"app"}}},
		Grants:       []security.Grant{{Role: "app", Match: "*", Actions: []string{"*"}}},
		FailureDelay: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, setup{stomp: stomp.Options{Realm: realm}, tls: &tls.Config{
		Certificates: []tls.Certificate{pair.TLS}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool(),
	}})
	if !strings.HasPrefix(s.url, "wss://") {
		t.Fatalf("url %s", s.url)
	}
	httpClient := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}}}
	}

	// Without a certificate or login: anonymous, refused.
	anon := mustDial(t, s.url, &websocket.DialOptions{HTTPClient: httpClient()})
	anon.send(websocket.MessageText, raw("CONNECT", "", "accept-version", "1.2"))
	anon.expect(frame.CmdError)

	c := mustDial(t, s.url, &websocket.DialOptions{HTTPClient: httpClient(clientPair.TLS), Subprotocols: []string{"v12.stomp"}})
	c.connect()
	conns := s.eng.Connections()
	if len(conns) != 1 || conns[0].User != "svc-a" {
		t.Fatalf("engine connections %+v, want one of user svc-a", conns)
	}
	c.send(websocket.MessageText, raw("SUBSCRIBE", "", "id", "s", "destination", "/queue/tls")+raw("SEND", "over wss", "destination", "/queue/tls"))
	if f := c.expect(frame.CmdMessage); string(f.Body) != "over wss" {
		t.Fatalf("body %q", f.Body)
	}

	// A plain ws:// client gets nowhere on the TLS listener.
	if _, _, err := dial(t, "ws://"+strings.TrimPrefix(s.url, "wss://"), nil); err == nil {
		t.Fatal("ws:// dial of the wss listener succeeded")
	}
}

// Over the limits: a frame larger than the STOMP limits allow gets the
// ERROR it gets over TCP; a message longer than the largest frame they
// allow (here, many small frames in one message) closes the connection with
// 1009 Message Too Big.
func TestOverTheLimits(t *testing.T) {
	limits := frame.Limits{MaxBodySize: 1 << 10, MaxHeaderBytes: 1 << 10, MaxLineLength: 1 << 10, MaxHeaders: 8}
	s := start(t, setup{stomp: stomp.Options{Limits: limits}, ws: ws.Options{Limits: limits}})
	small := raw("SEND", strings.Repeat("x", 100), "destination", "/queue/big")
	tests := []struct {
		name    string
		message string
		error   string               // the ERROR frame's message, or ""
		status  websocket.StatusCode // the close status
	}{
		{"a frame too large", raw("SEND", strings.Repeat("x", 4<<10), "destination", "/queue/big"), "body", websocket.StatusNormalClosure},
		{"a message too large", strings.Repeat(small, 200), "", websocket.StatusMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustDial(t, s.url, nil)
			c.connect()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = c.ws.Write(ctx, websocket.MessageText, []byte(tt.message))
			sawError := false
			for range 10 {
				m, err := c.next(5 * time.Second)
				if err != nil {
					if st := websocket.CloseStatus(err); st != tt.status {
						t.Fatalf("closed with %v (%v), want %v", st, err, tt.status)
					}
					if tt.error != "" && !sawError {
						t.Fatalf("closed without the ERROR about %q", tt.error)
					}
					return
				}
				if m.f != nil && m.f.Command == frame.CmdError {
					if tt.error == "" || !strings.Contains(header(m.f, "message"), tt.error) {
						t.Fatalf("ERROR %q, want one about %q", header(m.f, "message"), tt.error)
					}
					sawError = true
				}
			}
			t.Fatal("the connection stays open")
		})
	}
}

// Shutting the STOMP server down closes its WebSocket clients with a normal
// closure, promptly.
func TestShutdownClosesClients(t *testing.T) {
	s := start(t, setup{})
	c := mustDial(t, s.url, nil)
	c.connect()
	began := time.Now()
	s.stop()
	_, err := c.next(10 * time.Second)
	if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
		t.Fatalf("after shutdown: %v, want a normal closure", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("shutdown and close took %s", d)
	}
}
