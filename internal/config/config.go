// Package config is Sluice's typed configuration: defaults, loading from a
// TOML file, environment variables and flags, validation, and the
// translation of destination policies into the engine's terms.
//
// The file format is documented in docs/configuration.md; sluice.example.toml
// at the repository root shows every key with its default.
package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/grammar/schedule"
	"github.com/sluicemq/sluice/protocol/stomp/ws"
)

// Duration is a time.Duration written as "1.5s", "250ms", "2m" in the file.
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as Go formats it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Config is the whole configuration of a broker.
type Config struct {
	// Dir is the directory of the configuration file, set by Load;
	// relative file names in the configuration (TLS certificates and
	// keys) are relative to it. Empty: the working directory.
	Dir string `toml:"-"`
	// Data is the directory of the embedded store.
	Data string `toml:"data"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// LogFormat is text (logfmt, key=value) or json (one object a line).
	LogFormat string `toml:"log_format"`
	// Listeners are the addresses the front-ends bind; "" disables one.
	Listeners Listeners `toml:"listeners"`
	// TLS holds the certificates of the TLS listeners (tls.go).
	TLS TLS `toml:"tls"`
	// Connection holds the connection-factory defaults every client gets.
	Connection ConnectionFactory `toml:"connection"`
	// AutoCreate lets clients create queues and topics by naming them.
	AutoCreate bool `toml:"auto_create"`
	// ConsumeBeforeStore confirms a persistent message that a waiting
	// consumer acknowledges before its write is committed without writing
	// it (as RabbitMQ does); the producer's confirmation then means durable
	// or consumed. False: confirmed only once durable.
	ConsumeBeforeStore bool `toml:"consume_before_store"`
	// ExpiryScanInterval is how often expired messages are looked for.
	ExpiryScanInterval Duration `toml:"expiry_scan_interval"`
	// WindowMessages and WindowBytes bound the ready messages each queue
	// and durable subscription keeps in memory; past them persistent
	// messages wait in the store only (paging). A [[destination]] section
	// can set its own. 0 takes the engine's defaults (16384 messages,
	// 16 MiB); -1 keeps everything in memory.
	WindowMessages int   `toml:"window_messages"`
	WindowBytes    int64 `toml:"window_bytes"`
	// Limits are the memory budget and the disk watermark (limits.go).
	Limits Limits `toml:"limits"`
	// Destinations are per-destination policies, matched by name pattern;
	// the first match wins.
	Destinations []Destination `toml:"destination"`
	// Admin holds the credentials of the admin listener (API, console,
	// metrics). Without any, the admin listener may only bind loopback.
	Admin Admin `toml:"admin"`
	// Security holds the messaging users, roles and grants.
	Security Security `toml:"security"`
	// ConfiguredDestinations exist from the start, with their creation
	// times (WebLogic's CreationTime): at restart, persistent messages of an
	// older incarnation are discarded, and a store holding a newer one stops
	// the broker.
	ConfiguredDestinations []ConfiguredDestination `toml:"configured_destination"`
	// Cluster makes this node a member of a replicated broker (cluster.go,
	// docs/cluster.md); nil: a single node.
	Cluster *Cluster `toml:"cluster"`

	// file is the file the configuration was read from, for positions in
	// errors; "" when none.
	file string
}

// ConfiguredDestination is one [[configured_destination]] section.
type ConfiguredDestination struct {
	// Kind is "queue" or "topic".
	Kind string `toml:"kind"`
	// Name is the destination's name.
	Name string `toml:"name"`
	// Created is this incarnation's creation time; left out, whatever the
	// store holds is kept.
	Created time.Time `toml:"created"`
}

// EngineDestinations translates the configured destinations. The error
// joins every problem of the sections.
func (c *Config) EngineDestinations() ([]engine.ConfiguredDestination, error) {
	out, errs := c.engineDestinations()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// engineDestinations is EngineDestinations returning each problem apart.
func (c *Config) engineDestinations() ([]engine.ConfiguredDestination, []error) {
	out := make([]engine.ConfiguredDestination, 0, len(c.ConfiguredDestinations))
	var errs []error
	seen := map[message.Destination]bool{}
	for i, d := range c.ConfiguredDestinations {
		var kind message.DestKind
		switch d.Kind {
		case "queue":
			kind = message.Queue
		case "topic":
			kind = message.Topic
		default:
			errs = append(errs, fmt.Errorf("configured_destination[%d]: kind %q: want queue or topic", i, d.Kind))
		}
		if err := engine.ValidateDestinationName(d.Name); err != nil {
			errs = append(errs, fmt.Errorf("configured_destination[%d]: %w", i, err))
			continue
		}
		if kind == message.NoDest {
			continue
		}
		dest := message.Destination{Kind: kind, Name: d.Name}
		if seen[dest] {
			errs = append(errs, fmt.Errorf("configured_destination[%d]: %s is configured twice", i, dest))
			continue
		}
		seen[dest] = true
		out = append(out, engine.ConfiguredDestination{Destination: dest, Created: d.Created})
	}
	return out, errs
}

// Admin are the admin listener's users and bearer tokens. Secrets are
// stored hashed: passwords with bcrypt (`sluice admin hash-password`),
// tokens as "sha256:" and the hex SHA-256 (`sluice admin new-token`).
type Admin struct {
	Users  []AdminUser `toml:"users"`
	Tokens []string    `toml:"tokens"`
}

// AdminUser is one admin user.
type AdminUser struct {
	Name         string `toml:"name"`
	PasswordHash string `toml:"password_hash"`
}

// Listeners are the network addresses of the front-ends.
type Listeners struct {
	STOMP string `toml:"stomp"`
	AMQP  string `toml:"amqp"`
	Admin string `toml:"admin"`
	// STOMPS and AMQPS are STOMP and AMQP 1.0 over TLS ([tls]).
	STOMPS string `toml:"stomps"`
	AMQPS  string `toml:"amqps"`
	// AMQP091 is an AMQP 0-9-1 listener of its own ("" off). The amqp
	// and amqps listeners serve 0-9-1 clients too: the protocol header
	// tells them from AMQP 1.0 ones, as on RabbitMQ's 5672.
	AMQP091 string `toml:"amqp091"`
	// AdminTLS serves the admin listener over HTTPS.
	AdminTLS bool `toml:"admin_tls"`
	// WebSocket is STOMP over WebSocket, at ws.Path (/ws).
	WebSocket string `toml:"websocket"`
	// WebSocketTLS serves the WebSocket listener over TLS (wss).
	WebSocketTLS bool `toml:"websocket_tls"`
	// AdminWebSocket serves STOMP over WebSocket at /ws of the admin
	// listener too.
	AdminWebSocket bool `toml:"admin_websocket"`
	// WebSocketAllowedOrigins are the origins whose pages may connect over
	// WebSocket besides the listener's own host (ws.Options.AllowedOrigins).
	WebSocketAllowedOrigins []string `toml:"websocket_allowed_origins"`
}

// ConnectionFactory are the defaults of WebLogic's connection factory.
type ConnectionFactory struct {
	ClientIDPolicy  string   `toml:"client_id_policy"` // restricted | unrestricted
	SharingPolicy   string   `toml:"sharing_policy"`   // exclusive | sharable
	RedeliveryDelay Duration `toml:"redelivery_delay"`
	DeliveryMode    string   `toml:"delivery_mode"` // persistent | non_persistent
	Priority        int      `toml:"priority"`
	TimeToLive      Duration `toml:"time_to_live"`
	TimeToDeliver   Duration `toml:"time_to_deliver"`
	RedeliveryLimit int32    `toml:"redelivery_limit"` // -1 = none
	Prefetch        int      `toml:"prefetch"`         // messages maximum
}

// Destination is the policy of the destinations whose name matches Match.
// Fields left out do not override anything.
type Destination struct {
	// Match is a path.Match pattern on the destination name ("orders.*").
	Match string `toml:"match"`
	// Kind limits the match to "queue" or "topic"; "" matches both.
	Kind string `toml:"kind"`

	DeliveryModeOverride    string    `toml:"delivery_mode_override"`
	PriorityOverride        *int      `toml:"priority_override"`
	TimeToLiveOverride      *Duration `toml:"time_to_live_override"`
	TimeToDeliverOverride   string    `toml:"time_to_deliver_override"` // ms integer or a schedule
	RedeliveryDelayOverride *Duration `toml:"redelivery_delay_override"`
	RedeliveryLimit         *int32    `toml:"redelivery_limit"`
	ErrorDestination        string    `toml:"error_destination"` // /queue/NAME or /topic/NAME
	ExpirationPolicy        string    `toml:"expiration_policy"` // discard | log | redirect
	MaxMessages             int64     `toml:"max_messages"`
	MaxBytes                int64     `toml:"max_bytes"`
	BlockingSendTimeout     *Duration `toml:"blocking_send_timeout"`
	// WindowMessages and WindowBytes override the broker's in-memory
	// window of ready messages (see Config.WindowMessages).
	WindowMessages int   `toml:"window_messages"`
	WindowBytes    int64 `toml:"window_bytes"`
}

// Default returns the configuration of `sluice serve` with no set-up.
func Default() Config {
	return Config{
		Data:      "./sluice-data",
		LogLevel:  "info",
		LogFormat: "text",
		Listeners: Listeners{
			STOMP: "127.0.0.1:61613",
			AMQP:  "127.0.0.1:5672",
			Admin: "127.0.0.1:8161",
			// RabbitMQ's Web-STOMP port.
			WebSocket:               "127.0.0.1:15674",
			WebSocketAllowedOrigins: []string{},
		},
		TLS: defaultTLS(),
		Connection: ConnectionFactory{
			ClientIDPolicy:  "restricted",
			SharingPolicy:   "exclusive",
			DeliveryMode:    "persistent",
			Priority:        4,
			RedeliveryLimit: -1,
			Prefetch:        engine.DefaultPrefetch,
		},
		AutoCreate:             true,
		ConsumeBeforeStore:     true,
		ExpiryScanInterval:     Duration(time.Second),
		Limits:                 defaultLimits(),
		ConfiguredDestinations: []ConfiguredDestination{},
		Admin:                  Admin{Users: []AdminUser{}, Tokens: []string{}},
		Security:               defaultSecurity(),
	}
}

// Load reads a TOML file over the defaults. Unknown keys are errors, so a
// misspelt setting is never silently ignored.
func Load(file string) (Config, error) {
	cfg := Default()
	if file == "" {
		return cfg, nil
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return cfg, fmt.Errorf("read config %s: %w", file, err)
	}
	md, err := toml.Decode(string(src), &cfg)
	if err != nil {
		if hint := quoteHint(src, err); hint != "" {
			return cfg, fmt.Errorf("read config %s:%s", file, hint)
		}
		return cfg, fmt.Errorf("read config %s: %w", file, err)
	}
	if cfg.Dir, err = filepath.Abs(filepath.Dir(file)); err != nil {
		return cfg, fmt.Errorf("read config %s: %w", file, err)
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		keys := make([]string, len(undec))
		for i, k := range undec {
			keys[i] = k.String()
		}
		return cfg, fmt.Errorf("read config %s: unknown keys: %s", file, strings.Join(keys, ", "))
	}
	cfg.file = file
	return cfg, nil
}

// incompatible matches the decoder's error for a value of the wrong TOML
// type (BurntSushi/toml v1.6.0 reports it as a plain error, not a
// toml.ParseError, so its text is all there is): the line, the dotted key,
// the TOML type and the Go type.
var incompatible = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]+)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)$`)

// quoteHint explains a number, boolean or date given where the file needs
// a string: "3: destination.time_to_deliver_override: quote it: \"5000\""
// (the line, the key, the value quoted as it should be written). It
// returns "" for any other error.
func quoteHint(src []byte, err error) string {
	m := incompatible.FindStringSubmatch(err.Error())
	if m == nil || m[4] != "string" {
		return ""
	}
	line, key, tomlType := m[1], m[2], m[3]
	where := " "
	if line != "" {
		where = line + ": "
	}
	if strings.HasPrefix(tomlType, "[]") || strings.HasPrefix(tomlType, "map[") {
		return fmt.Sprintf("%s%s: want a string, not an array or table", where, key)
	}
	leaf := key[strings.LastIndex(key, ".")+1:]
	if n, err := strconv.Atoi(line); err == nil {
		if value := valueOnLine(src, n, leaf); value != "" {
			return fmt.Sprintf("%s%s: quote it: %q", where, key, value)
		}
	}
	return fmt.Sprintf("%s%s: want a string: quote the value", where, key)
}

// valueOnLine returns the text of key's value on line n (1-based) of src,
// or "" when the line does not hold it.
func valueOnLine(src []byte, n int, key string) string {
	lines := strings.SplitN(string(src), "\n", n+1)
	if n < 1 || n > len(lines) {
		return ""
	}
	re, err := regexp.Compile(`(?:^|[\s{,."'])` + regexp.QuoteMeta(key) + `["']?\s*=\s*([^,}#\]]*)`)
	if err != nil {
		return ""
	}
	m := re.FindStringSubmatch(lines[n-1])
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// ApplyEnv overrides settings from SLUICE_* environment variables
// (SLUICE_DATA, SLUICE_STOMP, SLUICE_AMQP, SLUICE_STOMPS, SLUICE_AMQPS,
// SLUICE_AMQP091, SLUICE_ADMIN, SLUICE_WEBSOCKET, SLUICE_LOG_LEVEL,
// SLUICE_LOG_FORMAT).
func (c *Config) ApplyEnv(getenv func(string) string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&c.Data, "SLUICE_DATA")
	set(&c.Listeners.STOMP, "SLUICE_STOMP")
	set(&c.Listeners.AMQP, "SLUICE_AMQP")
	set(&c.Listeners.STOMPS, "SLUICE_STOMPS")
	set(&c.Listeners.AMQPS, "SLUICE_AMQPS")
	set(&c.Listeners.AMQP091, "SLUICE_AMQP091")
	set(&c.Listeners.Admin, "SLUICE_ADMIN")
	set(&c.Listeners.WebSocket, "SLUICE_WEBSOCKET")
	set(&c.LogLevel, "SLUICE_LOG_LEVEL")
	set(&c.LogFormat, "SLUICE_LOG_FORMAT")
}

// Validate checks every setting and compiles every destination policy,
// reporting all problems at once.
func (c *Config) Validate() error {
	var errs []error
	for _, l := range []struct{ name, addr string }{
		{"stomp", c.Listeners.STOMP}, {"amqp", c.Listeners.AMQP}, {"admin", c.Listeners.Admin},
		{"stomps", c.Listeners.STOMPS}, {"amqps", c.Listeners.AMQPS}, {"websocket", c.Listeners.WebSocket},
		{"amqp091", c.Listeners.AMQP091},
	} {
		if l.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(l.addr)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listeners.%s: %w", l.name, err))
		}
	}
	for i, o := range c.Listeners.WebSocketAllowedOrigins {
		if err := ws.CheckOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("listeners.websocket_allowed_origins[%d]: %w", i, err))
		}
	}
	errs = append(errs, c.validateTLS()...)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log_format %q: want text or json", c.LogFormat))
	}
	_, problems := c.connectionOptions()
	errs = append(errs, problems...)
	if c.Connection.Prefetch < 0 {
		errs = append(errs, fmt.Errorf("connection.prefetch must not be negative"))
	}
	if c.ExpiryScanInterval < 0 {
		errs = append(errs, fmt.Errorf("expiry_scan_interval must not be negative"))
	}
	if c.WindowMessages < -1 || c.WindowBytes < -1 {
		errs = append(errs, fmt.Errorf("window_messages and window_bytes must be positive, 0 (the default) or -1 (no window)"))
	}
	errs = append(errs, c.Limits.validate()...)
	errs = append(errs, c.Admin.validate()...)
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateCluster()...)
	_, problems = c.engineDestinations()
	errs = append(errs, problems...)
	for i := range c.Destinations {
		_, problems := c.Destinations[i].problems()
		for _, err := range problems {
			errs = append(errs, fmt.Errorf("destination[%d] (match %q): %w", i, c.Destinations[i].Match, err))
		}
	}
	return errors.Join(errs...)
}

// validate checks the shape of the admin credentials; the admin package
// checks the hashes themselves when the broker starts.
func (a *Admin) validate() []error {
	var errs []error
	for i, u := range a.Users {
		if u.Name == "" {
			errs = append(errs, fmt.Errorf("admin.users[%d]: name is empty", i))
		}
		h := u.PasswordHash
		if len(h) != 60 || !(strings.HasPrefix(h, "$2a$") || strings.HasPrefix(h, "$2b$") || strings.HasPrefix(h, "$2y$")) {
			errs = append(errs, fmt.Errorf("admin.users[%d] (%q): password_hash must be a bcrypt hash (make one with `sluice admin hash-password`)", i, u.Name))
		}
	}
	for i, t := range a.Tokens {
		hexPart, ok := strings.CutPrefix(t, "sha256:")
		if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 64 {
			errs = append(errs, fmt.Errorf("admin.tokens[%d]: want \"sha256:\" and 64 hex digits (make one with `sluice admin new-token`)", i))
		}
	}
	return errs
}

// ConnectionOptions translates the connection-factory section. The error
// joins every problem of the section.
func (c *Config) ConnectionOptions() (engine.ConnectionOptions, error) {
	o, errs := c.connectionOptions()
	return o, errors.Join(errs...)
}

// connectionOptions is ConnectionOptions returning each problem apart.
func (c *Config) connectionOptions() (engine.ConnectionOptions, []error) {
	var o engine.ConnectionOptions
	var errs []error
	f := c.Connection
	switch strings.ToLower(f.ClientIDPolicy) {
	case "", "restricted":
		o.ClientIDPolicy = engine.Restricted
	case "unrestricted":
		o.ClientIDPolicy = engine.Unrestricted
	default:
		errs = append(errs, fmt.Errorf("connection.client_id_policy %q: want restricted or unrestricted", f.ClientIDPolicy))
	}
	switch strings.ToLower(f.SharingPolicy) {
	case "", "exclusive":
		o.SharingPolicy = engine.Exclusive
	case "sharable", "shareable":
		o.SharingPolicy = engine.Sharable
	default:
		errs = append(errs, fmt.Errorf("connection.sharing_policy %q: want exclusive or sharable", f.SharingPolicy))
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"redelivery_delay", f.RedeliveryDelay}, {"time_to_live", f.TimeToLive}, {"time_to_deliver", f.TimeToDeliver}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("connection.%s %v: must not be negative", d.key, time.Duration(d.v)))
		}
	}
	if f.RedeliveryLimit < -1 {
		errs = append(errs, fmt.Errorf("connection.redelivery_limit %d: want -1 (no limit) or more", f.RedeliveryLimit))
	}
	o.RedeliveryDelay = time.Duration(f.RedeliveryDelay)
	mode, err := parseDeliveryMode(f.DeliveryMode)
	if err != nil {
		errs = append(errs, fmt.Errorf("connection.delivery_mode: %w", err))
	}
	if mode == 0 {
		mode = message.Persistent
	}
	if f.Priority < 0 || f.Priority > 9 {
		errs = append(errs, fmt.Errorf("connection.priority %d: want 0-9", f.Priority))
	}
	o.Producer = engine.ProducerDefaults{
		DeliveryMode:    mode,
		Priority:        uint8(max(0, min(f.Priority, 9))),
		TimeToLive:      time.Duration(f.TimeToLive),
		TimeToDeliver:   time.Duration(f.TimeToDeliver),
		RedeliveryLimit: f.RedeliveryLimit,
	}
	return o, errs
}

func parseDeliveryMode(s string) (message.DeliveryMode, error) {
	switch strings.ToLower(strings.ReplaceAll(s, "-", "_")) {
	case "":
		return 0, nil
	case "persistent":
		return message.Persistent, nil
	case "non_persistent", "nonpersistent":
		return message.NonPersistent, nil
	}
	return 0, fmt.Errorf("%q: want persistent or non_persistent", s)
}

// compile turns a destination section into an engine policy. The error
// joins every problem of the section (see problems).
func (d *Destination) compile() (engine.Policy, error) {
	p, errs := d.problems()
	return p, errors.Join(errs...)
}

// problems turns a destination section into an engine policy and returns
// every problem of the section, each naming its key, not only the first.
func (d *Destination) problems() (engine.Policy, []error) {
	p := engine.DefaultPolicy()
	var errs []error
	if d.Match == "" {
		errs = append(errs, fmt.Errorf("match is empty"))
	} else if _, err := path.Match(d.Match, ""); err != nil {
		errs = append(errs, fmt.Errorf("match %q: %w", d.Match, err))
	}
	switch d.Kind {
	case "", "queue", "topic":
	default:
		errs = append(errs, fmt.Errorf("kind %q: want queue or topic", d.Kind))
	}
	if mode, err := parseDeliveryMode(d.DeliveryModeOverride); err != nil {
		errs = append(errs, fmt.Errorf("delivery_mode_override: %w", err))
	} else {
		p.DeliveryModeOverride = mode
	}
	if d.PriorityOverride != nil {
		if *d.PriorityOverride < 0 || *d.PriorityOverride > 9 {
			errs = append(errs, fmt.Errorf("priority_override %d: want 0-9", *d.PriorityOverride))
		} else {
			p.PriorityOverride = *d.PriorityOverride
		}
	}
	for _, o := range []struct {
		key string
		v   *Duration
	}{{"time_to_live_override", d.TimeToLiveOverride}, {"redelivery_delay_override", d.RedeliveryDelayOverride}, {"blocking_send_timeout", d.BlockingSendTimeout}} {
		if o.v != nil && *o.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", o.key, time.Duration(*o.v)))
		}
	}
	if d.TimeToLiveOverride != nil {
		p.TimeToLiveOverride = time.Duration(*d.TimeToLiveOverride)
	}
	if s := strings.TrimSpace(d.TimeToDeliverOverride); s != "" {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			if ms < 0 {
				errs = append(errs, fmt.Errorf("time_to_deliver_override %d: must not be negative", ms))
			}
			p.TimeToDeliverOverride = time.Duration(ms) * time.Millisecond
		} else if sched, err := schedule.Parse(s); err != nil {
			errs = append(errs, fmt.Errorf("time_to_deliver_override: %w", err))
		} else {
			p.TimeToDeliverSchedule = func(now time.Time) time.Time {
				next := sched.Next(now)
				if next.IsZero() {
					return now
				}
				return next
			}
		}
	}
	if d.RedeliveryDelayOverride != nil {
		p.RedeliveryDelayOverride = time.Duration(*d.RedeliveryDelayOverride)
	}
	if d.RedeliveryLimit != nil {
		if *d.RedeliveryLimit < -1 {
			errs = append(errs, fmt.Errorf("redelivery_limit %d: want -1 (not set) or more", *d.RedeliveryLimit))
		} else {
			p.RedeliveryLimit = *d.RedeliveryLimit
		}
	}
	if d.ErrorDestination != "" {
		ed, err := message.ParseDestination(d.ErrorDestination)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("error_destination: %w", err))
		case ed.Kind != message.Queue && ed.Kind != message.Topic:
			errs = append(errs, fmt.Errorf("error_destination %q: must be a queue or a topic", d.ErrorDestination))
		default:
			p.ErrorDestination = ed
		}
	}
	switch strings.ToLower(d.ExpirationPolicy) {
	case "", "discard":
		p.Expiration = engine.ExpireDiscard
	case "log":
		p.Expiration = engine.ExpireLog
	case "redirect":
		p.Expiration = engine.ExpireRedirect
		// A bad error_destination is reported above.
		if d.ErrorDestination == "" {
			errs = append(errs, fmt.Errorf("expiration_policy redirect needs error_destination"))
		}
	default:
		errs = append(errs, fmt.Errorf("expiration_policy %q: want discard, log or redirect", d.ExpirationPolicy))
	}
	if d.MaxMessages < 0 || d.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max_messages and max_bytes must not be negative"))
	}
	p.MaxMessages, p.MaxBytes = d.MaxMessages, d.MaxBytes
	if d.WindowMessages < 0 || d.WindowBytes < 0 {
		errs = append(errs, fmt.Errorf("window_messages and window_bytes must not be negative"))
	}
	p.WindowMessages, p.WindowBytes = d.WindowMessages, d.WindowBytes
	if d.BlockingSendTimeout != nil {
		p.BlockingSendTimeout = time.Duration(*d.BlockingSendTimeout)
	}
	return p, errs
}

// PolicyFunc compiles the destination sections into the engine's policy
// lookup: the first section whose kind and pattern match wins; a destination
// no section matches gets engine.DefaultPolicy. Call Validate first.
func (c *Config) PolicyFunc() (func(message.Destination) engine.Policy, error) {
	type rule struct {
		match string
		kind  string
		p     engine.Policy
	}
	rules := make([]rule, 0, len(c.Destinations))
	for i := range c.Destinations {
		p, err := c.Destinations[i].compile()
		if err != nil {
			return nil, fmt.Errorf("destination[%d]: %w", i, err)
		}
		rules = append(rules, rule{c.Destinations[i].Match, c.Destinations[i].Kind, p})
	}
	lookup := func(d message.Destination) engine.Policy {
		kind := "queue"
		if d.Kind.IsTopic() {
			kind = "topic"
		}
		for _, r := range rules {
			if sectionMatches(r.kind, r.match, kind, d.Name) {
				return r.p
			}
		}
		return engine.DefaultPolicy()
	}
	// The engine asks on every send and redelivery: remember the answers for
	// named destinations (temporary ones have unique names and are not kept).
	var cache sync.Map
	return func(d message.Destination) engine.Policy {
		if d.Kind.IsTemporary() {
			return lookup(d)
		}
		if p, ok := cache.Load(d); ok {
			return p.(engine.Policy)
		}
		p := lookup(d)
		cache.Store(d, p)
		return p
	}, nil
}
