package amqp091

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// Options configure an AMQP 0-9-1 server. Zero fields take the defaults.
type Options struct {
	// MaxFrameSize is the largest frame, header and end octet included,
	// that the server accepts, offered in connection.tune (default 128 KiB,
	// at least 4096). A client may ask for less in tune-ok, not for more.
	MaxFrameSize uint32
	// MaxChannels bounds the channels of a connection, offered in
	// connection.tune (default 2047, as RabbitMQ).
	MaxChannels uint16
	// HeartBeat is the heart-beat interval the server proposes (default
	// 60s; whole seconds). The client's tune-ok decides; 0 there turns
	// heart-beats off. A client silent for twice the interval is dropped.
	HeartBeat time.Duration
	// ConnectTimeout bounds the handshake, from the protocol header to
	// connection.open (default 10s).
	ConnectTimeout time.Duration
	// MaxMessageSize bounds one published message's body (default 64 MiB,
	// the AMQP 1.0 server's default). A larger body-size in a content
	// header closes the channel with 406 PRECONDITION_FAILED.
	MaxMessageSize uint64
	// MaxConsumers bounds the consumers of a connection, over all its
	// channels (default 1000); one more is refused with 530 NOT_ALLOWED.
	MaxConsumers int
	// MaxPrefetch bounds the unacknowledged messages per consumer
	// (default 10000): basic.qos asking for more, or for 0 (unlimited in
	// 0-9-1), gets this many. DefaultPrefetch is used before any
	// basic.qos (default 1000).
	MaxPrefetch     int
	DefaultPrefetch int
	// MaxUnconfirmed bounds the publishes of a channel in confirm mode
	// whose basic.ack has not been sent yet (default 10000): the reader
	// stops reading the connection while so many wait, so that TCP holds
	// the publisher.
	MaxUnconfirmed int
	// MaxTransactions bounds the open transactions per connection (one per
	// channel in tx mode; default 100); tx.select past it is refused with
	// 530 NOT_ALLOWED.
	MaxTransactions int
	// Connection holds the connection-factory defaults of every client.
	Connection engine.ConnectionOptions
	// Realm authenticates connection.start-ok's PLAIN or AMQPLAIN
	// credentials (or lets an ANONYMOUS client in) and gives the
	// connection its user and permissions. Nil, or a realm without users,
	// is security off.
	Realm *security.Realm
	// Version is the product version sent in connection.start.
	Version string
	// OutputBuffer bounds, in bytes, the deliveries a connection has
	// queued for its socket and not yet written (default
	// netserve.DefaultOutputBuffer).
	OutputBuffer int64
	// Logger receives connection-level logs; nil discards them.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxFrameSize    = 128 << 10
	DefaultMaxChannels     = 2047
	DefaultHeartBeat       = 60 * time.Second
	DefaultMaxMessageSize  = 64 << 20
	DefaultMaxConsumers    = 1000
	DefaultMaxPrefetch     = 10000
	DefaultPrefetch        = 1000
	DefaultMaxUnconfirmed  = 10000
	DefaultMaxTransactions = 100
)

func (o *Options) defaults() {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	o.MaxFrameSize = max(o.MaxFrameSize, frameMinSize)
	if o.MaxChannels == 0 {
		o.MaxChannels = DefaultMaxChannels
	}
	if o.HeartBeat == 0 {
		o.HeartBeat = DefaultHeartBeat
	}
	if o.HeartBeat < 0 {
		o.HeartBeat = 0
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.MaxConsumers <= 0 {
		o.MaxConsumers = DefaultMaxConsumers
	}
	if o.MaxPrefetch <= 0 {
		o.MaxPrefetch = DefaultMaxPrefetch
	}
	if o.DefaultPrefetch <= 0 {
		o.DefaultPrefetch = DefaultPrefetch
	}
	o.DefaultPrefetch = min(o.DefaultPrefetch, o.MaxPrefetch)
	if o.MaxUnconfirmed <= 0 {
		o.MaxUnconfirmed = DefaultMaxUnconfirmed
	}
	if o.MaxTransactions <= 0 {
		o.MaxTransactions = DefaultMaxTransactions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OutputBuffer <= 0 {
		o.OutputBuffer = netserve.DefaultOutputBuffer
	}
}

// Server serves AMQP 0-9-1 connections on the engine.
type Server struct {
	eng   *engine.Broker
	opts  Options
	group netserve.Group[*conn]
	ex    *exchanges

	mu         sync.Mutex // guards exclusive and autoDelete
	exclusive  map[message.Destination]*consumer
	autoDelete map[message.Destination]bool
}

// markAutoDelete records that queue d was declared auto-delete: it goes
// when its last consumer does (consumerGone).
func (s *Server) markAutoDelete(d message.Destination) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.autoDelete == nil {
		s.autoDelete = map[message.Destination]bool{}
	}
	s.autoDelete[d] = true
}

// consumerGone deletes auto-delete queue d once it has no consumer left
// (on any protocol), as RabbitMQ does when the last consumer of such a
// queue is cancelled or its channel closes. A queue that never had a
// consumer stays.
func (s *Server) consumerGone(d message.Destination) {
	s.mu.Lock()
	auto := s.autoDelete[d]
	s.mu.Unlock()
	if !auto {
		return
	}
	if info, err := s.eng.DestinationInfo(d); err != nil || info.Consumers > 0 {
		return
	}
	s.mu.Lock()
	delete(s.autoDelete, d)
	s.mu.Unlock()
	if err := s.eng.DeleteDestination(context.Background(), d); err != nil {
		s.opts.Logger.Warn("amqp091: auto-delete queue not deleted", slog.String("queue", d.Name), slog.Any("err", err))
		return
	}
	s.ex.unbindQueue(d)
}

// claimExclusive records cs as the exclusive consumer of d (basic.consume
// with exclusive); it fails when d has another consumer, and a consumer
// of d fails while one is exclusive. Only this server's 0-9-1 consumers
// are seen: consumers over other protocols are counted through the
// engine's consumer count when the exclusive one comes.
func (s *Server) claimExclusive(cs *consumer, exclusive bool, others int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exclusive[cs.dest] != nil {
		return false
	}
	if exclusive {
		if others > 0 {
			return false
		}
		if s.exclusive == nil {
			s.exclusive = map[message.Destination]*consumer{}
		}
		s.exclusive[cs.dest] = cs
	}
	return true
}

// releaseExclusive forgets cs as an exclusive consumer.
func (s *Server) releaseExclusive(cs *consumer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exclusive[cs.dest] == cs {
		delete(s.exclusive, cs.dest)
	}
}

// NewServer makes a server for eng. It restores the durable exchanges and
// bindings kept in eng's store, and restarts the bridges of queues bound
// to amq.topic; one that cannot be restored is logged and skipped.
func NewServer(eng *engine.Broker, opts Options) *Server {
	opts.defaults()
	s := &Server{eng: eng, opts: opts, ex: newExchanges(eng, opts.Logger)}
	if err := s.ex.recover(context.Background()); err != nil {
		opts.Logger.Error("amqp091: exchanges and bindings not restored", slog.Any("err", err))
	}
	return s
}

// Serve accepts connections on ln until Shutdown; it returns net.ErrClosed
// then.
func (s *Server) Serve(ln net.Listener) error {
	return s.group.Serve(ln, s.newConn)
}

// ServeConn serves one already-accepted connection until it ends: the
// broker hands it the 0-9-1 connections of the AMQP port, whose protocol
// header it has peeked at (the connection still reads from its start).
func (s *Server) ServeConn(nc net.Conn) {
	s.group.ServeConn(nc, s.newConn)
}

func (s *Server) newConn(nc net.Conn) *conn { return newConn(s, nc) }

// Shutdown stops accepting and closes every connection (their
// unacknowledged messages go back to their queues), waiting until they are
// gone or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.group.Shutdown(ctx)
	s.ex.closeBridges()
	return err
}
