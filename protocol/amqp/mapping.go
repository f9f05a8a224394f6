package amqp

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// Terminus capabilities and other symbols of the JMS mapping (Qpid JMS,
// ActiveMQ, Artemis).
const (
	capQueue          types.Symbol = "queue"
	capTopic          types.Symbol = "topic"
	capTempQueue      types.Symbol = "temporary-queue"
	capTempTopic      types.Symbol = "temporary-topic"
	capShared         types.Symbol = "shared"
	capGlobal         types.Symbol = "global"
	capDelayed        types.Symbol = "DELAYED_DELIVERY"
	capSharedSubs     types.Symbol = "SHARED-SUBS"
	capAnonymousRelay types.Symbol = "ANONYMOUS-RELAY"

	annMsgType       types.Symbol = "x-opt-jms-msg-type"
	annDest          types.Symbol = "x-opt-jms-dest"
	annReplyTo       types.Symbol = "x-opt-jms-reply-to"
	annDeliveryTime  types.Symbol = "x-opt-delivery-time"
	annDeliveryDelay types.Symbol = "x-opt-delivery-delay"
	// Sluice's own: JMSRedeliveryLimit, a WebLogic feature no peer carries.
	annRedeliveryLimit types.Symbol = "x-opt-sluice-redelivery-limit"
	// The application properties WebLogic applications on Qpid JMS carry
	// the per-message redelivery limit in: the JMSRedeliveryLimit header
	// of WebLogic's header table, and its JMS_BEA_ property form. The
	// annotation wins, then propRedeliveryLimit.
	propRedeliveryLimit    = "JMSRedeliveryLimit"
	propBEARedeliveryLimit = "JMS_BEA_RedeliveryLimit"
	// annXML marks a text body as a WebLogic XMLMessage.
	annXML types.Symbol = "x-opt-sluice-xml"

	// Filter descriptors of the JMS mapping.
	selectorFilterCode uint64       = 0x0000468C00000004
	selectorFilterName types.Symbol = "apache.org:selector-filter:string"
	noLocalFilterCode  uint64       = 0x0000468C00000003
	noLocalFilterName  types.Symbol = "apache.org:no-local-filter:list"

	contentTypeOctets types.Symbol = "application/octet-stream"
)

// Values of x-opt-jms-msg-type.
const (
	msgTypeMessage int8 = 0
	msgTypeObject  int8 = 1
	msgTypeMap     int8 = 2
	msgTypeBytes   int8 = 3
	msgTypeStream  int8 = 4
	msgTypeText    int8 = 5
)

// Values of x-opt-jms-dest and x-opt-jms-reply-to.
const (
	destTypeQueue     int8 = 0
	destTypeTopic     int8 = 1
	destTypeTempQueue int8 = 2
	destTypeTempTopic int8 = 3
)

// The prefixes of temporary destinations' addresses, so that an address
// says what it is without capabilities (message.DestinationSyntax reads
// them back, with the other forms).
const (
	prefixTempQueue = "temp-queue://"
	prefixTempTopic = "temp-topic://"
)

func hasCap(caps []types.Symbol, want types.Symbol) bool {
	for _, c := range caps {
		if c == want {
			return true
		}
	}
	return false
}

// kindFromCaps returns the destination kind the capabilities name, or
// NoDest.
func kindFromCaps(caps []types.Symbol) message.DestKind {
	switch {
	case hasCap(caps, capTempQueue):
		return message.TempQueue
	case hasCap(caps, capTempTopic):
		return message.TempTopic
	case hasCap(caps, capTopic):
		return message.Topic
	case hasCap(caps, capQueue):
		return message.Queue
	}
	return message.NoDest
}

func kindFromDestType(v any) message.DestKind {
	n, ok := toInt64(v)
	if !ok {
		return message.NoDest
	}
	switch int8(n) {
	case destTypeQueue:
		return message.Queue
	case destTypeTopic:
		return message.Topic
	case destTypeTempQueue:
		return message.TempQueue
	case destTypeTempTopic:
		return message.TempTopic
	}
	return message.NoDest
}

func destType(k message.DestKind) int8 {
	switch k {
	case message.Topic:
		return destTypeTopic
	case message.TempQueue:
		return destTypeTempQueue
	case message.TempTopic:
		return destTypeTempTopic
	}
	return destTypeQueue
}

// parseAddress maps an address onto a destination with the shared parser:
// a prefix wins, then the kind hint (capabilities or x-opt-jms-dest), then
// queue.
func parseAddress(addr string, hint message.DestKind) (message.Destination, error) {
	if hint == message.NoDest {
		hint = message.Queue
	}
	return message.DestinationSyntax{Bare: hint}.Parse(addr)
}

// renderAddress is the address of a destination on the wire: plain names
// for queues and topics (their kind travels in capabilities and
// x-opt-jms-dest), prefixed names for temporary destinations.
func renderAddress(d message.Destination) string {
	switch d.Kind {
	case message.TempQueue:
		return prefixTempQueue + d.Name
	case message.TempTopic:
		return prefixTempTopic + d.Name
	}
	return d.Name
}

func capsOf(k message.DestKind) []types.Symbol {
	switch k {
	case message.Topic:
		return []types.Symbol{capTopic}
	case message.TempQueue:
		return []types.Symbol{capTempQueue}
	case message.TempTopic:
		return []types.Symbol{capTempTopic}
	}
	return []types.Symbol{capQueue}
}

// addressString returns an address field as a string (addresses are
// strings; symbols are tolerated).
func addressString(v any) (string, bool) {
	switch a := v.(type) {
	case nil:
		return "", true
	case string:
		return a, true
	case types.Symbol:
		return string(a), true
	}
	return "", false
}

// idString renders a message-id or correlation-id as JMS sees it.
func idString(v any) string {
	switch id := v.(type) {
	case nil:
		return ""
	case string:
		return id
	case types.Symbol:
		return string(id)
	case uint64:
		return strconv.FormatUint(id, 10)
	case types.UUID:
		return id.String()
	case []byte:
		return string(id)
	}
	return fmt.Sprint(v)
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case types.Timestamp:
		return int64(n), true
	case time.Time:
		return n.UnixMilli(), true
	}
	return 0, false
}

// toValue maps a generic AMQP value onto a JMS value, keeping its type
// where JMS has it: unsigned types widen to the next signed one, symbols,
// UUIDs and chars become strings, timestamps longs. ok is false for
// values JMS cannot hold (lists, maps, described values).
func toValue(v any) (message.Value, bool) {
	switch x := v.(type) {
	case nil:
		return message.NullValue(), true
	case bool:
		return message.BoolValue(x), true
	case int8:
		return message.ByteValue(x), true
	case int16:
		return message.ShortValue(x), true
	case int32:
		return message.IntValue(x), true
	case int64:
		return message.LongValue(x), true
	case uint8:
		return message.ShortValue(int16(x)), true
	case uint16:
		return message.IntValue(int32(x)), true
	case uint32:
		return message.LongValue(int64(x)), true
	case uint64:
		if x > math.MaxInt64 {
			return message.StringValue(strconv.FormatUint(x, 10)), true
		}
		return message.LongValue(int64(x)), true
	case float32:
		return message.FloatValue(x), true
	case float64:
		return message.DoubleValue(x), true
	case string:
		return message.StringValue(x), true
	case types.Symbol:
		return message.StringValue(string(x)), true
	case types.Char:
		if x >= 0 && x <= 0xFFFF {
			return message.CharValue(uint16(x)), true
		}
		return message.StringValue(string(rune(x))), true
	case types.Timestamp:
		return message.LongValue(int64(x)), true
	case types.UUID:
		return message.StringValue(x.String()), true
	case []byte:
		return message.BytesValue(x), true
	}
	return message.Value{}, false
}

// propValue is toValue for properties, whose types are limited to the
// eight of JMS: chars become strings, byte arrays are refused.
func propValue(v any) (message.Value, bool) {
	mv, ok := toValue(v)
	if !ok {
		return mv, false
	}
	switch mv.Type {
	case message.Char:
		return message.StringValue(string(rune(mv.N))), true
	case message.Bytes, message.Null:
		return mv, false
	}
	return mv, true
}

// fromValue maps a JMS value onto the AMQP value of the same type.
func fromValue(v message.Value) any {
	switch v.Type {
	case message.Bool:
		return v.N != 0
	case message.Byte:
		return int8(v.N)
	case message.Short:
		return int16(v.N)
	case message.Int:
		return int32(v.N)
	case message.Long:
		return v.N
	case message.Float:
		return float32(v.F)
	case message.Double:
		return v.F
	case message.String:
		return v.S
	case message.Bytes:
		return v.B
	case message.Char:
		return types.Char(rune(v.N))
	}
	return nil
}

// inbound is an incoming message translated for the engine.
type inbound struct {
	msg  *message.Message
	opts engine.SendOptions
	to   string           // properties.to, for the anonymous relay
	kind message.DestKind // x-opt-jms-dest
}

// toEngine translates a decoded AMQP message. bufCap is the capacity of
// the buffer am was decoded from when the message may keep it (the
// transfer's payload, read into a buffer of its own), 0 when it may not: a
// single data section that fills at least half of it becomes the body
// without a copy.
func toEngine(am *types.Message, bufCap int) (*inbound, error) {
	in := &inbound{msg: &message.Message{}}
	m := in.msg
	if n := len(am.ApplicationProperties); n > 0 {
		m.Props = make(message.Properties, 0, n+1)
	}
	o := &in.opts
	o.Set |= engine.SetDeliveryMode
	o.DeliveryMode = message.NonPersistent
	if h := am.Header; h != nil {
		if h.Durable.Value {
			o.DeliveryMode = message.Persistent
		}
		if p, ok := h.Priority.Get(); ok {
			o.Set |= engine.SetPriority
			o.Priority = min(p, 9)
		}
		if ttl, ok := h.TTL.Get(); ok && ttl > 0 {
			o.Set |= engine.SetTimeToLive
			o.TimeToLive = time.Duration(ttl) * time.Millisecond
		}
	}
	msgType := int8(-1)
	replyKind := message.NoDest
	for _, e := range am.MessageAnnotations {
		key, _ := e.Key.(types.Symbol)
		switch key {
		case annMsgType:
			if n, ok := toInt64(e.Value); ok {
				msgType = int8(n)
			}
		case annDest:
			in.kind = kindFromDestType(e.Value)
		case annReplyTo:
			replyKind = kindFromDestType(e.Value)
		case annDeliveryTime:
			if n, ok := toInt64(e.Value); ok && n > 0 {
				o.Set |= engine.SetDeliveryTime
				o.DeliveryTime = n
			}
		case annDeliveryDelay:
			if n, ok := toInt64(e.Value); ok && n > 0 {
				o.Set |= engine.SetTimeToDeliver
				o.TimeToDeliver = time.Duration(n) * time.Millisecond
			}
		case annRedeliveryLimit:
			if n, ok := toInt64(e.Value); ok && n >= -1 && n <= math.MaxInt32 {
				o.Set |= engine.SetRedeliveryLimit
				o.RedeliveryLimit = int32(n)
			}
		}
	}
	var contentType types.Symbol
	if p := am.Properties; p != nil {
		in.to, _ = addressString(p.To)
		// The producer's message-id is the JMSMessageID (the engine assigns
		// one only when it is absent): Qpid JMS chooses its own and
		// correlates replies on it. ulong, uuid and binary ids keep their
		// string form, as correlation-ids do.
		m.ID = idString(p.MessageID)
		m.Type = p.Subject
		m.CorrelationID = idString(p.CorrelationID)
		contentType = p.ContentType
		if rt, ok := addressString(p.ReplyTo); ok && rt != "" {
			d, err := parseAddress(rt, replyKind)
			if err != nil {
				return nil, fmt.Errorf("reply-to: %w", err)
			}
			m.ReplyTo = d
		}
		if exp, ok := p.AbsoluteExpiryTime.Get(); ok && exp > 0 && o.Set&engine.SetTimeToLive == 0 {
			o.Set |= engine.SetExpiration
			o.Expiration = int64(exp)
		}
		if p.GroupID != "" {
			m.Props.SetUnchecked(message.PropGroupID, message.StringValue(p.GroupID))
		}
		if seq, ok := p.GroupSequence.Get(); ok {
			m.Props.SetUnchecked(message.PropGroupSeq, message.IntValue(int32(seq)))
		}
		// user-id is JMSXUserID (Qpid JMS maps them so). The engine decides
		// whether a client's value stays: with security on or
		// Config.StampUserID it never does.
		if len(p.UserID) > 0 && utf8.Valid(p.UserID) {
			m.Props.SetUnchecked(message.PropUserID, message.StringValue(string(p.UserID)))
		}
	}
	// limits holds the redelivery limits of the application properties,
	// propRedeliveryLimit's first.
	var limits [2]struct {
		n   int32
		set bool
	}
	for _, e := range am.ApplicationProperties {
		name, ok := e.Key.(string)
		if !ok || name == "" {
			continue
		}
		if name == propRedeliveryLimit || name == propBEARedeliveryLimit {
			n, ok := redeliveryLimitValue(e.Value)
			if !ok {
				return nil, fmt.Errorf("application property %s: %v is not an integer in -1..%d", name, e.Value, math.MaxInt32)
			}
			i := 0
			if name == propBEARedeliveryLimit {
				i = 1
			}
			limits[i].n, limits[i].set = n, true
			continue
		}
		v, ok := propValue(e.Value)
		if !ok {
			continue
		}
		m.Props.SetUnchecked(name, v)
	}
	if o.Set&engine.SetRedeliveryLimit == 0 {
		for _, l := range limits {
			if l.set {
				o.Set |= engine.SetRedeliveryLimit
				o.RedeliveryLimit = l.n
				break
			}
		}
	}
	body, err := bodyToEngine(am, msgType, contentType, bufCap)
	if err != nil {
		return nil, err
	}
	if _, xml := am.MessageAnnotations.Get(annXML); xml && body.Kind == message.BodyText {
		body.Kind = message.BodyXML
	}
	m.Body = body
	return in, nil
}

// redeliveryLimitValue reads a redelivery limit given as an application
// property: an integer of any AMQP integer type, or a string of digits (a
// STOMP header crossing over), from -1 (none) up.
func redeliveryLimitValue(v any) (int32, bool) {
	n, ok := toInt64(v)
	if !ok {
		s, isString := v.(string)
		if !isString {
			return 0, false
		}
		var err error
		if n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
			return 0, false
		}
	}
	if n < -1 || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// bodyToEngine maps the body; bufCap is toEngine's.
func bodyToEngine(am *types.Message, msgType int8, contentType types.Symbol, bufCap int) (message.Body, error) {
	switch am.BodyKind() {
	case types.BodyData:
		var data []byte
		if len(am.Data) == 1 {
			if d := am.Data[0]; bufCap > 0 && 2*len(d) >= bufCap {
				data = d[:len(d):len(d)]
			} else {
				data = append([]byte(nil), d...)
			}
		} else {
			for _, d := range am.Data {
				data = append(data, d...)
			}
		}
		if msgType == msgTypeText || (msgType < 0 && strings.HasPrefix(string(contentType), "text/")) {
			return message.Body{Kind: message.BodyText, Data: data}, nil
		}
		return message.Body{Kind: message.BodyBytes, Data: data}, nil
	case types.BodySequence:
		var vals []message.Value
		for _, s := range am.Sequence {
			for _, v := range s {
				vals = append(vals, streamValue(v))
			}
		}
		return message.Body{Kind: message.BodyStream, Stream: vals}, nil
	case types.BodyValue:
		switch v := am.Value.Value.(type) {
		case nil:
			if msgType == msgTypeText {
				return message.Body{Kind: message.BodyText}, nil
			}
			return message.Body{Kind: message.BodyNone}, nil
		case string:
			return message.Body{Kind: message.BodyText, Data: []byte(v)}, nil
		case []byte:
			return message.Body{Kind: message.BodyBytes, Data: append([]byte(nil), v...)}, nil
		case types.Map:
			fields := make([]message.Field, 0, len(v))
			for _, e := range v {
				var name string
				switch k := e.Key.(type) {
				case string:
					name = k
				case types.Symbol:
					name = string(k)
				default:
					name = fmt.Sprint(k)
				}
				fields = append(fields, message.Field{Name: name, Value: streamValue(e.Value)})
			}
			return message.Body{Kind: message.BodyMap, Map: fields}, nil
		case []any:
			vals := make([]message.Value, len(v))
			for i, x := range v {
				vals[i] = streamValue(x)
			}
			return message.Body{Kind: message.BodyStream, Stream: vals}, nil
		case types.Array:
			vals := make([]message.Value, len(v))
			for i, x := range v {
				vals[i] = streamValue(x)
			}
			return message.Body{Kind: message.BodyStream, Stream: vals}, nil
		default:
			if mv, ok := toValue(v); ok && mv.Type == message.String {
				return message.Body{Kind: message.BodyText, Data: []byte(mv.S)}, nil
			}
			// Any other value: its text form, so nothing is lost silently.
			return message.Body{Kind: message.BodyText, Data: []byte(fmt.Sprint(v))}, nil
		}
	}
	if msgType == msgTypeText {
		return message.Body{Kind: message.BodyText}, nil
	}
	if msgType == msgTypeBytes {
		return message.Body{Kind: message.BodyBytes}, nil
	}
	return message.Body{Kind: message.BodyNone}, nil
}

// streamValue maps a value of a map or stream body; values JMS cannot
// hold become their text.
func streamValue(v any) message.Value {
	if mv, ok := toValue(v); ok {
		return mv
	}
	return message.StringValue(fmt.Sprint(v))
}

// fromEngine builds the AMQP message for a delivery.
func fromEngine(d message.Delivery, now int64) *types.Message {
	m := d.Msg
	am := &types.Message{}
	h := types.NewHeader()
	h.Durable = types.Some(m.DeliveryMode == message.Persistent)
	h.Priority = types.Some(m.Priority)
	if m.Expiration > 0 {
		ttl := m.Expiration - now
		if ttl < 1 {
			ttl = 1
		}
		if ttl > math.MaxUint32 {
			ttl = math.MaxUint32
		}
		h.TTL = types.Some(types.Milliseconds(ttl))
	}
	if d.DeliveryCount > 1 {
		h.DeliveryCount = types.Some(uint32(d.DeliveryCount - 1))
	}
	am.Header = h

	ann := make(types.MessageAnnotations, 1, 4)
	ann[0] = types.MapEntry{Key: annDest, Value: destType(m.Destination.Kind)}
	var body message.Body = m.Body
	switch body.Kind {
	case message.BodyText:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeText})
		am.Value = &types.AMQPValue{Value: string(body.Data)}
	case message.BodyXML:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeText}, types.MapEntry{Key: annXML, Value: true})
		am.Value = &types.AMQPValue{Value: string(body.Data)}
	case message.BodyBytes:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeBytes})
		am.Data = []types.Data{types.Data(body.Data)}
		if body.Data == nil {
			am.Data = []types.Data{types.Data{}}
		}
	case message.BodyMap:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeMap})
		mp := make(types.Map, len(body.Map))
		for i, f := range body.Map {
			mp[i] = types.MapEntry{Key: f.Name, Value: fromValue(f.Value)}
		}
		am.Value = &types.AMQPValue{Value: mp}
	case message.BodyStream:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeStream})
		l := make([]any, len(body.Stream))
		for i, v := range body.Stream {
			l[i] = fromValue(v)
		}
		am.Sequence = []types.AMQPSequence{l}
	default:
		ann = append(ann, types.MapEntry{Key: annMsgType, Value: msgTypeMessage})
		am.Value = &types.AMQPValue{}
	}
	if !m.ReplyTo.IsZero() {
		ann = append(ann, types.MapEntry{Key: annReplyTo, Value: destType(m.ReplyTo.Kind)})
	}
	if m.DeliveryTime > m.Timestamp {
		ann = append(ann, types.MapEntry{Key: annDeliveryTime, Value: types.Timestamp(m.DeliveryTime)})
	}
	if m.RedeliveryLimit != message.NoRedeliveryLimit {
		ann = append(ann, types.MapEntry{Key: annRedeliveryLimit, Value: m.RedeliveryLimit})
	}
	am.MessageAnnotations = ann

	p := types.NewProperties()
	p.MessageID = m.ID
	p.To = renderAddress(m.Destination)
	p.Subject = m.Type
	if !m.ReplyTo.IsZero() {
		p.ReplyTo = renderAddress(m.ReplyTo)
	}
	if m.CorrelationID != "" {
		p.CorrelationID = m.CorrelationID
	}
	if m.Body.Kind == message.BodyBytes {
		p.ContentType = contentTypeOctets
	}
	if m.Timestamp > 0 {
		p.CreationTime = types.Some(types.Timestamp(m.Timestamp))
	}
	if m.Expiration > 0 {
		p.AbsoluteExpiryTime = types.Some(types.Timestamp(m.Expiration))
	}
	var app types.ApplicationProperties
	if len(m.Props) > 0 {
		app = make(types.ApplicationProperties, 0, len(m.Props))
	}
	for _, f := range m.Props {
		switch f.Name {
		case message.PropGroupID:
			if s, err := f.Value.AsString(); err == nil {
				p.GroupID = s
				continue
			}
		case message.PropUserID:
			if s, err := f.Value.AsString(); err == nil {
				p.UserID = []byte(s)
				continue
			}
		case message.PropGroupSeq:
			if n, err := f.Value.AsLong(); err == nil && n >= 0 && n <= math.MaxUint32 {
				p.GroupSequence = types.Some(types.SequenceNo(n))
				continue
			}
		}
		v := fromValue(f.Value)
		if v == nil {
			continue
		}
		app = append(app, types.MapEntry{Key: f.Name, Value: v})
	}
	am.Properties = p
	am.ApplicationProperties = app
	return am
}

// encodedSizeHint is a generous estimate of the size of m's AMQP encoding
// (fromEngine), so that it is encoded into one buffer of the right size.
func encodedSizeHint(m *message.Message) int {
	n := 256 + len(m.Body.Data) + len(m.ID) + len(m.Type) + len(m.CorrelationID) +
		2*len(m.Destination.Name) + len(m.ReplyTo.Name)
	for _, f := range m.Props {
		n += 16 + len(f.Name) + len(f.Value.S) + len(f.Value.B)
	}
	for _, f := range m.Body.Map {
		n += 16 + len(f.Name) + len(f.Value.S) + len(f.Value.B)
	}
	for _, v := range m.Body.Stream {
		n += 16 + len(v.S) + len(v.B)
	}
	return n
}

// amqpError is an error condition for a close, end or detach.
type amqpError struct {
	Cond types.ErrorCondition
	Desc string
	Info types.Fields
}

func (e *amqpError) Error() string { return string(e.Cond) + ": " + e.Desc }

func (e *amqpError) wire() *types.Error {
	return &types.Error{Condition: e.Cond, Description: e.Desc, Info: e.Info}
}

func errf(cond types.ErrorCondition, format string, args ...any) *amqpError {
	return &amqpError{Cond: cond, Desc: fmt.Sprintf(format, args...)}
}

// condOf maps an engine error to the AMQP condition that says the same.
func condOf(err error) *amqpError {
	var ae *amqpError
	if errors.As(err, &ae) {
		return ae
	}
	cond := types.AMQPErrorInternalError
	switch engine.CodeOf(err) {
	case engine.CodeInvalidDestination:
		cond = types.AMQPErrorNotFound
	case engine.CodeInvalidSelector, engine.CodeMessageFormat:
		cond = types.AMQPErrorInvalidField
	case engine.CodeInvalidClientID:
		return &amqpError{Cond: types.AMQPErrorInvalidField, Desc: err.Error(),
			Info: types.Fields{{Key: types.Symbol("invalid-field"), Value: types.Symbol("container-id")}}}
	case engine.CodeResourceAllocation:
		cond = types.AMQPErrorResourceLimitExceeded
	case engine.CodeIllegalState:
		cond = types.AMQPErrorIllegalState
	case engine.CodeTransactionRolledBack:
		cond = types.TransactionErrorTransactionRollback
	case engine.CodeConsumerClosed:
		cond = types.AMQPErrorResourceDeleted
	case engine.CodeSecurity:
		cond = types.AMQPErrorUnauthorizedAccess
	}
	return &amqpError{Cond: cond, Desc: err.Error()}
}
