package admin

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Publish and get: an administrator sends a test message to a destination,
// or consumes one message from a queue. Each opens an engine connection of
// its own, protocol "admin", as the administrator (so that its "connection
// opened" and "connection closed" lines name them), and closes it before
// answering. Both are changes: a monitor is refused them.

// Limits of get.
const (
	defaultGetTimeout = time.Second
	maxGetTimeout     = time.Minute
	// minGetWait lets a waiting message reach the consumer when the caller
	// asks not to wait.
	minGetWait = 50 * time.Millisecond
)

// publishRequest is the body of POST …/messages/publish.
type publishRequest struct {
	CorrelationID string `json:"correlationId"`
	Type          string `json:"type"`
	ReplyTo       string `json:"replyTo"`
	Priority      *int   `json:"priority"`
	// DeliveryMode is PERSISTENT (the default) or NON_PERSISTENT.
	DeliveryMode string `json:"deliveryMode"`
	// TimeToLive and DeliveryDelay are milliseconds; 0: never expires,
	// delivered at once.
	TimeToLive    int64           `json:"timeToLive"`
	DeliveryDelay int64           `json:"deliveryDelay"`
	Properties    []message.Field `json:"properties"`
	Body          string          `json:"body"`
	// BodyEncoding says how Body is written: text (the default) or base64.
	BodyEncoding string `json:"bodyEncoding"`
	// BodyKind is text (the default for a text body) or bytes (the
	// default for base64).
	BodyKind string `json:"bodyKind"`
}

// message builds the message and send options req asks for.
func (req *publishRequest) message() (*message.Message, engine.SendOptions, error) {
	m := &message.Message{CorrelationID: req.CorrelationID, Type: req.Type}
	var o engine.SendOptions
	var data []byte
	switch req.BodyEncoding {
	case "", "text":
		data = []byte(req.Body)
	case "base64":
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return nil, o, badRequest("body is not base64: %v", err)
		}
		data = b
	default:
		return nil, o, badRequest("bodyEncoding %q: want text or base64", req.BodyEncoding)
	}
	kind := req.BodyKind
	if kind == "" {
		kind = "text"
		if req.BodyEncoding == "base64" {
			kind = "bytes"
		}
	}
	switch kind {
	case "text":
		m.Body = message.Body{Kind: message.BodyText, Data: data}
	case "bytes":
		m.Body = message.BytesBody(data)
	default:
		return nil, o, badRequest("bodyKind %q: want text or bytes", req.BodyKind)
	}
	if req.ReplyTo != "" {
		d, err := message.ParseDestination(req.ReplyTo)
		if err != nil {
			return nil, o, badRequest("replyTo: %v", err)
		}
		m.ReplyTo = d
	}
	for _, f := range req.Properties {
		if err := m.Props.Set(f.Name, f.Value); err != nil {
			return nil, o, badRequest("property %q: %v", f.Name, err)
		}
	}
	switch req.DeliveryMode {
	case "", "PERSISTENT":
		o.Set, o.DeliveryMode = o.Set|engine.SetDeliveryMode, message.Persistent
	case "NON_PERSISTENT":
		o.Set, o.DeliveryMode = o.Set|engine.SetDeliveryMode, message.NonPersistent
	default:
		return nil, o, badRequest("deliveryMode %q: want PERSISTENT or NON_PERSISTENT", req.DeliveryMode)
	}
	if req.Priority != nil {
		if err := message.ValidatePriority(*req.Priority); err != nil {
			return nil, o, badRequest("priority: %v", err)
		}
		o.Set, o.Priority = o.Set|engine.SetPriority, uint8(*req.Priority)
	}
	if req.TimeToLive < 0 || req.DeliveryDelay < 0 {
		return nil, o, badRequest("timeToLive and deliveryDelay must not be negative")
	}
	if req.TimeToLive > 0 {
		o.Set, o.TimeToLive = o.Set|engine.SetTimeToLive, time.Duration(req.TimeToLive)*time.Millisecond
	}
	if req.DeliveryDelay > 0 {
		o.Set, o.TimeToDeliver = o.Set|engine.SetTimeToDeliver, time.Duration(req.DeliveryDelay)*time.Millisecond
	}
	return m, o, nil
}

// adminConnection opens the engine connection of one request, as its caller.
func (s *Server) adminConnection(r *http.Request) (*engine.Connection, error) {
	c := callerOf(r)
	user := c.Name
	if c.Token {
		user = "token:" + c.Name
	}
	return s.eng.Connect(engine.ConnectionOptions{User: user, RemoteAddr: r.RemoteAddr, Protocol: "admin",
		Producer: engine.DefaultProducerDefaults()})
}

// publish answers POST /api/destinations/{kind}/{name}/messages/publish:
// a test message sent as a client would send it (the destination's policy
// applies, the broker assigns its JMSMessageID and timestamp). The
// destination must exist: a typing mistake does not create one.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req publishRequest
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	m, o, err := req.message()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.eng.DestinationInfo(dest); err != nil {
		s.fail(w, r, err)
		return
	}
	conn, err := s.adminConnection(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer conn.Close()
	sess, err := conn.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := sess.CreateProducer(dest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := p.Send(r.Context(), m, o); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("test message published by an administrator", callerOf(r).logAttr(), slog.String("destination", dest.String()),
		slog.String("message_id", m.ID))
	writeJSON(w, http.StatusCreated, map[string]string{"id": m.ID, "destination": dest.String()})
}

// getRequest is the body of POST …/messages/get.
type getRequest struct {
	// Selector picks the message (JMS selector); "" takes the first.
	Selector string `json:"selector"`
	// Timeout is how long to wait for a message, in milliseconds; nil
	// means defaultGetTimeout.
	Timeout *int64 `json:"timeout"`
}

// getMessage answers POST /api/destinations/{kind}/{name}/messages/get:
// it consumes the next message of a queue (the one a consumer would get:
// by priority, then arrival) and acknowledges it, so that it is gone from
// the queue, and returns it whole. {"message": null} when none came in
// time.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if dest.Kind.IsTopic() {
		s.fail(w, r, badRequest("get consumes from a queue; %s is a topic (browse its durable subscriptions instead)", dest))
		return
	}
	var req getRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, w, &req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	timeout := defaultGetTimeout
	if req.Timeout != nil {
		timeout = time.Duration(*req.Timeout) * time.Millisecond
		if timeout < 0 || timeout > maxGetTimeout {
			s.fail(w, r, badRequest("timeout %d: want 0 to %d milliseconds", *req.Timeout, maxGetTimeout.Milliseconds()))
			return
		}
	}
	if _, err := s.eng.DestinationInfo(dest); err != nil {
		s.fail(w, r, err)
		return
	}
	conn, err := s.adminConnection(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer conn.Close() // a message received and not acknowledged goes back
	sess, err := conn.CreateSession(engine.ClientAcknowledge)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cons, err := sess.CreateConsumer(dest, engine.ConsumerOptions{Selector: req.Selector, CreditMode: engine.CreditManual})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cons.Flow(1)
	if err := conn.Start(); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), max(timeout, minGetWait))
	defer cancel()
	d, err := cons.Receive(ctx)
	if err != nil {
		if ctx.Err() != nil && r.Context().Err() == nil {
			writeJSON(w, http.StatusOK, map[string]any{"message": nil})
			return
		}
		s.fail(w, r, err)
		return
	}
	if err := sess.Acknowledge(r.Context(), d.Tag); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("message consumed by an administrator", callerOf(r).logAttr(), slog.String("destination", dest.String()),
		slog.String("message_id", d.Msg.ID))
	e := engine.MessageEntry{Delivery: d}
	writeJSON(w, http.StatusOK, map[string]any{"message": toMessageJSON(e, 0, true)})
}
