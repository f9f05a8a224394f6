// Package message is Sluice's JMS message model: the header fields of the
// WebLogic JMS header table (Table 6-3 of WebLogic JMS "Managing Your
// Applications", "Setting Message Header Fields") plus JMSXDeliveryCount,
// typed properties with the JMS conversion chart (its Table 6-5, "Setting
// Message Property Fields"), and the five body kinds (text, bytes, map,
// stream, XML text).
//
// A Message is immutable once the engine has accepted it: the engine shares one
// *Message between every queue and subscription that holds it, and keeps the
// per-delivery state (delivery count, redelivered flag) beside it, in the
// engine's own records. Protocol adapters build a Message, hand it to the
// engine, and read Deliveries back.
package message

// DeliveryMode is JMSDeliveryMode. The numeric values are the JMS constants.
type DeliveryMode uint8

// The two JMS delivery modes.
const (
	NonPersistent DeliveryMode = 1
	Persistent    DeliveryMode = 2
)

// String returns the name a selector compares JMSDeliveryMode with.
func (m DeliveryMode) String() string {
	if m == Persistent {
		return "PERSISTENT"
	}
	return "NON_PERSISTENT"
}

// DestKind says what sort of destination a Destination names.
type DestKind uint8

// Destination kinds. The zero value is "no destination" (an unset JMSReplyTo).
const (
	NoDest DestKind = iota
	Queue
	Topic
	TempQueue
	TempTopic
)

// String returns the kind's lower-case name ("queue", "topic", "temp-queue", "temp-topic").
func (k DestKind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Topic:
		return "topic"
	case TempQueue:
		return "temp-queue"
	case TempTopic:
		return "temp-topic"
	}
	return "none"
}

// IsTopic reports whether the kind is publish/subscribe.
func (k DestKind) IsTopic() bool { return k == Topic || k == TempTopic }

// IsTemporary reports whether the kind is a temporary destination.
func (k DestKind) IsTemporary() bool { return k == TempQueue || k == TempTopic }

// Destination names a queue or topic (JMSDestination, JMSReplyTo).
type Destination struct {
	Kind DestKind
	Name string
}

// IsZero reports whether d names no destination.
func (d Destination) IsZero() bool { return d.Kind == NoDest }

// String renders d the way STOMP names it: "/queue/NAME", "/topic/NAME", …
func (d Destination) String() string {
	if d.Kind == NoDest {
		return ""
	}
	return "/" + d.Kind.String() + "/" + d.Name
}

// NoRedeliveryLimit is the JMSRedeliveryLimit value meaning "no limit".
const NoRedeliveryLimit int32 = -1

// Message is one JMS message: header fields, properties and body.
//
// Times are milliseconds since the Unix epoch, as in JMS; zero means unset
// (no expiry, deliverable at once).
type Message struct {
	// ID is JMSMessageID, assigned by the engine on send ("ID:…").
	ID string
	// Destination is JMSDestination, set by the engine on send.
	Destination Destination
	// ReplyTo is JMSReplyTo; the zero Destination when unset.
	ReplyTo Destination
	// CorrelationID is JMSCorrelationID.
	CorrelationID string
	// Type is JMSType.
	Type string
	// DeliveryMode is JMSDeliveryMode.
	DeliveryMode DeliveryMode
	// Priority is JMSPriority, 0-9 (4 is the JMS default).
	Priority uint8
	// Timestamp is JMSTimestamp: when the engine accepted the message.
	Timestamp int64
	// Expiration is JMSExpiration: the absolute time after which the message
	// is never delivered; 0 means it never expires.
	Expiration int64
	// DeliveryTime is JMSDeliveryTime: the earliest absolute time the message
	// may be delivered.
	DeliveryTime int64
	// RedeliveryLimit is JMSRedeliveryLimit; NoRedeliveryLimit when unset.
	RedeliveryLimit int32
	// Producer identifies the connection that sent the message, for noLocal.
	// It is engine bookkeeping, not a JMS field.
	Producer uint64
	// Props are the message's properties, in the order they were set.
	Props Properties
	// Body is the message body.
	Body Body
}

// BodyKind says which JMS message type a body is.
type BodyKind uint8

// The JMS body kinds. BodyXML is a text body that WebLogic's XMLMessage marks
// as XML (selectable with JMS_BEA_SELECT).
const (
	BodyNone BodyKind = iota
	BodyText
	BodyBytes
	BodyMap
	BodyStream
	BodyXML
)

// String returns the kind's name ("none", "text", "bytes", "map", "stream", "xml").
func (k BodyKind) String() string {
	switch k {
	case BodyText:
		return "text"
	case BodyBytes:
		return "bytes"
	case BodyMap:
		return "map"
	case BodyStream:
		return "stream"
	case BodyXML:
		return "xml"
	}
	return "none"
}

// Body is a message body. Text, XML and bytes bodies use Data; a map body uses
// Map; a stream body uses Stream.
type Body struct {
	Kind   BodyKind
	Data   []byte
	Map    []Field
	Stream []Value
}

// Field is one named value: a property, or an entry of a map body.
type Field struct {
	Name  string
	Value Value
}

// Delivery is a message as one consumer receives it: the shared immutable
// message plus the state of this delivery.
type Delivery struct {
	// Msg is the message; never modify it.
	Msg *Message
	// DeliveryCount is JMSXDeliveryCount: 1 on the first delivery.
	DeliveryCount int32
	// Redelivered is JMSRedelivered.
	Redelivered bool
	// Tag identifies this delivery to its consumer for acknowledgement.
	Tag uint64
}
