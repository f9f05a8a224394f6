package message

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The JMSX properties Sluice supports, as JMSXPropertyNames lists them.
const (
	// PropDeliveryCount is JMSXDeliveryCount, set by the engine on every
	// delivery (from Delivery.DeliveryCount, never stored in Props).
	PropDeliveryCount = "JMSXDeliveryCount"
	// PropGroupID is JMSXGroupID: carried from STOMP's JMSXGroupID header and
	// AMQP's group-id property.
	PropGroupID = "JMSXGroupID"
	// PropGroupSeq is JMSXGroupSeq: carried from AMQP's group-sequence.
	PropGroupSeq = "JMSXGroupSeq"
	// PropUserID is JMSXUserID: the authenticated user that sent the message,
	// set by the engine when the destination asks for it (WebLogic's
	// "attach sender") and carried to AMQP's user-id.
	PropUserID = "JMSXUserID"
)

// JMSXPropertyNames returns the JMSX properties Sluice sets or carries, for
// ConnectionMetaData.getJMSXPropertyNames: JMSXDeliveryCount, JMSXGroupID,
// JMSXGroupSeq and JMSXUserID. JMSXAppID, JMSXProducerTXID,
// JMSXConsumerTXID, JMSXRcvTimestamp and JMSXState are not supported: neither
// STOMP nor the AMQP JMS mapping carries them. The slice is new on every
// call.
func JMSXPropertyNames() []string {
	return []string{PropDeliveryCount, PropGroupID, PropGroupSeq, PropUserID}
}

// PropertyNameError is a property name that applications may not use.
type PropertyNameError struct {
	Name   string
	Reason string
}

// Error quotes the name and says why it is refused.
func (e *PropertyNameError) Error() string {
	return fmt.Sprintf("message: invalid property name %q: %s", e.Name, e.Reason)
}

// PropertyTypeError is a property value whose type is not one of the eight
// property types of Table 6-4 of WebLogic JMS "Managing Your Applications"
// ("Setting Message Property Fields").
type PropertyTypeError struct {
	Name string
	Type Type
}

// Error names the property and the refused type.
func (e *PropertyTypeError) Error() string {
	return fmt.Sprintf("message: property %q: a property cannot have type %s (only boolean, byte, short, int, long, float, double and string)", e.Name, e.Type)
}

// isHeaderName reports whether name is a JMS header field name, which a
// selector reads as the header and not as a property.
func isHeaderName(name string) bool {
	switch name {
	case "JMSDestination", "JMSDeliveryMode", "JMSExpiration", "JMSDeliveryTime",
		"JMSPriority", "JMSMessageID", "JMSTimestamp", "JMSCorrelationID",
		"JMSReplyTo", "JMSType", "JMSRedelivered", "JMSRedeliveryLimit":
		return true
	}
	return false
}

// isReservedWord reports whether name is a selector keyword. Keywords are
// ASCII and match ignoring ASCII case only, as the selector lexer does (so a
// Unicode case fold such as "ı" to "I" does not make "ın" a keyword).
func isReservedWord(name string) bool {
	if len(name) < 2 || len(name) > 7 {
		return false
	}
	var buf [7]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(name)]) {
	case "NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE":
		return true
	}
	return false
}

// isIdentStart and isIdentPart follow Java's Character.isJavaIdentifierStart
// and isJavaIdentifierPart, as the selector lexer does: a name is valid here
// exactly when a selector can name it.
func isIdentStart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.In(r, unicode.Sc, unicode.Pc, unicode.Nl)
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}

// ValidatePropertyName checks that an application may set a property called
// name (JMS 2.0 §3.5.1 and §3.8.1.1, seed "Setting Message Property Fields"):
//
//   - it is a Java identifier: a letter, '_', '$' (or another currency sign,
//     connector punctuation or letter number), then any of those, digits and
//     combining marks; Unicode letters and digits count, as in Java and in
//     the selector lexer;
//   - it is not a selector keyword: NULL, TRUE, FALSE, NOT, AND, OR, BETWEEN,
//     LIKE, IN, IS, ESCAPE, in any ASCII case;
//   - it does not start with "JMSX" (reserved for JMS-defined properties) or
//     "JMS_" (reserved for the provider), and is not a header field name such
//     as "JMSPriority". Names are case-sensitive, so "jmsxFoo" is allowed.
//
// The engine sets its own JMSX and JMS_ properties with SetUnchecked.
func ValidatePropertyName(name string) error {
	if name == "" {
		return &PropertyNameError{Name: name, Reason: "the name is empty"}
	}
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size <= 1 {
				return &PropertyNameError{Name: name, Reason: "the name is not valid UTF-8"}
			}
		}
		if i == 0 && !isIdentStart(r) {
			return &PropertyNameError{Name: name, Reason: fmt.Sprintf("a name must start with a letter, '_' or '$', not %q", r)}
		}
		if !isIdentPart(r) {
			return &PropertyNameError{Name: name, Reason: fmt.Sprintf("character %q at byte %d is not a letter, digit, '_' or '$'", r, i)}
		}
	}
	switch {
	case isReservedWord(name):
		return &PropertyNameError{Name: name, Reason: "it is a message selector keyword"}
	case strings.HasPrefix(name, "JMSX"):
		return &PropertyNameError{Name: name, Reason: "the JMSX prefix is reserved for JMS-defined properties"}
	case strings.HasPrefix(name, "JMS_"):
		return &PropertyNameError{Name: name, Reason: "the JMS_ prefix is reserved for provider-specific properties"}
	case isHeaderName(name):
		return &PropertyNameError{Name: name, Reason: "it is a JMS header field name"}
	}
	return nil
}

// Get returns the property called name (names are case-sensitive); ok is
// false, and the Value is Null, when there is none.
func (p Properties) Get(name string) (v Value, ok bool) {
	for i := range p {
		if p[i].Name == name {
			return p[i].Value, true
		}
	}
	return Value{}, false
}

// Exists reports whether the property called name is set
// (Message.propertyExists).
func (p Properties) Exists(name string) bool {
	_, ok := p.Get(name)
	return ok
}

// Set sets the property called name to v, as an application's
// setXxxProperty does: the name must pass ValidatePropertyName and v must have
// one of the eight property types. A property already set keeps its place in
// the order; a new one goes last. Set modifies p's backing array: never call
// it on the Props of a message the engine has accepted (Clone it first).
func (p *Properties) Set(name string, v Value) error {
	if err := ValidatePropertyName(name); err != nil {
		return err
	}
	if !v.Type.IsPropertyType() {
		return &PropertyTypeError{Name: name, Type: v.Type}
	}
	p.SetUnchecked(name, v)
	return nil
}

// SetUnchecked sets the property called name to v without checking either:
// for the engine's and the protocol adapters' own properties (JMSX..., JMS_...)
// and for names that only come from trusted code. It places the property as
// Set does.
func (p *Properties) SetUnchecked(name string, v Value) {
	for i := range *p {
		if (*p)[i].Name == name {
			(*p)[i].Value = v
			return
		}
	}
	*p = append(*p, Field{Name: name, Value: v})
}

// Delete removes the property called name, keeping the order of the others,
// and reports whether it was set.
func (p *Properties) Delete(name string) bool {
	for i := range *p {
		if (*p)[i].Name == name {
			*p = append((*p)[:i:i], (*p)[i+1:]...)
			return true
		}
	}
	return false
}

// Names returns the property names in the order they were set
// (Message.getPropertyNames). The slice is new.
func (p Properties) Names() []string {
	if len(p) == 0 {
		return nil
	}
	names := make([]string, len(p))
	for i := range p {
		names[i] = p[i].Name
	}
	return names
}

// Clear removes every property (Message.clearProperties). It drops the
// backing array rather than reusing it, so copies sharing it are unaffected.
func (p *Properties) Clear() { *p = nil }

// Clone returns a deep copy of p; nil stays nil.
func (p Properties) Clone() Properties {
	if p == nil {
		return nil
	}
	c := make(Properties, len(p))
	for i := range p {
		c[i] = Field{Name: p[i].Name, Value: p[i].Value.clone()}
	}
	return c
}

// Equal reports whether p and q hold the same names with Equal values in the
// same order. A nil Properties equals an empty one.
func (p Properties) Equal(q Properties) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i].Name != q[i].Name || !p[i].Value.Equal(q[i].Value) {
			return false
		}
	}
	return true
}

// Typed getters. Each reads the property called name through the conversion
// chart (see Value.AsBool and the chart above it); a missing property reads as
// Null, so GetBool returns false, GetString returns "" and the numeric getters
// return a *NullError, as JMS does. Errors are the *ConversionError,
// *FormatError or *NullError of the Value getter, with What naming the
// property.

// GetBool returns the property as getBooleanProperty does.
func (p Properties) GetBool(name string) (bool, error) {
	v, _ := p.Get(name)
	b, err := v.AsBool()
	return b, propErr(name, err)
}

// GetByte returns the property as getByteProperty does.
func (p Properties) GetByte(name string) (int8, error) {
	v, _ := p.Get(name)
	n, err := v.AsByte()
	return n, propErr(name, err)
}

// GetShort returns the property as getShortProperty does.
func (p Properties) GetShort(name string) (int16, error) {
	v, _ := p.Get(name)
	n, err := v.AsShort()
	return n, propErr(name, err)
}

// GetInt returns the property as getIntProperty does.
func (p Properties) GetInt(name string) (int32, error) {
	v, _ := p.Get(name)
	n, err := v.AsInt()
	return n, propErr(name, err)
}

// GetLong returns the property as getLongProperty does.
func (p Properties) GetLong(name string) (int64, error) {
	v, _ := p.Get(name)
	n, err := v.AsLong()
	return n, propErr(name, err)
}

// GetFloat returns the property as getFloatProperty does.
func (p Properties) GetFloat(name string) (float32, error) {
	v, _ := p.Get(name)
	f, err := v.AsFloat()
	return f, propErr(name, err)
}

// GetDouble returns the property as getDoubleProperty does.
func (p Properties) GetDouble(name string) (float64, error) {
	v, _ := p.Get(name)
	f, err := v.AsDouble()
	return f, propErr(name, err)
}

// GetString returns the property as getStringProperty does; a missing
// property is "" (check Exists to tell it from an empty string).
func (p Properties) GetString(name string) (string, error) {
	v, _ := p.Get(name)
	s, err := v.AsString()
	return s, propErr(name, err)
}

func propErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return describe(err, "property "+strconv.Quote(name))
}
