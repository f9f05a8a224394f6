package amqp

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// Options configure an AMQP server. Zero fields take the defaults.
type Options struct {
	// MaxFrameSize is the largest frame the server accepts, announced in
	// open (default 1 MiB, at least 4096).
	MaxFrameSize uint32
	// ChannelMax is the highest channel (session) number a client may use
	// (default 255).
	ChannelMax uint16
	// HandleMax is the highest link handle per session (default 1023).
	HandleMax uint32
	// IdleTimeout is announced in open: a client silent for longer is
	// closed with amqp:resource-limit-exceeded (default 60s; negative
	// disables it).
	IdleTimeout time.Duration
	// ConnectTimeout bounds the protocol header, SASL and open exchange
	// (default 10s).
	ConnectTimeout time.Duration
	// SessionWindow is the incoming window of every session, in transfer
	// frames (default 2048).
	SessionWindow uint32
	// LinkCredit is the credit given to each link a client sends on
	// (default 500).
	LinkCredit uint32
	// MaxMessageSize bounds one incoming message, all its transfers
	// together (default 64 MiB).
	MaxMessageSize uint64
	// MaxTransactions bounds the open transactions per connection
	// (default 100); the engine enforces it (engine.ConnectionOptions),
	// and a declare past it is rejected with amqp:resource-limit-exceeded.
	MaxTransactions int
	// RequireSASL refuses clients that skip the SASL layer: their AMQP
	// protocol header is answered with the SASL one and the socket closes.
	RequireSASL bool
	// Realm authenticates clients (SASL PLAIN, ANONYMOUS, EXTERNAL) and
	// gives each connection its user and permissions. Nil, or a realm
	// without users, is security off: any PLAIN credentials and ANONYMOUS
	// are accepted and every connection may do everything. See sasl.go.
	Realm *security.Realm
	// Connection holds the connection-factory defaults of every client.
	Connection engine.ConnectionOptions
	// ContainerID is the server's container-id in open (default "sluice").
	ContainerID string
	// Version is announced as the open property "version".
	Version string
	// LinkWindow bounds the messages the engine dispatches to one link the
	// server sends on ahead of its socket, whatever credit the client
	// gives (default engine.DefaultPrefetch, 1000): the rest of the credit
	// is used as those are written.
	LinkWindow int
	// OutputBuffer bounds, in bytes, the transfers a connection has queued
	// for its socket and not yet written (default
	// netserve.DefaultOutputBuffer, 4 MiB): a client that does not read
	// stops getting messages once it is full, and they wait in their
	// queues.
	OutputBuffer int64
	// Logger receives connection-level logs; nil discards them.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = 1 << 20
	}
	o.MaxFrameSize = max(o.MaxFrameSize, 4096)
	if o.ChannelMax == 0 {
		o.ChannelMax = 255
	}
	if o.HandleMax == 0 {
		o.HandleMax = 1023
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.SessionWindow == 0 {
		o.SessionWindow = 2048
	}
	if o.LinkCredit == 0 {
		o.LinkCredit = 500
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = 64 << 20
	}
	if o.MaxTransactions <= 0 {
		o.MaxTransactions = 100
	}
	if o.ContainerID == "" {
		o.ContainerID = "sluice"
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LinkWindow <= 0 {
		o.LinkWindow = engine.DefaultPrefetch
	}
	if o.OutputBuffer <= 0 {
		o.OutputBuffer = netserve.DefaultOutputBuffer
	}
}

// Server serves AMQP 1.0 connections on the engine.
type Server struct {
	eng   *engine.Broker
	opts  Options
	group netserve.Group[*conn]
	// payloads recycles the buffers deliveries are encoded into: one is
	// free again once the writer has flushed the delivery's last frame.
	payloads sync.Pool
}

// maxPooledPayload bounds the buffers kept in Server.payloads, so that a
// few large messages do not pin their buffers.
const maxPooledPayload = 64 << 10

// payloadBuf returns an empty buffer of at least size bytes for a
// delivery's encoding.
func (s *Server) payloadBuf(size int) []byte {
	if bp, ok := s.payloads.Get().(*[]byte); ok && cap(*bp) >= size {
		return (*bp)[:0]
	}
	return make([]byte, 0, size)
}

// recyclePayload gives back a buffer from payloadBuf once nothing refers
// to it any more.
func (s *Server) recyclePayload(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledPayload {
		return
	}
	b = b[:0]
	s.payloads.Put(&b)
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

// Shutdown stops accepting and closes every connection with
// amqp:connection:forced (their unsettled messages go back to their
// destinations), waiting until they are gone or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.group.Shutdown(ctx)
}
