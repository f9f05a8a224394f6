package stomp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Header names of the conventions in docs/stomp.md.
const (
	hDestination     = "destination"
	hID              = "id"
	hAck             = "ack"
	hSubscription    = "subscription"
	hMessageID       = "message-id"
	hTransaction     = "transaction"
	hPersistent      = "persistent"
	hPriority        = "priority"
	hExpires         = "expires"
	hExpiration      = "expiration"
	hCorrelationID   = "correlation-id"
	hReplyTo         = "reply-to"
	hType            = "type"
	hTimestamp       = "timestamp"
	hRedelivered     = "redelivered"
	hSelector        = "selector"
	hClientID        = "client-id"
	hLogin           = "login"
	hPasscode        = "passcode"
	hNoLocal         = "no-local"
	hAMQNoLocal      = "activemq.noLocal"
	hAMQSubName      = "activemq.subscriptionName"
	hDurableSubName  = "durable-subscription-name"
	hDurableSubName2 = "durable-subscriber-name"
	hAMQPrefetch     = "activemq.prefetchSize"
	hPrefetchCount   = "prefetch-count"
	hBrowser         = "browser"
	hRequeue         = "requeue"
	hScheduledDelay  = "AMQ_SCHEDULED_DELAY"
	hScheduledTime   = "AMQ_SCHEDULED_TIME"
	hDeliveryCount   = "JMSXDeliveryCount"
	hXDeliveryCount  = "x-delivery-count"
	hGroupID         = "JMSXGroupID"
	// The per-message redelivery limit as WebLogic applications carry it
	// on other clients: the JMSRedeliveryLimit header of WebLogic's header
	// table, and its JMS_BEA_ property form.
	hJMSRedeliveryLimit = "JMSRedeliveryLimit"
	hBEARedeliveryLimit = "JMS_BEA_RedeliveryLimit"

	// Sluice's own extensions: WebLogic features no peer carries on STOMP.
	hRedeliveryLimit = "sluice-redelivery-limit" // SEND: JMSRedeliveryLimit
	hTimeToDeliver   = "sluice-time-to-deliver"  // SEND: relative delay, ms
	hDeliveryTime    = "sluice-delivery-time"    // SEND/MESSAGE: JMSDeliveryTime, absolute ms
	hRedeliveryDelay = "sluice-redelivery-delay" // SUBSCRIBE: the session's redelivery delay, ms
	hShared          = "sluice-shared"           // SUBSCRIBE: JMS 2.0 shared subscription
	hSubName         = "sluice-subscription-name"
	hDurable         = "sluice-durable"      // SUBSCRIBE with sluice-subscription-name
	hMessageType     = "sluice-message-type" // SEND/MESSAGE: text, bytes or xml
)

// isReserved reports whether SEND consumes header name itself; every other
// header is a string property of the message.
func isReserved(name string) bool {
	switch name {
	case hDestination, hTransaction, hPersistent, hPriority, hExpires, hExpiration, hCorrelationID,
		hReplyTo, hType, frame.HeaderReceipt, frame.HeaderContentLength, hScheduledDelay, hScheduledTime,
		hRedeliveryLimit, hJMSRedeliveryLimit, hBEARedeliveryLimit, hTimeToDeliver, hDeliveryTime, hMessageType, hMessageID, hTimestamp,
		hRedelivered, hSubscription, hAck, hDeliveryCount, hXDeliveryCount:
		return true
	}
	return false
}

// errHeader is a bad header value, reported in an ERROR frame.
func errHeader(name, value, want string) error {
	return fmt.Errorf("header %s: %q is not %s", name, value, want)
}

// parseDestination maps a STOMP destination onto the engine's with the
// shared parser (STOMP has no bare names), resolving a temporary name
// through the connection's private names.
func (c *conn) parseDestination(s string) (message.Destination, error) {
	d, err := message.ParseDestination(s)
	if err != nil {
		return message.Destination{}, err
	}
	if d.Kind.IsTemporary() {
		return c.temporary(d)
	}
	return d, nil
}

// renderDestination is the STOMP name of an engine destination.
func (c *conn) renderDestination(d message.Destination) string {
	if d.Kind.IsTemporary() {
		if name, ok := c.tempAlias(d); ok {
			return "/" + d.Kind.String() + "/" + name
		}
	}
	return d.String()
}

func parseBoolHeader(f *frame.Frame, name string) (bool, bool, error) {
	v, ok := f.Get(name)
	if !ok {
		return false, false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, true, errHeader(name, v, "true or false")
}

func parseIntHeader(f *frame.Frame, name string, lo, hi int64) (int64, bool, error) {
	v, ok := f.Get(name)
	if !ok || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, true, errHeader(name, v, fmt.Sprintf("an integer in %d..%d", lo, hi))
	}
	return n, true, nil
}

// toMessage builds the engine message and send options of a SEND frame.
func (c *conn) toMessage(f *frame.Frame) (*message.Message, engine.SendOptions, error) {
	var o engine.SendOptions
	m := &message.Message{}
	// STOMP's default delivery mode is non-persistent, as ActiveMQ's is;
	// "persistent: true" asks for persistence.
	o.Set |= engine.SetDeliveryMode
	o.DeliveryMode = message.NonPersistent
	if p, ok, err := parseBoolHeader(f, hPersistent); err != nil {
		return nil, o, err
	} else if ok && p {
		o.DeliveryMode = message.Persistent
	}
	if n, ok, err := parseIntHeader(f, hPriority, 0, 9); err != nil {
		return nil, o, err
	} else if ok {
		o.Set |= engine.SetPriority
		o.Priority = uint8(n)
	}
	if n, ok, err := parseIntHeader(f, hExpires, 0, 1<<62); err != nil {
		return nil, o, err
	} else if ok {
		o.Set |= engine.SetExpiration
		o.Expiration = n
	}
	if n, ok, err := parseIntHeader(f, hExpiration, 0, 1<<40); err != nil {
		return nil, o, err
	} else if ok {
		o.Set |= engine.SetTimeToLive
		o.TimeToLive = time.Duration(n) * time.Millisecond
	}
	for _, h := range []string{hScheduledDelay, hTimeToDeliver} {
		if n, ok, err := parseIntHeader(f, h, 0, 1<<40); err != nil {
			return nil, o, err
		} else if ok {
			o.Set |= engine.SetTimeToDeliver
			o.TimeToDeliver = time.Duration(n) * time.Millisecond
		}
	}
	for _, h := range []string{hScheduledTime, hDeliveryTime} {
		if n, ok, err := parseIntHeader(f, h, 0, 1<<62); err != nil {
			return nil, o, err
		} else if ok {
			o.Set |= engine.SetDeliveryTime
			o.DeliveryTime = n
		}
	}
	// JMSRedeliveryLimit: Sluice's header wins, then WebLogic's header
	// name, then its JMS_BEA_ property name.
	for _, h := range []string{hRedeliveryLimit, hJMSRedeliveryLimit, hBEARedeliveryLimit} {
		if n, ok, err := parseIntHeader(f, h, -1, 1<<31-1); err != nil {
			return nil, o, err
		} else if ok {
			o.Set |= engine.SetRedeliveryLimit
			o.RedeliveryLimit = int32(n)
			break
		}
	}
	if v, ok := f.Get(hCorrelationID); ok {
		m.CorrelationID = v
	}
	if v, ok := f.Get(hType); ok {
		m.Type = v
	}
	if v, ok := f.Get(hReplyTo); ok && v != "" {
		d, err := c.parseDestination(v)
		if err != nil {
			return nil, o, fmt.Errorf("header reply-to: %w", err)
		}
		m.ReplyTo = d
	}
	// The body: ActiveMQ's rule is that a frame with content-length is a
	// bytes message and one without is text; sluice-message-type says so
	// explicitly (and marks XML for JMS_BEA_SELECT).
	_, hasLength := f.Get(frame.HeaderContentLength)
	kind := message.BodyText
	if hasLength {
		kind = message.BodyBytes
	}
	if ct, ok := f.Get(frame.HeaderContentType); ok && hasLength && strings.HasPrefix(ct, "text/") {
		kind = message.BodyText
	}
	if v, ok := f.Get(hMessageType); ok {
		switch v {
		case "text":
			kind = message.BodyText
		case "bytes":
			kind = message.BodyBytes
		case "xml":
			kind = message.BodyXML
		default:
			return nil, o, errHeader(hMessageType, v, "text, bytes or xml")
		}
	}
	m.Body = message.Body{Kind: kind, Data: f.Body}
	seen := make(map[string]bool, len(f.Headers))
	for _, h := range f.Headers {
		if isReserved(h.Name) || seen[h.Name] {
			continue
		}
		seen[h.Name] = true
		m.Props.SetUnchecked(h.Name, message.StringValue(h.Value))
	}
	return m, o, nil
}

// messageFrame renders a delivery as a MESSAGE frame.
func (c *conn) messageFrame(sub *subscription, d message.Delivery) *frame.Frame {
	m := d.Msg
	f := &frame.Frame{Command: frame.CmdMessage, Headers: make([]frame.Header, 0, 12+len(m.Props))}
	add := func(n, v string) { f.Headers = append(f.Headers, frame.Header{Name: n, Value: v}) }
	add(hSubscription, sub.id)
	add(hMessageID, m.ID)
	add(hDestination, c.renderDestination(m.Destination))
	if c.version >= frame.V12 && sub.ackMode != ackAuto {
		add(hAck, sub.ackID(d.Tag))
	}
	if d.Redelivered {
		add(hRedelivered, "true")
	}
	count := strconv.Itoa(int(d.DeliveryCount))
	add(hDeliveryCount, count)
	add(hXDeliveryCount, count)
	add(hPriority, strconv.Itoa(int(m.Priority)))
	add(hExpires, strconv.FormatInt(m.Expiration, 10))
	add(hTimestamp, strconv.FormatInt(m.Timestamp, 10))
	add(hPersistent, strconv.FormatBool(m.DeliveryMode == message.Persistent))
	if m.DeliveryTime > m.Timestamp {
		add(hDeliveryTime, strconv.FormatInt(m.DeliveryTime, 10))
	}
	if m.CorrelationID != "" {
		add(hCorrelationID, m.CorrelationID)
	}
	if !m.ReplyTo.IsZero() {
		add(hReplyTo, c.renderDestination(m.ReplyTo))
	}
	if m.Type != "" {
		add(hType, m.Type)
	}
	if m.RedeliveryLimit != message.NoRedeliveryLimit {
		add(hRedeliveryLimit, strconv.Itoa(int(m.RedeliveryLimit)))
	}
	if m.Body.Kind == message.BodyXML {
		add(hMessageType, "xml")
	}
	for _, p := range m.Props {
		if p.Name == hDestination || p.Name == hSubscription || p.Name == hMessageID || p.Name == hAck {
			continue
		}
		s, err := p.Value.AsString()
		if err != nil {
			continue
		}
		add(p.Name, s)
	}
	switch m.Body.Kind {
	case message.BodyText, message.BodyXML, message.BodyBytes:
		f.Body = m.Body.Data
	default:
		// Map and stream bodies (sent over AMQP) have no STOMP form; their
		// text rendering lets a STOMP client at least see them.
		if t, err := m.Body.Text(); err == nil {
			f.Body = []byte(t)
		}
	}
	if m.Body.Kind == message.BodyBytes {
		add(frame.HeaderContentLength, strconv.Itoa(len(f.Body)))
	}
	return f
}
