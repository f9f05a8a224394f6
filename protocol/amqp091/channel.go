package amqp091

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// channel is one open channel. The reader goroutine owns everything but
// the delivery state: delivery goroutines (the engine listeners of the
// channel's consumers) take deliverMu to number a delivery and queue it
// for the writer in one step, so that delivery tags reach the client in
// order; mu guards the unacknowledged deliveries, which the reader's acks
// and the deliveries share. deliverMu also guards the gate a delivery
// passes first (channel.flow, and basic.qos with global=true): a delivery
// the gate holds is parked, and the channel's pump goroutine sends it when
// wake says the gate moved.
//
// Lock order: deliverMu, then mu.
type channel struct {
	c       *conn
	id      uint16
	closing bool // the server sent channel.close and waits for close-ok

	// Publishing: the message being assembled from its frames.
	pubSess *engine.Session
	prod    *engine.Producer
	pub     *spec.BasicPublish
	hdr     *spec.ContentHeader
	body    []byte

	confirm bool   // confirm.select
	seq     uint64 // the last publish's sequence number in confirm mode
	// confirms answers publishes in order (netserve.Confirmer, started on
	// the first); confirmsDone ends it with the channel.
	confirms     netserve.Confirmer[pendingConfirm]
	confirmsDone chan struct{}
	tx           *engine.Txn // tx.select: the open transaction

	prefetch  int // basic.qos for consumers made from now on
	consumers map[string]*consumer
	// closedConsumers were cancelled with deliveries unacknowledged:
	// their sessions stay open for the client's acks.
	closedConsumers []*consumer
	getSess         *engine.Session // basic.get's deliveries
	ctagSeq         uint64

	deliverMu sync.Mutex
	nextTag   uint64 // the last delivery tag given (under deliverMu)
	stopped   bool   // no more deliveries (under deliverMu)
	// The gate (under deliverMu).
	paused      bool          // channel.flow active=false: no deliveries
	globalLimit int           // basic.qos global=true: the channel's window; 0 none
	held        int           // acking consumers' deliveries not yet settled
	recoveries  uint64        // basic.recover count: older held deliveries are stale
	recovering  bool          // a basic.recover runs: the gate is shut
	wake        chan struct{} // closed and replaced when the gate may open
	parked      []*pending    // deliveries waiting for the gate, oldest first
	pumping     bool          // the pump goroutine runs (it sends parked deliveries)

	mu      sync.Mutex
	unacked map[uint64]unacked
	order   []uint64 // the tags of unacked, oldest first (some may be gone)
}

// unacked is a delivery the client has not acknowledged yet.
type unacked struct {
	sess    *engine.Session
	engTag  uint64
	counted bool // a consumer's, counted in held (not basic.get's)
}

func newChannel(c *conn, id uint16) (*channel, error) {
	sess, err := c.eng.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		return nil, err
	}
	prod, err := sess.CreateProducer(message.Destination{})
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	return &channel{c: c, id: id, pubSess: sess, prod: prod, prefetch: c.srv.opts.DefaultPrefetch,
		consumers: map[string]*consumer{}, unacked: map[uint64]unacked{}, wake: make(chan struct{})}, nil
}

// fail closes the channel from the server side with a soft error: its
// engine side is released at once, and the frames the client sends until
// its close-ok are dropped.
func (ch *channel) fail(e *amqpError) {
	ch.c.log.Debug("amqp091 channel closed by the server", slog.Int("channel", int(ch.id)),
		slog.Int("code", int(e.code)), slog.String("text", e.text))
	ch.release()
	ch.closing = true
	ch.c.method(ch.id, &spec.ChannelClose{ReplyCode: e.code, ReplyText: replyText(e.code, e.text),
		FailingClassID: e.classID, FailingMethodID: e.methodID})
}

// release ends the channel's engine side: deliveries stop, consumers
// close, unacknowledged messages go back to their queues (not as failed
// deliveries), an open transaction rolls back.
func (ch *channel) release() {
	ch.stop()
	for _, cs := range ch.consumers {
		ch.c.srv.releaseExclusive(cs)
		_ = cs.sess.Close()
		ch.c.consumers.Add(-1)
		ch.c.srv.consumerGone(cs.dest)
	}
	clear(ch.consumers)
	for _, cs := range ch.closedConsumers {
		_ = cs.sess.Close()
		ch.c.consumers.Add(-1)
	}
	ch.closedConsumers = nil
	if ch.getSess != nil {
		_ = ch.getSess.Close()
		ch.getSess = nil
	}
	if ch.tx != nil {
		ch.tx.Rollback(context.Background())
		ch.tx = nil
	}
	if ch.confirmsDone != nil {
		close(ch.confirmsDone)
		ch.confirmsDone = nil
	}
	_ = ch.pubSess.Close()
	ch.pub, ch.hdr, ch.body = nil, nil, nil
}

// stop ends the channel's deliveries: number queues nothing more, and
// deliveries the gate holds give up.
func (ch *channel) stop() {
	ch.deliverMu.Lock()
	ch.stopped = true
	ch.openGateLocked()
	ch.deliverMu.Unlock()
}

// openGateLocked wakes the deliveries waiting at the gate, to look again;
// under deliverMu.
func (ch *channel) openGateLocked() {
	close(ch.wake)
	ch.wake = make(chan struct{})
}

// setFlow answers channel.flow: with active=false the channel's consumers
// get nothing more until active=true (their deliveries wait in the engine
// consumers' windows). channel.flow-ok is queued under deliverMu, so no
// delivery follows it while the channel is paused.
func (ch *channel) setFlow(active bool) {
	ch.deliverMu.Lock()
	defer ch.deliverMu.Unlock()
	ch.paused = !active
	ch.openGateLocked()
	ch.c.send(outItem{ch: ch.id, m: &spec.ChannelFlowOk{Active: active}})
}

// setGlobalLimit sets the window the channel's acking consumers share
// (basic.qos global=true; 0: none).
func (ch *channel) setGlobalLimit(n int) {
	ch.deliverMu.Lock()
	ch.globalLimit = n
	ch.openGateLocked()
	ch.deliverMu.Unlock()
}

// unhold takes n settled deliveries off the channel's window.
func (ch *channel) unhold(n int) {
	if n == 0 {
		return
	}
	ch.deliverMu.Lock()
	ch.held -= n
	ch.openGateLocked()
	ch.deliverMu.Unlock()
}

// wakeGate wakes the deliveries waiting at the gate (a consumer was
// cancelled: its listener must return before the engine consumer closes).
func (ch *channel) wakeGate() {
	ch.deliverMu.Lock()
	ch.openGateLocked()
	ch.deliverMu.Unlock()
}

// handle carries out one method on the channel. A returned error closes
// the channel (soft) or the connection (hard).
func (ch *channel) handle(m spec.Method) error {
	if ch.pub != nil {
		return refuse(spec.UnexpectedFrame, m, "expected a content frame for basic.publish on channel %d, got %s", ch.id, m.Name())
	}
	switch m := m.(type) {
	case *spec.ChannelClose:
		ch.release()
		delete(ch.c.channels, ch.id)
		ch.c.method(ch.id, &spec.ChannelCloseOk{})
		return nil
	case *spec.ChannelCloseOk:
		return nil // a close-ok nobody asked for: ignored
	case *spec.ChannelFlow:
		ch.setFlow(m.Active)
		return nil
	case *spec.ChannelFlowOk:
		return nil
	case *spec.ChannelOpen:
		return refuse(spec.ChannelError, m, "second 'channel.open' seen on channel %d", ch.id)

	case *spec.ExchangeDeclare:
		return ch.exchangeDeclare(m)
	case *spec.ExchangeDelete:
		return ch.exchangeDelete(m)
	case *spec.ExchangeBind:
		return ch.exchangeBind(m)
	case *spec.ExchangeUnbind:
		return ch.exchangeUnbind(m)

	case *spec.QueueDeclare:
		return ch.queueDeclare(m)
	case *spec.QueueBind:
		return ch.queueBind(m)
	case *spec.QueueUnbind:
		return ch.queueUnbind(m)
	case *spec.QueuePurge:
		return ch.queuePurge(m)
	case *spec.QueueDelete:
		return ch.queueDelete(m)

	case *spec.BasicQos:
		return ch.qos(m)
	case *spec.BasicConsume:
		return ch.consume(m)
	case *spec.BasicCancel:
		return ch.cancel(m)
	case *spec.BasicPublish:
		if m.Immediate {
			// As RabbitMQ 3: a consumer-or-return guarantee the engine
			// cannot give at send time.
			return refuse(spec.NotImplemented, m, "immediate=true")
		}
		ch.pub = m
		return nil
	case *spec.BasicGet:
		return ch.get(m)
	case *spec.BasicAck:
		return ch.ack(m, m.DeliveryTag, m.Multiple)
	case *spec.BasicNack:
		return ch.settle(m, m.DeliveryTag, m.Multiple, m.Requeue)
	case *spec.BasicReject:
		return ch.settle(m, m.DeliveryTag, false, m.Requeue)
	case *spec.BasicRecover:
		if err := ch.recover(); err != nil {
			return err
		}
		ch.c.method(ch.id, &spec.BasicRecoverOk{})
		return nil
	case *spec.BasicRecoverAsync:
		return ch.recover()

	case *spec.ConfirmSelect:
		if ch.tx != nil {
			return refuse(spec.PreconditionFailed, m, "cannot switch from tx to confirm mode")
		}
		ch.confirm = true
		if !m.NoWait {
			ch.c.method(ch.id, &spec.ConfirmSelectOk{})
		}
		return nil
	case *spec.TxSelect:
		return ch.txSelect(m)
	case *spec.TxCommit:
		return ch.txCommit(m)
	case *spec.TxRollback:
		return ch.txRollback(m)
	}
	return refuse(spec.CommandInvalid, m, "%s is not a method a client sends", m.Name())
}

// content takes a content header or body frame of the message basic.publish
// began.
func (ch *channel) content(f spec.Frame) error {
	if ch.closing {
		return nil
	}
	if ch.pub == nil {
		return refuse(spec.UnexpectedFrame, nil, "content frame on channel %d without basic.publish before it", ch.id)
	}
	switch f.Type {
	case spec.FrameHeader:
		if ch.hdr != nil {
			return refuse(spec.UnexpectedFrame, nil, "second content header on channel %d", ch.id)
		}
		// The payload is the reader's until the next frame; the header
		// (its headers table above all) must outlive it.
		h, err := spec.DecodeContentHeader(append([]byte(nil), f.Payload...))
		if err != nil {
			return refuse(spec.FrameError, nil, "content header: %v", err)
		}
		if h.ClassID != spec.ClassBasic {
			return refuse(spec.FrameError, nil, "content header of class %d, not basic", h.ClassID)
		}
		if h.BodySize > ch.c.srv.opts.MaxMessageSize {
			pub := ch.pub
			ch.pub = nil
			ch.fail(refuse(spec.PreconditionFailed, pub, "message size %d is larger than max size %d", h.BodySize, ch.c.srv.opts.MaxMessageSize))
			return nil
		}
		ch.hdr = &h
		ch.body = make([]byte, 0, h.BodySize)
	case spec.FrameBody:
		if ch.hdr == nil {
			return refuse(spec.UnexpectedFrame, nil, "content body on channel %d before its header", ch.id)
		}
		if uint64(len(ch.body))+uint64(len(f.Payload)) > ch.hdr.BodySize {
			return refuse(spec.FrameError, nil, "content body longer than the body-size %d of its header", ch.hdr.BodySize)
		}
		ch.body = append(ch.body, f.Payload...)
	}
	if ch.hdr != nil && uint64(len(ch.body)) == ch.hdr.BodySize {
		pub, hdr, body := ch.pub, ch.hdr, ch.body
		ch.pub, ch.hdr, ch.body = nil, nil, nil
		if !ch.c.holdPublisher() {
			return nil
		}
		if err := ch.publish(pub, &hdr.Properties, body); err != nil {
			ae := asAMQPError(err, pub)
			if ae.hard() {
				return ae
			}
			ch.fail(ae)
		}
	}
	return nil
}
