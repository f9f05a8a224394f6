package amqp091

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp091/spec"
)

// publish routes one assembled message and sends it to every destination
// the exchange picks (a copy each). Unroutable with mandatory, it comes
// back in basic.return (312 NO_ROUTE). In confirm mode its sequence
// number is acknowledged once the broker vouches for every copy (durable
// or consumed), in publish order; a failed write is a basic.nack.
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
			ch.later(pendingConfirm{seq: ch.seq})
		}
		return nil
	}
	m, o, err := c.toMessage(props, body)
	if err != nil {
		return asAMQPError(err, pub)
	}
	ctx := context.Background()
	var confs []*engine.Confirmation
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
				ch.later(pendingConfirm{seq: ch.seq, confs: confs, failed: true})
				return nil
			}
			return err
		}
		if !conf.Ready() || ch.confirm {
			confs = append(confs, conf)
		}
	}
	if ch.confirm || len(confs) > 0 {
		ch.later(pendingConfirm{seq: ch.seq, confs: confs, quiet: !ch.confirm})
	}
	return nil
}

// ackBatch is the most publishes one basic.ack with multiple confirms
// while more are queued behind them.
const ackBatch = 256

// pendingConfirm is a publish whose confirmation the confirmer waits for.
type pendingConfirm struct {
	seq    uint64
	confs  []*engine.Confirmation
	failed bool // refused at once: a nack
	quiet  bool // not in confirm mode: only followed to its end
}

// confirmer is a channel's confirmation goroutine: it waits for each
// publish's confirmations in order and answers with basic.ack (multiple
// when several are confirmed together) or basic.nack.
type confirmer struct {
	queue chan pendingConfirm
	quit  chan struct{}
	once  sync.Once
}

func (cf *confirmer) stop() { cf.once.Do(func() { close(cf.quit) }) }

// later queues pc for the channel's confirmer, starting it on first use;
// the reader waits while MaxUnconfirmed are queued.
func (ch *channel) later(pc pendingConfirm) {
	if ch.confirms == nil {
		ch.confirms = &confirmer{queue: make(chan pendingConfirm, ch.c.srv.opts.MaxUnconfirmed), quit: make(chan struct{})}
		go ch.confirmLoop(ch.confirms)
	}
	select {
	case ch.confirms.queue <- pc:
	case <-ch.c.done:
	}
}

func (ch *channel) confirmLoop(cf *confirmer) {
	c := ch.c
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-cf.quit:
		case <-c.done:
		}
		cancel()
	}()
	var acked uint64 // the last seq acknowledged
	var ready uint64 // the last seq confirmed, not yet acknowledged
	flush := func() {
		if ready > acked {
			c.method(ch.id, &spec.BasicAck{DeliveryTag: ready, Multiple: ready > acked+1})
			acked = ready
		}
	}
	for {
		var pc pendingConfirm
		select {
		case pc = <-cf.queue:
		case <-ctx.Done():
			// What is still queued is followed to its end in the
			// background (a failed write takes its message back).
			for {
				select {
				case pc := <-cf.queue:
					for _, conf := range pc.confs {
						_ = conf.Wait(ctx)
					}
				default:
					return
				}
			}
		}
		failed := pc.failed
		if !pc.quiet && !allReady(pc.confs) {
			flush() // what is confirmed already does not wait for this one's write
		}
		for _, conf := range pc.confs {
			if err := conf.Wait(ctx); err != nil {
				if ctx.Err() != nil {
					break
				}
				c.log.Warn("amqp091 publish not confirmed", slog.Uint64("seq", pc.seq), slog.Any("err", err))
				failed = true
			}
		}
		if pc.quiet || ctx.Err() != nil {
			continue
		}
		if failed {
			flush()
			c.method(ch.id, &spec.BasicNack{DeliveryTag: pc.seq})
			acked = pc.seq
			continue
		}
		ready = pc.seq
		// Acknowledge what is confirmed once nothing more is queued (or
		// the next publish waits for its write, above), and at least
		// every ackBatch publishes of a long pipeline.
		if len(cf.queue) == 0 || ready-acked >= ackBatch {
			flush()
		}
	}
}

// allReady reports whether every confirmation is in already.
func allReady(confs []*engine.Confirmation) bool {
	for _, c := range confs {
		if !c.Ready() {
			return false
		}
	}
	return true
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
