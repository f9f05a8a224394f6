package types

import (
	"fmt"
	"strconv"
)

// Message is an AMQP message as the payload of a delivery carries it: its
// sections, each nil when absent. The body is one or more Data sections,
// one or more AMQPSequence sections or one AMQPValue; a message without a
// body section decodes too.
//
// Decoded Data sections alias the payload.
type Message struct {
	// Header is the header section: durability, priority, ttl, ...
	Header *Header
	// DeliveryAnnotations are annotations for the next hop only.
	DeliveryAnnotations DeliveryAnnotations
	// MessageAnnotations are annotations that travel with the message.
	MessageAnnotations MessageAnnotations
	// Properties is the properties section: message-id, to, subject, ...
	Properties *Properties
	// ApplicationProperties are the application's typed properties (the
	// JMS properties), keyed by string.
	ApplicationProperties ApplicationProperties
	// Data is a body of one or more data sections.
	Data []Data
	// Sequence is a body of one or more amqp-sequence sections.
	Sequence []AMQPSequence
	// Value is a body of one amqp-value section.
	Value *AMQPValue
	// Footer is the footer section: annotations such as hashes.
	Footer Footer
}

// BodyKind says which kind of body section a message has.
type BodyKind uint8

// The kinds of body.
const (
	BodyNone     BodyKind = iota // no body section
	BodyData                     // one or more data sections
	BodySequence                 // one or more amqp-sequence sections
	BodyValue                    // one amqp-value section
)

// String returns the section name of the body kind.
func (k BodyKind) String() string {
	switch k {
	case BodyNone:
		return "none"
	case BodyData:
		return "data"
	case BodySequence:
		return "amqp-sequence"
	case BodyValue:
		return "amqp-value"
	}
	return "BodyKind(" + strconv.Itoa(int(k)) + ")"
}

// BodyKind returns the kind of m's body, or BodyNone when it has none (or,
// wrongly, more than one kind, which AppendAMQP refuses).
func (m *Message) BodyKind() BodyKind {
	var k BodyKind
	n := 0
	if m.Data != nil {
		k, n = BodyData, n+1
	}
	if m.Sequence != nil {
		k, n = BodySequence, n+1
	}
	if m.Value != nil {
		k, n = BodyValue, n+1
	}
	if n != 1 {
		return BodyNone
	}
	return k
}

// sectionRank orders the sections as a message must have them; the body
// sections share a rank.
func sectionRank(code uint64) (rank int, name string, ok bool) {
	switch code {
	case HeaderDescriptorCode:
		return 0, "header", true
	case DeliveryAnnotationsDescriptorCode:
		return 1, "delivery-annotations", true
	case MessageAnnotationsDescriptorCode:
		return 2, "message-annotations", true
	case PropertiesDescriptorCode:
		return 3, "properties", true
	case ApplicationPropertiesDescriptorCode:
		return 4, "application-properties", true
	case DataDescriptorCode:
		return 5, "data", true
	case AMQPSequenceDescriptorCode:
		return 5, "amqp-sequence", true
	case AMQPValueDescriptorCode:
		return 5, "amqp-value", true
	case FooterDescriptorCode:
		return 6, "footer", true
	}
	return 0, "", false
}

// SectionSpan locates one encoded section in a payload: payload[Start:End]
// is the section with its descriptor.
type SectionSpan struct {
	// Code is the section's descriptor code, such as PropertiesDescriptorCode.
	Code uint64
	// Start and End are the section's offsets in the payload.
	Start, End int
}

// DecodeMessage decodes the sections of a complete message payload (the
// payloads of a delivery's transfers, concatenated).
func DecodeMessage(payload []byte) (*Message, error) {
	m := new(Message)
	if err := m.Decode(payload); err != nil {
		return nil, err
	}
	return m, nil
}

// Decode decodes the sections of payload into m, replacing its contents.
// Sections must come in the order of the specification, each at most once
// except data and amqp-sequence, and with one kind of body.
func (m *Message) Decode(payload []byte) error {
	*m = Message{}
	return scanSections(payload, func(d *decoder, code uint64, name string, at int) error {
		switch code {
		case HeaderDescriptorCode:
			m.Header = new(Header)
			return m.Header.decodeBody(d)
		case DeliveryAnnotationsDescriptorCode:
			return m.DeliveryAnnotations.decodeBody(d)
		case MessageAnnotationsDescriptorCode:
			return m.MessageAnnotations.decodeBody(d)
		case PropertiesDescriptorCode:
			m.Properties = new(Properties)
			return m.Properties.decodeBody(d)
		case ApplicationPropertiesDescriptorCode:
			return m.ApplicationProperties.decodeBody(d)
		case DataDescriptorCode:
			var v Data
			if err := v.decodeBody(d); err != nil {
				return err
			}
			m.Data = append(m.Data, v)
		case AMQPSequenceDescriptorCode:
			var v AMQPSequence
			if err := v.decodeBody(d); err != nil {
				return err
			}
			m.Sequence = append(m.Sequence, v)
		case AMQPValueDescriptorCode:
			m.Value = new(AMQPValue)
			return m.Value.decodeBody(d)
		case FooterDescriptorCode:
			return m.Footer.decodeBody(d)
		}
		return nil
	})
}

// ScanSections checks the order of the sections in payload and returns
// where each one is, without decoding their contents. A broker can use it
// to pass the bare message (properties to application data) on unchanged
// while it rewrites the header and annotations.
func ScanSections(payload []byte) ([]SectionSpan, error) {
	var spans []SectionSpan
	err := scanSections(payload, func(d *decoder, code uint64, name string, at int) error {
		if err := d.skip(); err != nil {
			return err
		}
		spans = append(spans, SectionSpan{Code: code, Start: at, End: d.off})
		return nil
	})
	return spans, err
}

// scanSections reads each section's descriptor, checks the order, and
// calls fn to read the rest of the section.
func scanSections(payload []byte, fn func(d *decoder, code uint64, name string, at int) error) error {
	d := decoder{buf: payload}
	last, lastName := -1, ""
	for d.off < len(d.buf) {
		code, dname, known, at, err := d.readDescriptor("section")
		if err != nil {
			return &DecodeError{Type: "message", Offset: at, Err: err}
		}
		rank, name, ok := sectionRank(code)
		if !known || !ok {
			return &DecodeError{Type: "message", Offset: at, Err: notProvidedErr(code, dname, "section")}
		}
		switch {
		case rank < last,
			rank == last && rank != 5,
			rank == last && name != lastName,
			rank == last && name == "amqp-value":
			return &DecodeError{Type: "message", Field: name, Offset: at, Err: fmt.Errorf("%w: %s section after %s", ErrMalformed, name, lastName)}
		}
		last, lastName = rank, name
		if err := fn(&d, code, name, at); err != nil {
			return &DecodeError{Type: "message", Field: name, Offset: at, Err: err}
		}
	}
	return nil
}

// AppendAMQP appends the encoding of m's sections.
func (m *Message) AppendAMQP(b []byte) ([]byte, error) {
	bodies := 0
	for _, has := range []bool{m.Data != nil, m.Sequence != nil, m.Value != nil} {
		if has {
			bodies++
		}
	}
	if bodies > 1 {
		return b, &EncodeError{Type: "message", Err: fmt.Errorf("%w: more than one kind of body", ErrUnsupported)}
	}
	var err error
	wrap := func(section string, err error) error {
		return &EncodeError{Type: "message", Field: section, Err: err}
	}
	if m.Header != nil {
		if b, err = m.Header.AppendAMQP(b); err != nil {
			return b, wrap("header", err)
		}
	}
	if m.DeliveryAnnotations != nil {
		if b, err = m.DeliveryAnnotations.AppendAMQP(b); err != nil {
			return b, wrap("delivery-annotations", err)
		}
	}
	if m.MessageAnnotations != nil {
		if b, err = m.MessageAnnotations.AppendAMQP(b); err != nil {
			return b, wrap("message-annotations", err)
		}
	}
	if m.Properties != nil {
		if b, err = m.Properties.AppendAMQP(b); err != nil {
			return b, wrap("properties", err)
		}
	}
	if m.ApplicationProperties != nil {
		if b, err = m.ApplicationProperties.AppendAMQP(b); err != nil {
			return b, wrap("application-properties", err)
		}
	}
	for _, s := range m.Data {
		if b, err = s.AppendAMQP(b); err != nil {
			return b, wrap("data", err)
		}
	}
	for _, s := range m.Sequence {
		if b, err = s.AppendAMQP(b); err != nil {
			return b, wrap("amqp-sequence", err)
		}
	}
	if m.Value != nil {
		if b, err = m.Value.AppendAMQP(b); err != nil {
			return b, wrap("amqp-value", err)
		}
	}
	if m.Footer != nil {
		if b, err = m.Footer.AppendAMQP(b); err != nil {
			return b, wrap("footer", err)
		}
	}
	return b, nil
}

// Get returns the value of the first annotation with the given key
// (normally a Symbol) and whether there is one.
func (m DeliveryAnnotations) Get(key any) (any, bool) { return Map(m).Get(key) }

// Get returns the value of the first annotation with the given key
// (normally a Symbol) and whether there is one.
func (m MessageAnnotations) Get(key any) (any, bool) { return Map(m).Get(key) }

// Get returns the value of the first property with the given key and
// whether there is one.
func (m ApplicationProperties) Get(key string) (any, bool) { return Map(m).Get(key) }

// Get returns the value of the first footer entry with the given key and
// whether there is one.
func (m Footer) Get(key any) (any, bool) { return Map(m).Get(key) }

// Error returns the condition and description of e, so that an *Error
// can be returned as a Go error.
func (e *Error) Error() string {
	if e.Description == "" {
		return string(e.Condition)
	}
	return string(e.Condition) + ": " + e.Description
}
