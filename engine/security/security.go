// Package security is Sluice's security model, shared by every listener:
// users with bcrypt-hashed passwords or TLS client certificates, roles, and
// grants of actions to roles on destination patterns. A Realm
// authenticates a protocol's credentials into an Identity, whose
// Permissions the engine asks at its decision points (engine.Action); the
// admin listener asks the same Realm, so administrators and messaging users
// are one set under one model. docs/security.md describes it for operators.
//
// It knows no protocol: the front-ends in protocol/ call Login, Anonymous
// and Certificate with what their handshake carried (STOMP login and
// passcode, a SASL mechanism's fields, a verified certificate) and answer a
// failure in their own way.
package security

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// ErrAuthentication is every failed authentication's error. Its text is
// the same whether the user exists or not, so a client cannot tell which.
var ErrAuthentication = errors.New("authentication failed: wrong user name, password or certificate")

// Defaults of Options.
const (
	// DefaultFailureDelay is how long a failed authentication waits before
	// it is answered, so that passwords cannot be guessed fast.
	DefaultFailureDelay = time.Second
	// DefaultVerifiedFor is how long a successful password check is
	// remembered, so that a reconnect storm does not run bcrypt for every
	// connection.
	DefaultVerifiedFor = 2 * time.Minute
	// maxVerified bounds the remembered checks; when full it starts again.
	maxVerified = 4096
)

// User is one account.
type User struct {
	// Name is the login name; unique, non-empty, without ':'.
	Name string
	// PasswordHash is the bcrypt hash of the password (`sluice admin
	// hash-password`); empty for a user that authenticates only with a
	// certificate.
	PasswordHash string
	// CertificateSubject, when set, is the subject of the TLS client
	// certificate that authenticates as this user, as Go writes it
	// (RFC 2253 order, e.g. "CN=svc-a,O=Example").
	CertificateSubject string
	// Roles name the grants that apply to the user.
	Roles []string
	// Admin lets the user use the whole admin API whatever its roles (the
	// users of the [admin] section).
	Admin bool
}

// Grant gives a role actions on the destinations that match a pattern.
type Grant struct {
	// Role is the role the grant is for.
	Role string
	// Kind limits the grant to "queue" or "topic"; "" is both.
	Kind string
	// Match is a path.Match pattern on the destination name ("orders.*"),
	// the syntax of the [[destination]] policy sections; "" matches none.
	Match string
	// Actions are engine action names (send, consume, subscribe, durable,
	// browse, create; "*" is all six), or admin and monitor: the admin API
	// (monitor is read-only), which take no Kind or Match.
	Actions []string
}

// Options configure a Realm.
type Options struct {
	Users  []User
	Grants []Grant
	// AnonymousRole, when set, is the role of clients that present no
	// credentials; without it they are refused once any user exists.
	AnonymousRole string
	// FailureDelay is how long a failure waits before it is answered; 0
	// means DefaultFailureDelay, negative none (tests).
	FailureDelay time.Duration
	// VerifiedFor is how long a good password check is remembered; 0 means
	// DefaultVerifiedFor, negative never.
	VerifiedFor time.Duration
	// ObserveAttempt, when set, is told of every authentication with its
	// protocol and result ("success" or "failure"): the metric.
	ObserveAttempt func(protocol, result string)
	// Logger receives failures at info; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Identity is who a client authenticated as and what it may do.
type Identity struct {
	// User is the user's name; "" for an anonymous client.
	User string
	// Permissions go into engine.ConnectionOptions; nil (security off)
	// allows everything.
	Permissions engine.Permissions
	// Admin may use the whole admin API; Monitor may read it.
	Admin, Monitor bool
}

// Attempt describes where an authentication comes from, for logs and
// metrics.
type Attempt struct {
	// Protocol is "stomp", "amqp", "admin", …
	Protocol string
	// Remote is the client's address.
	Remote string
	// Mechanism is how it authenticates ("login", "PLAIN", "EXTERNAL", …).
	Mechanism string
	// ClientID is the client ID the client asked for, when the protocol
	// says it before authenticating (STOMP's client-id header); "" else.
	ClientID string
}

// Realm authenticates users and holds their permissions. It is safe for
// concurrent use. A nil or empty Realm (no users) has security off: every
// client is accepted, with nil Permissions.
type Realm struct {
	users     map[string]*account
	bySubject map[string]*account
	anonymous *permissions // nil: anonymous clients refused
	opts      Options
	// dummy is compared against when a user does not exist (or has no
	// password), at the cost of the configured hashes, so that a wrong
	// name takes as long as a wrong password.
	dummy []byte

	mu       sync.Mutex
	verified map[[32]byte]time.Time     // good user+password checks, by hash
	inflight map[[32]byte]chan struct{} // checks running now, so a storm runs bcrypt once
}

type account struct {
	name    string
	hash    []byte
	subject string
	perms   *permissions
	admin   bool
	monitor bool
}

// New checks opts and builds the realm. Every problem is reported, each
// with the index of its user or grant.
func New(opts Options) (*Realm, error) {
	if opts.FailureDelay == 0 {
		opts.FailureDelay = DefaultFailureDelay
	}
	if opts.VerifiedFor == 0 {
		opts.VerifiedFor = DefaultVerifiedFor
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Realm{users: map[string]*account{}, bySubject: map[string]*account{}, opts: opts,
		verified: map[[32]byte]time.Time{}, inflight: map[[32]byte]chan struct{}{}}
	grants, roles, errs := compileGrants(opts.Grants)
	for i, u := range opts.Users {
		errs = append(errs, r.addUser(i, u, grants, roles)...)
	}
	if opts.AnonymousRole != "" {
		if !roles[opts.AnonymousRole] {
			errs = append(errs, fmt.Errorf("anonymous_role %q: no grant names this role", opts.AnonymousRole))
		}
		p, admin, monitor := grants.forRoles([]string{opts.AnonymousRole})
		if admin || monitor {
			errs = append(errs, fmt.Errorf("anonymous_role %q: an anonymous client may not have the admin or monitor action", opts.AnonymousRole))
		}
		r.anonymous = p
	}
	if len(r.users) == 0 && (opts.AnonymousRole != "" || len(opts.Grants) > 0) {
		errs = append(errs, errors.New("grants and anonymous_role need at least one user: without users security is off and every client may do everything"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cost := bcrypt.DefaultCost
	for _, a := range r.users {
		if c, err := bcrypt.Cost(a.hash); err == nil {
			cost = c
			break
		}
	}
	if len(r.users) > 0 {
		dummy, err := bcrypt.GenerateFromPassword([]byte("sluice-no-such-user"), cost)
		if err != nil {
			return nil, fmt.Errorf("security: %w", err)
		}
		r.dummy = dummy
	}
	return r, nil
}

func (r *Realm) addUser(i int, u User, grants grantList, roles map[string]bool) []error {
	var errs []error
	where := fmt.Sprintf("users[%d]", i)
	if u.Name != "" {
		where = fmt.Sprintf("users[%d] (%q)", i, u.Name)
	}
	switch {
	case u.Name == "":
		errs = append(errs, fmt.Errorf("%s: name is empty", where))
	case strings.ContainsAny(u.Name, ":\x00"):
		errs = append(errs, fmt.Errorf("%s: a name cannot contain ':' (SASL PLAIN and HTTP basic authentication)", where))
	}
	if _, dup := r.users[u.Name]; dup && u.Name != "" {
		errs = append(errs, fmt.Errorf("%s: the user is listed twice", where))
	}
	if u.PasswordHash == "" && u.CertificateSubject == "" {
		errs = append(errs, fmt.Errorf("%s: needs a password_hash or a certificate_subject", where))
	}
	if u.PasswordHash != "" {
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			errs = append(errs, fmt.Errorf("%s: password_hash is not a bcrypt hash (make one with `sluice admin hash-password`): %v", where, err))
		}
	}
	if s := u.CertificateSubject; s != "" {
		if other, dup := r.bySubject[s]; dup {
			errs = append(errs, fmt.Errorf("%s: certificate_subject %q is user %q's already", where, s, other.name))
		}
	}
	for _, role := range u.Roles {
		if !roles[role] {
			errs = append(errs, fmt.Errorf("%s: role %q: no grant names this role", where, role))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	p, admin, monitor := grants.forRoles(u.Roles)
	a := &account{name: u.Name, hash: []byte(u.PasswordHash), subject: u.CertificateSubject, perms: p,
		admin: admin || u.Admin, monitor: monitor}
	r.users[u.Name] = a
	if a.subject != "" {
		r.bySubject[a.subject] = a
	}
	return nil
}

// Enabled reports whether security is on: some user exists, and every
// client must then authenticate (or be allowed in anonymously).
func (r *Realm) Enabled() bool { return r != nil && len(r.users) > 0 }

// AnonymousAllowed reports whether clients without credentials are let
// in: always with security off, else only with an anonymous role.
func (r *Realm) AnonymousAllowed() bool { return !r.Enabled() || r.anonymous != nil }

// identity is an account's Identity.
func (a *account) identity() Identity {
	return Identity{User: a.name, Permissions: a.perms, Admin: a.admin, Monitor: a.monitor || a.admin}
}

// Login checks a user name and password. With security off every login is
// accepted (as the user named, with nil Permissions). A failure returns
// ErrAuthentication after the failure delay (or ctx's end).
func (r *Realm) Login(ctx context.Context, at Attempt, user, password string) (Identity, error) {
	if !r.Enabled() {
		return Identity{User: user}, nil
	}
	a := r.users[user]
	if r.checkPassword(a, user, password) {
		r.succeeded(at, a.name)
		return a.identity(), nil
	}
	return Identity{}, r.fail(ctx, at, user, "wrong user name or password")
}

// Anonymous admits a client that presented no credentials, with the
// anonymous role's permissions; refused (after the delay) when the realm
// has users and no anonymous role.
func (r *Realm) Anonymous(ctx context.Context, at Attempt) (Identity, error) {
	if !r.Enabled() {
		return Identity{}, nil
	}
	if r.anonymous != nil {
		r.succeeded(at, "")
		return Identity{Permissions: r.anonymous}, nil
	}
	return Identity{}, r.fail(ctx, at, "", "anonymous access is not allowed")
}

// Certificate authenticates the verified TLS client certificate cert as
// the user whose certificate_subject is its subject. The caller must pass
// only a certificate the TLS handshake verified against the configured CA.
func (r *Realm) Certificate(ctx context.Context, at Attempt, cert *x509.Certificate) (Identity, error) {
	if cert == nil {
		return Identity{}, r.fail(ctx, at, "", "no verified client certificate")
	}
	subject := cert.Subject.String()
	if !r.Enabled() {
		return Identity{User: subject}, nil
	}
	if a := r.bySubject[subject]; a != nil {
		r.succeeded(at, a.name)
		return a.identity(), nil
	}
	return Identity{}, r.fail(ctx, at, subject, "no user has this certificate subject")
}

func (r *Realm) succeeded(at Attempt, user string) {
	if obs := r.opts.ObserveAttempt; obs != nil {
		obs(at.Protocol, "success")
	}
}

// fail logs and counts a failure, waits the failure delay and returns
// ErrAuthentication. The log gives the reason; the client never sees it.
func (r *Realm) fail(ctx context.Context, at Attempt, user, reason string) error {
	if obs := r.opts.ObserveAttempt; obs != nil {
		obs(at.Protocol, "failure")
	}
	r.opts.Logger.Info("authentication failed", slog.String("protocol", at.Protocol), slog.String("remote", at.Remote),
		slog.String("mechanism", at.Mechanism), slog.String("user", user), slog.String("client_id", at.ClientID), slog.String("reason", reason))
	if d := r.opts.FailureDelay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ErrAuthentication
}

// checkPassword runs bcrypt, or finds a recent good check of the same
// name, password and stored hash. Concurrent checks of the same
// credentials wait for the first instead of running bcrypt each. An
// unknown user is compared against a dummy hash, so that it costs the
// same time as a wrong password.
func (r *Realm) checkPassword(a *account, user, password string) bool {
	if a == nil || len(a.hash) == 0 {
		_ = bcrypt.CompareHashAndPassword(r.dummy, []byte(password))
		return false
	}
	h := sha256.New()
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(password))
	h.Write([]byte{0})
	h.Write(a.hash)
	var key [32]byte
	h.Sum(key[:0])
	for range 2 { // at most once behind another check of the same key
		r.mu.Lock()
		if exp, ok := r.verified[key]; ok && r.opts.Now().Before(exp) {
			r.mu.Unlock()
			return true
		}
		wait, running := r.inflight[key]
		if !running {
			r.inflight[key] = make(chan struct{})
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		<-wait
	}
	ok := bcrypt.CompareHashAndPassword(a.hash, []byte(password)) == nil
	r.mu.Lock()
	if ok && r.opts.VerifiedFor > 0 {
		if len(r.verified) >= maxVerified {
			clear(r.verified)
		}
		r.verified[key] = r.opts.Now().Add(r.opts.VerifiedFor)
	}
	if ch, mine := r.inflight[key]; mine {
		close(ch)
		delete(r.inflight, key)
	}
	r.mu.Unlock()
	return ok
}

// Grants ---------------------------------------------------------------

// grant is a compiled Grant.
type grant struct {
	role    string
	kind    string // "", "queue", "topic"
	match   string
	actions uint32 // bit per engine.Action
	admin   bool
	monitor bool
}

type grantList []grant

// compileGrants checks the grants and returns them with the set of roles
// they name.
func compileGrants(gs []Grant) (grantList, map[string]bool, []error) {
	var errs []error
	out := make(grantList, 0, len(gs))
	roles := map[string]bool{}
	for i, g := range gs {
		where := fmt.Sprintf("grants[%d]", i)
		c := grant{role: g.Role, kind: g.Kind, match: g.Match}
		var bad []error
		if g.Role == "" {
			bad = append(bad, fmt.Errorf("%s: role is empty", where))
		}
		switch g.Kind {
		case "", "queue", "topic":
		default:
			bad = append(bad, fmt.Errorf("%s: kind %q: want queue or topic (or leave it out for both)", where, g.Kind))
		}
		if g.Match != "" {
			if _, err := path.Match(g.Match, ""); err != nil {
				bad = append(bad, fmt.Errorf("%s: match %q: %v", where, g.Match, err))
			}
		}
		if len(g.Actions) == 0 {
			bad = append(bad, fmt.Errorf("%s: actions is empty", where))
		}
		for _, name := range g.Actions {
			switch name {
			case "admin":
				c.admin = true
			case "monitor":
				c.monitor = true
			case "*":
				for _, a := range engine.Actions() {
					c.actions |= 1 << a
				}
			default:
				a, ok := parseAction(name)
				if !ok {
					bad = append(bad, fmt.Errorf("%s: action %q: want send, consume, subscribe, durable, browse, create, * (all six), admin or monitor", where, name))
					continue
				}
				c.actions |= 1 << a
			}
		}
		if (c.admin || c.monitor) && (c.actions != 0 || g.Kind != "" || g.Match != "") {
			bad = append(bad, fmt.Errorf("%s: admin and monitor apply to the whole broker: put them in a grant of their own, without kind or match", where))
		}
		if c.actions != 0 && g.Match == "" {
			bad = append(bad, fmt.Errorf("%s: match is empty: say which destinations (\"*\" for all)", where))
		}
		if c.actions != 0 && c.kind == "queue" && c.actions&(1<<engine.ActionSubscribe|1<<engine.ActionDurable) != 0 {
			bad = append(bad, fmt.Errorf("%s: subscribe and durable apply to topics, not to kind = \"queue\"", where))
		}
		if c.actions != 0 && c.kind == "topic" && c.actions&(1<<engine.ActionConsume|1<<engine.ActionBrowse) != 0 {
			bad = append(bad, fmt.Errorf("%s: consume and browse apply to queues, not to kind = \"topic\"", where))
		}
		if len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		roles[g.Role] = true
		out = append(out, c)
	}
	return out, roles, errs
}

func parseAction(name string) (engine.Action, bool) {
	for _, a := range engine.Actions() {
		if a.String() == name {
			return a, true
		}
	}
	return 0, false
}

// forRoles gathers the grants of roles into permissions.
func (gl grantList) forRoles(roles []string) (p *permissions, admin, monitor bool) {
	p = &permissions{}
	for _, g := range gl {
		for _, r := range roles {
			if g.role != r {
				continue
			}
			admin = admin || g.admin
			monitor = monitor || g.monitor
			if g.actions != 0 {
				p.grants = append(p.grants, g)
			}
			break
		}
	}
	return p, admin, monitor
}

// permissions are one user's grants: engine.Permissions.
type permissions struct {
	grants []grant
}

// Allows reports whether some grant gives a on dest. Grants only add: the
// order of the grants does not matter, and nothing is allowed that no
// grant gives.
func (p *permissions) Allows(a engine.Action, dest message.Destination) bool {
	kind := "queue"
	if dest.Kind.IsTopic() {
		kind = "topic"
	}
	for i := range p.grants {
		g := &p.grants[i]
		if g.actions&(1<<a) == 0 || (g.kind != "" && g.kind != kind) {
			continue
		}
		if ok, _ := path.Match(g.match, dest.Name); ok {
			return true
		}
	}
	return false
}
