package message

import "fmt"

// DefaultPriority is the JMS default JMSPriority.
const DefaultPriority = 4

// ValidatePriority checks that p is a JMS priority, 0 (lowest) to 9 (highest).
func ValidatePriority(p int) error {
	if p < 0 || p > 9 {
		return fmt.Errorf("message: priority %d is out of range 0-9", p)
	}
	return nil
}

// Clone returns a deep copy of m: properties, body data, map and stream
// entries are all copied, so the copy may be changed (say, given extra
// properties before it goes to an error destination) without touching m,
// which other queues may share.
func (m *Message) Clone() *Message {
	c := *m
	c.Props = m.Props.Clone()
	c.Body = m.Body.Clone()
	return &c
}

// Size returns m's size in bytes for byte quotas and thresholds: exactly the
// length of its binary encoding (MarshalBinary), which covers the header
// fields, the property names and values, and the body. It approximates the
// wire size and, give or take Go's fixed overheads, the memory the message
// holds.
func (m *Message) Size() int {
	h := headerLen(m)
	return 1 + uvarintLen(uint64(h)) + h + bodyLen(&m.Body)
}

// Expired reports whether m has expired at nowMillis (ms since the epoch):
// JMSExpiration is set (positive) and nowMillis is later than it. JMS says a
// message expires "when the GMT time is later than" its expiration, so a
// message is still deliverable at exactly its expiration time.
func (m *Message) Expired(nowMillis int64) bool {
	return m.Expiration > 0 && nowMillis > m.Expiration
}

// Validate checks the header fields whose values are constrained: the
// delivery mode, the priority, the destination kinds, and the types of the
// properties and body entries. It does not check property names (the engine
// sets reserved ones) and accepts an unset destination.
func (m *Message) Validate() error {
	if m.DeliveryMode != Persistent && m.DeliveryMode != NonPersistent {
		return fmt.Errorf("message: invalid delivery mode %d (want 1, NON_PERSISTENT, or 2, PERSISTENT)", m.DeliveryMode)
	}
	if err := ValidatePriority(int(m.Priority)); err != nil {
		return err
	}
	if m.Destination.Kind > TempTopic {
		return fmt.Errorf("message: invalid destination kind %d", m.Destination.Kind)
	}
	if m.ReplyTo.Kind > TempTopic {
		return fmt.Errorf("message: invalid reply-to kind %d", m.ReplyTo.Kind)
	}
	return checkTypes(m)
}

// checkTypes checks that every value and the body kind can be encoded.
func checkTypes(m *Message) error {
	for i := range m.Props {
		if !m.Props[i].Value.Type.valid() {
			return fmt.Errorf("message: property %q has unknown value type %d", m.Props[i].Name, uint8(m.Props[i].Value.Type))
		}
	}
	switch m.Body.Kind {
	case BodyNone, BodyText, BodyXML, BodyBytes:
	case BodyMap:
		for i := range m.Body.Map {
			if !m.Body.Map[i].Value.Type.valid() {
				return fmt.Errorf("message: map entry %q has unknown value type %d", m.Body.Map[i].Name, uint8(m.Body.Map[i].Value.Type))
			}
		}
	case BodyStream:
		for i := range m.Body.Stream {
			if !m.Body.Stream[i].Type.valid() {
				return fmt.Errorf("message: stream value %d has unknown value type %d", i, uint8(m.Body.Stream[i].Type))
			}
		}
	default:
		return fmt.Errorf("message: unknown body kind %d", uint8(m.Body.Kind))
	}
	return nil
}

// Equal reports whether m and o have equal header fields, properties (same
// order, Value.Equal) and bodies (Body.Equal). Producer is compared too.
func (m *Message) Equal(o *Message) bool {
	return m.ID == o.ID &&
		m.Destination == o.Destination &&
		m.ReplyTo == o.ReplyTo &&
		m.CorrelationID == o.CorrelationID &&
		m.Type == o.Type &&
		m.DeliveryMode == o.DeliveryMode &&
		m.Priority == o.Priority &&
		m.Timestamp == o.Timestamp &&
		m.Expiration == o.Expiration &&
		m.DeliveryTime == o.DeliveryTime &&
		m.RedeliveryLimit == o.RedeliveryLimit &&
		m.Producer == o.Producer &&
		m.Props.Equal(o.Props) &&
		m.Body.Equal(o.Body)
}
