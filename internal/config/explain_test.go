package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// ExplainPolicy names the section PolicyFunc applies and, for every value,
// whether that section, the connection factory or the built-in default
// sets it, with the key an operator would edit.
func TestExplainPolicy(t *testing.T) {
	cfg, err := Load(writeFile(t, `
[connection]
time_to_live = "1h"
priority = 6

[[destination]]
match = "orders.urgent"
kind = "queue"
priority_override = 9

[[destination]]
match = "orders.*"
kind = "queue"
redelivery_limit = 3
error_destination = "/queue/orders.DLQ"
max_messages = 1000

[[destination]]
match = "*"
kind = "topic"
time_to_live_override = "1m"
expiration_policy = "log"
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	q := func(n string) message.Destination { return message.Destination{Kind: message.Queue, Name: n} }
	tp := func(n string) message.Destination { return message.Destination{Kind: message.Topic, Name: n} }

	tests := []struct {
		name    string
		dest    message.Destination
		section int
		// want maps settings to "value source key" (key "" for a default).
		want map[string]string
	}{
		{"first match wins", q("orders.urgent"), 0, map[string]string{
			"priority":         "9 destination[0] destination[0].priority_override",
			"time_to_live":     "1h0m0s connection factory connection.time_to_live",
			"redelivery_limit": "-1 connection factory connection.redelivery_limit",
			"max_messages":     "0 default ",
		}},
		{"second section", q("orders.new"), 1, map[string]string{
			"priority":          "6 connection factory connection.priority",
			"redelivery_limit":  "3 destination[1] destination[1].redelivery_limit",
			"error_destination": "/queue/orders.DLQ destination[1] destination[1].error_destination",
			"max_messages":      "1000 destination[1] destination[1].max_messages",
			"expiration_policy": "discard default ",
			"delivery_mode":     "persistent connection factory connection.delivery_mode",
		}},
		{"a topic gets the topic section", tp("orders.new"), 2, map[string]string{
			"time_to_live":      "1m0s destination[2] destination[2].time_to_live_override",
			"expiration_policy": "log destination[2] destination[2].expiration_policy",
			"redelivery_limit":  "-1 connection factory connection.redelivery_limit",
		}},
		{"no section", q("weather"), -1, map[string]string{
			"time_to_live":          "1h0m0s connection factory connection.time_to_live",
			"error_destination":     " default ",
			"blocking_send_timeout": "0s default ",
		}},
	}
	policy, err := cfg.PolicyFunc()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := cfg.ExplainPolicy(tt.dest)
			if ex.Section != tt.section || ex.Destination != tt.dest.String() {
				t.Fatalf("section %d for %s, want %d", ex.Section, ex.Destination, tt.section)
			}
			if tt.section >= 0 && ex.Match != cfg.Destinations[tt.section].Match {
				t.Errorf("match %q, want %q", ex.Match, cfg.Destinations[tt.section].Match)
			}
			got := map[string]string{}
			for _, v := range ex.Values {
				got[v.Name] = v.Value + " " + v.Source + " " + v.Key
			}
			if len(ex.Values) != 11 {
				t.Errorf("%d values, want all 11: %v", len(ex.Values), got)
			}
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("%s = %q, want %q", k, got[k], w)
				}
			}
			// The section it names is the one PolicyFunc applies.
			want := policy(tt.dest)
			if tt.section >= 0 {
				p, err := cfg.Destinations[tt.section].compile()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(p, want) {
					t.Errorf("PolicyFunc applies another policy than section %d's", tt.section)
				}
			}
		})
	}
}

// Every value a section overrides says so; bounds and defaults do not.
func TestExplainPolicyOverrides(t *testing.T) {
	cfg := Default()
	d := time.Duration(5 * time.Second)
	cfg.Destinations = []Destination{{Match: "x", RedeliveryDelayOverride: (*Duration)(&d), MaxBytes: 10}}
	var overrides []string
	for _, v := range cfg.ExplainPolicy(message.Destination{Kind: message.Queue, Name: "x"}).Values {
		if v.Override {
			overrides = append(overrides, fmt.Sprint(v.Name, "=", v.Value))
		}
	}
	if got := strings.Join(overrides, ","); got != "redelivery_delay=5s" {
		t.Errorf("overrides %s, want redelivery_delay=5s", got)
	}
}
