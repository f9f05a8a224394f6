package engine

import (
	"log/slog"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// ExpirationPolicy says what happens to a message found expired (WebLogic JMS
// "Managing Your Applications", "Handling Expired Messages").
type ExpirationPolicy uint8

// Expiration policies. Discard is the default.
const (
	ExpireDiscard ExpirationPolicy = iota
	ExpireLog
	ExpireRedirect
)

// String returns the policy's name as the config file spells it.
func (p ExpirationPolicy) String() string {
	switch p {
	case ExpireLog:
		return "log"
	case ExpireRedirect:
		return "redirect"
	}
	return "discard"
}

// Policy is the administrative configuration of one destination. Negative
// durations and limits mean "not set": the producer's or session's value
// applies.
type Policy struct {
	// DeliveryModeOverride, when non-zero, replaces the producer's delivery mode.
	DeliveryModeOverride message.DeliveryMode
	// PriorityOverride, when ≥ 0, replaces the producer's priority.
	PriorityOverride int
	// TimeToLiveOverride, when ≥ 0, replaces the producer's time to live (0 = never expires).
	TimeToLiveOverride time.Duration
	// TimeToDeliverOverride, when ≥ 0, replaces the producer's time to deliver.
	TimeToDeliverOverride time.Duration
	// TimeToDeliverSchedule, when set, replaces the producer's time to
	// deliver with the next time of a delivery schedule; it wins over
	// TimeToDeliverOverride.
	TimeToDeliverSchedule func(now time.Time) time.Time
	// RedeliveryDelayOverride, when ≥ 0, replaces the session's redelivery delay.
	RedeliveryDelayOverride time.Duration
	// RedeliveryLimit, when ≥ 0, replaces the message's JMSRedeliveryLimit.
	RedeliveryLimit int32
	// ErrorDestination receives messages that exceed their redelivery limit
	// and, with ExpireRedirect, expired ones. Zero: they are deleted.
	ErrorDestination message.Destination
	// Expiration is what happens to expired messages.
	Expiration ExpirationPolicy
	// MaxMessages and MaxBytes are the destination's quota; 0 = unlimited.
	MaxMessages int64
	MaxBytes    int64
	// BlockingSendTimeout is how long a send waits for quota before it fails
	// with a resource-allocation error; 0 fails at once.
	BlockingSendTimeout time.Duration
	// WindowMessages and WindowBytes bound the ready messages a queue or
	// durable subscription keeps in memory; further persistent ones wait
	// only in the store (paging). 0 takes Config.WindowMessages and
	// Config.WindowBytes.
	WindowMessages int
	WindowBytes    int64
}

// DefaultPolicy returns a Policy that overrides nothing.
func DefaultPolicy() Policy {
	return Policy{
		PriorityOverride:        -1,
		TimeToLiveOverride:      -1,
		TimeToDeliverOverride:   -1,
		RedeliveryDelayOverride: -1,
		RedeliveryLimit:         -1,
	}
}

// Config configures a Broker.
type Config struct {
	// Store keeps persistent messages and durable subscriptions. Nil runs the
	// broker in memory: nothing survives a restart.
	Store store.Store
	// Logger receives the engine's structured logs; nil discards them.
	Logger *slog.Logger
	// Policy returns the policy of a destination; nil gives every destination
	// DefaultPolicy.
	Policy func(d message.Destination) Policy
	// AutoCreate lets producers and consumers create queues and topics by
	// naming them (as ActiveMQ and RabbitMQ do). When false, only
	// destinations created through CreateDestination exist.
	AutoCreate bool
	// ExpiryScanInterval is how often the active expiration scan runs; 0
	// means one second.
	ExpiryScanInterval time.Duration
	// ProviderVersion is reported in connection metadata, e.g. "0.1.0".
	ProviderVersion string
	// PageScheduledAfter: a persistent message scheduled (time-to-deliver,
	// delivery time, redelivery delay) further ahead than this is kept in
	// the store only, not in memory, until PageLookahead before it is due.
	// Zero means DefaultPageScheduledAfter; negative keeps every scheduled
	// message in memory.
	PageScheduledAfter time.Duration
	// PageLookahead is how long before its time a paged message is read back
	// (zero means DefaultPageLookahead).
	PageLookahead time.Duration
	// WindowMessages and WindowBytes bound the ready messages each queue
	// and durable subscription keeps in memory unless its Policy says
	// otherwise: past them, persistent messages wait in the store only and
	// are read back in delivery order as the window drains (see page.go).
	// Zero means DefaultWindowMessages and DefaultWindowBytes; negative
	// keeps every ready message in memory.
	WindowMessages int
	WindowBytes    int64
	// ObserveDelivery, when set, is told of every message delivered to an
	// application with how long it waited since it became deliverable (its
	// delivery time, or its timestamp): the delivery-latency metric. It runs
	// on the delivery path, so it must be cheap and never block.
	ObserveDelivery func(dest message.Destination, wait time.Duration)
	// ObserveDenied, when set, is told of every action a connection's
	// Permissions refuse, with the connection's protocol: the
	// authorization-denied metric.
	ObserveDenied func(protocol string, a Action)
	// StampUserID sets every sent message's JMSXUserID to its connection's
	// authenticated user, replacing whatever the client put there.
	StampUserID bool
	// ConsumeBeforeStore lets a persistent message sent to a queue with a
	// waiting consumer be delivered while its write lingers, and never be
	// written when it is acknowledged first: its producer is confirmed once
	// it is durable or consumed (see early.go). It needs a store that can
	// take writes back (store.Submitter, the journal); otherwise, or when
	// false, a persistent send is confirmed only once it is durable.
	ConsumeBeforeStore bool
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
	// Destinations are the configured queues and topics. They are created at
	// start (so they exist when AutoCreate is off) and checked against the
	// store at recovery, as WebLogic JMS "Managing Your Applications",
	// "Message Timestamps for Troubleshooting Deleted Destinations" says: a
	// stored destination created before its configured creation time is an
	// older, deleted incarnation whose leftover messages and durable
	// subscriptions are discarded; one created after it makes New fail (the
	// clock was set back, or another configuration is in use).
	Destinations []ConfiguredDestination
	// MemoryLimit is the broker-wide limit on message memory, in bytes:
	// when the live Go heap (MemoryUsage) reaches it, the flow gate
	// (Broker.Flow) holds producers until it falls below
	// MemoryReleasePercent of it. Zero means no limit. The garbage the
	// heap holds besides is the Go runtime's to bound (its soft memory
	// limit, which the composition root sets).
	MemoryLimit int64
	// MemoryUsage measures the memory the limit applies to; nil measures
	// the Go heap's live objects as the last garbage collection found them
	// (runtime/metrics /gc/heap/live:bytes). Tests set it.
	MemoryUsage func() int64
	// MemoryCheckInterval is how often the memory is measured; zero means
	// DefaultMemoryCheckInterval.
	MemoryCheckInterval time.Duration
}

// ConfiguredDestination is a destination of the configuration with its
// creation time (WebLogic's CreationTime), the version of the destination.
type ConfiguredDestination struct {
	Destination message.Destination
	// Created is when this incarnation of the destination was configured;
	// the zero time accepts whatever the store holds (a new destination
	// then gets the current time).
	Created time.Time
}
