package selector

import "strconv"

// headerName is the selector identifier of h, or "".
func headerName(h Header) string {
	switch h {
	case JMSDeliveryMode:
		return "JMSDeliveryMode"
	case JMSPriority:
		return "JMSPriority"
	case JMSMessageID:
		return "JMSMessageID"
	case JMSTimestamp:
		return "JMSTimestamp"
	case JMSCorrelationID:
		return "JMSCorrelationID"
	case JMSType:
		return "JMSType"
	case JMSRedelivered:
		return "JMSRedelivered"
	case JMSDeliveryTime:
		return "JMSDeliveryTime"
	}
	return ""
}

// String returns the header field's selector identifier, such as
// "JMSPriority", or "Header(n)" for a value that names no field.
func (h Header) String() string {
	if s := headerName(h); s != "" {
		return s
	}
	return "Header(" + strconv.Itoa(int(h)) + ")"
}

// Headers returns the header fields a selector can name, in Header order.
func Headers() []Header {
	return []Header{JMSDeliveryMode, JMSPriority, JMSMessageID, JMSTimestamp,
		JMSCorrelationID, JMSType, JMSRedelivered, JMSDeliveryTime}
}

// HeaderNamed returns the header field a selector identifier names. The
// match is case-sensitive, as identifiers are; ok is false for every other
// identifier, which a selector reads as a property.
func HeaderNamed(name string) (h Header, ok bool) {
	return headerOf(name)
}
