package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicemq/sluice/protocol/amqp"
	"github.com/sluicemq/sluice/protocol/amqp091"
)

// The AMQP port serves AMQP 1.0 and AMQP 0-9-1, as RabbitMQ does on 5672:
// the first eight octets a client sends are the protocol header, which
// says which. sniffListener reads them from each accepted connection and
// hands 0-9-1 connections to the 0-9-1 server; every other connection,
// with the octets it read put back, is what its Accept returns to the
// AMQP 1.0 server. Neither server knows: both read the connection from its
// first octet.

// sniffingServer serves the AMQP 1.0 server on listeners whose 0-9-1
// connections go to the 0-9-1 server.
type sniffingServer struct {
	amqp    *amqp.Server
	amqp091 *amqp091.Server
	log     *slog.Logger
}

// Serve serves ln's AMQP 1.0 connections with the AMQP 1.0 server (whose
// Shutdown closes the sniffing listener) and hands the 0-9-1 ones over.
func (s *sniffingServer) Serve(ln net.Listener) error {
	return s.amqp.Serve(newSniffListener(ln, s.amqp091.ServeConn, s.log))
}

// Shutdown shuts the AMQP 1.0 server down; the broker shuts the 0-9-1
// one down on its own.
func (s *sniffingServer) Shutdown(ctx context.Context) error { return s.amqp.Shutdown(ctx) }

// sniffTimeout bounds the wait for a client's protocol header.
const sniffTimeout = 10 * time.Second

// is091 reports whether a protocol header asks for AMQP 0-9-1, or for an
// older 0-9/0-8 ("AMQP\x01\x01\x00\x09", "AMQP\x01\x01\x08\x00"), which
// the 0-9-1 server answers with its own header as the specification asks.
func is091(h []byte) bool {
	if len(h) < 8 || string(h[:4]) != "AMQP" {
		return false
	}
	return (h[4] == 0 && h[5] == 0 && h[6] == 9) || (h[4] == 1 && h[5] == 1)
}

// sniffListener splits the connections of ln between AMQP 1.0 (Accept)
// and AMQP 0-9-1 (serve091).
type sniffListener struct {
	ln       net.Listener
	serve091 func(net.Conn)
	log      *slog.Logger

	conns     chan net.Conn // AMQP 1.0 connections, header put back
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex // guards err and sniffing
	err      error      // why the accept loop ended
	sniffing map[net.Conn]struct{}
}

func newSniffListener(ln net.Listener, serve091 func(net.Conn), log *slog.Logger) *sniffListener {
	s := &sniffListener{ln: ln, serve091: serve091, log: log, conns: make(chan net.Conn), done: make(chan struct{}),
		sniffing: map[net.Conn]struct{}{}}
	go s.acceptLoop()
	return s
}

func (s *sniffListener) acceptLoop() {
	var delay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
				case <-s.done:
					return
				}
				continue
			}
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			_ = s.Close()
			return
		}
		delay = 0
		go s.sniff(nc)
	}
}

// sniff reads the protocol header of nc and routes it.
func (s *sniffListener) sniff(nc net.Conn) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		_ = nc.Close()
		return
	default:
	}
	s.sniffing[nc] = struct{}{}
	s.mu.Unlock()
	_ = nc.SetReadDeadline(time.Now().Add(sniffTimeout))
	hdr := make([]byte, 8)
	n, err := io.ReadFull(nc, hdr)
	_ = nc.SetReadDeadline(time.Time{})
	s.mu.Lock()
	delete(s.sniffing, nc)
	s.mu.Unlock()
	pc := &peekedConn{Conn: nc, head: hdr[:n]}
	if err != nil && n == 0 {
		// Nothing at all (a port scan, a failed TLS handshake): let the
		// AMQP 1.0 server see it fail as it would have.
		s.log.Debug("amqp connection sent no protocol header", slog.String("remote", nc.RemoteAddr().String()), slog.Any("err", err))
	}
	if err == nil && is091(hdr) {
		s.serve091(pc)
		return
	}
	select {
	case s.conns <- pc:
	case <-s.done:
		_ = nc.Close()
	}
}

// Accept returns the next AMQP 1.0 connection.
func (s *sniffListener) Accept() (net.Conn, error) {
	select {
	case nc := <-s.conns:
		return nc, nil
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil {
			return nil, s.err
		}
		return nil, net.ErrClosed
	}
}

// Close closes the listener; connections still being sniffed are closed.
func (s *sniffListener) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		close(s.done)
		for nc := range s.sniffing {
			_ = nc.Close()
		}
		s.mu.Unlock()
		err = s.ln.Close()
	})
	return err
}

// Addr is the listener's address.
func (s *sniffListener) Addr() net.Addr { return s.ln.Addr() }

// peekedConn is a connection whose first octets were read already: Read
// returns them first.
type peekedConn struct {
	net.Conn
	head []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// ConnectionState reports the TLS state of a connection accepted on the
// amqps listener (netserve.PeerCertificate reads it); its handshake is
// done, since the header was read through it.
func (c *peekedConn) ConnectionState() tls.ConnectionState {
	if tc, ok := c.Conn.(*tls.Conn); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

// CloseWrite half-closes the connection (netserve.CloseWrite): the TLS
// close_notify first on a TLS connection.
func (c *peekedConn) CloseWrite() error {
	nc := c.Conn
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return err
		}
		nc = tc.NetConn()
	}
	if hc, ok := nc.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return nil
}
