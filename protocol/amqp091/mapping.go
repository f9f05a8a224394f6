package amqp091

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// Header names of the conventions in docs/amqp091.md: the headers table
// entries that carry JMS header fields and delivery times rather than
// properties.
const (
	// Delivery delay, relative ms: RabbitMQ's delayed-message exchange
	// plugin, ActiveMQ's scheduler (as STOMP carries it) and the AMQP 1.0
	// JMS mapping's annotation.
	hXDelay         = "x-delay"
	hScheduledDelay = "AMQ_SCHEDULED_DELAY"
	hDeliveryDelay  = "x-opt-delivery-delay"
	// Delivery time, absolute epoch ms.
	hScheduledTime = "AMQ_SCHEDULED_TIME"
	hDeliveryTimeA = "x-opt-delivery-time"
	hJMSDelivery   = "JMSDeliveryTime"
	// JMSRedeliveryLimit as WebLogic applications carry it.
	hJMSRedeliveryLimit = "JMSRedeliveryLimit"
	hBEARedeliveryLimit = "JMS_BEA_RedeliveryLimit"
	// Sluice's own names of the same (as STOMP has them), accepted too.
	hSluiceTimeToDeliver   = "sluice-time-to-deliver"
	hSluiceDeliveryTime    = "sluice-delivery-time"
	hSluiceRedeliveryLimit = "sluice-redelivery-limit"
	// The delivery count: JMSXDeliveryCount on every delivery, and
	// x-delivery-count (the deliveries before this one) on redeliveries,
	// as RabbitMQ's quorum queues send it.
	hDeliveryCount  = message.PropDeliveryCount
	hXDeliveryCount = "x-delivery-count"
	// Properties for the basic properties JMS has no header field for.
	propContentType     = "content-type"
	propContentEncoding = "content-encoding"
	propAppID           = "JMSXAppID"
)

// consumedHeaders are headers table entries publish reads itself; every
// other entry is a property of the message.
func consumedHeader(name string) bool {
	switch name {
	case hXDelay, hScheduledDelay, hDeliveryDelay, hScheduledTime, hDeliveryTimeA, hJMSDelivery,
		hJMSRedeliveryLimit, hBEARedeliveryLimit, hDeliveryCount, hXDeliveryCount,
		hSluiceTimeToDeliver, hSluiceDeliveryTime, hSluiceRedeliveryLimit:
		return true
	}
	return false
}

// toMessage builds the engine message and send options of a published
// message's properties and body.
func (c *conn) toMessage(p *spec.BasicProperties, body []byte) (*message.Message, engine.SendOptions, error) {
	var o engine.SendOptions
	m := &message.Message{}
	// delivery-mode 2 is persistent; 1 or none is transient, RabbitMQ's
	// default.
	o.Set |= engine.SetDeliveryMode
	o.DeliveryMode = message.NonPersistent
	if p.Flags&spec.FlagDeliveryMode != 0 && p.DeliveryMode == 2 {
		o.DeliveryMode = message.Persistent
	}
	if p.Flags&spec.FlagPriority != 0 {
		o.Set |= engine.SetPriority
		o.Priority = min(p.Priority, 9) // 0-9 in JMS; above 9 is the highest
	}
	if p.Flags&spec.FlagExpiration != 0 && p.Expiration != "" {
		ms, err := strconv.ParseInt(p.Expiration, 10, 64)
		if err != nil || ms < 0 {
			return nil, o, refuse(spec.PreconditionFailed, nil, "invalid expiration '%s'", p.Expiration)
		}
		o.Set |= engine.SetTimeToLive
		o.TimeToLive = time.Duration(max(ms, 1)) * time.Millisecond // "0": expires at once
	}
	if p.Flags&spec.FlagMessageID != 0 && p.MessageID != "" {
		m.ID = p.MessageID
	}
	m.CorrelationID = p.CorrelationID
	m.Type = p.Type
	if p.ReplyTo != "" {
		m.ReplyTo = c.parseReplyTo(p.ReplyTo)
	}
	if p.UserID != "" {
		if c.srv.opts.Realm.Enabled() && p.UserID != c.identity.User {
			return nil, o, refuse(spec.PreconditionFailed, nil, "user_id property set to '%s' but authenticated user was '%s'", p.UserID, c.identity.User)
		}
		m.Props.SetUnchecked(message.PropUserID, message.StringValue(p.UserID))
	}
	if p.ContentType != "" {
		m.Props.SetUnchecked(propContentType, message.StringValue(p.ContentType))
	}
	if p.ContentEncoding != "" {
		m.Props.SetUnchecked(propContentEncoding, message.StringValue(p.ContentEncoding))
	}
	if p.AppID != "" {
		m.Props.SetUnchecked(propAppID, message.StringValue(p.AppID))
	}
	for name, v := range p.Headers {
		if !consumedHeader(name) {
			if pv, ok := toValue(v); ok {
				m.Props.SetUnchecked(name, pv)
			}
			continue
		}
		n, ok := intArg(v)
		if name == hDeliveryCount || name == hXDeliveryCount {
			continue // the broker counts deliveries, never the client
		}
		if !ok {
			return nil, o, refuse(spec.PreconditionFailed, nil, "header %s must be an integer, not %T", name, v)
		}
		switch name {
		case hXDelay, hScheduledDelay, hDeliveryDelay, hSluiceTimeToDeliver:
			if n > 0 {
				o.Set |= engine.SetTimeToDeliver
				o.TimeToDeliver = time.Duration(min(n, 1<<40)) * time.Millisecond
			}
		case hScheduledTime, hDeliveryTimeA, hJMSDelivery, hSluiceDeliveryTime:
			if n > 0 {
				o.Set |= engine.SetDeliveryTime
				o.DeliveryTime = n
			}
		case hJMSRedeliveryLimit, hBEARedeliveryLimit, hSluiceRedeliveryLimit:
			if n < -1 || n > math.MaxInt32 {
				return nil, o, refuse(spec.PreconditionFailed, nil, "header %s: %d is not a redelivery limit", name, n)
			}
			o.Set |= engine.SetRedeliveryLimit
			o.RedeliveryLimit = int32(n)
		}
	}
	kind := message.BodyBytes
	if strings.HasPrefix(p.ContentType, "text/") && utf8.Valid(body) {
		kind = message.BodyText
	}
	if (p.ContentType == "text/xml" || p.ContentType == "application/xml") && utf8.Valid(body) {
		kind = message.BodyXML // a WebLogic XMLMessage, for JMS_BEA_SELECT
	}
	m.Body = message.Body{Kind: kind, Data: body}
	return m, o, nil
}

// toValue maps a headers table value to a property value, keeping its
// type where JMS has it: unsigned integers widen to the next signed type,
// a byte array becomes a string when it is UTF-8 (JMS properties have no
// bytes type), a timestamp its epoch ms, a decimal its decimal string.
// Nested tables, arrays and void have no property form and are dropped.
func toValue(v any) (message.Value, bool) {
	switch x := v.(type) {
	case bool:
		return message.BoolValue(x), true
	case int8:
		return message.ByteValue(x), true
	case uint8:
		return message.ShortValue(int16(x)), true
	case int16:
		return message.ShortValue(x), true
	case uint16:
		return message.IntValue(int32(x)), true
	case int32:
		return message.IntValue(x), true
	case uint32:
		return message.LongValue(int64(x)), true
	case int64:
		return message.LongValue(x), true
	case int:
		return message.LongValue(int64(x)), true
	case float32:
		return message.FloatValue(x), true
	case float64:
		return message.DoubleValue(x), true
	case string:
		return message.StringValue(x), true
	case []byte:
		if utf8.Valid(x) {
			return message.StringValue(string(x)), true
		}
	case time.Time:
		return message.LongValue(x.UnixMilli()), true
	case spec.Decimal:
		return message.StringValue(formatDecimal(x)), true
	}
	return message.Value{}, false
}

func formatDecimal(d spec.Decimal) string {
	s := strconv.FormatInt(int64(d.Value), 10)
	if d.Scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= int(d.Scale) {
		s = "0" + s
	}
	s = s[:len(s)-int(d.Scale)] + "." + s[len(s)-int(d.Scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// fromValue maps a property value to its headers table value.
func fromValue(v message.Value) (any, bool) {
	switch v.Type {
	case message.Bool:
		return v.N != 0, true
	case message.Byte:
		return int8(v.N), true
	case message.Short:
		return int16(v.N), true
	case message.Int:
		return int32(v.N), true
	case message.Long:
		return v.N, true
	case message.Float:
		return float32(v.F), true
	case message.Double:
		return v.F, true
	case message.String:
		return v.S, true
	case message.Char:
		s, _ := v.AsString()
		return s, true
	case message.Bytes:
		return v.B, true
	}
	return nil, false
}

// toProperties renders a delivery's message as basic properties and body.
func (c *conn) toProperties(d message.Delivery) (*spec.BasicProperties, []byte) {
	m := d.Msg
	p := &spec.BasicProperties{Headers: spec.Table{}}
	p.Flags = spec.FlagHeaders | spec.FlagDeliveryMode | spec.FlagPriority | spec.FlagTimestamp
	p.DeliveryMode = 1
	if m.DeliveryMode == message.Persistent {
		p.DeliveryMode = 2
	}
	p.Priority = m.Priority
	p.Timestamp = time.UnixMilli(m.Timestamp).Truncate(time.Second)
	if m.ID != "" {
		p.Flags |= spec.FlagMessageID
		p.MessageID = m.ID
	}
	if m.CorrelationID != "" {
		p.Flags |= spec.FlagCorrelationID
		p.CorrelationID = m.CorrelationID
	}
	if m.Type != "" {
		p.Flags |= spec.FlagType
		p.Type = m.Type
	}
	if !m.ReplyTo.IsZero() {
		p.Flags |= spec.FlagReplyTo
		p.ReplyTo = c.renderReplyTo(m.ReplyTo)
	}
	if m.Expiration > 0 {
		left := m.Expiration - time.Now().UnixMilli()
		p.Flags |= spec.FlagExpiration
		p.Expiration = strconv.FormatInt(max(left, 1), 10)
	}
	for _, f := range m.Props {
		switch f.Name {
		case propContentType:
			if s, err := f.Value.AsString(); err == nil {
				p.Flags |= spec.FlagContentType
				p.ContentType = s
				continue
			}
		case propContentEncoding:
			if s, err := f.Value.AsString(); err == nil {
				p.Flags |= spec.FlagContentEncoding
				p.ContentEncoding = s
				continue
			}
		case propAppID:
			if s, err := f.Value.AsString(); err == nil {
				p.Flags |= spec.FlagAppID
				p.AppID = s
				continue
			}
		case message.PropUserID:
			if s, err := f.Value.AsString(); err == nil {
				p.Flags |= spec.FlagUserID
				p.UserID = s
			}
		}
		if v, ok := fromValue(f.Value); ok {
			p.Headers[f.Name] = v
		}
	}
	p.Headers[hDeliveryCount] = d.DeliveryCount
	if d.DeliveryCount > 1 {
		p.Headers[hXDeliveryCount] = int64(d.DeliveryCount - 1)
	}
	if m.DeliveryTime > m.Timestamp {
		p.Headers[hJMSDelivery] = m.DeliveryTime
	}
	if m.RedeliveryLimit != message.NoRedeliveryLimit {
		p.Headers[hJMSRedeliveryLimit] = m.RedeliveryLimit
	}
	var body []byte
	switch m.Body.Kind {
	case message.BodyText, message.BodyXML:
		body = m.Body.Data
		if p.Flags&spec.FlagContentType == 0 {
			p.Flags |= spec.FlagContentType
			p.ContentType = "text/plain"
			if m.Body.Kind == message.BodyXML {
				p.ContentType = "text/xml"
			}
		}
	case message.BodyBytes:
		body = m.Body.Data
	case message.BodyMap, message.BodyStream:
		// Map and stream bodies (sent over AMQP 1.0) have no 0-9-1 form:
		// they go as a JSON object or array of their values.
		body = jsonBody(m.Body)
		if p.Flags&spec.FlagContentType == 0 {
			p.Flags |= spec.FlagContentType
			p.ContentType = "application/json"
		}
	}
	return p, body
}

// jsonBody renders a map body as a JSON object and a stream body as a
// JSON array (a char as its string, bytes as base64).
func jsonBody(b message.Body) []byte {
	var v any
	if b.Kind == message.BodyMap {
		obj := make(map[string]any, len(b.Map))
		for _, f := range b.Map {
			obj[f.Name], _ = fromValue(f.Value)
		}
		v = obj
	} else {
		arr := make([]any, 0, len(b.Stream))
		for _, x := range b.Stream {
			e, _ := fromValue(x)
			arr = append(arr, e)
		}
		v = arr
	}
	out, err := json.Marshal(v)
	if err != nil {
		// NaN and infinities have no JSON form: their strings do.
		return []byte(fmt.Sprint(v))
	}
	return out
}

// parseReplyTo reads a reply-to: a STOMP-style destination ("/queue/q",
// "/topic/t", "/temp-queue/…"), a server-named queue, or a queue name.
func (c *conn) parseReplyTo(s string) message.Destination {
	if strings.HasPrefix(s, "/") {
		if d, err := message.ParseDestination(s); err == nil {
			return d
		}
	}
	return c.resolveQueue(s)
}

// renderReplyTo is the 0-9-1 form of a reply destination: a queue by its
// name (what the default exchange routes by), this connection's
// temporary queue by the name it knows, others in the STOMP form.
func (c *conn) renderReplyTo(d message.Destination) string {
	switch d.Kind {
	case message.Queue:
		return d.Name
	case message.TempQueue:
		if n, ok := c.tempName(d); ok {
			return n
		}
		return "amq.gen-" + d.Name
	}
	return d.String()
}

// origin is the exchange and routing key a delivery names: a queue's
// messages come from the default exchange by the queue's name, a topic's
// from amq.topic by the topic's name.
func (c *conn) origin(d message.Destination) (exchange, key string) {
	switch d.Kind {
	case message.Topic:
		return exchTopic, d.Name
	case message.TempQueue:
		if n, ok := c.tempName(d); ok {
			return "", n
		}
		return "", "amq.gen-" + d.Name
	}
	return "", d.Name
}
