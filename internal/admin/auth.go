package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/internal/config"
)

// TokenPrefix starts a stored bearer-token hash: "sha256:" and the hex
// SHA-256 of the token. Tokens are long random strings (NewToken), so a
// fast hash is enough; passwords, chosen by people, use bcrypt.
const TokenPrefix = "sha256:"

// Role is what the admin API lets a caller do.
type Role uint8

// The roles, from least to most.
const (
	// RoleNone is an authenticated user without the admin or monitor
	// grant: every request is refused.
	RoleNone Role = iota
	// RoleMonitor may read (GET and HEAD) but change nothing.
	RoleMonitor
	// RoleAdmin may do everything.
	RoleAdmin
)

// String returns the role's name as the API reports it.
func (r Role) String() string {
	switch r {
	case RoleMonitor:
		return "monitor"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// Caller is who made an admin request.
type Caller struct {
	// Name is the user's name, or the bearer token's label ("token-1");
	// "" when no admin credentials are configured.
	Name string
	// Token is set when the caller authenticated with a bearer token.
	Token bool
	// Role is what the caller may do.
	Role Role
}

// label names the caller in log lines and error messages.
func (c Caller) label() string {
	switch {
	case c.Token:
		return "token " + c.Name
	case c.Name == "":
		return "anonymous"
	}
	return "user " + c.Name
}

// Auth decides who may use the broker's admin listener. Users and their
// passwords are the security realm's (engine/security), the same users as
// the messaging protocols': HTTP basic authentication and the console's
// login (which turns into a session cookie) call Realm.Login. A user whose
// Identity has Admin may do everything, one with only Monitor may read.
// Bearer tokens, stored as SHA-256 hashes, are the admin listener's own
// and may do everything.
//
// An Auth without credentials (no user with the admin or monitor grant, no
// token) lets every request through, which CheckListen permits only on
// loopback addresses.
type Auth struct {
	realm  *security.Realm
	tokens map[[32]byte]string // SHA-256 of a token → label

	mu       sync.Mutex
	sessions map[[32]byte]session // console sessions by SHA-256 of their cookie
	now      func() time.Time
}

type session struct {
	caller  Caller
	expires time.Time
}

// How long a console session lasts, and how many there may be.
const (
	sessionFor    = 12 * time.Hour
	maxSessions   = 4096
	sessionCookie = "sluice_session"
)

// NewAuth keeps the realm whose users may log in (nil: none) and checks
// the bearer-token hashes: "sha256:" and 64 hex digits each.
func NewAuth(realm *security.Realm, tokenHashes []string) (*Auth, error) {
	a := &Auth{realm: realm, tokens: map[[32]byte]string{}, sessions: map[[32]byte]session{}, now: time.Now}
	var errs []error
	for i, t := range tokenHashes {
		h, err := parseTokenHash(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("token %d: %w", i+1, err))
			continue
		}
		a.tokens[h] = fmt.Sprintf("token-%d", i+1)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

func parseTokenHash(s string) ([32]byte, error) {
	var h [32]byte
	hexPart, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok {
		return h, fmt.Errorf("want %q and 64 hex digits (make one with `sluice admin new-token`)", TokenPrefix)
	}
	b, err := hex.DecodeString(hexPart)
	if err != nil || len(b) != 32 {
		return h, fmt.Errorf("want %q and 64 hex digits (make one with `sluice admin new-token`)", TokenPrefix)
	}
	copy(h[:], b)
	return h, nil
}

// HashPassword returns the bcrypt hash of a password, for the config file.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("the password is empty")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash the password: %w", err)
	}
	return string(h), nil
}

// NewToken returns a new random bearer token and the hash to put in the
// config file.
func NewToken() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("new token: %w", err)
	}
	token = "sluice_" + hex.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken returns the stored form of a bearer token.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return TokenPrefix + hex.EncodeToString(h[:])
}

// Enabled reports whether the admin listener asks for credentials: when
// the realm has any user (security is on: a local messaging client must
// not be an anonymous administrator) or a bearer token exists. Only users
// with the admin or monitor grant, and tokens, then get in.
func (a *Auth) Enabled() bool {
	return a != nil && (a.realm.Enabled() || len(a.tokens) > 0)
}

// roleOf is the admin role of an identity the realm authenticated.
func roleOf(id security.Identity) Role {
	switch {
	case id.Admin:
		return RoleAdmin
	case id.Monitor:
		return RoleMonitor
	}
	return RoleNone
}

// login checks a user's password with the realm (the failure delay
// included) and returns the caller it authenticates: a user without the
// admin or monitor grant authenticates, with RoleNone. The realm counts
// the attempt; observe is told of a refusal without it (a realm without
// users, which would accept every password).
func (a *Auth) login(ctx context.Context, at security.Attempt, user, password string, observe func(result string)) (Caller, error) {
	if !a.Enabled() || !a.realm.Enabled() {
		if observe != nil {
			observe("failure")
		}
		return Caller{}, security.ErrAuthentication
	}
	id, err := a.realm.Login(ctx, at, user, password)
	if err != nil {
		return Caller{}, fmt.Errorf("admin login: %w", err)
	}
	return Caller{Name: id.User, Role: roleOf(id)}, nil
}

// AuthenticateToken returns the label of a valid bearer token.
func (a *Auth) AuthenticateToken(token string) (label string, ok bool) {
	if a == nil || token == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(token))
	for k, l := range a.tokens {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			return l, true
		}
	}
	return "", false
}

// newSession starts a console session for c and returns its cookie value.
func (a *Auth) newSession(c Caller) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new console session: %w", err)
	}
	v := hex.EncodeToString(b[:])
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) >= maxSessions {
		for k, s := range a.sessions {
			if now.After(s.expires) {
				delete(a.sessions, k)
			}
		}
		if len(a.sessions) >= maxSessions {
			return "", errors.New("too many console sessions")
		}
	}
	a.sessions[sha256.Sum256([]byte(v))] = session{caller: c, expires: now.Add(sessionFor)}
	return v, nil
}

func (a *Auth) sessionCaller(cookie string) (Caller, bool) {
	key := sha256.Sum256([]byte(cookie))
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[key]
	if !ok {
		return Caller{}, false
	}
	if a.now().After(s.expires) {
		delete(a.sessions, key)
		return Caller{}, false
	}
	return s.caller, true
}

func (a *Auth) endSession(cookie string) {
	a.mu.Lock()
	delete(a.sessions, sha256.Sum256([]byte(cookie)))
	a.mu.Unlock()
}

// errUnauthenticated is the answer to a request without credentials.
var errUnauthenticated = errors.New("authentication required: use HTTP basic authentication with a user that has the admin or monitor grant, a bearer token, or log in to the console")

// errWrongPassword is the answer to HTTP basic authentication that fails.
var errWrongPassword = errors.New("wrong user name or password")

// errBadToken is the answer to a bearer token that is not configured.
var errBadToken = errors.New("the bearer token is not valid")

// Check authenticates an HTTP request: a console session cookie, HTTP
// basic authentication (through the realm), or a bearer token. It returns
// the caller, whose Role the caller of Check must enforce. With no
// credentials configured every request passes as an anonymous admin, but
// only when addressed to a loopback host name (so that a web page cannot
// reach the API through DNS rebinding).
func (a *Auth) Check(r *http.Request) (Caller, error) {
	return a.check(r, nil)
}

// check is Check; observe, when set, is told of what the realm does not
// count: each bearer-token check, and basic authentication refused
// without a realm user ("success" or "failure").
func (a *Auth) check(r *http.Request, observe func(result string)) (Caller, error) {
	if !a.Enabled() {
		if !loopbackHost(r.Host) {
			return Caller{}, fmt.Errorf("host %q refused: without configured credentials the admin API answers only requests to localhost, 127.0.0.1 or [::1]", r.Host)
		}
		return Caller{Role: RoleAdmin}, nil
	}
	if observe == nil {
		observe = func(string) {}
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if caller, ok := a.sessionCaller(c.Value); ok {
			return caller, nil
		}
	}
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
		if label, ok := a.AuthenticateToken(strings.TrimSpace(tok)); ok {
			observe("success")
			return Caller{Name: label, Token: true, Role: RoleAdmin}, nil
		}
		observe("failure")
		return Caller{}, errBadToken
	}
	if u, p, ok := r.BasicAuth(); ok {
		c, err := a.login(r.Context(), security.Attempt{Protocol: "admin", Remote: r.RemoteAddr, Mechanism: "basic"}, u, p, observe)
		if err != nil {
			return Caller{}, errWrongPassword
		}
		return c, nil
	}
	return Caller{}, errUnauthenticated
}

// loopbackHost reports whether the Host header names this machine.
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

// CheckListen refuses an admin listener address that other machines could
// reach unless admin credentials are configured (a user with the admin or
// monitor grant, or a token; config.Validate makes the same check for
// --check-config). Addresses whose
// host is empty or unspecified (":8161", "0.0.0.0:8161", "[::]:8161")
// listen everywhere; a host name counts as loopback only if every address
// it resolves to is.
func CheckListen(addr string, a *Auth) error {
	if a != nil && (a.realm.AdminUsers() || len(a.tokens) > 0) {
		return nil
	}
	loop, err := config.LoopbackAddr(addr)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	if !loop {
		return fmt.Errorf("admin listener %s is not a loopback address and no admin credentials are configured: "+
			"add [[admin.users]] (name, password_hash from `sluice admin hash-password`), a user with the admin or monitor grant, "+
			"or admin.tokens (from `sluice admin new-token`) to the configuration, or listen on 127.0.0.1", addr)
	}
	return nil
}
