package conformance

// Need is something a scenario requires of the broker under test beyond
// plain JMS: destination configuration (a redelivery limit, an error
// destination, a quota), an optional feature, or a capability of the runner
// (restarting the broker). A profile says which needs the broker meets and
// how; a scenario whose need is unmet is reported "not supported" with the
// profile's reason.
type Need string

// Destination configuration. The profile gives, for each, the prefix of
// destination names that carry it (and the error destination it uses).
const (
	// NeedRedeliveryLimit: queues with redelivery limit 2 and an error
	// destination.
	NeedRedeliveryLimit Need = "redelivery-limit"
	// NeedRedeliveryLimitNoErrorDest: queues with redelivery limit 1 and no
	// error destination.
	NeedRedeliveryLimitNoErrorDest Need = "redelivery-limit-without-error-destination"
	// NeedErrorDestination: queues with an error destination and no
	// redelivery limit.
	NeedErrorDestination Need = "error-destination"
	// NeedRedeliveryDelayOverride: queues whose redelivery delay override
	// is 1s.
	NeedRedeliveryDelayOverride Need = "redelivery-delay-override"
	// NeedExpireRedirect, NeedExpireDiscard, NeedExpireLog: queues with that
	// expiration policy (all three with an error destination, which only
	// redirect uses).
	NeedExpireRedirect Need = "expiration-policy-redirect"
	NeedExpireDiscard  Need = "expiration-policy-discard"
	NeedExpireLog      Need = "expiration-policy-log"
	// NeedTTLOverride: queues whose time-to-live override is 300ms.
	NeedTTLOverride Need = "time-to-live-override"
	// NeedTTDOverride: queues whose time-to-deliver override is 800 (ms).
	NeedTTDOverride Need = "time-to-deliver-override"
	// NeedTTDSchedule: queues whose time-to-deliver override is the
	// schedule "0 0,5,10,…,55 * * * * *" (every fifth second).
	NeedTTDSchedule Need = "time-to-deliver-schedule"
	// NeedPriorityOverride: queues whose priority override is 9.
	NeedPriorityOverride Need = "priority-override"
	// NeedDeliveryModeOverride: queues whose delivery mode override is
	// non-persistent.
	NeedDeliveryModeOverride Need = "delivery-mode-override"
	// NeedQuota: queues with a quota of 3 messages and no blocking.
	NeedQuota Need = "quota"
	// NeedQuotaBlocking: queues with a quota of 1 message and a blocking
	// send timeout of 5s.
	NeedQuotaBlocking Need = "quota-blocking-send"
)

// Features: a profile lists those its broker lacks.
const (
	// NeedRestart: the runner can restart the broker (a capability of the
	// runner, not of the broker).
	NeedRestart Need = "broker-restart"
	// NeedAdminDelete: destinations can be deleted through an admin API.
	NeedAdminDelete Need = "admin-delete-destination"
	// NeedPriorityOrder: a queue delivers in priority order.
	NeedPriorityOrder Need = "priority-ordering"
	// NeedDeliveryDelay: relative delivery delay (time to deliver).
	NeedDeliveryDelay Need = "delivery-delay"
	// NeedDeliveryTime: absolute delivery time.
	NeedDeliveryTime Need = "delivery-time"
	// NeedDeliveryCount: JMSXDeliveryCount on delivered messages.
	NeedDeliveryCount Need = "delivery-count"
	// NeedNackRedelivery: a NACK (failed delivery) redelivers the message,
	// counting the attempt, instead of dead-lettering it at once.
	NeedNackRedelivery Need = "nack-redelivers"
	// NeedSessionRedeliveryDelay: a consumer's session redelivery delay
	// (WebLogic WLSession.setRedeliveryDelay).
	NeedSessionRedeliveryDelay Need = "session-redelivery-delay"
	// NeedMessageRedeliveryLimit: a producer's JMSRedeliveryLimit.
	NeedMessageRedeliveryLimit Need = "message-redelivery-limit"
	// NeedSharedSubscriptions: JMS 2.0 shared subscriptions.
	NeedSharedSubscriptions Need = "shared-subscriptions"
	// NeedXPathSelector: WebLogic's JMS_BEA_SELECT('xpath', …) selectors.
	NeedXPathSelector Need = "xpath-selector"
	// NeedNoLocal: a noLocal topic subscriber gets nothing its own
	// connection published.
	NeedNoLocal Need = "no-local"
)

// needDocs says what each need asks of the broker, for reports and the
// profile documentation.
var needDocs = map[Need]string{
	NeedRedeliveryLimit:            "queues with redelivery limit 2 and an error destination",
	NeedRedeliveryLimitNoErrorDest: "queues with redelivery limit 1 and no error destination",
	NeedErrorDestination:           "queues with an error destination and no redelivery limit",
	NeedRedeliveryDelayOverride:    "queues with redelivery delay override 1s",
	NeedExpireRedirect:             "queues with expiration policy redirect (to an error destination)",
	NeedExpireDiscard:              "queues with expiration policy discard and an error destination",
	NeedExpireLog:                  "queues with expiration policy log and an error destination",
	NeedTTLOverride:                "queues with time-to-live override 300ms",
	NeedTTDOverride:                "queues with time-to-deliver override 800ms",
	NeedTTDSchedule:                "queues with a scheduled time-to-deliver override: every fifth second",
	NeedPriorityOverride:           "queues with priority override 9",
	NeedDeliveryModeOverride:       "queues with delivery mode override non-persistent",
	NeedQuota:                      "queues with a quota of 3 messages, sends failing at once",
	NeedQuotaBlocking:              "queues with a quota of 1 message and a 5s blocking send timeout",
	NeedRestart:                    "the runner can restart the broker",
	NeedAdminDelete:                "an admin API that deletes destinations",
	NeedPriorityOrder:              "queues deliver in priority order",
	NeedDeliveryDelay:              "relative delivery delay (time to deliver)",
	NeedDeliveryTime:               "absolute delivery time",
	NeedDeliveryCount:              "JMSXDeliveryCount on delivered messages",
	NeedNackRedelivery:             "a NACK redelivers the message and counts the attempt",
	NeedSessionRedeliveryDelay:     "a consumer's session redelivery delay",
	NeedMessageRedeliveryLimit:     "a producer's JMSRedeliveryLimit",
	NeedSharedSubscriptions:        "JMS 2.0 shared subscriptions",
	NeedXPathSelector:              "JMS_BEA_SELECT('xpath', …) selectors",
	NeedNoLocal:                    "a noLocal topic subscriber gets nothing its own connection published",
}

// configNeeds are the needs met by destination configuration: the profile
// must name the destinations that carry it.
var configNeeds = map[Need]bool{
	NeedRedeliveryLimit: true, NeedRedeliveryLimitNoErrorDest: true, NeedErrorDestination: true,
	NeedRedeliveryDelayOverride: true, NeedExpireRedirect: true, NeedExpireDiscard: true, NeedExpireLog: true,
	NeedTTLOverride: true, NeedTTDOverride: true, NeedTTDSchedule: true, NeedPriorityOverride: true,
	NeedDeliveryModeOverride: true, NeedQuota: true, NeedQuotaBlocking: true,
}

// Doc describes the need.
func (n Need) Doc() string { return needDocs[n] }
