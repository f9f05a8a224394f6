package raftstore

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// TLS is the raft transport's mutual TLS: every node presents its
// certificate and verifies its peer's, both ways, so that only holders of
// a certificate the cluster's CA signed can replicate to or take entries
// from a node.
type TLS struct {
	// Server configures the connections peers open to this node. It must
	// require and verify client certificates.
	Server *tls.Config
	// Client returns the configuration for dialing the peer at addr
	// (host:port): this node's certificate, the CA that peers' are
	// verified against, and the name to verify.
	Client func(addr string) *tls.Config
}

// transportTimeout bounds a raft RPC's I/O; transportPool is how many
// idle connections a node keeps to each peer.
const (
	transportTimeout = 10 * time.Second
	transportPool    = 3
)

// streamLayer is the raft transport's connections: TCP, through TLS when
// it is set, with the address peers dial advertised in place of the bound
// one (a node may bind 0.0.0.0).
type streamLayer struct {
	net.Listener
	advertise net.Addr
	tls       *TLS
}

// newTransport binds addr and returns raft's network transport over it.
func newTransport(bind, advertise string, t *TLS, lg *slog.Logger) (*raft.NetworkTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft transport: %w", err)
	}
	l := &streamLayer{Listener: ln, tls: t}
	bound := ln.Addr().(*net.TCPAddr)
	switch {
	case advertise != "":
		host, port, err := net.SplitHostPort(advertise)
		if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
			_ = ln.Close()
			return nil, fmt.Errorf("raft transport: advertised address %q: want the host:port peers dial", advertise)
		}
		if port == "0" {
			port = strconv.Itoa(bound.Port)
		}
		// Kept as given (a host name is not resolved): it is this node's
		// address in the raft configuration, as the peers list it.
		l.advertise = hostPort(net.JoinHostPort(host, port))
	case bound.IP.IsUnspecified():
		_ = ln.Close()
		return nil, fmt.Errorf("raft transport: %s binds every interface: give the address peers dial (Options.Advertise)", bind)
	}
	if t != nil {
		l.Listener = tls.NewListener(ln, t.Server)
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: l, MaxPool: transportPool, Timeout: transportTimeout, Logger: hclogFor(lg),
	}), nil
}

// hostPort is an advertised address, host:port as configured.
type hostPort string

func (a hostPort) Network() string { return "tcp" }
func (a hostPort) String() string  { return string(a) }

// Addr is the address peers dial.
func (l *streamLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.Listener.Addr()
}

// Dial opens a connection to a peer, through TLS (handshake included)
// when it is set.
func (l *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if l.tls == nil {
		return d.Dial("tcp", string(addr))
	}
	return tls.DialWithDialer(d, "tcp", string(addr), l.tls.Client(string(addr)))
}
