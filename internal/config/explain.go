package config

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// Where an effective policy value comes from (PolicyValue.Source).
const (
	// SourceDefault is Sluice's built-in value: nothing configures it.
	SourceDefault = "default"
	// SourceConnectionFactory is the [connection] section's producer
	// default (its own default when the file leaves it out); a client
	// may set its own value per message.
	SourceConnectionFactory = "connection factory"
)

// PolicyExplanation is a destination's effective policy and where each
// value comes from: which [[destination]] section applies (the first
// whose kind and match fit, as PolicyFunc decides) and, value by value,
// whether that section, the connection factory or the built-in default
// sets it.
type PolicyExplanation struct {
	// Destination is the destination explained, "/queue/NAME".
	Destination string
	// Section is the index of the [[destination]] section that applies
	// (0 for the first in the file), -1 when none does; Match and Kind are
	// its match and kind.
	Section     int
	Match, Kind string
	// Values lists every setting, in the order of docs/configuration.md.
	Values []PolicyValue
}

// PolicyValue is one effective setting.
type PolicyValue struct {
	// Name is the setting, as the [[destination]] section names its
	// override ("time_to_live" for time_to_live_override).
	Name string
	// Value is the effective value as the file would write it: "1m0s",
	// "persistent", "/queue/DLQ"; "" for none (no error destination).
	Value string
	// Source is SourceDefault, SourceConnectionFactory or "destination[N]".
	Source string
	// Key is the configuration key that sets it
	// ("destination[0].time_to_live_override", "connection.time_to_live");
	// "" for a built-in default.
	Key string
	// Override reports that the value replaces what producers and
	// sessions set (a [[destination]] override); otherwise it is what
	// applies when they set nothing.
	Override bool
}

// sectionMatches is the one matching rule of [[destination]] sections: a
// section of kind sectionKind ("" for both) and pattern match applies to
// a destination of kind ("queue" or "topic") named name.
func sectionMatches(sectionKind, match, kind, name string) bool {
	if sectionKind != "" && sectionKind != kind {
		return false
	}
	ok, _ := path.Match(match, name)
	return ok
}

// policyKind is the kind a destination's policy is looked up under:
// temporary queues are queues, temporary topics topics.
func policyKind(d message.Destination) string {
	if d.Kind.IsTopic() {
		return "topic"
	}
	return "queue"
}

// SectionFor returns the index of the [[destination]] section whose
// policy d gets, or -1 when none matches.
func (c *Config) SectionFor(d message.Destination) int {
	kind := policyKind(d)
	for i, s := range c.Destinations {
		if sectionMatches(s.Kind, s.Match, kind, d.Name) {
			return i
		}
	}
	return -1
}

// ExplainPolicy says which policy d gets and why. Call Validate first: a
// section that does not compile is reported as written.
func (c *Config) ExplainPolicy(d message.Destination) PolicyExplanation {
	ex := PolicyExplanation{Destination: d.String(), Section: c.SectionFor(d)}
	var sec *Destination
	src := ""
	if ex.Section >= 0 {
		sec = &c.Destinations[ex.Section]
		ex.Match, ex.Kind = sec.Match, sec.Kind
		src = fmt.Sprintf("destination[%d]", ex.Section)
	}
	f := c.Connection
	// fromSection is the section's value of key when it sets one.
	fromSection := func(key string, set bool, value string) (PolicyValue, bool) {
		if sec == nil || !set {
			return PolicyValue{}, false
		}
		return PolicyValue{Value: value, Source: src, Key: src + "." + key, Override: true}, true
	}
	factory := func(key, value string) PolicyValue {
		return PolicyValue{Value: value, Source: SourceConnectionFactory, Key: "connection." + key}
	}
	builtin := func(value string) PolicyValue { return PolicyValue{Value: value, Source: SourceDefault} }
	pick := func(name string, v PolicyValue, ok bool, otherwise PolicyValue) {
		if !ok {
			v = otherwise
		}
		v.Name = name
		ex.Values = append(ex.Values, v)
	}
	deref := func(p any) string {
		switch v := p.(type) {
		case *int:
			if v != nil {
				return strconv.Itoa(*v)
			}
		case *int32:
			if v != nil {
				return strconv.Itoa(int(*v))
			}
		case *Duration:
			if v != nil {
				return time.Duration(*v).String()
			}
		}
		return "" // not set: the value is not used
	}
	var s Destination
	if sec != nil {
		s = *sec
	}
	mode := strings.ToLower(strings.ReplaceAll(f.DeliveryMode, "-", "_"))
	if mode == "" {
		mode = "persistent"
	}
	v, ok := fromSection("delivery_mode_override", s.DeliveryModeOverride != "", strings.ToLower(s.DeliveryModeOverride))
	pick("delivery_mode", v, ok, factory("delivery_mode", mode))
	v, ok = fromSection("priority_override", s.PriorityOverride != nil, deref(s.PriorityOverride))
	pick("priority", v, ok, factory("priority", strconv.Itoa(f.Priority)))
	v, ok = fromSection("time_to_live_override", s.TimeToLiveOverride != nil, deref(s.TimeToLiveOverride))
	pick("time_to_live", v, ok, factory("time_to_live", time.Duration(f.TimeToLive).String()))
	v, ok = fromSection("time_to_deliver_override", strings.TrimSpace(s.TimeToDeliverOverride) != "", strings.TrimSpace(s.TimeToDeliverOverride))
	pick("time_to_deliver", v, ok, factory("time_to_deliver", time.Duration(f.TimeToDeliver).String()))
	v, ok = fromSection("redelivery_delay_override", s.RedeliveryDelayOverride != nil, deref(s.RedeliveryDelayOverride))
	pick("redelivery_delay", v, ok, factory("redelivery_delay", time.Duration(f.RedeliveryDelay).String()))
	v, ok = fromSection("redelivery_limit", s.RedeliveryLimit != nil && *s.RedeliveryLimit >= 0, deref(s.RedeliveryLimit))
	pick("redelivery_limit", v, ok, factory("redelivery_limit", strconv.Itoa(int(f.RedeliveryLimit))))
	v, ok = fromSection("error_destination", s.ErrorDestination != "", s.ErrorDestination)
	pick("error_destination", v, ok, builtin(""))
	v, ok = fromSection("expiration_policy", s.ExpirationPolicy != "", strings.ToLower(s.ExpirationPolicy))
	pick("expiration_policy", v, ok, builtin("discard"))
	v, ok = fromSection("max_messages", s.MaxMessages > 0, strconv.FormatInt(s.MaxMessages, 10))
	pick("max_messages", v, ok, builtin("0"))
	v, ok = fromSection("max_bytes", s.MaxBytes > 0, strconv.FormatInt(s.MaxBytes, 10))
	pick("max_bytes", v, ok, builtin("0"))
	v, ok = fromSection("blocking_send_timeout", s.BlockingSendTimeout != nil, deref(s.BlockingSendTimeout))
	pick("blocking_send_timeout", v, ok, builtin("0s"))
	// Quotas and the blocking timeout bound; they override nothing a
	// producer sets.
	for i := range ex.Values {
		switch ex.Values[i].Name {
		case "error_destination", "expiration_policy", "max_messages", "max_bytes", "blocking_send_timeout":
			ex.Values[i].Override = false
		}
	}
	return ex
}
