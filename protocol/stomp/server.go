package stomp

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Options configure a STOMP server. Zero fields take the defaults.
type Options struct {
	// Limits bound every frame a client sends.
	Limits frame.Limits
	// HeartBeat is what the server offers: the interval at which it can
	// send heart-beats and the one it wants to receive them at (default
	// 10s,10s). A client silent for twice the negotiated interval is
	// dropped.
	HeartBeat frame.HeartBeat
	// ConnectTimeout is how long a new connection may take to send CONNECT
	// (default 10s).
	ConnectTimeout time.Duration
	// MaxSubscriptions bounds subscriptions per connection (default 1000).
	MaxSubscriptions int
	// MaxPrefetch bounds the unacknowledged messages per subscription a
	// client may ask for (default 10000); DefaultPrefetch is used when the
	// client asks for none (default 1000).
	MaxPrefetch     int
	DefaultPrefetch int
	// MaxTransactions bounds open transactions per connection (default
	// 100); the engine enforces it (engine.ConnectionOptions), and BEGIN
	// past it is answered with an ERROR.
	MaxTransactions int
	// Connection holds the connection-factory defaults of every client.
	Connection engine.ConnectionOptions
	// Realm authenticates CONNECT's login and passcode (or the verified TLS
	// client certificate, or no credentials at all) and gives the
	// connection its user and permissions. Nil, or a realm without users,
	// is security off: every client is accepted, whatever it sends.
	Realm *security.Realm
	// ServerName is sent in CONNECTED's server header, e.g. "Sluice/0.1.0".
	ServerName string
	// OutputBuffer bounds, in bytes, the MESSAGE frames a connection has
	// queued for its socket and not yet written (default
	// netserve.DefaultOutputBuffer, 4 MiB): a client that does not read
	// stops getting messages once it is full, and they wait in their
	// queues.
	OutputBuffer int64
	// Logger receives connection-level logs; nil discards them.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.HeartBeat == (frame.HeartBeat{}) {
		o.HeartBeat = frame.HeartBeat{Send: 10 * time.Second, Receive: 10 * time.Second}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = 1000
	}
	if o.MaxPrefetch <= 0 {
		o.MaxPrefetch = 10000
	}
	if o.DefaultPrefetch <= 0 {
		o.DefaultPrefetch = 1000
	}
	if o.DefaultPrefetch > o.MaxPrefetch {
		o.DefaultPrefetch = o.MaxPrefetch
	}
	if o.MaxTransactions <= 0 {
		o.MaxTransactions = 100
	}
	if o.ServerName == "" {
		o.ServerName = "Sluice"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OutputBuffer <= 0 {
		o.OutputBuffer = netserve.DefaultOutputBuffer
	}
}

// Server serves STOMP connections on the engine.
type Server struct {
	eng   *engine.Broker
	opts  Options
	group netserve.Group[*conn]
}

// NewServer makes a server for eng.
func NewServer(eng *engine.Broker, opts Options) *Server {
	opts.defaults()
	return &Server{eng: eng, opts: opts}
}

// Serve accepts connections on ln until Shutdown; it returns net.ErrClosed
// then.
func (s *Server) Serve(ln net.Listener) error {
	return s.group.Serve(ln, s.newConn)
}

// ServeConn serves one already-accepted connection until it ends.
func (s *Server) ServeConn(nc net.Conn) {
	s.group.ServeConn(nc, s.newConn)
}

func (s *Server) newConn(nc net.Conn) *conn { return newConn(s, nc) }

// Shutdown stops accepting and closes every connection (their
// unacknowledged messages go back to their destinations), waiting until
// they are gone or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.group.Shutdown(ctx)
}
