package amqp091

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// publish routes one assembled message and sends it to every destination
// the exchange picks (a copy each). Unroutable with mandatory, it comes
// back in basic.return (312 NO_ROUTE). In confirm mode its sequence
// number is acknowledged once the broker vouches for every copy (durable
// or consumed), in publish order; a failed write is a basic.nack, and a
// write whose outcome is unknown (store.ErrIndeterminate) closes the
// connection with 541 INTERNAL_ERROR and the reason.
func (ch *channel) publish(pub *spec.BasicPublish, props *spec.BasicProperties, body []byte) error {
	c := ch.c
	if ch.confirm {
		ch.seq++
	}
	dests, err := c.srv.ex.route(c, pub.Exchange, pub.RoutingKey, props.Headers)
	if err != nil {
		return asAMQPError(err, pub)
	}
	for _, d := range dests {
		if !c.allowed(engine.ActionSend, d) {
			return refuse(spec.AccessRefused, pub, "access to %s refused for user '%s'", d, c.identity.User)
		}
	}
	if len(dests) == 0 {
		if pub.Mandatory {
			c.send(outItem{ch: ch.id, props: props, body: body,
				m: &spec.BasicReturn{ReplyCode: spec.NoRoute, ReplyText: "NO_ROUTE", Exchange: pub.Exchange, RoutingKey: pub.RoutingKey}})
		}
		if ch.confirm {
			ch.later(pendingConfirm{seq: ch.seq}, nil)
		}
		return nil
	}
	m, o, err := c.toMessage(props, body)
	if err != nil {
		return asAMQPError(err, pub)
	}
	ctx := context.Background()
	var confs confirmations
	for i, d := range dests {
		mm := m
		if i < len(dests)-1 {
			mm = m.Clone() // the engine takes ownership of each copy
		}
		if ch.tx != nil {
			if err := ch.prod.SendIn(ctx, ch.tx, d, mm, o); err != nil {
				return err
			}
			continue
		}
		conf, err := ch.prod.SendToAsync(ctx, d, mm, o)
		if err != nil {
			if ch.confirm && engine.CodeOf(err) == engine.CodeResourceAllocation {
				// Over quota: refused, not a protocol fault. The client
				// hears it as a nack and may try again.
				ch.later(pendingConfirm{seq: ch.seq, failed: true}, confs)
				return nil
			}
			return err
		}
		if !conf.Ready() || ch.confirm {
			confs = append(confs, conf)
		}
	}
	if ch.confirm || len(confs) > 0 {
		ch.later(pendingConfirm{seq: ch.seq, quiet: !ch.confirm}, confs)
	}
	return nil
}

// ackBatch is the most publishes one basic.ack with multiple confirms
// while more are queued behind them.
const ackBatch = 256

// pendingConfirm is a publish whose confirmation the channel's confirmer
// (netserve.Confirmer, shared with STOMP and AMQP 1.0) waits for.
type pendingConfirm struct {
	seq    uint64
	failed bool // refused at once: a nack
	quiet  bool // not in confirm mode: only followed to its end
}

// confirmations are the engine's confirmations of one publish, one per
// destination it was routed to: a netserve.Waiter that is ready when all
// are, and fails when any does.
type confirmations []*engine.Confirmation

// Ready reports whether every confirmation is in already.
func (cs confirmations) Ready() bool {
	for _, c := range cs {
		if !c.Ready() {
			return false
		}
	}
	return true
}

// Wait waits for every confirmation and returns the first failure.
func (cs confirmations) Wait(ctx context.Context) error {
	var first error
	for _, c := range cs {
		if err := c.Wait(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// confirmAnswers is a channel's side of its confirmer: it answers each
// publish in order, basic.ack with multiple for a run of confirmed ones
// (sent on Flush, or every ackBatch), basic.nack for a failed one. Its
// methods run on the confirmer goroutine only.
type confirmAnswers struct {
	ch    *channel
	acked uint64 // the last seq answered
	ready uint64 // the last seq confirmed, not yet answered
}

// Confirmed records pc's outcome.
func (a *confirmAnswers) Confirmed(pc pendingConfirm, err error) {
	c := a.ch.c
	if err != nil {
		c.log.Warn("amqp091 publish not confirmed", slog.Uint64("seq", pc.seq), slog.Any("err", err))
	}
	if pc.quiet {
		return
	}
	if errors.Is(err, store.ErrIndeterminate) {
		// The outcome is unknown (the engine is fenced): a nack would say
		// the broker did not take the message and invite a second copy.
		// The connection closes instead, saying why; the client holds the
		// publish unconfirmed, as after a lost connection.
		a.Flush()
		c.closeConnection(refuse(spec.InternalError, nil, "%v", err))
		return
	}
	if err != nil || pc.failed {
		a.Flush()
		c.method(a.ch.id, &spec.BasicNack{DeliveryTag: pc.seq})
		a.acked = pc.seq
		return
	}
	a.ready = pc.seq
	if a.ready-a.acked >= ackBatch {
		a.Flush() // a long pipeline hears of its progress
	}
}

// Flush sends one basic.ack for the run of confirmed publishes.
func (a *confirmAnswers) Flush() {
	if a.ready > a.acked {
		a.ch.c.method(a.ch.id, &spec.BasicAck{DeliveryTag: a.ready, Multiple: a.ready > a.acked+1})
		a.acked = a.ready
	}
}

// later queues pc, waiting for confs, for the channel's confirmer,
// starting it on first use; the reader waits while MaxUnconfirmed are
// queued.
func (ch *channel) later(pc pendingConfirm, confs confirmations) {
	if ch.confirmsDone == nil {
		ch.confirmsDone = make(chan struct{})
		ch.confirms.Start(ch.confirmsDone, ch.c.srv.opts.MaxUnconfirmed, &confirmAnswers{ch: ch})
	}
	ch.confirms.Later(confs, pc)
}

func (ch *channel) txSelect(m *spec.TxSelect) error {
	if ch.confirm {
		return refuse(spec.PreconditionFailed, m, "cannot switch from confirm to tx mode")
	}
	if ch.tx == nil {
		tx, err := ch.c.eng.BeginTxn()
		if err != nil {
			if engine.CodeOf(err) == engine.CodeResourceAllocation {
				return refuse(spec.NotAllowed, m, "too many transactions on this connection (limit %d)", ch.c.srv.opts.MaxTransactions)
			}
			return err
		}
		ch.tx = tx
	}
	ch.c.method(ch.id, &spec.TxSelectOk{})
	return nil
}

// txCommit commits the channel's transaction, all or nothing, and opens
// the next one (a 0-9-1 channel in tx mode is always in a transaction).
func (ch *channel) txCommit(m *spec.TxCommit) error {
	if ch.tx == nil {
		return refuse(spec.PreconditionFailed, m, "channel is not transactional")
	}
	err := ch.tx.Commit(context.Background())
	if next, berr := ch.c.eng.BeginTxn(); berr == nil {
		ch.tx = next
	} else {
		ch.tx = nil
		if err == nil {
			err = berr
		}
	}
	if err != nil {
		return refuse(spec.PreconditionFailed, m, "%v", err)
	}
	ch.c.method(ch.id, &spec.TxCommitOk{})
	return nil
}

// txRollback discards the transaction's publishes; the acknowledgements
// made in it are undone, and their messages are redelivered (the engine's
// rollback; RabbitMQ leaves them unacknowledged instead).
func (ch *channel) txRollback(m *spec.TxRollback) error {
	if ch.tx == nil {
		return refuse(spec.PreconditionFailed, m, "channel is not transactional")
	}
	ch.tx.Rollback(context.Background())
	next, err := ch.c.eng.BeginTxn()
	if err != nil {
		ch.tx = nil
		return err
	}
	ch.tx = next
	ch.c.method(ch.id, &spec.TxRollbackOk{})
	return nil
}
