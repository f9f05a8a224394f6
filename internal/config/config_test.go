package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/grammar/schedule"
)

func ptr[T any](v T) *T { return &v }

func dur(d time.Duration) *Duration { return ptr(Duration(d)) }

// writeFile writes a TOML file into a temporary directory and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sluice.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestDefaultValidates(t *testing.T) {
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if cfg.Destinations != nil {
		t.Errorf("Default has destinations: %v", cfg.Destinations)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string // substrings of the error; none means valid
	}{
		{"default", func(c *Config) {}, nil},
		{"listeners disabled", func(c *Config) { c.Listeners = Listeners{} }, nil},
		{"ephemeral ports", func(c *Config) { c.Listeners = Listeners{STOMP: "127.0.0.1:0", AMQP: "localhost:0", Admin: "[::1]:0"} }, nil},
		{"network listener without users", func(c *Config) { c.Listeners.AMQP = ":0" },
			[]string{"listeners.amqp :0 is not a loopback address", "no users", "allow_insecure_network"}},
		{"network listener with the risk accepted", func(c *Config) {
			c.Listeners.STOMP = "0.0.0.0:0"
			c.Security.AllowInsecureNetwork = true
		}, nil},
		{"network listener with anonymous access", func(c *Config) {
			c.Listeners.STOMP = "0.0.0.0:0"
			c.Security = Security{AnonymousRole: "dev", Users: []SecurityUser{{Name: "a", PasswordHash: testHash}},
				Grants: []SecurityGrant{{Role: "dev", Match: "*", Actions: []string{"send"}}}}
		}, []string{"listeners.stomp 0.0.0.0:0", `anonymous_role "dev"`}},
		{"admin listener on the network without credentials", func(c *Config) {
			c.Listeners.Admin = "0.0.0.0:8161"
			c.Security = Security{Users: []SecurityUser{{Name: "a", PasswordHash: testHash}}}
		}, []string{"listeners.admin 0.0.0.0:8161 is not a loopback address and no admin credentials"}},
		{"admin listener on the network with an admin", func(c *Config) {
			c.Listeners.Admin = "0.0.0.0:8161"
			c.Admin.Users = []AdminUser{{Name: "ops", PasswordHash: testHash}}
		}, nil},
		{"network listener with users", func(c *Config) {
			c.Listeners.STOMP = "0.0.0.0:0"
			c.Security = Security{Users: []SecurityUser{{Name: "a", PasswordHash: testHash}}}
		}, nil},
		{"bad grant", func(c *Config) {
			c.Security = Security{Users: []SecurityUser{{Name: "a", PasswordHash: testHash, Roles: []string{"r"}}},
				Grants: []SecurityGrant{{Role: "r", Kind: "quue", Match: "*", Actions: []string{"send"}}}}
		}, []string{`security.grants[0]: kind "quue"`, `security.users[0] ("a"): role "r": no grant names this role`}},
		{"user in admin and security", func(c *Config) {
			c.Security = Security{Users: []SecurityUser{{Name: "a", PasswordHash: testHash}}}
			c.Admin.Users = []AdminUser{{Name: "a", PasswordHash: testHash}}
		}, []string{`admin.users[0] ("a"): the user is listed twice`}},
		{"websocket on the network without users", func(c *Config) { c.Listeners.WebSocket = "0.0.0.0:15674" },
			[]string{"listeners.websocket 0.0.0.0:15674 is not a loopback address", "no users"}},
		{"amqp091 on the network without users", func(c *Config) { c.Listeners.AMQP091 = "0.0.0.0:5673" },
			[]string{"listeners.amqp091 0.0.0.0:5673 is not a loopback address", "no users"}},
		{"amqp091 with a bad port", func(c *Config) { c.Listeners.AMQP091 = "127.0.0.1:nope" },
			[]string{"listeners.amqp091"}},
		{"websocket on the network with users", func(c *Config) {
			c.Listeners.WebSocket = "0.0.0.0:15674"
			c.Security = Security{Users: []SecurityUser{{Name: "a", PasswordHash: testHash}}}
		}, nil},
		{"admin_websocket on a network admin listener without users", func(c *Config) {
			c.Listeners.Admin, c.Listeners.AdminWebSocket = "0.0.0.0:8161", true
			c.Admin.Tokens = []string{"sha256:" + strings.Repeat("ab", 32)}
		}, []string{"listeners.admin (with admin_websocket) 0.0.0.0:8161 is not a loopback address", "no users"}},
		{"admin_websocket on a loopback admin listener", func(c *Config) { c.Listeners.AdminWebSocket = true }, nil},
		{"websocket address", func(c *Config) { c.Listeners.WebSocket = "localhost" },
			[]string{"listeners.websocket", "missing port"}},
		{"websocket allowed origins", func(c *Config) {
			c.Listeners.WebSocketAllowedOrigins = []string{"https://app.example.com", "*", "https://app.example.com/ui", "http://[x"}
		}, []string{"listeners.websocket_allowed_origins[2]", "without a path", "listeners.websocket_allowed_origins[3]", "syntax error in pattern"}},
		{"named port", func(c *Config) { c.Listeners.Admin = "localhost:http" }, nil},
		{"listener without port", func(c *Config) { c.Listeners.STOMP = "127.0.0.1" },
			[]string{"listeners.stomp", "missing port"}},
		{"listener too many colons", func(c *Config) { c.Listeners.AMQP = "1:2:3" },
			[]string{"listeners.amqp", "too many colons"}},
		{"listener port out of range", func(c *Config) { c.Listeners.Admin = "127.0.0.1:99999" },
			[]string{"listeners.admin", "99999"}},
		{"listener unknown service", func(c *Config) { c.Listeners.Admin = "127.0.0.1:nosuchservice" },
			[]string{"listeners.admin", "nosuchservice"}},
		{"log level", func(c *Config) { c.LogLevel = "verbose" },
			[]string{`log_level "verbose"`, "debug, info, warn or error"}},
		{"log level empty", func(c *Config) { c.LogLevel = "" }, []string{`log_level ""`}},
		{"client id policy", func(c *Config) { c.Connection.ClientIDPolicy = "open" },
			[]string{`connection.client_id_policy "open"`, "restricted or unrestricted"}},
		{"sharing policy", func(c *Config) { c.Connection.SharingPolicy = "shared" },
			[]string{`connection.sharing_policy "shared"`, "exclusive or sharable"}},
		{"delivery mode", func(c *Config) { c.Connection.DeliveryMode = "sometimes" },
			[]string{"connection.delivery_mode", `"sometimes"`, "persistent or non_persistent"}},
		{"priority too high", func(c *Config) { c.Connection.Priority = 10 },
			[]string{"connection.priority 10: want 0-9"}},
		{"priority negative", func(c *Config) { c.Connection.Priority = -1 },
			[]string{"connection.priority -1: want 0-9"}},
		{"priority bounds", func(c *Config) { c.Connection.Priority = 9 }, nil},
		{"negative prefetch", func(c *Config) { c.Connection.Prefetch = -1 },
			[]string{"connection.prefetch must not be negative"}},
		{"negative redelivery delay", func(c *Config) { c.Connection.RedeliveryDelay = Duration(-time.Second) },
			[]string{"connection.redelivery_delay -1s: must not be negative"}},
		{"negative time to live", func(c *Config) { c.Connection.TimeToLive = Duration(-time.Second) },
			[]string{"connection.time_to_live -1s"}},
		{"negative time to deliver", func(c *Config) { c.Connection.TimeToDeliver = Duration(-time.Second) },
			[]string{"connection.time_to_deliver -1s"}},
		{"redelivery limit below -1", func(c *Config) { c.Connection.RedeliveryLimit = -2 },
			[]string{"connection.redelivery_limit -2"}},
		{"negative expiry scan", func(c *Config) { c.ExpiryScanInterval = Duration(-time.Second) },
			[]string{"expiry_scan_interval must not be negative"}},
		{"window below -1", func(c *Config) { c.WindowMessages = -2 },
			[]string{"window_messages and window_bytes must be positive, 0 (the default) or -1 (no window)"}},
		{"window bytes below -1", func(c *Config) { c.WindowBytes = -5 },
			[]string{"window_messages and window_bytes must be positive"}},

		// Destinations.
		{"full destination", func(c *Config) {
			c.Destinations = []Destination{{
				Match: "orders.*", Kind: "queue",
				DeliveryModeOverride: "non-persistent", PriorityOverride: ptr(0),
				TimeToLiveOverride: dur(0), TimeToDeliverOverride: "0 0 0,30 * * * *",
				RedeliveryDelayOverride: dur(time.Second), RedeliveryLimit: ptr[int32](0),
				ErrorDestination: "/queue/orders.DLQ", ExpirationPolicy: "Redirect",
				MaxMessages: 1, MaxBytes: 1, BlockingSendTimeout: dur(0),
			}}
		}, nil},
		{"empty match", func(c *Config) { c.Destinations = []Destination{{}} },
			[]string{`destination[0] (match "")`, "match is empty"}},
		{"bad pattern", func(c *Config) { c.Destinations = []Destination{{Match: "orders["}} },
			[]string{`match "orders["`, "syntax error in pattern"}},
		{"bad kind", func(c *Config) { c.Destinations = []Destination{{Match: "a", Kind: "exchange"}} },
			[]string{`kind "exchange": want queue or topic`}},
		{"kind is case sensitive", func(c *Config) { c.Destinations = []Destination{{Match: "a", Kind: "Queue"}} },
			[]string{`kind "Queue"`}},
		{"bad delivery mode override", func(c *Config) { c.Destinations = []Destination{{Match: "a", DeliveryModeOverride: "durable"}} },
			[]string{"delivery_mode_override", `"durable"`}},
		{"priority override too high", func(c *Config) { c.Destinations = []Destination{{Match: "a", PriorityOverride: ptr(10)}} },
			[]string{"priority_override 10: want 0-9"}},
		{"priority override negative", func(c *Config) { c.Destinations = []Destination{{Match: "a", PriorityOverride: ptr(-1)}} },
			[]string{"priority_override -1: want 0-9"}},
		{"negative time to live override", func(c *Config) {
			c.Destinations = []Destination{{Match: "a", TimeToLiveOverride: dur(-time.Millisecond)}}
		},
			[]string{"time_to_live_override -1ms: must not be negative"}},
		{"negative redelivery delay override", func(c *Config) {
			c.Destinations = []Destination{{Match: "a", RedeliveryDelayOverride: dur(-time.Second)}}
		},
			[]string{"redelivery_delay_override -1s"}},
		{"negative blocking send timeout", func(c *Config) { c.Destinations = []Destination{{Match: "a", BlockingSendTimeout: dur(-time.Second)}} },
			[]string{"blocking_send_timeout -1s"}},
		{"redelivery limit -1 is unset", func(c *Config) { c.Destinations = []Destination{{Match: "a", RedeliveryLimit: ptr[int32](-1)}} }, nil},
		{"redelivery limit below -1", func(c *Config) { c.Destinations = []Destination{{Match: "a", RedeliveryLimit: ptr[int32](-2)}} },
			[]string{"redelivery_limit -2"}},
		{"negative time to deliver override", func(c *Config) { c.Destinations = []Destination{{Match: "a", TimeToDeliverOverride: "-5"}} },
			[]string{"time_to_deliver_override -5: must not be negative"}},
		{"bad schedule", func(c *Config) { c.Destinations = []Destination{{Match: "a", TimeToDeliverOverride: "0 0 61 * * * *"}} },
			[]string{"time_to_deliver_override: schedule:1:5: minute value 61 out of range 0-59"}},
		{"schedule missing a field", func(c *Config) { c.Destinations = []Destination{{Match: "a", TimeToDeliverOverride: "0 0 0,30 * * *"}} },
			[]string{"schedule:1:15: dayOfWeek field missing"}},
		{"error destination without prefix", func(c *Config) { c.Destinations = []Destination{{Match: "a", ErrorDestination: "orders.DLQ"}} },
			[]string{"error_destination", "no known prefix"}},
		{"error destination empty name", func(c *Config) { c.Destinations = []Destination{{Match: "a", ErrorDestination: "/queue/"}} },
			[]string{"error_destination", "empty name"}},
		{"temporary error destination", func(c *Config) { c.Destinations = []Destination{{Match: "a", ErrorDestination: "/temp-queue/x"}} },
			[]string{`error_destination "/temp-queue/x": must be a queue or a topic`}},
		{"redirect without error destination", func(c *Config) { c.Destinations = []Destination{{Match: "a", ExpirationPolicy: "redirect"}} },
			[]string{"expiration_policy redirect needs error_destination"}},
		{"bad expiration policy", func(c *Config) { c.Destinations = []Destination{{Match: "a", ExpirationPolicy: "archive"}} },
			[]string{`expiration_policy "archive": want discard, log or redirect`}},
		{"negative max messages", func(c *Config) { c.Destinations = []Destination{{Match: "a", MaxMessages: -1}} },
			[]string{"max_messages and max_bytes must not be negative"}},
		{"negative max bytes", func(c *Config) { c.Destinations = []Destination{{Match: "a", MaxBytes: -1}} },
			[]string{"max_messages and max_bytes must not be negative"}},
		{"negative destination window", func(c *Config) { c.Destinations = []Destination{{Match: "a", WindowMessages: -1}} },
			[]string{"window_messages and window_bytes must not be negative"}},
		{"index of the failing section", func(c *Config) {
			c.Destinations = []Destination{{Match: "ok"}, {Match: "bad", Kind: "x"}}
		}, []string{`destination[1] (match "bad")`}},

		{"every problem at once", func(c *Config) {
			c.Listeners.STOMP = "nope"
			c.LogLevel = "loud"
			c.Connection.Prefetch = -1
			c.Destinations = []Destination{{Match: "a", MaxBytes: -1}, {Match: "b", ExpirationPolicy: "redirect"}}
		}, []string{"listeners.stomp", "log_level", "connection.prefetch", "destination[0]", "destination[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.modify(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// A bad schedule is reported as a *schedule.Error carrying its position, so
// tools can point at it.
func TestValidateScheduleErrorPosition(t *testing.T) {
	cfg := Default()
	cfg.Destinations = []Destination{{Match: "a"}, {Match: "b", TimeToDeliverOverride: "0 0 0,30 * x * *"}}
	err := cfg.Validate()
	var se *schedule.Error
	if !errors.As(err, &se) {
		t.Fatalf("Validate() = %v, want a *schedule.Error in the chain", err)
	}
	if se.Field != "dayOfMonth" || se.Line != 1 || se.Column != 12 || se.Offset != 11 {
		t.Errorf("schedule error = %+v, want the dayOfMonth field at 1:12 (offset 11)", *se)
	}
	if want := `destination[1] (match "b"): time_to_deliver_override: schedule:1:12: dayOfMonth field: unknown word "x"`; !strings.Contains(err.Error(), want) {
		t.Errorf("Validate() = %q, want it to contain %q", err, want)
	}
}

// Errors come in a stable order, whatever the map or iteration order.
func TestValidateStableOrder(t *testing.T) {
	cfg := Default()
	cfg.Listeners = Listeners{STOMP: "a", AMQP: "b", Admin: "c"}
	first := cfg.Validate().Error()
	for range 20 {
		if got := cfg.Validate().Error(); got != first {
			t.Fatalf("Validate() changed from %q to %q", first, got)
		}
	}
	i, j, k := strings.Index(first, "stomp"), strings.Index(first, "amqp"), strings.Index(first, "admin")
	if !(i < j && j < k) {
		t.Errorf("Validate() = %q: want stomp, amqp, admin in that order", first)
	}
}

func TestConnectionOptions(t *testing.T) {
	tests := []struct {
		name string
		f    ConnectionFactory
		want engine.ConnectionOptions
	}{
		{"defaults", Default().Connection, engine.ConnectionOptions{
			ClientIDPolicy: engine.Restricted,
			SharingPolicy:  engine.Exclusive,
			Producer:       engine.DefaultProducerDefaults(),
		}},
		{"empty strings take the defaults", ConnectionFactory{RedeliveryLimit: -1, Priority: 4}, engine.ConnectionOptions{
			ClientIDPolicy: engine.Restricted,
			SharingPolicy:  engine.Exclusive,
			Producer:       engine.DefaultProducerDefaults(),
		}},
		{"everything set", ConnectionFactory{
			ClientIDPolicy:  "unrestricted",
			SharingPolicy:   "sharable",
			RedeliveryDelay: Duration(1500 * time.Millisecond),
			DeliveryMode:    "non_persistent",
			Priority:        7,
			TimeToLive:      Duration(time.Minute),
			TimeToDeliver:   Duration(2 * time.Second),
			RedeliveryLimit: 3,
			Prefetch:        1,
		}, engine.ConnectionOptions{
			ClientIDPolicy:  engine.Unrestricted,
			SharingPolicy:   engine.Sharable,
			RedeliveryDelay: 1500 * time.Millisecond,
			Producer: engine.ProducerDefaults{
				DeliveryMode:    message.NonPersistent,
				Priority:        7,
				TimeToLive:      time.Minute,
				TimeToDeliver:   2 * time.Second,
				RedeliveryLimit: 3,
			},
		}},
		{"case and spelling variants", ConnectionFactory{
			ClientIDPolicy: "UNRESTRICTED", SharingPolicy: "Shareable", DeliveryMode: "Non-Persistent", RedeliveryLimit: 0,
		}, engine.ConnectionOptions{
			ClientIDPolicy: engine.Unrestricted,
			SharingPolicy:  engine.Sharable,
			Producer:       engine.ProducerDefaults{DeliveryMode: message.NonPersistent, RedeliveryLimit: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Connection: tt.f}
			got, err := c.ConnectionOptions()
			if err != nil {
				t.Fatalf("ConnectionOptions() error %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ConnectionOptions() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}

	bad := []struct {
		f    ConnectionFactory
		want string
	}{
		{ConnectionFactory{ClientIDPolicy: "x"}, "connection.client_id_policy"},
		{ConnectionFactory{SharingPolicy: "x"}, "connection.sharing_policy"},
		{ConnectionFactory{DeliveryMode: "x"}, "connection.delivery_mode"},
		{ConnectionFactory{Priority: 42}, "connection.priority 42"},
	}
	for _, b := range bad {
		c := Config{Connection: b.f}
		if _, err := c.ConnectionOptions(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ConnectionOptions(%+v) = %v, want an error containing %q", b.f, err, b.want)
		}
	}
}

func TestPolicyFunc(t *testing.T) {
	cfg := Default()
	cfg.Destinations = []Destination{
		{Match: "orders.urgent", Kind: "queue", PriorityOverride: ptr(9)},
		{Match: "orders.*", Kind: "queue", RedeliveryLimit: ptr[int32](3), ErrorDestination: "/queue/orders.DLQ",
			RedeliveryDelayOverride: dur(5 * time.Second)},
		{Match: "orders.*", Kind: "topic", ExpirationPolicy: "log", TimeToLiveOverride: dur(time.Minute)},
		{Match: "prices.*", TimeToDeliverOverride: "2500", DeliveryModeOverride: "non_persistent"},
		{Match: "reports", TimeToDeliverOverride: " 0 0 0,30 * * * * "},
		{Match: "bulk", MaxMessages: 100, MaxBytes: 1 << 20, BlockingSendTimeout: dur(2 * time.Second),
			ExpirationPolicy: "redirect", ErrorDestination: "topic://bulk.expired"},
		{Match: "*", Kind: "topic", PriorityOverride: ptr(1)},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	policy, err := cfg.PolicyFunc()
	if err != nil {
		t.Fatal(err)
	}
	q := func(n string) message.Destination { return message.Destination{Kind: message.Queue, Name: n} }
	tp := func(n string) message.Destination { return message.Destination{Kind: message.Topic, Name: n} }
	with := func(f func(p *engine.Policy)) engine.Policy {
		p := engine.DefaultPolicy()
		f(&p)
		return p
	}

	tests := []struct {
		name string
		dest message.Destination
		want engine.Policy
	}{
		{"first match wins", q("orders.urgent"), with(func(p *engine.Policy) { p.PriorityOverride = 9 })},
		{"second section", q("orders.new"), with(func(p *engine.Policy) {
			p.RedeliveryLimit = 3
			p.ErrorDestination = q("orders.DLQ")
			p.RedeliveryDelayOverride = 5 * time.Second
		})},
		{"kind filter: the topic of the same name", tp("orders.new"), with(func(p *engine.Policy) {
			p.Expiration = engine.ExpireLog
			p.TimeToLiveOverride = time.Minute
		})},
		{"kind filter: queue section skipped for a topic", tp("orders.urgent"), with(func(p *engine.Policy) {
			p.Expiration = engine.ExpireLog
			p.TimeToLiveOverride = time.Minute
		})},
		{"temporary topic is a topic", message.Destination{Kind: message.TempTopic, Name: "orders.t1"}, with(func(p *engine.Policy) {
			p.Expiration = engine.ExpireLog
			p.TimeToLiveOverride = time.Minute
		})},
		{"pattern does not cross dots as a prefix", q("orders"), engine.DefaultPolicy()},
		{"relative time to deliver", q("prices.eur"), with(func(p *engine.Policy) {
			p.TimeToDeliverOverride = 2500 * time.Millisecond
			p.DeliveryModeOverride = message.NonPersistent
		})},
		{"relative time to deliver, topic", tp("prices.eur"), with(func(p *engine.Policy) {
			p.TimeToDeliverOverride = 2500 * time.Millisecond
			p.DeliveryModeOverride = message.NonPersistent
		})},
		{"quota and redirect", q("bulk"), with(func(p *engine.Policy) {
			p.MaxMessages, p.MaxBytes = 100, 1<<20
			p.BlockingSendTimeout = 2 * time.Second
			p.Expiration = engine.ExpireRedirect
			p.ErrorDestination = tp("bulk.expired")
		})},
		{"catch-all for topics", tp("weather"), with(func(p *engine.Policy) { p.PriorityOverride = 1 })},
		{"unmatched queue gets the default", q("weather"), engine.DefaultPolicy()},
		{"unmatched temporary queue gets the default", message.Destination{Kind: message.TempQueue, Name: "x"}, engine.DefaultPolicy()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second lookup comes from the cache
				got := policy(tt.dest)
				if got.TimeToDeliverSchedule != nil {
					t.Fatalf("policy(%v) has a schedule", tt.dest)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("policy(%v) =\n%+v\nwant\n%+v", tt.dest, got, tt.want)
				}
			}
		})
	}

	t.Run("scheduled time to deliver", func(t *testing.T) {
		p := policy(q("reports"))
		if p.TimeToDeliverSchedule == nil {
			t.Fatalf("policy(reports) has no schedule: %+v", p)
		}
		if p.TimeToDeliverOverride != -1 {
			t.Errorf("TimeToDeliverOverride = %v, want -1 (not set)", p.TimeToDeliverOverride)
		}
		ist := time.FixedZone("IST", 5*3600+1800)
		for _, c := range []struct{ now, want time.Time }{
			{time.Date(2026, 11, 29, 21, 17, 5, 0, time.UTC), time.Date(2026, 11, 29, 21, 30, 0, 0, time.UTC)},
			{time.Date(2026, 11, 29, 21, 30, 0, 0, time.UTC), time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)},
			{time.Date(2026, 11, 29, 21, 29, 59, 999e6, time.UTC), time.Date(2026, 11, 29, 21, 30, 0, 0, time.UTC)},
			{time.Date(2026, 12, 31, 23, 45, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
			// Wall-clock time of the given zone: half hours of a +05:30 zone.
			{time.Date(2026, 11, 29, 21, 17, 0, 0, ist), time.Date(2026, 11, 29, 21, 30, 0, 0, ist)},
		} {
			got := p.TimeToDeliverSchedule(c.now)
			if !got.Equal(c.want) {
				t.Errorf("schedule(%v) = %v, want %v", c.now, got, c.want)
			}
		}
	})
}

func TestPolicyFuncInvalid(t *testing.T) {
	cfg := Default()
	cfg.Destinations = []Destination{{Match: "a"}, {Match: "b", ExpirationPolicy: "bogus"}}
	if _, err := cfg.PolicyFunc(); err == nil || !strings.Contains(err.Error(), "destination[1]") {
		t.Fatalf("PolicyFunc() error = %v, want one naming destination[1]", err)
	}
}

func TestPolicyFuncNoDestinations(t *testing.T) {
	cfg := Default()
	policy, err := cfg.PolicyFunc()
	if err != nil {
		t.Fatal(err)
	}
	if got := policy(message.Destination{Kind: message.Queue, Name: "x"}); !reflect.DeepEqual(got, engine.DefaultPolicy()) {
		t.Errorf("policy = %+v, want the default", got)
	}
}

func TestApplyEnv(t *testing.T) {
	env := map[string]string{
		"SLUICE_DATA":      "/var/lib/sluice",
		"SLUICE_STOMP":     "0.0.0.0:61613",
		"SLUICE_AMQP":      "0.0.0.0:5672",
		"SLUICE_ADMIN":     "0.0.0.0:8161",
		"SLUICE_WEBSOCKET": "0.0.0.0:15674",
		"SLUICE_LOG_LEVEL": "debug",
	}
	cfg := Default()
	cfg.ApplyEnv(func(k string) string { return env[k] })
	want := Default()
	want.Data = "/var/lib/sluice"
	want.Listeners.STOMP, want.Listeners.AMQP, want.Listeners.Admin = "0.0.0.0:61613", "0.0.0.0:5672", "0.0.0.0:8161"
	want.Listeners.WebSocket = "0.0.0.0:15674"
	want.LogLevel = "debug"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ApplyEnv =\n%+v\nwant\n%+v", cfg, want)
	}

	// Unset and empty variables change nothing: an empty SLUICE_STOMP
	// cannot disable a listener.
	cfg = Default()
	cfg.Listeners.AMQP = "from-file:1"
	cfg.ApplyEnv(func(string) string { return "" })
	want = Default()
	want.Listeners.AMQP = "from-file:1"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ApplyEnv with nothing set changed the config: %+v", cfg)
	}
}

func TestApplyEnvNilUsesProcessEnvironment(t *testing.T) {
	t.Setenv("SLUICE_DATA", "/tmp/from-env")
	t.Setenv("SLUICE_LOG_LEVEL", "warn")
	t.Setenv("SLUICE_STOMP", "")
	cfg := Default()
	cfg.ApplyEnv(nil)
	if cfg.Data != "/tmp/from-env" || cfg.LogLevel != "warn" || cfg.Listeners.STOMP != Default().Listeners.STOMP {
		t.Errorf("ApplyEnv(nil) = %+v", cfg)
	}
}

func TestLoad(t *testing.T) {
	file := writeFile(t, `
data = "/srv/sluice"
log_level = "debug"
auto_create = false
expiry_scan_interval = "250ms"

[listeners]
stomp = ""
admin = "127.0.0.1:0"
# amqp is left out: it keeps its default.

[connection]
client_id_policy = "unrestricted"
sharing_policy = "sharable"
redelivery_delay = "1.5s"
time_to_live = "1h"
redelivery_limit = 5
# delivery_mode, priority, time_to_deliver and prefetch keep their defaults.

[[destination]]
match = "orders.*"
kind = "queue"
redelivery_limit = 3
redelivery_delay_override = "10s"
error_destination = "/queue/orders.DLQ"

[[destination]]
match = "reports"
time_to_deliver_override = "0 0 0,30 * * * *"
priority_override = 0
time_to_live_override = "0s"
max_messages = 10
blocking_send_timeout = "2s"
`)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Dir = filepath.Dir(file) // Load sets it: TLS file names are relative to it
	want.Data = "/srv/sluice"
	want.LogLevel = "debug"
	want.AutoCreate = false
	want.ExpiryScanInterval = Duration(250 * time.Millisecond)
	want.Listeners.STOMP = ""
	want.Listeners.Admin = "127.0.0.1:0"
	want.Connection.ClientIDPolicy = "unrestricted"
	want.Connection.SharingPolicy = "sharable"
	want.Connection.RedeliveryDelay = Duration(1500 * time.Millisecond)
	want.Connection.TimeToLive = Duration(time.Hour)
	want.Connection.RedeliveryLimit = 5
	want.Destinations = []Destination{
		{Match: "orders.*", Kind: "queue", RedeliveryLimit: ptr[int32](3),
			RedeliveryDelayOverride: dur(10 * time.Second), ErrorDestination: "/queue/orders.DLQ"},
		{Match: "reports", TimeToDeliverOverride: "0 0 0,30 * * * *", PriorityOverride: ptr(0),
			TimeToLiveOverride: dur(0), MaxMessages: 10, BlockingSendTimeout: dur(2 * time.Second)},
	}
	want.file = file
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestLoadNoFile(t *testing.T) {
	cfg, err := Load("")
	if err != nil || !reflect.DeepEqual(cfg, Default()) {
		t.Errorf(`Load("") = %+v, %v; want Default()`, cfg, err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"unknown top-level key", "data = \"x\"\ndatadir = \"y\"\n", []string{"unknown keys: datadir"}},
		{"unknown key in a table", "[listeners]\nhttp = \"x\"\n", []string{"unknown keys: listeners.http"}},
		{"unknown key in a destination", "[[destination]]\nmatch = \"a\"\nredelivery_limt = 3\n",
			[]string{"unknown keys: destination.redelivery_limt"}},
		{"several unknown keys", "colour = 1\n[connection]\nprefetch_size = 3\n",
			[]string{"unknown keys:", "colour", "connection.prefetch_size"}},
		{"bad duration", "expiry_scan_interval = \"soon\"\n", []string{"expiry_scan_interval", `duration "soon"`}},
		{"duration as a number", "[connection]\nredelivery_delay = 5\n", []string{"redelivery_delay"}},
		{"time to deliver override as a number", "[[destination]]\nmatch = \"a\"\ntime_to_deliver_override = 5000 # ms\n",
			[]string{`:3: destination.time_to_deliver_override: quote it: "5000"`}},
		{"wrong type", "auto_create = \"yes\"\n", []string{"auto_create"}},
		{"syntax", "data = \n", []string{"read config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, tt.text)
			_, err := Load(file)
			if err == nil {
				t.Fatalf("Load(%q) = nil error", tt.text)
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("Load error %q does not name the file", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load(%q) = %q, want it to contain %q", tt.text, err, w)
				}
			}
		})
	}

	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d != Duration(90*time.Second) {
		t.Fatalf("UnmarshalText(1m30s) = %v, %v", time.Duration(d), err)
	}
	b, err := d.MarshalText()
	if err != nil || string(b) != "1m30s" {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
	if err := d.UnmarshalText([]byte("90")); err == nil {
		t.Errorf("UnmarshalText(90) accepted a duration without a unit")
	}
}

func TestConfiguredDestinations(t *testing.T) {
	created := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cfg := Default()
	cfg.ConfiguredDestinations = []ConfiguredDestination{{Kind: "queue", Name: "orders", Created: created}, {Kind: "topic", Name: "news"}}
	got, err := cfg.EngineDestinations()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Destination.Name != "orders" || !got[0].Created.Equal(created) || !got[1].Destination.Kind.IsTopic() {
		t.Fatalf("got %+v", got)
	}
	for _, bad := range [][]ConfiguredDestination{
		{{Kind: "bucket", Name: "x"}},
		{{Kind: "queue"}},
		{{Kind: "queue", Name: "a"}, {Kind: "queue", Name: "a"}},
	} {
		cfg.ConfiguredDestinations = bad
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// testHash is a bcrypt hash (cost 4) of "pw".
const testHash = "$2a$04$g3QoGNgfC1dmCAh6pnf64uQ8yuRShCvpBJBMZbDfS25AR68Ybkc7m"

func TestSecurityErrorsArePositioned(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.toml")
	body := `[[security.users]]
name = "alice"
password_hash = "` + testHash + `"
roles = ["orders"]

[[security.grants]]
role = "orders"
kind = "queue"
match = "orders.*"
actions = ["send"]

# a second grant with a typo
[[security.grants]]
role = "orders"
match = "*"
actions = ["sned"]
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if want := file + `:13: security.grants[1]: action "sned"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate() = %v, want it to say %q", err, want)
	}
}

// TestValidateReportsEveryProblemOfASection: a section with several
// mistakes has each of them reported, each once and naming its section and
// key, not only the first.
func TestValidateReportsEveryProblemOfASection(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string
	}{
		{"destination", func(c *Config) {
			c.Destinations = []Destination{{Match: "ok"}, {
				Match:                 "orders.*",
				Kind:                  "quue",
				DeliveryModeOverride:  "sometimes",
				PriorityOverride:      ptr(12),
				TimeToLiveOverride:    dur(-time.Second),
				TimeToDeliverOverride: "0 0 0,30 * * *",
				RedeliveryLimit:       ptr(int32(-5)),
				ErrorDestination:      "/exchange/x",
				ExpirationPolicy:      "keep",
				MaxMessages:           -1,
			}}
		}, []string{
			`destination[1] (match "orders.*"): kind "quue": want queue or topic`,
			`destination[1] (match "orders.*"): delivery_mode_override: "sometimes"`,
			`destination[1] (match "orders.*"): priority_override 12: want 0-9`,
			`destination[1] (match "orders.*"): time_to_live_override -1s: must not be negative`,
			`destination[1] (match "orders.*"): time_to_deliver_override: schedule:1:15: dayOfWeek field missing`,
			`destination[1] (match "orders.*"): redelivery_limit -5`,
			`destination[1] (match "orders.*"): error_destination`,
			`destination[1] (match "orders.*"): expiration_policy "keep"`,
			`destination[1] (match "orders.*"): max_messages and max_bytes must not be negative`,
		}},
		{"redirect with a bad error destination says only what is wrong", func(c *Config) {
			c.Destinations = []Destination{{Match: "", ExpirationPolicy: "redirect", ErrorDestination: "/exchange/x"}}
		}, []string{`destination[0] (match ""): match is empty`, `destination[0] (match ""): error_destination`}},
		{"connection", func(c *Config) {
			c.Connection.ClientIDPolicy = "loose"
			c.Connection.SharingPolicy = "greedy"
			c.Connection.RedeliveryDelay = -1
			c.Connection.RedeliveryLimit = -2
			c.Connection.DeliveryMode = "maybe"
			c.Connection.Priority = 10
		}, []string{
			`connection.client_id_policy "loose"`,
			`connection.sharing_policy "greedy"`,
			`connection.redelivery_delay -1ns: must not be negative`,
			`connection.redelivery_limit -2`,
			`connection.delivery_mode: "maybe"`,
			`connection.priority 10: want 0-9`,
		}},
		{"configured destinations", func(c *Config) {
			c.ConfiguredDestinations = []ConfiguredDestination{
				{Kind: "queue", Name: "a"}, {Kind: "box", Name: "b"}, {Kind: "queue", Name: ""}, {Kind: "queue", Name: "a"},
			}
		}, []string{
			`configured_destination[1]: kind "box"`,
			`configured_destination[2]: destination name is empty`,
			`configured_destination[3]: /queue/a is configured twice`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.modify(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("Validate() reported %d problems, want %d:\n%s", len(lines), len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestLoadQuoteHint: a number, boolean or date where the file needs a
// string is reported with its line and key and the value written as it
// should be.
func TestLoadQuoteHint(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"integer", "[[destination]]\nmatch = \"a\"\ntime_to_deliver_override = 5000\n",
			`:3: destination.time_to_deliver_override: quote it: "5000"`},
		{"integer with a comment", "[[destination]]\nmatch = \"a\"\n\ntime_to_deliver_override = 5000   # five seconds\n",
			`:4: destination.time_to_deliver_override: quote it: "5000"`},
		{"boolean", "log_level = true\n", `:1: log_level: quote it: "true"`},
		{"float", "[connection]\nclient_id_policy = 1.5\n", `:2: connection.client_id_policy: quote it: "1.5"`},
		{"inline table", "listeners = { stomp = \"127.0.0.1:0\", amqp = 5672 }\n", `:1: listeners.amqp: quote it: "5672"`},
		{"date", "[[destination]]\nmatch = \"a\"\nerror_destination = 2026-03-08\n",
			`:3: destination.error_destination: quote it: "2026-03-08"`},
		{"array", "data = [\"a\", \"b\"]\n", `:1: data: want a string, not an array or table`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, tt.text)
			_, err := Load(file)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if want := "read config " + file + tt.want; err.Error() != want {
				t.Errorf("Load = %q\nwant     %q", err, want)
			}
		})
	}
}
