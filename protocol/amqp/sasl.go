package amqp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"unicode/utf8"

	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// SASL mechanisms the server offers.
const (
	mechPlain     types.Symbol = "PLAIN"
	mechAnonymous types.Symbol = "ANONYMOUS"
	mechExternal  types.Symbol = "EXTERNAL"
	// mechNone is the Attempt.Mechanism of a client that skipped the SASL
	// layer (it is taken as anonymous).
	mechNone = "none"
)

// maxPlainField bounds each field of a PLAIN response: RFC 4616 asks a
// server to accept 255 octets, and nothing longer is a real name or
// password (bcrypt looks at 72 bytes at most).
const maxPlainField = 255

// errNoAnonymous is the close description of a client that skipped SASL
// on a broker that lets no anonymous client in.
const errNoAnonymous = "anonymous access is refused: authenticate with SASL PLAIN (or EXTERNAL with a client certificate)"

// tlsHandshake completes the TLS handshake of a connection accepted on a
// TLS listener, so that the SASL layer knows whether a client certificate
// was verified, and remembers that certificate for EXTERNAL. Other
// connections have nothing to do.
func (c *conn) tlsHandshake() error {
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.opts.ConnectTimeout)
	defer cancel()
	cert, err := netserve.PeerCertificate(ctx, c.nc)
	c.peerCert = cert
	return err
}

// mechanisms returns the mechanisms offered to this client: EXTERNAL when
// TLS verified a client certificate, PLAIN always, ANONYMOUS when the realm
// lets clients in without credentials (always with security off).
func (c *conn) mechanisms() []types.Symbol {
	mechs := make([]types.Symbol, 0, 3)
	if c.peerCert != nil {
		mechs = append(mechs, mechExternal)
	}
	mechs = append(mechs, mechPlain)
	if c.srv.opts.Realm.AnonymousAllowed() {
		mechs = append(mechs, mechAnonymous)
	}
	return mechs
}

// sasl runs the SASL exchange after the SASL protocol header: offer the
// mechanisms, read sasl-init, answer with the outcome. A refused client
// gets the outcome auth (after the realm's failure delay) and the socket
// closes; malformed SASL input gets sys-perm. Every path ends in an
// outcome or a closed socket: the frame reader bounds sasl-init to the
// specification's 512-byte minimum frame, and the connect time-out bounds
// the wait for it.
func (c *conn) sasl() error {
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLMechanisms{SASLServerMechanisms: c.mechanisms()}}})
	f, err := c.rd.ReadFrame()
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) {
			c.saslOutcome(types.SASLCodeSysPerm)
		}
		return fmt.Errorf("reading sasl-init: %w", err)
	}
	init, ok := f.Body.(*types.SASLInit)
	if !ok || f.Type != frames.TypeSASL {
		c.saslOutcome(types.SASLCodeSysPerm)
		return fmt.Errorf("expected sasl-init, got %s", bodyName(f.Body))
	}
	id, err := c.authenticate(init)
	if err != nil {
		c.saslOutcome(types.SASLCodeAuth)
		return err
	}
	c.identity, c.authenticated = id, true
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeOK}}})
	return nil
}

func (c *conn) saslOutcome(code types.SASLCode) {
	c.failing.Store(true)
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: code}}, close: true})
}

// authenticate is the one place that decides whether a client that chose
// a SASL mechanism may in, and as whom. The realm decides PLAIN, ANONYMOUS
// and EXTERNAL (and waits its failure delay before it refuses); input no
// mechanism allows is refused at once. The password is never logged nor
// put in an error.
func (c *conn) authenticate(init *types.SASLInit) (security.Identity, error) {
	realm := c.srv.opts.Realm
	at := security.Attempt{Protocol: "amqp", Remote: remoteAddr(c.nc), Mechanism: string(init.Mechanism)}
	var id security.Identity
	var err error
	switch init.Mechanism {
	case mechPlain:
		var user, password string
		if user, password, err = parsePlain(init.InitialResponse); err != nil {
			return id, fmt.Errorf("SASL PLAIN: %w", err)
		}
		id, err = realm.Login(c.ctx, at, user, password)
	case mechAnonymous:
		// The initial response is trace information (RFC 4505): ignored.
		id, err = realm.Anonymous(c.ctx, at)
	case mechExternal:
		id, err = c.external(at, init.InitialResponse)
	default:
		return id, fmt.Errorf("SASL mechanism %.40q is not offered", init.Mechanism)
	}
	if err != nil {
		return security.Identity{}, fmt.Errorf("SASL %s: %w", init.Mechanism, err)
	}
	return id, nil
}

// external authenticates the client by the certificate TLS verified. The
// initial response, when not empty, is the authorization identity (RFC
// 4422 appendix A): it must be the certificate's user.
func (c *conn) external(at security.Attempt, authzid []byte) (security.Identity, error) {
	realm := c.srv.opts.Realm
	if c.peerCert == nil {
		if realm.Enabled() {
			return realm.Certificate(c.ctx, at, nil) // refused, after the delay
		}
		return security.Identity{}, errors.New("EXTERNAL needs a verified TLS client certificate")
	}
	id, err := realm.Certificate(c.ctx, at, c.peerCert)
	if err != nil {
		return id, err
	}
	if len(authzid) > 0 && string(authzid) != id.User {
		return security.Identity{}, fmt.Errorf("the authorization identity %.64q is not the certificate's user", authzid)
	}
	return id, nil
}

// parsePlain splits a PLAIN response, authzid NUL authcid NUL passwd (RFC
// 4616), and refuses what that RFC does not allow: no response, a missing
// field, an empty user name, a NUL in the password, a field longer than
// 255 bytes or not UTF-8. An authorization identity other than the user
// is refused too: one user cannot act as another.
func parsePlain(resp []byte) (user, password string, err error) {
	if len(resp) == 0 {
		return "", "", errors.New("no initial response")
	}
	parts := bytes.SplitN(resp, []byte{0}, 3)
	if len(parts) != 3 {
		return "", "", errors.New("malformed response: want authzid NUL user NUL password")
	}
	authz, authc, pass := parts[0], parts[1], parts[2]
	switch {
	case len(authc) == 0:
		return "", "", errors.New("empty user name")
	case bytes.IndexByte(pass, 0) >= 0:
		return "", "", errors.New("malformed response: a NUL in the password")
	case len(authz) > maxPlainField || len(authc) > maxPlainField || len(pass) > maxPlainField:
		return "", "", fmt.Errorf("a field is longer than %d bytes", maxPlainField)
	case !utf8.Valid(authz) || !utf8.Valid(authc) || !utf8.Valid(pass):
		return "", "", errors.New("a field is not UTF-8")
	case len(authz) > 0 && !bytes.Equal(authz, authc):
		return "", "", errors.New("the authorization identity differs from the user name")
	}
	return string(authc), string(pass), nil
}
