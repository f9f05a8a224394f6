package admin

import (
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
)

// User is an account allowed to use the admin API: a name and the bcrypt
// hash of its password (never the password itself).
type User struct {
	Name         string
	PasswordHash string
}

// TokenPrefix starts a stored bearer-token hash: "sha256:" and the hex
// SHA-256 of the token. Tokens are long random strings (NewToken), so a
// fast hash is enough; passwords, chosen by people, use bcrypt.
const TokenPrefix = "sha256:"

// Auth is the one place that decides who may use the broker's management
// interfaces: users with bcrypt-hashed passwords (HTTP basic
// authentication, or a console login that turns into a session cookie) and
// bearer tokens stored as SHA-256 hashes. Authenticate and
// AuthenticateToken carry no HTTP, so that the messaging protocols can ask
// the same questions when they get authentication.
//
// A nil or empty Auth has no credentials: everyone is allowed, which
// CheckListen permits only on loopback addresses.
type Auth struct {
	users  map[string][]byte   // name → bcrypt hash
	tokens map[[32]byte]string // SHA-256 of a token → label

	mu       sync.Mutex
	verified map[[32]byte]time.Time // recent good user:password, so bcrypt runs once per few minutes
	sessions map[[32]byte]session   // console sessions by SHA-256 of their cookie
	now      func() time.Time
}

type session struct {
	user    string
	expires time.Time
}

// How long a verified password and a console session last.
const (
	verifiedFor   = 5 * time.Minute
	sessionFor    = 12 * time.Hour
	maxVerified   = 1024
	maxSessions   = 4096
	sessionCookie = "sluice_session"
)

// NewAuth checks and keeps users and token hashes. Names must be unique
// and non-empty, hashes bcrypt hashes, tokens "sha256:" and 64 hex digits.
func NewAuth(users []User, tokenHashes []string) (*Auth, error) {
	a := &Auth{users: map[string][]byte{}, tokens: map[[32]byte]string{},
		verified: map[[32]byte]time.Time{}, sessions: map[[32]byte]session{}, now: time.Now}
	var errs []error
	for i, u := range users {
		if u.Name == "" {
			errs = append(errs, fmt.Errorf("user %d has no name", i+1))
			continue
		}
		if strings.ContainsRune(u.Name, ':') {
			errs = append(errs, fmt.Errorf("user %q: a name cannot contain ':' (HTTP basic authentication)", u.Name))
		}
		if _, dup := a.users[u.Name]; dup {
			errs = append(errs, fmt.Errorf("user %q is listed twice", u.Name))
		}
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			errs = append(errs, fmt.Errorf("user %q: password_hash is not a bcrypt hash (make one with `sluice admin hash-password`): %v", u.Name, err))
		}
		a.users[u.Name] = []byte(u.PasswordHash)
	}
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
	return string(h), err
}

// NewToken returns a new random bearer token and the hash to put in the
// config file.
func NewToken() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = "sluice_" + hex.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken returns the stored form of a bearer token.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return TokenPrefix + hex.EncodeToString(h[:])
}

// Enabled reports whether any credentials are configured: then every
// request must present some.
func (a *Auth) Enabled() bool { return a != nil && (len(a.users) > 0 || len(a.tokens) > 0) }

// dummyHash is compared against when the user does not exist, so that
// answering takes as long for a wrong name as for a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("sluice-dummy-password"), bcrypt.MinCost)

// Authenticate reports whether password is user's. Successful checks are
// remembered for a few minutes (as a SHA-256 of name and password) so that
// a console or script polling with basic authentication does not pay
// bcrypt's cost on every request.
func (a *Auth) Authenticate(user, password string) bool {
	if !a.Enabled() {
		return false
	}
	key := sha256.Sum256([]byte(user + "\x00" + password))
	now := a.now()
	a.mu.Lock()
	exp, ok := a.verified[key]
	a.mu.Unlock()
	if ok && now.Before(exp) {
		return true
	}
	hash, known := a.users[user]
	if !known {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return false
	}
	a.mu.Lock()
	if len(a.verified) >= maxVerified {
		clear(a.verified)
	}
	a.verified[key] = now.Add(verifiedFor)
	a.mu.Unlock()
	return true
}

// AuthenticateToken returns the label of a valid bearer token.
func (a *Auth) AuthenticateToken(token string) (label string, ok bool) {
	if !a.Enabled() || token == "" {
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

// newSession starts a console session for user and returns its cookie value.
func (a *Auth) newSession(user string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
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
	a.sessions[sha256.Sum256([]byte(v))] = session{user: user, expires: now.Add(sessionFor)}
	return v, nil
}

func (a *Auth) sessionUser(cookie string) (string, bool) {
	key := sha256.Sum256([]byte(cookie))
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[key]
	if !ok {
		return "", false
	}
	if a.now().After(s.expires) {
		delete(a.sessions, key)
		return "", false
	}
	return s.user, true
}

func (a *Auth) endSession(cookie string) {
	a.mu.Lock()
	delete(a.sessions, sha256.Sum256([]byte(cookie)))
	a.mu.Unlock()
}

// errUnauthenticated is the answer to a request without valid credentials.
var errUnauthenticated = errors.New("authentication required: use HTTP basic authentication with a configured user, a bearer token, or log in to the console")

// Check authenticates an HTTP request: a console session cookie, HTTP
// basic authentication, or a bearer token. It returns who made it ("" when
// authentication is off). With no credentials configured every request
// passes, but only when addressed to a loopback host name (so that a web
// page cannot reach the API through DNS rebinding).
func (a *Auth) Check(r *http.Request) (who string, err error) {
	if !a.Enabled() {
		if !loopbackHost(r.Host) {
			return "", fmt.Errorf("host %q refused: without configured credentials the admin API answers only requests to localhost, 127.0.0.1 or [::1]", r.Host)
		}
		return "", nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if u, ok := a.sessionUser(c.Value); ok {
			return u, nil
		}
	}
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
		if label, ok := a.AuthenticateToken(strings.TrimSpace(tok)); ok {
			return label, nil
		}
		return "", errors.New("the bearer token is not valid")
	}
	if u, p, ok := r.BasicAuth(); ok {
		if a.Authenticate(u, p) {
			return u, nil
		}
		return "", errors.New("wrong user name or password")
	}
	return "", errUnauthenticated
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
// reach unless credentials are configured. Addresses whose host is empty or
// unspecified (":8161", "0.0.0.0:8161", "[::]:8161") listen everywhere; a
// host name counts as loopback only if every address it resolves to is.
func CheckListen(addr string, a *Auth) error {
	if a.Enabled() {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("admin listener %q: %w", addr, err)
	}
	loop := false
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		loop = ip.IsLoopback()
	} else if strings.EqualFold(host, "localhost") {
		loop = true
	} else if host != "" {
		ips, err := net.LookupIP(host)
		loop = err == nil && len(ips) > 0
		for _, ip := range ips {
			loop = loop && ip.IsLoopback()
		}
	}
	if !loop {
		return fmt.Errorf("admin listener %s is not a loopback address and no admin credentials are configured: "+
			"add [[admin.users]] (name, password_hash from `sluice admin hash-password`) or admin.tokens "+
			"(from `sluice admin new-token`) to the configuration, or listen on 127.0.0.1", addr)
	}
	return nil
}
