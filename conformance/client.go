package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind is the kind of a destination.
type Kind uint8

// Destination kinds.
const (
	Queue Kind = iota + 1
	Topic
	TempQueue
	TempTopic
)

// String returns the kind as the STOMP prefix spells it.
func (k Kind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Topic:
		return "topic"
	case TempQueue:
		return "temp-queue"
	case TempTopic:
		return "temp-topic"
	}
	return "?"
}

// IsTemp reports whether k is a temporary kind.
func (k Kind) IsTemp() bool { return k == TempQueue || k == TempTopic }

// IsTopic reports whether k is a topic kind.
func (k Kind) IsTopic() bool { return k == Topic || k == TempTopic }

// Dest is a destination. Name is the plain name of a queue or topic; for a
// temporary destination, and for a reply-to read off a received message,
// Addr is the protocol address the broker gave it, which drivers use as it
// is.
type Dest struct {
	Kind Kind
	Name string
	// Addr is the driver-specific address (temporary destinations,
	// received reply-to). Empty for named destinations.
	Addr string
	// Proto is the protocol Addr belongs to.
	Proto string
}

// String renders the destination for logs.
func (d Dest) String() string {
	if d.Addr != "" {
		return d.Addr
	}
	return "/" + d.Kind.String() + "/" + d.Name
}

// Prop is one application property. Value is a string, bool, int8, int16,
// int32, int64, float32 or float64: the JMS property types.
type Prop struct {
	Name  string
	Value any
}

// Props is an ordered property list.
type Props []Prop

// Typed reports whether any property has a type other than string.
func (ps Props) Typed() bool {
	for _, p := range ps {
		if _, ok := p.Value.(string); !ok {
			return true
		}
	}
	return false
}

// Message is what a scenario sends. Zero fields are not set: the protocol's
// and the broker's defaults apply.
type Message struct {
	Body  string
	Props Props
	// XML marks the body as an XML document (for JMS_BEA_SELECT).
	XML bool
	// Priority is JMSPriority 0-9 when set (use Prio).
	Priority *int
	// Persistent is JMSDeliveryMode when set (use Persistent/NonPersistent).
	Persistent *bool
	// TTL is the time to live; Expiration an absolute JMSExpiration.
	TTL        time.Duration
	Expiration time.Time
	// DeliveryDelay is the time to deliver (relative); DeliveryTime an
	// absolute JMSDeliveryTime.
	DeliveryDelay time.Duration
	DeliveryTime  time.Time
	CorrelationID string
	Type          string
	ReplyTo       *Dest
	// RedeliveryLimit is WebLogic's JMSRedeliveryLimit of the message.
	RedeliveryLimit *int
}

// Prio returns a pointer to p, for Message.Priority.
func Prio(p int) *int { return &p }

// Int returns a pointer to n.
func Int(n int) *int { return &n }

var (
	yes = true
	no  = false
)

// Persistent and NonPersistent are values for Message.Persistent.
var (
	Persistent    = &yes
	NonPersistent = &no
)

// Received is a delivered message as a driver read it.
type Received struct {
	Proto       string
	ID          string
	Destination string
	Body        string
	// Props are the application properties, with their types where the
	// protocol carries types (STOMP: strings).
	Props       map[string]any
	Priority    int
	Persistent  bool
	Redelivered bool
	// DeliveryCount is JMSXDeliveryCount; 0 when the protocol or broker
	// does not carry it.
	DeliveryCount int
	// Timestamp, Expiration and DeliveryTime are epoch milliseconds; 0 when
	// not carried.
	Timestamp     int64
	Expiration    int64
	DeliveryTime  int64
	CorrelationID string
	Type          string
	ReplyTo       *Dest
	// At is when the driver received it.
	At time.Time

	handle any // the driver's reference for ack/nack
}

// Prop returns a property's value rendered as a string ("" when absent).
func (r *Received) Prop(name string) string {
	v, ok := r.Props[name]
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// PropNames lists the properties, sorted.
func (r *Received) PropNames() []string {
	names := make([]string, 0, len(r.Props))
	for n := range r.Props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AckMode is a consumer's acknowledgement mode.
type AckMode uint8

// Acknowledgement modes: AUTO_ACKNOWLEDGE, CLIENT_ACKNOWLEDGE (an
// acknowledgement covers every message the consumer received before it) and
// INDIVIDUAL (ActiveMQ's, STOMP's client-individual: one message).
const (
	AckAuto AckMode = iota
	AckClient
	AckIndividual
)

// SubOptions configure a consumer.
type SubOptions struct {
	Selector string
	Ack      AckMode
	// Name is a subscription name; with Durable it names a durable
	// subscription, with Shared a JMS 2.0 shared subscription.
	Name    string
	Durable bool
	Shared  bool
	NoLocal bool
	// Prefetch is the pipeline size (messages); 0 = the broker's default.
	Prefetch int
	// RedeliveryDelay is the session's redelivery delay (WebLogic
	// WLSession.setRedeliveryDelay); 0 = not set.
	RedeliveryDelay time.Duration
}

// Outcome ends a delivery other than by acknowledging it.
type Outcome uint8

// Outcomes: Failed is a failed delivery (STOMP NACK, AMQP modified with
// delivery-failed): counted, redelivery delay and limit apply. Rejected is
// undeliverable (NACK requeue:false, AMQP rejected): to the error
// destination now. Released goes back uncounted (AMQP released).
const (
	Failed Outcome = iota + 1
	Rejected
	Released
)

// ConnOptions configure a connection.
type ConnOptions struct {
	// ClientID is the JMS client ID ("" = none).
	ClientID string
	// Transacted asks for a connection whose session runs transactions
	// (JMS createSession(true, …)); Begin needs one over AMQP, where the
	// driver then uses its own client (go-amqp has no transactions).
	Transacted bool
}

// Driver speaks one wire protocol to one broker address.
type Driver interface {
	// Protocol is "stomp", "amqp" (AMQP 1.0) or "amqp091" (AMQP 0-9-1).
	Protocol() string
	// Addr is the broker address the driver dials.
	Addr() string
	// Dial opens a connection.
	Dial(ctx context.Context, o ConnOptions) (Conn, error)
}

// Conn is a client connection.
type Conn interface {
	// Send sends m to d, inside tx when tx is not nil, and returns once the
	// broker confirmed it (or refused it).
	Send(ctx context.Context, d Dest, m *Message, tx Tx) error
	// Subscribe creates a consumer and returns once the broker accepted it.
	Subscribe(ctx context.Context, d Dest, o SubOptions) (Sub, error)
	// Temporary creates a temporary queue or topic that lives as long as
	// the connection, with a consumer on it.
	Temporary(ctx context.Context, kind Kind) (Sub, Dest, error)
	// Browse returns the messages waiting on a queue (matching selector)
	// without consuming them.
	Browse(ctx context.Context, d Dest, selector string) ([]*Received, error)
	// Begin starts a local transaction covering sends and acknowledgements.
	Begin(ctx context.Context) (Tx, error)
	// Unsubscribe deletes the durable subscription name (on topic, with
	// selector sel) of this connection's client ID. It has no active
	// subscriber.
	Unsubscribe(ctx context.Context, topic Dest, name, sel string) error
	// Close closes the connection; unacknowledged messages go back. It
	// returns once the broker has closed the connection's consumers, so
	// a message sent afterwards cannot reach them.
	Close() error
}

// Sub is a consumer.
type Sub interface {
	// Receive waits up to timeout for a message; (nil, nil) when none came.
	Receive(ctx context.Context, timeout time.Duration) (*Received, error)
	// Ack acknowledges m (and, in AckClient mode, every message received
	// before it), inside tx when not nil.
	Ack(ctx context.Context, m *Received, tx Tx) error
	// Settle ends m's delivery with outcome o.
	Settle(ctx context.Context, m *Received, o Outcome) error
	// Recover redelivers every message received and not acknowledged (JMS
	// Session.recover).
	Recover(ctx context.Context) error
	// Close closes the consumer; a durable subscription stays.
	Close(ctx context.Context) error
}

// Tx is a local transaction.
type Tx interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// NotExpressibleError says a protocol has no way to say what a scenario
// asks.
type NotExpressibleError struct{ Reason string }

func (e *NotExpressibleError) Error() string { return "not expressible: " + e.Reason }

// NotExpressible returns a NotExpressibleError.
func NotExpressible(format string, args ...any) error {
	return &NotExpressibleError{Reason: fmt.Sprintf(format, args...)}
}

// RefusedError is the broker refusing an operation (a STOMP ERROR frame, an
// AMQP detach with an error or a rejected outcome).
type RefusedError struct {
	Op     string
	Reason string
}

func (e *RefusedError) Error() string { return e.Op + " refused: " + e.Reason }

// IsRefused reports whether err is the broker refusing an operation.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// oneLine shortens s to its first line, at most n bytes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
