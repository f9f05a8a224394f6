package admin

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/engine"
)

// collector turns the engine's management snapshots into Prometheus
// metrics at scrape time: nothing is counted on the messaging path.
// Temporary destinations are summed into sluice_temporary_destinations
// rather than given series of their own (their names are unique, so each
// would be a new series).
type collector struct {
	eng        *engine.Broker
	storeStats func() StoreStats

	buildInfo   *prometheus.Desc
	messages    *prometheus.Desc
	inFlight    *prometheus.Desc
	scheduled   *prometheus.Desc
	bytes       *prometheus.Desc
	paged       *prometheus.Desc
	consumers   *prometheus.Desc
	oldest      *prometheus.Desc
	enqueued    *prometheus.Desc
	dequeued    *prometheus.Desc
	expired     *prometheus.Desc
	redelivered *prometheus.Desc
	undelivered *prometheus.Desc
	delivered   *prometheus.Desc
	temporary   *prometheus.Desc
	subPending  *prometheus.Desc
	subActive   *prometheus.Desc
	conns       *prometheus.Desc
	sessions    *prometheus.Desc

	storeCommits *prometheus.Desc
	storeUpdates *prometheus.Desc
	storeOps     *prometheus.Desc
	storeBytes   *prometheus.Desc
	storeApplied *prometheus.Desc
}

func newCollector(eng *engine.Broker, version string, storeStats func() StoreStats) *collector {
	dl := []string{"kind", "name"}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		eng:        eng,
		storeStats: storeStats,
		buildInfo: prometheus.NewDesc("sluice_build_info", "Sluice's version; the value is always 1.", nil,
			prometheus.Labels{"version": version}),
		messages:    d("sluice_destination_messages", "Messages a destination holds: ready, scheduled and in flight (a topic: summed over its subscriptions).", dl),
		inFlight:    d("sluice_destination_messages_in_flight", "Messages delivered to consumers and not yet acknowledged.", dl),
		scheduled:   d("sluice_destination_messages_scheduled", "Messages waiting for their delivery time (time-to-deliver or redelivery delay).", dl),
		bytes:       d("sluice_destination_bytes", "Size of the messages a destination holds, in bytes.", dl),
		paged:       d("sluice_destination_paged_messages", "Ready messages of a destination kept only in the store: its in-memory window is full.", dl),
		consumers:   d("sluice_destination_consumers", "Consumers attached to a destination.", dl),
		oldest:      d("sluice_destination_oldest_message_age_seconds", "Age of the oldest message ready for delivery (0 when none is).", dl),
		enqueued:    d("sluice_destination_enqueued_total", "Messages added to a destination since it was created or the broker started.", dl),
		dequeued:    d("sluice_destination_dequeued_total", "Messages acknowledged by consumers.", dl),
		expired:     d("sluice_destination_expired_total", "Messages that expired.", dl),
		redelivered: d("sluice_destination_redelivered_total", "Messages returned for redelivery after a delivery attempt.", dl),
		undelivered: d("sluice_destination_undelivered_total", "Messages that became undeliverable (redelivery limit, rejection) and went to the error destination or were dropped.", dl),
		delivered:   d("sluice_destination_delivered_total", "Deliveries to consumers, redeliveries included (dequeued_total counts the acknowledgements).", dl),
		temporary:   d("sluice_temporary_destinations", "Temporary queues and topics that exist.", nil),
		subPending:  d("sluice_subscription_messages", "Messages a durable subscription holds.", []string{"topic", "client_id", "subscription"}),
		subActive:   d("sluice_subscription_consumers", "Active consumers of a durable subscription.", []string{"topic", "client_id", "subscription"}),
		conns:       d("sluice_connections", "Open client connections, by protocol (stomp, amqp; embedded for in-process clients).", []string{"protocol"}),
		sessions:    d("sluice_sessions", "Open sessions over all connections.", nil),

		storeCommits: d("sluice_store_commits_total", "Durable store commits (journal syncs); concurrent updates share one.", nil),
		storeUpdates: d("sluice_store_updates_total", "Store updates confirmed durable.", nil),
		storeOps:     d("sluice_store_ops_total", "Store writes confirmed durable.", nil),
		storeBytes:   d("sluice_store_journal_bytes_total", "Bytes written to the store's journal.", nil),
		storeApplied: d("sluice_store_applied_ops_total", "Store writes applied from the journal to the store behind it.", nil),
	}
}

// Describe sends every descriptor.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.buildInfo, c.messages, c.inFlight, c.scheduled, c.bytes, c.paged, c.consumers, c.oldest,
		c.enqueued, c.dequeued, c.expired, c.redelivered, c.undelivered, c.delivered, c.temporary, c.subPending, c.subActive,
		c.conns, c.sessions} {
		ch <- d
	}
	if c.storeStats != nil {
		for _, d := range []*prometheus.Desc{c.storeCommits, c.storeUpdates, c.storeOps, c.storeBytes, c.storeApplied} {
			ch <- d
		}
	}
}

// Collect reads the engine's snapshots.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(c.buildInfo, gauge, 1)
	now := time.Now().UnixMilli()
	temps := 0
	for _, d := range c.eng.Destinations() {
		if d.Kind.IsTemporary() {
			temps++
			continue
		}
		l := []string{d.Kind.String(), d.Name}
		ch <- prometheus.MustNewConstMetric(c.messages, gauge, float64(d.Messages), l...)
		ch <- prometheus.MustNewConstMetric(c.inFlight, gauge, float64(d.InFlight), l...)
		ch <- prometheus.MustNewConstMetric(c.scheduled, gauge, float64(d.Scheduled), l...)
		ch <- prometheus.MustNewConstMetric(c.bytes, gauge, float64(d.Bytes), l...)
		ch <- prometheus.MustNewConstMetric(c.paged, gauge, float64(d.Paged), l...)
		ch <- prometheus.MustNewConstMetric(c.consumers, gauge, float64(d.Consumers), l...)
		age := 0.0
		if d.OldestTimestamp > 0 && d.OldestTimestamp < now {
			age = float64(now-d.OldestTimestamp) / 1000
		}
		ch <- prometheus.MustNewConstMetric(c.oldest, gauge, age, l...)
		ch <- prometheus.MustNewConstMetric(c.enqueued, counter, float64(d.Enqueued), l...)
		ch <- prometheus.MustNewConstMetric(c.dequeued, counter, float64(d.Dequeued), l...)
		ch <- prometheus.MustNewConstMetric(c.expired, counter, float64(d.Expired), l...)
		ch <- prometheus.MustNewConstMetric(c.redelivered, counter, float64(d.Redelivered), l...)
		ch <- prometheus.MustNewConstMetric(c.undelivered, counter, float64(d.Undelivered), l...)
		ch <- prometheus.MustNewConstMetric(c.delivered, counter, float64(d.Delivered), l...)
	}
	ch <- prometheus.MustNewConstMetric(c.temporary, gauge, float64(temps))
	seen := map[[3]string]bool{}
	for _, s := range c.eng.Subscriptions() {
		key := [3]string{s.Topic.Name, s.ClientID, s.Name}
		if !s.Durable || seen[key] {
			continue // the same name under both client ID policies: report the first
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(c.subPending, gauge, float64(s.Pending), key[:]...)
		ch <- prometheus.MustNewConstMetric(c.subActive, gauge, float64(s.Consumers), key[:]...)
	}
	byProto := map[string]int{"stomp": 0, "amqp": 0}
	sessions := 0
	for _, cn := range c.eng.Connections() {
		byProto[protocolLabel(cn.Protocol)]++
		sessions += len(cn.Sessions)
	}
	for p, n := range byProto {
		ch <- prometheus.MustNewConstMetric(c.conns, gauge, float64(n), p)
	}
	ch <- prometheus.MustNewConstMetric(c.sessions, gauge, float64(sessions))
	if c.storeStats != nil {
		st := c.storeStats()
		ch <- prometheus.MustNewConstMetric(c.storeCommits, counter, float64(st.Commits))
		ch <- prometheus.MustNewConstMetric(c.storeUpdates, counter, float64(st.Updates))
		ch <- prometheus.MustNewConstMetric(c.storeOps, counter, float64(st.Ops))
		ch <- prometheus.MustNewConstMetric(c.storeBytes, counter, float64(st.JournalBytes))
		ch <- prometheus.MustNewConstMetric(c.storeApplied, counter, float64(st.AppliedOps))
	}
}

// AuthMetrics count authentications and authorization refusals, for
// every protocol: sluice_auth_attempts_total{protocol,result} and
// sluice_authorization_denied_total{protocol,action}. They carry no user
// label, so that a client trying names cannot grow the series. Attempt is
// the realm's security.Options.ObserveAttempt and Denied the engine's
// Config.ObserveDenied; admin.New registers them (Options.AuthMetrics) and
// counts the admin listener's own: bearer tokens, and requests refused for
// want of the admin role (action "admin") or of any admin grant (action
// "monitor").
type AuthMetrics struct {
	attempts *prometheus.CounterVec
	denied   *prometheus.CounterVec
}

// NewAuthMetrics makes the counters, with the known protocols, results
// and actions at zero so that they show before the first event.
func NewAuthMetrics() *AuthMetrics {
	m := &AuthMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_auth_attempts_total",
			Help: "Authentications by protocol (stomp, amqp, admin) and result (success, failure).",
		}, []string{"protocol", "result"}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_authorization_denied_total",
			Help: "Requests refused because the user lacks a grant, by protocol and the action refused (an engine action; admin or monitor on the admin listener).",
		}, []string{"protocol", "action"}),
	}
	for _, p := range []string{"stomp", "amqp", "admin"} {
		for _, r := range []string{"success", "failure"} {
			m.attempts.WithLabelValues(p, r)
		}
	}
	for _, p := range []string{"stomp", "amqp"} {
		for _, a := range engine.Actions() {
			m.denied.WithLabelValues(p, a.String())
		}
	}
	m.denied.WithLabelValues("admin", "admin")
	m.denied.WithLabelValues("admin", "monitor")
	return m
}

// Attempt counts one authentication; result is "success" or "failure".
// Its signature is security.Options.ObserveAttempt's.
func (m *AuthMetrics) Attempt(protocol, result string) {
	m.attempts.WithLabelValues(protocolLabel(protocol), result).Inc()
}

// Denied counts one action refused to a connection. Its signature is
// engine.Config.ObserveDenied's.
func (m *AuthMetrics) Denied(protocol string, a engine.Action) {
	m.denied.WithLabelValues(protocolLabel(protocol), a.String()).Inc()
}

// deniedAdmin counts an admin request refused for want of a role.
func (m *AuthMetrics) deniedAdmin(action string) {
	m.denied.WithLabelValues("admin", action).Inc()
}

// protocolLabel is a connection's protocol as a label: "stomp/1.2" is
// "stomp", and an in-process client's empty protocol "embedded".
func protocolLabel(p string) string {
	p, _, _ = strings.Cut(p, "/")
	if p == "" {
		return "embedded"
	}
	return p
}
