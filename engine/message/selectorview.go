package message

import "github.com/sluicemq/sluice/grammar/selector"

// SelectorView adapts a Delivery to selector.Message, the interface compiled
// selectors read. It is one pointer wide and its methods have value
// receivers, so the engine can build it on the stack and pass it as a
// selector.Message without allocating: selector.Message(SelectorView{D: d}).
// None of its methods allocates.
type SelectorView struct {
	D *Delivery
}

var _ selector.Message = SelectorView{}

func (v SelectorView) msg() *Message {
	if v.D == nil {
		return nil
	}
	return v.D.Msg
}

func selString(s string) selector.Value { return selector.Value{Kind: selector.String, Str: s} }

func selLong(n int64) selector.Value { return selector.Value{Kind: selector.Long, Long: n} }

// Header returns a header field: JMSDeliveryMode as "PERSISTENT" or
// "NON_PERSISTENT"; JMSPriority, JMSTimestamp and JMSDeliveryTime as Long;
// JMSMessageID as String; JMSCorrelationID and JMSType as String, or Null when
// empty; JMSRedelivered as Bool from the delivery. A message without a
// delivery delay has JMSDeliveryTime equal to JMSTimestamp (JMS 2.0 §3.4.13),
// so an unset DeliveryTime reads as the timestamp. Unknown headers, and a
// view without a message, are Null.
func (v SelectorView) Header(h selector.Header) selector.Value {
	m := v.msg()
	if m == nil {
		return selector.Value{}
	}
	switch h {
	case selector.JMSDeliveryMode:
		return selString(m.DeliveryMode.String())
	case selector.JMSPriority:
		return selLong(int64(m.Priority))
	case selector.JMSMessageID:
		return selString(m.ID)
	case selector.JMSTimestamp:
		return selLong(m.Timestamp)
	case selector.JMSCorrelationID:
		if m.CorrelationID == "" {
			return selector.Value{}
		}
		return selString(m.CorrelationID)
	case selector.JMSType:
		if m.Type == "" {
			return selector.Value{}
		}
		return selString(m.Type)
	case selector.JMSRedelivered:
		return selector.Value{Kind: selector.Bool, Bool: v.D.Redelivered}
	case selector.JMSDeliveryTime:
		if m.DeliveryTime == 0 {
			return selLong(m.Timestamp)
		}
		return selLong(m.DeliveryTime)
	}
	return selector.Value{}
}

// Property returns the named property in selector kinds: byte, short, int
// and long as Long; float and double as Double; boolean as Bool; string as
// String. JMSXDeliveryCount comes from the delivery. A missing property, and
// a char or bytes value (never a property type), are Null.
func (v SelectorView) Property(name string) selector.Value {
	m := v.msg()
	if m == nil {
		return selector.Value{}
	}
	if name == PropDeliveryCount {
		return selLong(int64(v.D.DeliveryCount))
	}
	p, ok := m.Props.Get(name)
	if !ok {
		return selector.Value{}
	}
	switch p.Type {
	case Bool:
		return selector.Value{Kind: selector.Bool, Bool: p.N != 0}
	case Byte:
		return selLong(int64(int8(p.N)))
	case Short:
		return selLong(int64(int16(p.N)))
	case Int:
		return selLong(int64(int32(p.N)))
	case Long:
		return selLong(p.N)
	case Float:
		return selector.Value{Kind: selector.Double, Double: float64(float32(p.F))}
	case Double:
		return selector.Value{Kind: selector.Double, Double: p.F}
	case String:
		return selString(p.S)
	}
	return selector.Value{}
}

// Body returns the data of a text or XML body, for XML selectors; ok is false
// for other kinds. The slice is the message's own: do not modify it.
func (v SelectorView) Body() (text []byte, ok bool) {
	m := v.msg()
	if m == nil || (m.Body.Kind != BodyText && m.Body.Kind != BodyXML) {
		return nil, false
	}
	return m.Body.Data, true
}
