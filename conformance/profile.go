package conformance

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
)

// Provision is how a profile meets a configuration need: the destinations
// whose names start with Prefix carry the configuration, and ErrorQueue is
// the queue their undeliverable (or expired) messages go to, where the need
// has one.
type Provision struct {
	Prefix     string
	ErrorQueue string
}

// Profile describes a broker under test: which configuration it carries for
// the scenarios that need some, and what it lacks.
type Profile struct {
	Name        string
	Description string
	// Provides maps each configuration need the broker meets to the
	// destinations that carry it.
	Provides map[Need]Provision
	// Lacks maps needs the broker does not meet, on every protocol, to the
	// reason.
	Lacks map[Need]string
	// LacksOn is Lacks for one protocol ("stomp", "amqp", "amqp091"): a
	// broker's known failures on that protocol's front-end.
	LacksOn map[string]map[Need]string
	// Config is the broker configuration the profile assumes (for
	// `sluice conformance --show-config`).
	Config string
	// Slack multiplies the suite's tolerances for a slower broker.
	Slack float64
	// STOMPDialect is the STOMP driver's dialect (STOMPOptions.Dialect).
	STOMPDialect string
}

// lacks reports why the broker does not meet need over proto, if it does
// not.
func (p *Profile) lacks(need Need, proto string) (string, bool) {
	if r, ok := p.LacksOn[proto][need]; ok {
		return r, true
	}
	if r, ok := p.Lacks[need]; ok {
		return r, true
	}
	if configNeeds[need] {
		if _, ok := p.Provides[need]; !ok {
			return fmt.Sprintf("profile %s configures no destination for %s (%s)", p.Name, need, need.Doc()), true
		}
	}
	return "", false
}

// Summary lists the profile's provisions and lacks, for --show-config and
// reports.
func (p *Profile) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s: %s\n", p.Name, p.Description)
	var needs []string
	for n := range p.Provides {
		needs = append(needs, string(n))
	}
	sort.Strings(needs)
	if len(needs) > 0 {
		b.WriteString("\nconfigured destinations:\n")
	}
	for _, n := range needs {
		pv := p.Provides[Need(n)]
		fmt.Fprintf(&b, "  %-44s %s*", n, pv.Prefix)
		if pv.ErrorQueue != "" {
			fmt.Fprintf(&b, "  (error destination /queue/%s)", pv.ErrorQueue)
		}
		fmt.Fprintf(&b, "  — %s\n", Need(n).Doc())
	}
	lacks := map[string]string{}
	for n, r := range p.Lacks {
		lacks[string(n)] = r
	}
	for proto, m := range p.LacksOn {
		for n, r := range m {
			lacks[string(n)+" ("+proto+")"] = r
		}
	}
	keys := make([]string, 0, len(lacks))
	for k := range lacks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		b.WriteString("\nnot supported:\n")
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-44s %s\n", k, lacks[k])
	}
	return b.String()
}

//go:embed profiles/sluice.toml
var sluiceConfig string

// SluiceConfig is profiles/sluice.toml: the configuration the sluice profile
// assumes.
func SluiceConfig() string { return sluiceConfig }

// SluiceProfile is the profile of a Sluice started with
// profiles/sluice.toml.
func SluiceProfile() *Profile {
	return &Profile{
		Name:        "sluice",
		Description: "Sluice started with conformance/profiles/sluice.toml (sluice serve --config conformance/profiles/sluice.toml)",
		Provides: map[Need]Provision{
			NeedRedeliveryLimit:            {Prefix: "conf.rlimit.", ErrorQueue: "conf.errors.rlimit"},
			NeedRedeliveryLimitNoErrorDest: {Prefix: "conf.rlimitdel."},
			NeedErrorDestination:           {Prefix: "conf.errdest.", ErrorQueue: "conf.errors.errdest"},
			NeedRedeliveryDelayOverride:    {Prefix: "conf.rdelay."},
			NeedExpireRedirect:             {Prefix: "conf.xredirect.", ErrorQueue: "conf.errors.expired"},
			NeedExpireDiscard:              {Prefix: "conf.xdiscard.", ErrorQueue: "conf.errors.xdiscard"},
			NeedExpireLog:                  {Prefix: "conf.xlog.", ErrorQueue: "conf.errors.xlog"},
			NeedTTLOverride:                {Prefix: "conf.ttlover."},
			NeedTTDOverride:                {Prefix: "conf.ttdover."},
			NeedTTDSchedule:                {Prefix: "conf.ttdsched."},
			NeedPriorityOverride:           {Prefix: "conf.prioover."},
			NeedDeliveryModeOverride:       {Prefix: "conf.dmover."},
			NeedQuota:                      {Prefix: "conf.quota."},
			NeedQuotaBlocking:              {Prefix: "conf.quotablock."},
		},
		// Deleting destinations needs the admin API (--admin); the
		// runner finds out whether the broker has one.
		Lacks:  map[Need]string{},
		Config: sluiceConfig,
		Slack:  1,
	}
}

// ActiveMQProfile is the profile of ActiveMQ Classic 5.17 as Debian packages
// it and /work/shared/peers/scripts/amq-start.sh runs it: the stock broker
// configuration (KahaDB, no destination policies, schedulerSupport off,
// useJmx off), STOMP on 62613, no AMQP transport.
func ActiveMQProfile() *Profile {
	return &Profile{
		Name: "activemq",
		Description: "ActiveMQ Classic 5.17 (Debian package, stock activemq.xml from /work/shared/peers/config: " +
			"no destination policies, no scheduler, no JMX), STOMP only",
		Provides: map[Need]Provision{
			// ActiveMQ's default dead-letter strategy: one shared DLQ for
			// undeliverable and expired persistent messages.
			NeedErrorDestination: {Prefix: "conf.errdest.", ErrorQueue: "ActiveMQ.DLQ"},
			NeedExpireRedirect:   {Prefix: "conf.xredirect.", ErrorQueue: "ActiveMQ.DLQ"},
		},
		Lacks: map[Need]string{
			NeedRedeliveryLimit:            "no broker-side redelivery limit for STOMP consumers: ActiveMQ applies RedeliveryPolicy.maximumRedeliveries in its OpenWire client (a broker redeliveryPlugin needs schedulerSupport, off in the stock configuration)",
			NeedRedeliveryLimitNoErrorDest: "no broker-side redelivery limit for STOMP consumers (see redelivery-limit)",
			NeedRedeliveryDelayOverride:    "no per-destination redelivery delay: ActiveMQ's redelivery delay is an OpenWire client setting",
			NeedSessionRedeliveryDelay:     "no session redelivery delay over STOMP (an OpenWire RedeliveryPolicy setting)",
			NeedMessageRedeliveryLimit:     "no per-message redelivery limit (JMSRedeliveryLimit is WebLogic's)",
			NeedNackRedelivery:             "a STOMP NACK sends the message to the DLQ at once: no redelivery, no count (/work/shared/peers/README.md)",
			NeedExpireDiscard:              "the stock dead-letter strategy sends expired persistent messages to ActiveMQ.DLQ; no per-destination discard policy is configured",
			NeedExpireLog:                  "no log-and-discard expiration policy",
			NeedTTLOverride:                "no time-to-live override on a destination (the TimeStampingBrokerPlugin's ttlCeiling is broker-wide and not configured)",
			NeedTTDOverride:                "no time-to-deliver override on a destination",
			NeedTTDSchedule:                "no scheduled time-to-deliver override on a destination (AMQ_SCHEDULED_CRON is per message, and needs schedulerSupport)",
			NeedPriorityOverride:           "no priority override on a destination",
			NeedDeliveryModeOverride:       "no delivery-mode override on a destination",
			NeedQuota:                      "no message-count quota: ActiveMQ limits destination memory in bytes with producer flow control",
			NeedQuotaBlocking:              "no message-count quota (see quota)",
			NeedDeliveryCount:              "ActiveMQ's STOMP MESSAGE frames carry no JMSXDeliveryCount (only redelivered: true)",
			NeedPriorityOrder:              "queues are not priority-ordered unless a policyEntry sets prioritizedMessages=\"true\" (not in the stock configuration)",
			NeedDeliveryDelay:              "AMQ_SCHEDULED_DELAY needs schedulerSupport=\"true\", off in the stock configuration (the header is then ignored)",
			NeedDeliveryTime:               "no absolute delivery time over STOMP (ActiveMQ's scheduler takes a delay, a period or a cron expression, and is off in the stock configuration)",
			NeedSharedSubscriptions:        "ActiveMQ Classic 5.17 has no JMS 2.0 shared subscriptions (it offers virtual topics instead)",
			NeedXPathSelector:              "no JMS_BEA_SELECT: ActiveMQ's XML selectors use its own XPATH '…' syntax",
			NeedAdminDelete:                "the runner has no admin API for ActiveMQ (useJmx=false, and Debian's package ships no web console)",
		},
		Slack:        2,
		STOMPDialect: "activemq",
	}
}

// Profiles are the built-in profiles by name.
func Profiles() map[string]func() *Profile {
	return map[string]func() *Profile{"sluice": SluiceProfile, "activemq": ActiveMQProfile}
}
