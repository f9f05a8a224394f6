package engine

import (
	"log/slog"
	"sync"

	"github.com/sluicemq/sluice/engine/message"
)

// Action is something a connection asks to do on a destination. The
// connection's Permissions allow or refuse it, at the engine's decision
// points, so that every protocol front-end is checked the same way.
type Action uint8

// The actions the engine asks about.
const (
	// ActionSend is sending a message to a queue or topic (each message,
	// also inside a transaction and through an anonymous producer).
	ActionSend Action = iota + 1
	// ActionConsume is receiving from a queue.
	ActionConsume
	// ActionSubscribe is subscribing to a topic (any subscription).
	ActionSubscribe
	// ActionDurable is creating or deleting a durable or shared (named)
	// topic subscription; attaching to one that exists needs only
	// ActionSubscribe.
	ActionDurable
	// ActionBrowse is browsing a queue.
	ActionBrowse
	// ActionCreate is creating a queue or topic by naming it (AutoCreate).
	ActionCreate
)

// Actions lists every Action, in declaration order.
func Actions() []Action {
	return []Action{ActionSend, ActionConsume, ActionSubscribe, ActionDurable, ActionBrowse, ActionCreate}
}

// String returns the action's name as the configuration writes it.
func (a Action) String() string {
	switch a {
	case ActionSend:
		return "send"
	case ActionConsume:
		return "consume"
	case ActionSubscribe:
		return "subscribe"
	case ActionDurable:
		return "durable"
	case ActionBrowse:
		return "browse"
	case ActionCreate:
		return "create"
	}
	return "unknown"
}

// Permissions decide what a connection's user may do. A connection with
// nil Permissions may do everything (security is off). Temporary
// destinations are not asked about: only the connection that made one
// consumes from it, and anyone with its name may send to it (a reply
// address). Allows must be safe for concurrent use; the engine remembers
// its answers per connection.
type Permissions interface {
	Allows(a Action, dest message.Destination) bool
}

// decisionKey is one question asked of a connection's Permissions.
type decisionKey struct {
	action Action
	dest   message.Destination
}

// maxDecisions bounds a connection's remembered decisions: an anonymous
// producer naming ever new destinations does not grow the cache forever.
const maxDecisions = 4096

// decisions remembers a connection's authorization answers so that the
// hot path costs a map lookup. Its lock is a leaf: it is taken only by its
// own methods, under any other lock (Broker.mu included).
type decisions struct {
	mu sync.RWMutex
	m  map[decisionKey]bool
}

func (d *decisions) get(k decisionKey) (allowed, ok bool) {
	d.mu.RLock()
	allowed, ok = d.m[k]
	d.mu.RUnlock()
	return allowed, ok
}

func (d *decisions) put(k decisionKey, allowed bool) {
	d.mu.Lock()
	if d.m == nil || len(d.m) >= maxDecisions {
		d.m = make(map[decisionKey]bool)
	}
	d.m[k] = allowed
	d.mu.Unlock()
}

// authorize returns nil when the connection's user may do a on dest, and a
// CodeSecurity error naming the action and the destination otherwise.
func (c *Connection) authorize(a Action, dest message.Destination) error {
	p := c.opts.Permissions
	if p == nil || dest.Kind.IsTemporary() {
		return nil
	}
	k := decisionKey{a, dest}
	allowed, ok := c.decisions.get(k)
	if !ok {
		allowed = p.Allows(a, dest)
		c.decisions.put(k, allowed)
	}
	if allowed {
		return nil
	}
	if obs := c.b.cfg.ObserveDenied; obs != nil {
		obs(c.opts.Protocol, a)
	}
	user := c.opts.User
	if user == "" {
		user = "anonymous"
	}
	c.b.log.Debug("authorization denied", slog.String("protocol", c.opts.Protocol), slog.String("user", user),
		slog.String("remote", c.opts.RemoteAddr), slog.String("action", a.String()), slog.String("destination", dest.String()))
	return errorf(CodeSecurity, "user %s may not %s %s (action %s)", user, refusedWhat(a), dest, a)
}

// refusedWhat says what a refused action would have done, for the error.
func refusedWhat(a Action) string {
	switch a {
	case ActionSend:
		return "send to"
	case ActionConsume:
		return "consume from"
	case ActionSubscribe:
		return "subscribe to"
	case ActionDurable:
		return "create or delete a durable or shared subscription on"
	case ActionBrowse:
		return "browse"
	case ActionCreate:
		return "create"
	}
	return "use"
}

// stampUserID applies the broker's JMSXUserID rule to a message sent by c:
// with Config.StampUserID it carries the connection's user (nothing for
// an anonymous one), and on a broker with security (c has Permissions) a
// value the client set is never kept, so JMSXUserID can be trusted.
func (c *Connection) stampUserID(m *message.Message) {
	if !c.b.cfg.StampUserID && c.opts.Permissions == nil {
		return
	}
	m.Props.Delete(message.PropUserID)
	if c.b.cfg.StampUserID && c.opts.User != "" {
		m.Props.SetUnchecked(message.PropUserID, message.StringValue(c.opts.User))
	}
}
