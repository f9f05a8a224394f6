package netserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
)

// TLS listeners. The broker serves the stomps and amqps listeners through
// tls.NewListener, so the net.Conn a protocol server is given there is a
// *tls.Conn. Its handshake has not happened yet when the connection is
// handed over: it runs on the first Read or Write (under whatever deadline
// is set on the connection then), and a client that fails it (a plain-text
// client, a refused certificate or TLS version) shows as an error from that
// first Read. Code that needs the handshake's result earlier calls
// PeerCertificate or (*tls.Conn).HandshakeContext.

// PeerCertificate returns the client certificate that the TLS handshake of
// nc verified against the listener's client CAs, completing the handshake
// first if it has not run yet. It returns nil and no error when nc is not a
// TLS connection or the client presented no certificate (the listener's
// client_auth is none or request). A protocol maps the certificate (its
// subject, say) to a user; the certificate has been verified, so it can be
// trusted as far as the CA is.
//
// If ctx ends before the handshake is done, the handshake is abandoned and
// the connection closed.
//
// A connection that carries TLS underneath (STOMP over a wss WebSocket)
// reports its state through a ConnectionState method, as *tls.Conn does;
// its handshake is already done.
func PeerCertificate(ctx context.Context, nc net.Conn) (*x509.Certificate, error) {
	var st tls.ConnectionState
	switch tc := nc.(type) {
	case *tls.Conn:
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("tls handshake with %s: %w", nc.RemoteAddr(), err)
		}
		st = tc.ConnectionState()
	case interface{ ConnectionState() tls.ConnectionState }:
		st = tc.ConnectionState()
	default:
		return nil, nil
	}
	chains := st.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil, nil
	}
	return chains[0][0], nil
}

// CloseWrite ends the sending direction of nc, so that the peer reads what
// was written (an ERROR frame, a close) before the connection goes away:
// a TCP half-close, preceded on a TLS connection by the TLS close_notify.
// Connections of other kinds are left as they are.
func CloseWrite(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return // the handshake never completed: nothing to read anyway
		}
		nc = tc.NetConn()
	}
	if hc, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	}
}
