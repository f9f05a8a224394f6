package amqp091

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// consumer is one basic.consume: an engine session with one consumer, so
// that every consumer has its own prefetch window (per_consumer_qos) and
// its acknowledgements are its own.
type consumer struct {
	ch        *channel
	tag       string
	noAck     bool
	noLocal   bool // skips what its own connection published (consumer.local)
	dest      message.Destination
	sess      *engine.Session
	cons      *engine.Consumer
	cancelled atomic.Bool // the server cancelled it (its queue was deleted)
	parked    int         // its deliveries the channel's pump holds (under ch.deliverMu)
}

// noAckPrefetch bounds the window of a no-ack consumer: the deliveries
// dispatched to it and not yet written to its socket.
const noAckPrefetch = 64

// Consumer arguments (docs/amqp091.md).
const (
	argSelector        = "x-selector"
	argRedeliveryDelay = "x-redelivery-delay"
)

// qos answers basic.qos as RabbitMQ does: global=false sets the window of
// each consumer made from now on; global=true the window all the
// channel's acking consumers share, now ones included (0: none), which the
// gate holds (deliver).
func (ch *channel) qos(m *spec.BasicQos) error {
	n := int(m.PrefetchCount)
	if m.Global {
		ch.setGlobalLimit(min(n, ch.c.srv.opts.MaxPrefetch))
	} else {
		if n == 0 || n > ch.c.srv.opts.MaxPrefetch {
			n = ch.c.srv.opts.MaxPrefetch
		}
		ch.prefetch = n
	}
	ch.c.method(ch.id, &spec.BasicQosOk{})
	return nil
}

func (ch *channel) consume(m *spec.BasicConsume) error {
	c := ch.c
	d := c.resolveQueue(m.Queue)
	info, ok := c.queueInfo(d)
	if !ok {
		return refuse(spec.NotFound, m, "no queue '%s'", m.Queue)
	}
	tag := m.ConsumerTag
	if tag == "" {
		ch.ctagSeq++
		tag = "amq.ctag-" + strconv.FormatUint(c.eng.ID(), 10) + "." + strconv.Itoa(int(ch.id)) + "." + strconv.FormatUint(ch.ctagSeq, 10)
	}
	if _, dup := ch.consumers[tag]; dup {
		return refuse(spec.NotAllowed, m, "attempt to reuse consumer tag '%s'", tag)
	}
	if int(c.consumers.Load()) >= c.srv.opts.MaxConsumers {
		return refuse(spec.NotAllowed, m, "too many consumers on this connection (limit %d)", c.srv.opts.MaxConsumers)
	}
	opts := engine.ConsumerOptions{Prefetch: ch.prefetch, CreditMode: engine.CreditOnAck, NoLocal: m.NoLocal}
	if m.NoAck {
		opts.Prefetch = noAckPrefetch
	} else if g := ch.limit(); g > 0 && g < opts.Prefetch {
		// What the engine dispatches beyond the channel's window would
		// only wait at the gate.
		opts.Prefetch = g
	}
	if v, ok := m.Arguments[argSelector]; ok {
		s, ok := v.(string)
		if !ok {
			return refuse(spec.PreconditionFailed, m, "consumer argument %s must be a string, not %T", argSelector, v)
		}
		opts.Selector = s
	}
	sess, err := c.eng.CreateSession(engine.IndividualAcknowledge)
	if err != nil {
		return err
	}
	if v, ok := m.Arguments[argRedeliveryDelay]; ok {
		ms, ok := intArg(v)
		if !ok || ms < 0 {
			_ = sess.Close()
			return refuse(spec.PreconditionFailed, m, "consumer argument %s must be a non-negative integer (ms)", argRedeliveryDelay)
		}
		sess.SetRedeliveryDelay(time.Duration(ms) * time.Millisecond)
	}
	cs := &consumer{ch: ch, tag: tag, noAck: m.NoAck, noLocal: m.NoLocal, dest: d, sess: sess}
	if !c.srv.claimExclusive(cs, m.Exclusive, info.Consumers) {
		_ = sess.Close()
		return refuse(spec.AccessRefused, m, "queue '%s' in exclusive use", m.Queue)
	}
	cons, err := sess.CreateConsumer(d, opts)
	if err != nil {
		c.srv.releaseExclusive(cs)
		_ = sess.Close()
		if engine.CodeOf(err) == engine.CodeInvalidSelector {
			return refuse(spec.PreconditionFailed, m, "%s: %v", argSelector, err)
		}
		return err
	}
	cs.cons = cons
	ch.consumers[tag] = cs
	c.consumers.Add(1)
	sess.SetExceptionListener(func(err error) { cs.serverCancel(err) })
	return ch.startConsumer(cs, !m.NoWait)
}

// startConsumer starts cs's deliveries, after its consume-ok (when ok):
// under deliverMu, so that no delivery is queued before the consume-ok,
// and the listener is set before the client, told consume-ok, can act on
// it (the engine's SetListener must not meet a close of the queue).
func (ch *channel) startConsumer(cs *consumer, ok bool) error {
	ch.deliverMu.Lock()
	defer ch.deliverMu.Unlock()
	if ok {
		ch.c.send(outItem{ch: ch.id, m: &spec.BasicConsumeOk{ConsumerTag: cs.tag}})
	}
	return cs.cons.SetListener(cs.deliver)
}

// serverCancel tells the client that the consumer ended without its asking
// (the queue was deleted): basic.cancel, as consumer_cancel_notify clients
// expect.
func (cs *consumer) serverCancel(err error) {
	if cs.cancelled.Swap(true) {
		return
	}
	cs.ch.wakeGate()
	cs.ch.c.srv.releaseExclusive(cs)
	cs.ch.c.log.Debug("amqp091 consumer cancelled by the server", slog.String("tag", cs.tag), slog.Any("err", err))
	cs.ch.number(outItem{ch: cs.ch.id, m: &spec.BasicCancel{ConsumerTag: cs.tag, NoWait: true}}, nil, nil)
}

// deliver is the engine listener of a consumer: it numbers the delivery
// on its channel and queues it for the writer, waiting while the writer is
// behind (its queue, or the connection's output budget, is full). While
// the channel's gate is shut for the consumer (channel.flow, basic.qos
// global=true) the delivery is parked instead, and the channel's pump
// sends it once the gate opens: an engine listener must not wait for the
// client, since the engine waits for its listeners when it closes a
// consumer (a deleted queue, a closed connection).
func (cs *consumer) deliver(d message.Delivery) {
	ch, c := cs.ch, cs.ch.c
	if cs.noLocal && c.local(d.Msg) {
		// JMS noLocal: what the consumer's own connection published is
		// not delivered to it. It is consumed, as a noLocal subscriber's
		// subscription never holds it.
		if _, err := cs.sess.AcknowledgeConfirm(d.Tag); err != nil {
			c.log.Warn("amqp091 no-local: own message not dropped", slog.String("tag", cs.tag), slog.Any("err", err))
		}
		return
	}
	props, body := c.toProperties(d)
	exchange, key := c.origin(d.Msg.Destination)
	p := &pending{cs: cs, engTag: d.Tag, size: int64(len(body) + 128 + len(key)),
		dm: &spec.BasicDeliver{ConsumerTag: cs.tag, Redelivered: d.Redelivered, Exchange: exchange, RoutingKey: key}}
	p.it = outItem{ch: ch.id, props: props, body: body, size: p.size, m: p.dm}
	if cs.noAck {
		p.it.auto, p.it.engTag = cs, d.Tag
	}
	ch.deliverMu.Lock()
	p.gen = ch.recoveries
	w, ok := ch.gateLocked(p)
	switch {
	case !ok:
		ch.deliverMu.Unlock()
		p.giveBack()
		return
	case w != nil || cs.parked > 0: // behind the gate, or behind its own parked deliveries
		ch.parkLocked(p, false)
		ch.deliverMu.Unlock()
		return
	}
	ch.deliverMu.Unlock()
	ch.send(p, false)
}

// pending is a consumer's delivery on its way to the writer.
type pending struct {
	cs     *consumer
	engTag uint64
	size   int64 // of the output budget
	gen    uint64
	dm     *spec.BasicDeliver
	it     outItem
}

// giveBack returns a delivery the gate turned away to its queue, as never
// delivered. (After a basic.recover the session has most likely taken it
// back already, and this fails, harmlessly; a closing session gives it
// back itself.)
func (p *pending) giveBack() {
	_ = p.cs.sess.Settle(context.Background(), p.engTag, engine.Released)
}

// gateLocked says whether p may go now: ok false when it never will (the
// channel stopped, its consumer was cancelled, or a basic.recover since it
// came took it back); a channel to wait on when not now. Under deliverMu.
func (ch *channel) gateLocked(p *pending) (wait <-chan struct{}, ok bool) {
	cs := p.cs
	if ch.stopped || cs.cancelled.Load() || (!cs.noAck && ch.recoveries != p.gen) {
		return nil, false
	}
	if ch.paused || ch.recovering || (!cs.noAck && ch.globalLimit > 0 && ch.held >= ch.globalLimit) {
		return ch.wake, true
	}
	return nil, true
}

// send takes p's output budget, then numbers p and queues it for the
// writer if the gate is still open (checked again under deliverMu, which
// numbering holds); if it shut meanwhile p is parked (first, when the pump
// had taken it from the front of the parked deliveries). It reports false
// when the connection ends first.
func (ch *channel) send(p *pending, fromPump bool) bool {
	c := ch.c
	if !c.budget.Take(p.size, c.done) {
		return false // the connection ends: the session gives the message back
	}
	ch.deliverMu.Lock()
	w, ok := ch.gateLocked(p)
	if !ok || w != nil {
		if fromPump {
			p.cs.parked--
		}
		if ok {
			ch.parkLocked(p, fromPump)
		}
		ch.deliverMu.Unlock()
		c.budget.Give(p.size)
		if !ok {
			p.giveBack()
		}
		return true
	}
	if fromPump {
		p.cs.parked--
	}
	ch.nextTag++
	p.dm.DeliveryTag = ch.nextTag
	if !p.cs.noAck {
		ch.held++
		ch.remember(ch.nextTag, unacked{sess: p.cs.sess, engTag: p.engTag, counted: true})
	}
	sent := c.send(p.it)
	ch.deliverMu.Unlock()
	if !sent {
		c.budget.Give(p.size)
	}
	return true
}

// parkLocked parks p (at the front with first) and starts the channel's
// pump if it is not running. Under deliverMu.
func (ch *channel) parkLocked(p *pending, first bool) {
	p.cs.parked++
	if first {
		ch.parked = append([]*pending{p}, ch.parked...)
	} else {
		ch.parked = append(ch.parked, p)
	}
	if !ch.pumping {
		ch.pumping = true
		go ch.pump()
	}
}

// pump sends the parked deliveries whose gate is open, oldest first (a
// consumer's deliveries keep their order), and waits for the gate to move
// when none is; it ends when nothing is parked, or the channel or the
// connection ends.
func (ch *channel) pump() {
	c := ch.c
	for {
		ch.deliverMu.Lock()
		var next *pending
		var dropped []*pending
		shut := map[*consumer]bool{}
		keep := ch.parked[:0]
		for _, p := range ch.parked {
			if next != nil || shut[p.cs] {
				keep = append(keep, p)
				continue
			}
			switch w, ok := ch.gateLocked(p); {
			case !ok:
				p.cs.parked--
				dropped = append(dropped, p)
			case w != nil:
				shut[p.cs] = true
				keep = append(keep, p)
			default:
				next = p // p.cs.parked stays counted until send
			}
		}
		clear(ch.parked[len(keep):])
		ch.parked = keep
		if next == nil && len(dropped) == 0 {
			if len(ch.parked) == 0 || ch.stopped {
				ch.pumping = false
				ch.deliverMu.Unlock()
				return
			}
			w := ch.wake
			ch.deliverMu.Unlock()
			select {
			case <-w:
				continue
			case <-c.done:
				return // the sessions give the messages back
			}
		}
		ch.deliverMu.Unlock()
		for _, p := range dropped {
			p.giveBack()
		}
		if next != nil && !ch.send(next, true) {
			return
		}
	}
}

// limit returns the channel's shared window (basic.qos global=true), or 0.
func (ch *channel) limit() int {
	ch.deliverMu.Lock()
	defer ch.deliverMu.Unlock()
	return ch.globalLimit
}

// number queues it for the writer in delivery-tag order: with setTag it
// takes the channel's next tag (setTag puts it in the method, and may
// refuse: the consumer was cancelled meanwhile), and u, when not nil, is
// remembered as unacknowledged under it. It reports false, queueing
// nothing, when the channel has stopped, setTag refused, or the
// connection is closing.
func (ch *channel) number(it outItem, setTag func(tag uint64) bool, u *unacked) bool {
	ch.deliverMu.Lock()
	defer ch.deliverMu.Unlock()
	if ch.stopped {
		return false
	}
	if setTag != nil {
		if !setTag(ch.nextTag + 1) {
			return false
		}
		ch.nextTag++
		if u != nil {
			ch.remember(ch.nextTag, *u)
		}
	}
	return ch.c.send(it)
}

// remember records an unacknowledged delivery.
func (ch *channel) remember(tag uint64, u unacked) {
	ch.mu.Lock()
	ch.unacked[tag] = u
	ch.order = append(ch.order, tag)
	ch.mu.Unlock()
}

// take removes and returns the deliveries an ack, nack or reject names:
// tag alone, or with multiple every one up to tag (0: all). An unknown
// tag is a channel error (406), as RabbitMQ has it.
func (ch *channel) take(m spec.Method, tag uint64, multiple bool) ([]unacked, error) {
	us, err := ch.takeLocked(m, tag, multiple)
	n := 0
	for _, u := range us {
		if u.counted {
			n++
		}
	}
	ch.unhold(n)
	return us, err
}

func (ch *channel) takeLocked(m spec.Method, tag uint64, multiple bool) ([]unacked, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !multiple {
		u, ok := ch.unacked[tag]
		if !ok {
			return nil, refuse(spec.PreconditionFailed, m, "unknown delivery tag %d", tag)
		}
		delete(ch.unacked, tag)
		ch.compactLocked()
		return []unacked{u}, nil
	}
	var out []unacked
	keep := ch.order[:0]
	for _, t := range ch.order {
		u, ok := ch.unacked[t]
		if !ok {
			continue
		}
		if tag == 0 || t <= tag {
			out = append(out, u)
			delete(ch.unacked, t)
			continue
		}
		keep = append(keep, t)
	}
	clear(ch.order[len(keep):])
	ch.order = keep
	if len(out) == 0 && tag != 0 {
		return nil, refuse(spec.PreconditionFailed, m, "unknown delivery tag %d", tag)
	}
	return out, nil
}

// compactLocked drops the tags of settled deliveries from the front of
// order, and rebuilds it when most of it is settled.
func (ch *channel) compactLocked() {
	i := 0
	for i < len(ch.order) {
		if _, ok := ch.unacked[ch.order[i]]; ok {
			break
		}
		i++
	}
	ch.order = ch.order[i:]
	if len(ch.order) > 64 && len(ch.order) > 2*len(ch.unacked) {
		keep := make([]uint64, 0, len(ch.unacked))
		for _, t := range ch.order {
			if _, ok := ch.unacked[t]; ok {
				keep = append(keep, t)
			}
		}
		ch.order = keep
	}
}

func (ch *channel) ack(m spec.Method, tag uint64, multiple bool) error {
	us, err := ch.take(m, tag, multiple)
	if err != nil {
		return err
	}
	for _, u := range us {
		if ch.tx != nil {
			err = u.sess.AcknowledgeIn(ch.tx, u.engTag)
		} else {
			var conf *engine.Confirmation
			if conf, err = u.sess.AcknowledgeConfirm(u.engTag); err == nil && conf.Ready() {
				err = conf.Wait(ch.c.ctx)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// settle ends deliveries by basic.nack or basic.reject: with requeue a
// failed delivery (the count stands; redelivery delay, redelivery limit
// and error destination apply, as a STOMP NACK), without it undeliverable
// now (to the error destination, or dropped when there is none).
func (ch *channel) settle(m spec.Method, tag uint64, multiple, requeue bool) error {
	us, err := ch.take(m, tag, multiple)
	if err != nil {
		return err
	}
	outcome := engine.Failed
	if !requeue {
		outcome = engine.Rejected
	}
	for _, u := range us {
		if _, err := u.sess.SettleConfirm(u.engTag, outcome); err != nil {
			return err
		}
	}
	return nil
}

// recover redelivers every unacknowledged delivery of the channel
// (basic.recover; requeue=false is not told apart: the messages go back
// to their queues, and the redelivered flag and count say so).
//
// The sessions of every acking consumer are recovered, so that a delivery
// waiting at the gate goes back too (and the gate drops it: recoveries).
// The gate is shut meanwhile: a delivery that came during the recovery
// may be one the sessions took back, so it is given back too.
func (ch *channel) recover() error {
	ch.deliverMu.Lock()
	ch.recoveries++
	ch.recovering = true
	ch.deliverMu.Unlock()
	ch.mu.Lock()
	sessions := map[*engine.Session]bool{}
	n := 0
	for _, u := range ch.unacked {
		sessions[u.sess] = true
		if u.counted {
			n++
		}
	}
	clear(ch.unacked)
	ch.order = ch.order[:0]
	ch.mu.Unlock()
	ch.unhold(n)
	for _, cs := range ch.consumers {
		if !cs.noAck {
			sessions[cs.sess] = true
		}
	}
	defer func() {
		ch.deliverMu.Lock()
		ch.recoveries++
		ch.recovering = false
		ch.openGateLocked()
		ch.deliverMu.Unlock()
	}()
	for s := range sessions {
		if err := s.Recover(context.Background()); err != nil {
			return err
		}
	}
	return nil
}

func (ch *channel) cancel(m *spec.BasicCancel) error {
	if cs := ch.consumers[m.ConsumerTag]; cs != nil {
		ch.dropConsumer(m.ConsumerTag, cs)
	}
	if !m.NoWait {
		ch.c.method(ch.id, &spec.BasicCancelOk{ConsumerTag: m.ConsumerTag})
	}
	return nil
}

// dropConsumer ends a consumer: no more deliveries; for a no-ack consumer
// the deliveries already queued are written (and acknowledged) before its
// session closes, and a consumer's unacknowledged deliveries go back to
// the queue when its session closes... after the client's acks of them,
// which is why an acking consumer's session stays open until the channel
// closes.
func (ch *channel) dropConsumer(tag string, cs *consumer) {
	delete(ch.consumers, tag)
	cs.cancelled.Store(true)
	ch.wakeGate()
	ch.c.srv.releaseExclusive(cs)
	_ = cs.cons.Close()
	defer ch.c.srv.consumerGone(cs.dest)
	if cs.noAck {
		ch.c.flushWrites()
		_ = cs.sess.Close()
		ch.c.consumers.Add(-1)
		return
	}
	ch.closedConsumers = append(ch.closedConsumers, cs)
	ch.sweepClosed()
}

// sweepClosed closes the sessions of cancelled consumers that have no
// unacknowledged delivery left.
func (ch *channel) sweepClosed() {
	ch.mu.Lock()
	busy := map[*engine.Session]bool{}
	for _, u := range ch.unacked {
		busy[u.sess] = true
	}
	ch.mu.Unlock()
	keep := ch.closedConsumers[:0]
	for _, cs := range ch.closedConsumers {
		if busy[cs.sess] {
			keep = append(keep, cs)
			continue
		}
		_ = cs.sess.Close()
		ch.c.consumers.Add(-1)
	}
	clear(ch.closedConsumers[len(keep):])
	ch.closedConsumers = keep
}

// flushWrites waits until everything queued for the writer before it has
// been written (or the connection ends, or a few seconds pass).
func (c *conn) flushWrites() {
	done := make(chan struct{})
	if c.send(outItem{done: done}) {
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-done:
		case <-c.done:
		case <-t.C:
		}
	}
}

// get answers basic.get: one message, if the queue has one ready now.
func (ch *channel) get(m *spec.BasicGet) error {
	c := ch.c
	d := c.resolveQueue(m.Queue)
	info, ok := c.queueInfo(d)
	if !ok {
		return refuse(spec.NotFound, m, "no queue '%s'", m.Queue)
	}
	if ch.getSess == nil {
		s, err := c.eng.CreateSession(engine.IndividualAcknowledge)
		if err != nil {
			return err
		}
		ch.getSess = s
	}
	cons, err := ch.getSess.CreateConsumer(d, engine.ConsumerOptions{CreditMode: engine.CreditManual})
	if err != nil {
		return err
	}
	cons.Flow(1)
	wait := time.Millisecond
	if info.Ready > 0 {
		wait = 200 * time.Millisecond // a paged message is read back first
	}
	dl, got, err := cons.ReceiveTimeout(wait)
	_ = cons.Close()
	if err != nil {
		return err
	}
	if !got {
		c.method(ch.id, &spec.BasicGetEmpty{})
		return nil
	}
	props, body := c.toProperties(dl)
	exchange, key := c.origin(dl.Msg.Destination)
	left := int64(0)
	if after, ok := c.queueInfo(d); ok {
		left = max(int64(after.Ready), 0)
	}
	gm := &spec.BasicGetOk{Redelivered: dl.Redelivered, Exchange: exchange, RoutingKey: key, MessageCount: uint32(min(left, 1<<32-1))}
	var u *unacked
	if m.NoAck {
		// Acknowledged now; its delete is committed with other writes.
		if _, err := ch.getSess.AcknowledgeConfirm(dl.Tag); err != nil {
			c.log.Warn("amqp091 basic.get: no-ack acknowledgement failed", slog.Any("err", err))
		}
	} else {
		u = &unacked{sess: ch.getSess, engTag: dl.Tag}
	}
	ch.number(outItem{ch: ch.id, props: props, body: body, m: gm}, func(tag uint64) bool { gm.DeliveryTag = tag; return true }, u)
	return nil
}

// intArg reads an integer argument of any integer type.
func intArg(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case uint8:
		return int64(n), true
	case int16:
		return int64(n), true
	case uint16:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}
