package amqp091

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// Exchanges.
//
// The default exchange ("") routes by queue name: routing key NAME is the
// engine queue NAME. amq.topic is the JMS topics: routing key K is the
// engine topic K, the one STOMP's /topic/K and AMQP 1.0's topic K reach,
// so that its subscribers on every protocol get what is published there.
// A queue bound to amq.topic with a key without wildcards gets the topic's
// messages through a bridge: an engine subscription on the topic whose
// consumer sends each message on to the queue (durable for a durable
// queue, so that nothing published while the broker was down is lost);
// a key with wildcards (* and #) matches only what is published through
// 0-9-1, since engine topics have no wildcards. amq.direct, amq.fanout,
// amq.headers (and amq.match) and declared exchanges of the four types
// route to the queues and exchanges bound to them, inside this server.
//
// Durable exchanges and the bindings of durable exchanges to durable
// queues are kept as engine definitions (engine.PutDefinition) and come
// back when the broker restarts.

// Built-in exchange names.
const (
	exchDefault = ""
	exchDirect  = "amq.direct"
	exchFanout  = "amq.fanout"
	exchTopic   = "amq.topic"
	exchHeaders = "amq.headers"
	exchMatch   = "amq.match"
)

// Exchange types.
const (
	kindDirect  = "direct"
	kindFanout  = "fanout"
	kindTopic   = "topic"
	kindHeaders = "headers"
	// kindDelayed is the exchange type of RabbitMQ's delayed-message
	// plugin; argDelayedType says how it routes.
	kindDelayed    = "x-delayed-message"
	argDelayedType = "x-delayed-type"
)

// defsNamespace is the engine definitions namespace of this server.
const defsNamespace = "amqp091"

// bridgeClientID is the client ID of the server's bridge connection, which
// owns the durable subscriptions of queues bound to amq.topic.
const bridgeClientID = "sluice.amqp091"

// maxRouteDepth bounds exchange-to-exchange routing.
const maxRouteDepth = 16

// exchange is one exchange with its bindings.
type exchange struct {
	name       string
	kind       string
	durable    bool
	autoDelete bool
	internal   bool
	builtin    bool
	delayed    bool // declared as x-delayed-message, routing as kind
	bindings   []*binding
}

// declared is the type the exchange was declared with.
func (e *exchange) declared() string {
	if e.delayed {
		return kindDelayed
	}
	return e.kind
}

// binding routes an exchange's messages to a queue or another exchange.
type binding struct {
	queue    string              // the queue's name as declared ("" for an exchange)
	dest     message.Destination // the queue
	exchange string              // the destination exchange
	key      string
	args     spec.Table
	durable  bool
	bridge   *bridge // amq.topic bindings without wildcards
	owner    *conn   // the connection of an exclusive queue
}

// exchanges is the server's exchange table. mu guards it; a binding's
// bridge is started and stopped outside it, under opMu, which makes each
// change of the table (declare, delete, bind, unbind) one step, so that
// two clients binding the same queue at once start one bridge.
//
// Lock order: opMu, then mu; mu is held while asking the engine about a
// destination (routing), never the other way round: the engine calls in
// only from a bridge's listener, which takes no lock of the table.
type exchanges struct {
	eng *engine.Broker
	log *slog.Logger

	opMu sync.Mutex
	mu   sync.RWMutex
	all  map[string]*exchange

	bridgeMu   sync.Mutex // guards bridgeConn
	bridgeConn *engine.Connection
}

func newExchanges(eng *engine.Broker, log *slog.Logger) *exchanges {
	x := &exchanges{eng: eng, log: log, all: map[string]*exchange{}}
	for _, e := range []struct{ name, kind string }{
		{exchDefault, kindDirect}, {exchDirect, kindDirect}, {exchFanout, kindFanout},
		{exchTopic, kindTopic}, {exchHeaders, kindHeaders}, {exchMatch, kindHeaders},
	} {
		x.all[e.name] = &exchange{name: e.name, kind: e.kind, durable: true, builtin: true}
	}
	return x
}

// definition is the stored form of a durable exchange or binding.
type definition struct {
	Kind       string     `json:"kind,omitempty"` // exchange type; empty for a binding
	Delayed    bool       `json:"delayed,omitempty"`
	AutoDelete bool       `json:"auto_delete,omitempty"`
	Internal   bool       `json:"internal,omitempty"`
	Source     string     `json:"source,omitempty"`
	Queue      string     `json:"queue,omitempty"`
	Exchange   string     `json:"exchange,omitempty"`
	Key        string     `json:"key,omitempty"`
	Args       spec.Table `json:"args,omitempty"`
}

func exchangeKey(name string) string { return "x/" + name }

func bindingKey(source string, b *binding) string {
	args := []byte("{}") // no arguments, however the client sent them
	if len(b.args) > 0 {
		args, _ = json.Marshal(b.args)
	}
	return fmt.Sprintf("b/%q/%q/%q/%q/%s", source, b.queue, b.exchange, b.key, args)
}

// recover loads the durable exchanges and bindings and starts the bridges
// of amq.topic bindings. Definitions that no longer fit (a queue deleted
// meanwhile) are dropped.
func (x *exchanges) recover(ctx context.Context) error {
	var exs, binds []definition
	err := x.eng.Definitions(defsNamespace, func(key string, v []byte) error {
		var d definition
		if err := json.Unmarshal(v, &d); err != nil {
			x.log.Warn("amqp091: unreadable definition dropped", slog.String("key", key), slog.Any("err", err))
			return nil
		}
		if strings.HasPrefix(key, "x/") {
			d.Source = strings.TrimPrefix(key, "x/")
			exs = append(exs, d)
		} else {
			binds = append(binds, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	x.mu.Lock()
	for _, d := range exs {
		if _, ok := x.all[d.Source]; !ok {
			x.all[d.Source] = &exchange{name: d.Source, kind: d.Kind, delayed: d.Delayed, durable: true, autoDelete: d.AutoDelete, internal: d.Internal}
		}
	}
	x.mu.Unlock()
	for _, d := range binds {
		b := &binding{queue: d.Queue, exchange: d.Exchange, key: d.Key, args: d.Args, durable: true}
		if d.Queue != "" {
			b.dest = message.Destination{Kind: message.Queue, Name: d.Queue}
			if _, err := x.eng.DestinationInfo(b.dest); err != nil {
				_ = x.eng.DeleteDefinition(ctx, defsNamespace, bindingKey(d.Source, b))
				continue
			}
		}
		if err := x.bind(ctx, nil, d.Source, b, false); err != nil {
			x.log.Warn("amqp091: binding not restored", slog.String("exchange", d.Source), slog.Any("err", err))
		}
	}
	return nil
}

// route returns the destinations a message published to exchange with
// routing key and headers goes to, each once.
func (x *exchanges) route(c *conn, exchange, key string, headers spec.Table) ([]message.Destination, error) {
	if exchange == exchDefault {
		d := c.resolveQueue(key)
		if !x.eng.DestinationExists(d) {
			return nil, nil
		}
		return []message.Destination{d}, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.all[exchange]
	if e == nil {
		return nil, refuse(spec.NotFound, nil, "no exchange '%s'", exchange)
	}
	if e.internal {
		return nil, refuse(spec.AccessRefused, nil, "cannot publish to internal exchange '%s'", exchange)
	}
	var out []message.Destination
	seen := map[message.Destination]bool{}
	visited := map[string]bool{}
	x.routeLocked(c, e, key, headers, 0, visited, seen, &out)
	return out, nil
}

func (x *exchanges) routeLocked(c *conn, e *exchange, key string, headers spec.Table, depth int,
	visited map[string]bool, seen map[message.Destination]bool, out *[]message.Destination) {
	if depth > maxRouteDepth || visited[e.name] {
		return
	}
	visited[e.name] = true
	add := func(d message.Destination) {
		if !seen[d] {
			seen[d] = true
			*out = append(*out, d)
		}
	}
	if e.name == exchTopic {
		// The JMS topic, when it exists: its subscriptions, bridged
		// bindings among them, take it.
		t := message.Destination{Kind: message.Topic, Name: key}
		if x.eng.HasSubscriptions(t) {
			add(t)
		}
	}
	for _, b := range e.bindings {
		if b.bridge != nil || !matches(e.kind, b, key, headers) {
			continue
		}
		if e.name == exchTopic && b.exchange == "" && x.bridgedLocked(e, b.dest, key) {
			continue // the bridge brings it
		}
		if b.exchange != "" {
			if to := x.all[b.exchange]; to != nil {
				x.routeLocked(c, to, key, headers, depth+1, visited, seen, out)
			}
			continue
		}
		add(b.dest)
	}
}

// bridgedLocked reports whether queue has a bridged binding on e for key.
func (x *exchanges) bridgedLocked(e *exchange, queue message.Destination, key string) bool {
	for _, b := range e.bindings {
		if b.bridge != nil && b.dest == queue && b.key == key {
			return true
		}
	}
	return false
}

// matches reports whether binding b of an exchange of kind takes a message
// with routing key and headers.
func matches(kind string, b *binding, key string, headers spec.Table) bool {
	switch kind {
	case kindFanout:
		return true
	case kindTopic:
		return topicMatch(strings.Split(b.key, "."), strings.Split(key, "."))
	case kindHeaders:
		return headersMatch(b.args, headers)
	}
	return b.key == key
}

// topicMatch matches a topic pattern ("*" one word, "#" zero or more)
// against a routing key's words.
func topicMatch(pat, words []string) bool {
	// Iterative with one backtrack point per "#": bounded by
	// len(pat)*len(words).
	var pi, wi int
	starP, starW := -1, 0
	for steps := 0; steps <= (len(pat)+1)*(len(words)+1)+1; steps++ {
		switch {
		case pi < len(pat) && pat[pi] == "#":
			starP, starW = pi, wi
			pi++
		case pi < len(pat) && wi < len(words) && (pat[pi] == "*" || pat[pi] == words[wi]):
			pi++
			wi++
		case pi == len(pat) && wi == len(words):
			return true
		case starP >= 0 && starW < len(words):
			starW++
			pi, wi = starP+1, starW
		default:
			return false
		}
	}
	return false
}

// headersMatch is the headers exchange: x-match all (the default) or any
// over the binding's arguments other than x- ones; a binding argument of
// void matches the header's presence.
func headersMatch(args, headers spec.Table) bool {
	mode, _ := args["x-match"].(string)
	anyMode := mode == "any" || mode == "any-with-x"
	n, hit := 0, 0
	for k, want := range args {
		if strings.HasPrefix(k, "x-") {
			continue
		}
		n++
		got, ok := headers[k]
		if ok && (want == nil || fmt.Sprint(got) == fmt.Sprint(want)) {
			hit++
		}
	}
	if anyMode {
		return hit > 0
	}
	return hit == n
}

// hasWildcard reports whether a topic binding key has * or # words.
func hasWildcard(key string) bool {
	for _, w := range strings.Split(key, ".") {
		if w == "*" || w == "#" {
			return true
		}
	}
	return false
}

// bind adds b to exchange source (c: the connection binding it; nil on
// recovery), starting its bridge on amq.topic, and stores it when both
// ends are durable and store is set.
func (x *exchanges) bind(ctx context.Context, c *conn, source string, b *binding, store bool) error {
	x.opMu.Lock()
	defer x.opMu.Unlock()
	x.mu.Lock()
	e := x.all[source]
	if e == nil {
		x.mu.Unlock()
		return refuse(spec.NotFound, nil, "no exchange '%s'", source)
	}
	if b.exchange != "" && x.all[b.exchange] == nil {
		x.mu.Unlock()
		return refuse(spec.NotFound, nil, "no exchange '%s'", b.exchange)
	}
	for _, o := range e.bindings {
		if o.dest == b.dest && o.exchange == b.exchange && o.key == b.key && fmt.Sprint(o.args) == fmt.Sprint(b.args) {
			x.mu.Unlock()
			return nil // binding twice is binding once
		}
	}
	b.durable = b.durable || (e.durable && b.dest.Kind == message.Queue) || (e.durable && b.exchange != "" && x.all[b.exchange].durable)
	x.mu.Unlock()
	if source == exchTopic && b.queue != "" && !hasWildcard(b.key) {
		br, err := x.startBridge(ctx, c, b)
		if err != nil {
			return err
		}
		b.bridge = br
	}
	x.mu.Lock()
	e.bindings = append(e.bindings, b)
	x.mu.Unlock()
	if store && b.durable {
		d := definition{Source: source, Queue: b.queue, Exchange: b.exchange, Key: b.key, Args: b.args}
		v, _ := json.Marshal(d)
		if err := x.eng.PutDefinition(ctx, defsNamespace, bindingKey(source, b), v); err != nil {
			return err
		}
	}
	return nil
}

// unbind removes the bindings of source that match (queue or exchange,
// key, args).
func (x *exchanges) unbind(ctx context.Context, source string, queue message.Destination, exch, key string, args spec.Table) error {
	x.opMu.Lock()
	defer x.opMu.Unlock()
	x.mu.Lock()
	e := x.all[source]
	if e == nil {
		x.mu.Unlock()
		return refuse(spec.NotFound, nil, "no exchange '%s'", source)
	}
	var gone []*binding
	keep := e.bindings[:0]
	for _, b := range e.bindings {
		if b.dest == queue && b.exchange == exch && b.key == key && (args == nil || fmt.Sprint(b.args) == fmt.Sprint(args)) {
			gone = append(gone, b)
			continue
		}
		keep = append(keep, b)
	}
	clear(e.bindings[len(keep):])
	e.bindings = keep
	x.mu.Unlock()
	return x.dropBindings(ctx, source, gone)
}

// dropBindings stops the bridges of bindings removed from source and
// deletes their definitions.
func (x *exchanges) dropBindings(ctx context.Context, source string, gone []*binding) error {
	var errs []error
	for _, b := range gone {
		if b.bridge != nil {
			b.bridge.stop(true)
		}
		if b.durable {
			if err := x.eng.DeleteDefinition(ctx, defsNamespace, bindingKey(source, b)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// unbindQueue removes every binding to queue (it was deleted).
func (x *exchanges) unbindQueue(queue message.Destination) {
	x.dropWhere(func(b *binding) bool { return b.exchange == "" && b.dest == queue })
}

// unbindOwner removes the bindings of a connection's exclusive queues.
func (x *exchanges) unbindOwner(c *conn) {
	x.dropWhere(func(b *binding) bool { return b.owner == c })
}

func (x *exchanges) dropWhere(drop func(*binding) bool) {
	x.opMu.Lock()
	defer x.opMu.Unlock()
	x.dropWhereOp(drop)
}

// dropWhereOp is dropWhere for a caller holding opMu.
func (x *exchanges) dropWhereOp(drop func(*binding) bool) {
	type gone struct {
		source string
		b      []*binding
	}
	var all []gone
	x.mu.Lock()
	for name, e := range x.all {
		var g []*binding
		keep := e.bindings[:0]
		for _, b := range e.bindings {
			if drop(b) {
				g = append(g, b)
				continue
			}
			keep = append(keep, b)
		}
		clear(e.bindings[len(keep):])
		e.bindings = keep
		if len(g) > 0 {
			all = append(all, gone{name, g})
		}
	}
	x.mu.Unlock()
	for _, g := range all {
		if err := x.dropBindings(context.Background(), g.source, g.b); err != nil {
			x.log.Warn("amqp091: binding definitions not deleted", slog.Any("err", err))
		}
	}
}

// declare makes an exchange, or checks that the one of that name matches.
func (x *exchanges) declare(ctx context.Context, m *spec.ExchangeDeclare) error {
	x.opMu.Lock()
	defer x.opMu.Unlock()
	kind := m.Type
	switch m.Type {
	case kindDirect, kindFanout, kindTopic, kindHeaders:
	case kindDelayed:
		// RabbitMQ's delayed-message plugin: routes as x-delayed-type;
		// the x-delay header of each message is honoured on every
		// exchange anyway.
		kind, _ = m.Arguments[argDelayedType].(string)
		switch kind {
		case kindDirect, kindFanout, kindTopic, kindHeaders:
		default:
			if !m.Passive {
				return refuse(spec.PreconditionFailed, m, "invalid argument '%s': '%v' is not an exchange type", argDelayedType, m.Arguments[argDelayedType])
			}
		}
	default:
		if !m.Passive {
			return refuse(spec.CommandInvalid, m, "unknown exchange type '%s'", m.Type)
		}
	}
	x.mu.Lock()
	e := x.all[m.Exchange]
	if e != nil {
		x.mu.Unlock()
		if !m.Passive && (e.declared() != m.Type || (!e.builtin && e.durable != m.Durable)) {
			return refuse(spec.PreconditionFailed, m, "inequivalent arg 'type' or 'durable' for exchange '%s': received '%s', current is '%s'", m.Exchange, m.Type, e.declared())
		}
		return nil
	}
	if m.Passive {
		x.mu.Unlock()
		return refuse(spec.NotFound, m, "no exchange '%s'", m.Exchange)
	}
	if strings.HasPrefix(m.Exchange, "amq.") {
		x.mu.Unlock()
		return refuse(spec.AccessRefused, m, "exchange name '%s' contains reserved prefix 'amq.*'", m.Exchange)
	}
	e = &exchange{name: m.Exchange, kind: kind, durable: m.Durable, autoDelete: m.AutoDelete, internal: m.Internal}
	if m.Type == kindDelayed {
		e.delayed = true
	}
	x.all[m.Exchange] = e
	x.mu.Unlock()
	if e.durable {
		v, _ := json.Marshal(definition{Kind: e.kind, Delayed: e.delayed, AutoDelete: e.autoDelete, Internal: e.internal})
		return x.eng.PutDefinition(ctx, defsNamespace, exchangeKey(e.name), v)
	}
	return nil
}

// remove deletes a declared exchange with its bindings, and the bindings
// of other exchanges to it.
func (x *exchanges) remove(ctx context.Context, m *spec.ExchangeDelete) error {
	x.opMu.Lock()
	defer x.opMu.Unlock()
	x.mu.Lock()
	e := x.all[m.Exchange]
	if e == nil {
		x.mu.Unlock()
		return nil // deleting what is not there: the outcome holds
	}
	if e.builtin {
		x.mu.Unlock()
		return refuse(spec.AccessRefused, m, "operation not permitted on the built-in exchange '%s'", m.Exchange)
	}
	if m.IfUnused && len(e.bindings) > 0 {
		x.mu.Unlock()
		return refuse(spec.PreconditionFailed, m, "exchange '%s' in use", m.Exchange)
	}
	delete(x.all, m.Exchange)
	own := e.bindings
	e.bindings = nil
	x.mu.Unlock()
	err := x.dropBindings(ctx, m.Exchange, own)
	x.dropWhereOp(func(b *binding) bool { return b.exchange == m.Exchange })
	if e.durable {
		err = errors.Join(err, x.eng.DeleteDefinition(ctx, defsNamespace, exchangeKey(e.name)))
	}
	return err
}

func (ch *channel) exchangeDeclare(m *spec.ExchangeDeclare) error {
	if err := ch.c.srv.ex.declare(context.Background(), m); err != nil {
		return asAMQPError(err, m)
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.ExchangeDeclareOk{})
	}
	return nil
}

func (ch *channel) exchangeDelete(m *spec.ExchangeDelete) error {
	if err := ch.c.srv.ex.remove(context.Background(), m); err != nil {
		return asAMQPError(err, m)
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.ExchangeDeleteOk{})
	}
	return nil
}

func (ch *channel) exchangeBind(m *spec.ExchangeBind) error {
	if m.Source == exchDefault || m.Destination == exchDefault {
		return refuse(spec.AccessRefused, m, "operation not permitted on the default exchange")
	}
	b := &binding{exchange: m.Destination, key: m.RoutingKey, args: m.Arguments}
	if err := ch.c.srv.ex.bind(context.Background(), ch.c, m.Source, b, true); err != nil {
		return asAMQPError(err, m)
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.ExchangeBindOk{})
	}
	return nil
}

func (ch *channel) exchangeUnbind(m *spec.ExchangeUnbind) error {
	if err := ch.c.srv.ex.unbind(context.Background(), m.Source, message.Destination{}, m.Destination, m.RoutingKey, m.Arguments); err != nil {
		return asAMQPError(err, m)
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.ExchangeUnbindOk{})
	}
	return nil
}

func (ch *channel) queueBind(m *spec.QueueBind) error {
	c := ch.c
	if m.Exchange == exchDefault {
		return refuse(spec.AccessRefused, m, "operation not permitted on the default exchange")
	}
	d := c.resolveQueue(m.Queue)
	if _, ok := c.queueInfo(d); !ok {
		return refuse(spec.NotFound, m, "no queue '%s'", m.Queue)
	}
	b := &binding{queue: m.Queue, dest: d, key: m.RoutingKey, args: m.Arguments}
	if d.Kind.IsTemporary() {
		b.owner = c
	}
	if m.Exchange == exchTopic && !c.allowed(engine.ActionSubscribe, message.Destination{Kind: message.Topic, Name: m.RoutingKey}) {
		return refuse(spec.AccessRefused, m, "access to topic '%s' refused for user '%s'", m.RoutingKey, c.identity.User)
	}
	if err := c.srv.ex.bind(context.Background(), c, m.Exchange, b, true); err != nil {
		return asAMQPError(err, m)
	}
	if !m.NoWait {
		c.method(ch.id, &spec.QueueBindOk{})
	}
	return nil
}

func (ch *channel) queueUnbind(m *spec.QueueUnbind) error {
	if err := ch.c.srv.ex.unbind(context.Background(), m.Exchange, ch.c.resolveQueue(m.Queue), "", m.RoutingKey, m.Arguments); err != nil {
		return asAMQPError(err, m)
	}
	ch.c.method(ch.id, &spec.QueueUnbindOk{})
	return nil
}
