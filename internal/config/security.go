package config

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/engine/security"
)

// Security is the [security] section: who may connect to the messaging
// listeners and what each user may do (docs/security.md). With no users
// (here or in [admin]) security is off: every client may do everything,
// which Validate allows only on loopback listeners unless
// AllowInsecureNetwork says otherwise.
type Security struct {
	// Users are the accounts, [[security.users]].
	Users []SecurityUser `toml:"users"`
	// Grants give roles actions on destination patterns, [[security.grants]].
	Grants []SecurityGrant `toml:"grants"`
	// AnonymousRole, when set, is the role of clients that present no
	// credentials; without it they are refused once a user exists.
	AnonymousRole string `toml:"anonymous_role"`
	// AllowInsecureNetwork lets a messaging listener (STOMP, STOMP over
	// WebSocket, AMQP) bind a non-loopback address while security is off or
	// anonymous clients are let in.
	AllowInsecureNetwork bool `toml:"allow_insecure_network"`
	// SetUserID stamps every message's JMSXUserID with its sender's
	// authenticated user.
	SetUserID bool `toml:"set_user_id"`
	// FailureDelay is how long a failed login waits before its answer.
	FailureDelay Duration `toml:"failure_delay"`
	// VerifiedCacheFor is how long a good password check is remembered
	// (bcrypt is slow on purpose); "0s" turns the cache off.
	VerifiedCacheFor Duration `toml:"verified_cache_for"`
}

// SecurityUser is one [[security.users]] section.
type SecurityUser struct {
	Name string `toml:"name"`
	// PasswordHash is a bcrypt hash from `sluice admin hash-password`.
	PasswordHash string `toml:"password_hash"`
	// CertificateSubject maps a verified TLS client certificate with this
	// subject (RFC 2253, e.g. "CN=svc-a,O=Example") to the user.
	CertificateSubject string   `toml:"certificate_subject"`
	Roles              []string `toml:"roles"`
}

// SecurityGrant is one [[security.grants]] section.
type SecurityGrant struct {
	Role string `toml:"role"`
	// Kind is "queue" or "topic"; "" is both.
	Kind string `toml:"kind"`
	// Match is a destination name pattern, as in [[destination]].
	Match   string   `toml:"match"`
	Actions []string `toml:"actions"`
}

// defaultSecurity is the [security] section's defaults.
func defaultSecurity() Security {
	return Security{
		Users:            []SecurityUser{},
		Grants:           []SecurityGrant{},
		FailureDelay:     Duration(security.DefaultFailureDelay),
		VerifiedCacheFor: Duration(security.DefaultVerifiedFor),
	}
}

// SecurityOptions translates [security] and the [admin] users into the
// realm's options: the [admin] users are users too, with the whole admin
// API and no messaging grants. Validate reports the realm's errors with
// their positions in the file.
func (c *Config) SecurityOptions() security.Options {
	s := c.Security
	o := security.Options{AnonymousRole: s.AnonymousRole, FailureDelay: time.Duration(s.FailureDelay),
		VerifiedFor: time.Duration(s.VerifiedCacheFor)}
	if o.FailureDelay == 0 {
		o.FailureDelay = -1 // "0s" in the file: no delay
	}
	if o.VerifiedFor == 0 {
		o.VerifiedFor = -1
	}
	for _, u := range s.Users {
		o.Users = append(o.Users, security.User{Name: u.Name, PasswordHash: u.PasswordHash,
			CertificateSubject: u.CertificateSubject, Roles: u.Roles})
	}
	for _, u := range c.Admin.Users {
		o.Users = append(o.Users, security.User{Name: u.Name, PasswordHash: u.PasswordHash, Admin: true})
	}
	for _, g := range s.Grants {
		o.Grants = append(o.Grants, security.Grant{Role: g.Role, Kind: g.Kind, Match: g.Match, Actions: g.Actions})
	}
	return o
}

// SecurityEnabled reports whether any user is configured, here or in
// [admin]: then every messaging client must authenticate.
func (c *Config) SecurityEnabled() bool { return len(c.Security.Users)+len(c.Admin.Users) > 0 }

// realmWhere finds the user or grant a realm error is about.
var realmWhere = regexp.MustCompile(`^(users|grants)\[(\d+)\]`)

// validateSecurity builds the realm once to check it, and checks that no
// messaging listener is open to the network without security.
func (c *Config) validateSecurity() []error {
	var errs []error
	if c.Security.FailureDelay < 0 || c.Security.VerifiedCacheFor < 0 {
		errs = append(errs, errors.New("security.failure_delay and security.verified_cache_for must not be negative"))
	}
	realm, err := security.New(c.SecurityOptions())
	if err == nil && c.Listeners.Admin != "" && !realm.AdminUsers() && len(c.Admin.Tokens) == 0 {
		if loop, lerr := LoopbackAddr(c.Listeners.Admin); lerr == nil && !loop {
			errs = append(errs, fmt.Errorf("listeners.admin %s is not a loopback address and no admin credentials are configured: "+
				"add [[admin.users]] (password_hash from `sluice admin hash-password`), a user whose role has the admin or "+
				"monitor grant, or admin.tokens (from `sluice admin new-token`), or listen on 127.0.0.1", c.Listeners.Admin))
		}
	}
	if err != nil {
		var list []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			list = j.Unwrap()
		} else {
			list = []error{err}
		}
		for _, e := range list {
			errs = append(errs, c.positioned(e))
		}
	}
	for _, l := range c.messagingListeners() {
		if l.addr == "" || c.Security.AllowInsecureNetwork {
			continue
		}
		open := !c.SecurityEnabled() || c.Security.AnonymousRole != ""
		if !open {
			continue
		}
		loop, err := LoopbackAddr(l.addr)
		if err != nil || loop {
			continue // a malformed address is reported with the listeners
		}
		why := "no users are configured, so every client may do everything"
		if c.SecurityEnabled() {
			why = fmt.Sprintf("security.anonymous_role %q lets clients in without credentials", c.Security.AnonymousRole)
		}
		errs = append(errs, fmt.Errorf("listeners.%s %s is not a loopback address and %s: add [[security.users]] and "+
			"[[security.grants]] (docs/security.md), listen on 127.0.0.1, or set security.allow_insecure_network = true "+
			"to accept the risk", l.name, l.addr, why))
	}
	return errs
}

// positioned prefixes a realm error with where its user or grant is:
// the file's line of that section when the config came from a file, and
// the section's key.
func (c *Config) positioned(err error) error {
	m := realmWhere.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("security: %w", err)
	}
	i, _ := strconv.Atoi(m[2])
	section, rest := "security."+m[1], strings.TrimPrefix(err.Error(), m[0])
	if m[1] == "users" && i >= len(c.Security.Users) {
		section, i = "admin.users", i-len(c.Security.Users)
	}
	key := fmt.Sprintf("%s[%d]", section, i)
	if line := c.sectionLine(section, i); line > 0 {
		return fmt.Errorf("%s:%d: %s%s", c.file, line, key, rest)
	}
	return fmt.Errorf("%s%s", key, rest)
}

// sectionLine returns the line of the i-th [[section]] header of the
// config file, or 0.
func (c *Config) sectionLine(section string, i int) int {
	if c.file == "" {
		return 0
	}
	f, err := os.Open(c.file)
	if err != nil {
		return 0
	}
	defer f.Close()
	want := "[[" + section + "]]"
	sc := bufio.NewScanner(f)
	for line, n := 1, 0; sc.Scan(); line++ {
		if strings.ReplaceAll(strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0]), " ", "") == want {
			if n == i {
				return line
			}
			n++
		}
	}
	return 0
}

// LoopbackAddr reports whether a listener address can be reached only
// from this machine. A host that is empty or unspecified (":61613",
// "0.0.0.0:61613", "[::]:61613") listens everywhere; a host name counts as
// loopback only if every address it resolves to is.
func LoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return ip.IsLoopback(), nil
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	if host == "" {
		return false, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return false, nil
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false, nil
		}
	}
	return true, nil
}

// listener is a named listener address.
type listener struct{ name, addr string }

// messagingListeners are the listeners clients send and receive on: the
// admin listener too when it serves STOMP over WebSocket.
func (c *Config) messagingListeners() []listener {
	ls := []listener{{"stomp", c.Listeners.STOMP}, {"amqp", c.Listeners.AMQP},
		{"stomps", c.Listeners.STOMPS}, {"amqps", c.Listeners.AMQPS}, {"websocket", c.Listeners.WebSocket},
		{"amqp091", c.Listeners.AMQP091}}
	if c.Listeners.AdminWebSocket {
		ls = append(ls, listener{"admin (with admin_websocket)", c.Listeners.Admin})
	}
	return ls
}
