package selector

// Kind is the selector type of a Value. JMS integer types (byte, short, int,
// long) all evaluate as Long and float/double as Double, with the numeric
// promotion rules of JMS 2.0 §3.8.1.1.
type Kind uint8

// Value kinds. Null is an absent property or header: comparisons with it are
// unknown.
const (
	Null Kind = iota
	Bool
	Long
	Double
	String
)

// Value is one operand of a selector: a header field, a property, or a
// literal. It is passed by value so that evaluation does not allocate.
type Value struct {
	Kind   Kind
	Bool   bool
	Long   int64
	Double float64
	Str    string
}

// Header is a JMS header field a selector can name. Identifiers are resolved
// to a Header once, when the selector is compiled.
type Header uint8

// The header fields a selector may reference (JMS 2.0 §3.8.1.1 plus
// JMSRedelivered and WebLogic's JMSDeliveryTime).
const (
	JMSDeliveryMode  Header = iota + 1 // String: "PERSISTENT" or "NON_PERSISTENT"
	JMSPriority                        // Long 0-9
	JMSMessageID                       // String
	JMSTimestamp                       // Long, ms since the epoch
	JMSCorrelationID                   // String, Null when unset
	JMSType                            // String, Null when unset
	JMSRedelivered                     // Bool
	JMSDeliveryTime                    // Long, ms since the epoch
)

// Message is what a compiled selector reads. The engine adapts its own
// message type to it; the selector package knows nothing else of messages.
type Message interface {
	// Header returns a header field's value.
	Header(h Header) Value
	// Property returns the named property (JMSX properties included), or a
	// Value of Kind Null when the message has no such property.
	Property(name string) Value
	// Body returns the body for XML selectors (JMS_BEA_SELECT); ok is false
	// when the message has no text or XML body.
	Body() (text []byte, ok bool)
}
