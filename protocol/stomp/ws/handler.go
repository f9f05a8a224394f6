// Package ws serves STOMP over WebSocket, as RabbitMQ's Web-STOMP and
// Artemis do, for clients in browsers (@stomp/stompjs and the like).
//
// A [Handler] is an http.Handler: it upgrades a request to a WebSocket,
// checks its Origin, and hands the connection to the STOMP server as a
// net.Conn, so that everything of STOMP (versions, heart-beats,
// authentication by CONNECT's login and passcode, limits) is the TCP
// server's, unchanged.
//
// Subprotocols: the handler answers the highest of v12.stomp, v11.stomp
// and v10.stomp that the client offers, and accepts a client that offers
// none of them (or none at all). The subprotocol does not bind the STOMP
// version: CONNECT's accept-version negotiates it, as over TCP.
//
// Messages: the client's text and binary messages are read as one stream,
// so a frame may be split across messages and a message may carry several
// frames or heart-beats. The server writes each frame, and each heart-beat
// (a single LF), as a message of its own: a text message when the frame
// is valid UTF-8 (every frame whose body is text), a binary one
// otherwise.
package ws

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Path is where the broker serves STOMP over WebSocket on its listeners.
const Path = "/ws"

// Subprotocols returns the WebSocket subprotocols of STOMP, highest
// first: the handler answers the first of them that the client offers.
func Subprotocols() []string { return []string{"v12.stomp", "v11.stomp", "v10.stomp"} }

// ConnServer serves one STOMP connection until it ends;
// *stomp.Server is one.
type ConnServer interface {
	ServeConn(nc net.Conn)
}

// Options configure a Handler.
type Options struct {
	// AllowedOrigins are the origins, besides the request's own host, whose
	// pages may connect: "https://app.example.com" (scheme and host, with
	// a port unless it is the scheme's default), "app.example.com" (that
	// host with any scheme), path.Match patterns such as
	// "https://*.example.com", or "*" for every origin. A request whose
	// Origin header names its own host is always allowed, and so is one
	// without an Origin header (not a browser). See CheckOrigin.
	AllowedOrigins []string
	// LoopbackOnly answers only requests addressed (by their Host header)
	// to localhost, 127.0.0.1 or [::1], and refuses others with 403: for a
	// loopback listener that lets clients in without credentials, so that
	// a web page cannot reach it through DNS rebinding (a name of the
	// page's site that resolves to 127.0.0.1 passes the same-host Origin
	// check).
	LoopbackOnly bool
	// Limits are the STOMP server's frame limits: a WebSocket message
	// longer than the largest frame they allow (plus a little for
	// heart-beats) closes the connection with status 1009.
	Limits frame.Limits
	// Logger receives refused handshakes and connection starts; nil
	// discards them.
	Logger *slog.Logger
}

// Handler upgrades requests to WebSocket and serves STOMP on them.
type Handler struct {
	srv          ConnServer
	accept       websocket.AcceptOptions
	loopbackOnly bool
	readLimit    int64
	log          *slog.Logger
}

// NewHandler returns a handler serving STOMP with srv. It refuses an
// allowed origin that CheckOrigin refuses.
func NewHandler(srv ConnServer, opts Options) (*Handler, error) {
	h := &Handler{srv: srv, loopbackOnly: opts.LoopbackOnly, readLimit: readLimit(opts.Limits), log: opts.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.accept.Subprotocols = Subprotocols()
	var errs []error
	for _, o := range opts.AllowedOrigins {
		if err := CheckOrigin(o); err != nil {
			errs = append(errs, err)
			continue
		}
		if o == "*" {
			h.accept.InsecureSkipVerify = true
			continue
		}
		h.accept.OriginPatterns = append(h.accept.OriginPatterns, o)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("websocket allowed origins: %w", err)
	}
	return h, nil
}

// CheckOrigin reports whether o is an allowed origin Options can take:
// "*", a host pattern ("app.example.com", "*.example.com",
// "localhost:3000") or a scheme and host pattern
// ("https://app.example.com"), without a path, in path.Match syntax.
func CheckOrigin(o string) error {
	if o == "*" {
		return nil
	}
	host := o
	if scheme, rest, ok := strings.Cut(o, "://"); ok {
		if scheme == "" {
			return fmt.Errorf("origin %q: empty scheme", o)
		}
		host = rest
	}
	switch {
	case host == "":
		return fmt.Errorf("origin %q: no host", o)
	case strings.Contains(host, "/"):
		return fmt.Errorf("origin %q: an origin is a scheme and a host, without a path", o)
	}
	if _, err := path.Match(o, ""); err != nil {
		return fmt.Errorf("origin %q: %w", o, err)
	}
	return nil
}

// readLimit is the longest message a client may send: the largest frame
// limits allows, and some heart-beats.
func readLimit(l frame.Limits) int64 {
	d := frame.DefaultLimits()
	or := func(v, def int) int64 {
		if v <= 0 {
			return int64(def)
		}
		return int64(v)
	}
	line := or(l.MaxLineLength, d.MaxLineLength)
	headers := or(l.MaxHeaders, d.MaxHeaders)
	headerBytes := or(l.MaxHeaderBytes, d.MaxHeaderBytes)
	body := or(l.MaxBodySize, d.MaxBodySize)
	// The command line, the header lines and their CR LFs, the empty line,
	// the body and its NUL, and 4 KiB of heart-beats around it.
	return line + headerBytes + 2*(headers+2) + body + 1 + 4<<10
}

// ServeHTTP upgrades the request and serves STOMP on it until the
// connection ends. A refused Origin gets 403 Forbidden; a request that is
// not a WebSocket handshake gets 426 Upgrade Required.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if h.loopbackOnly && !loopbackHost(r.Host) {
		h.log.Info("websocket request refused: not addressed to this machine", slog.String("remote", r.RemoteAddr),
			slog.String("host", r.Host), slog.String("origin", origin))
		http.Error(w, fmt.Sprintf("host %q refused: this listener lets clients in without credentials and so answers "+
			"only requests to localhost, 127.0.0.1 or [::1]", r.Host), http.StatusForbidden)
		return
	}
	wc, err := websocket.Accept(clearDeadlines{w}, r, &h.accept)
	if err != nil {
		lvl := slog.LevelDebug
		if origin != "" && !h.sameHost(r, origin) {
			lvl = slog.LevelInfo // most likely the origin: worth an operator's look
		}
		h.log.Log(r.Context(), lvl, "websocket handshake refused", slog.String("remote", r.RemoteAddr),
			slog.String("origin", origin), slog.Any("err", err))
		return
	}
	wc.SetReadLimit(h.readLimit)
	h.log.Debug("websocket connected", slog.String("remote", r.RemoteAddr), slog.String("origin", origin),
		slog.String("subprotocol", wc.Subprotocol()))
	h.srv.ServeConn(newConn(wc, r))
}

// sameHost reports whether origin names the request's own host.
func (h *Handler) sameHost(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clearDeadlines passes the response writer to the WebSocket library and
// clears the deadlines the HTTP server may have left on the connection it
// hijacks: the STOMP server sets its own.
type clearDeadlines struct{ http.ResponseWriter }

// Hijack takes over the connection.
func (w clearDeadlines) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		_ = nc.SetDeadline(time.Time{})
	}
	return nc, brw, err
}
