package amqp

import (
	"context"
	"log/slog"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/amqp/types"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
)

// Pipelined sends.
//
// The reader hands each incoming message to the engine with SendToAsync,
// which keeps the messages in arrival order, and goes on reading: a
// persistent message's write commits in the background, with those of
// other transfers. The
// confirmer goroutine waits for the engine to vouch for each message, in
// arrival order, and settles the transfers, a run of accepted deliveries
// of one link in one disposition. So a producer with a credit window keeps
// a window of persistent messages in flight, as with non-persistent ones,
// and the broker settles each only once it is stored (or consumed).

// confirmQueue bounds the transfers waiting for their confirmation per
// connection; the reader waits when it is full.
const confirmQueue = 4096

// maxConfirmRun bounds the deliveries one disposition settles.
const maxConfirmRun = 1024

// pendingConfirm is an accepted transfer whose message the engine has yet
// to vouch for.
type pendingConfirm struct {
	l       *link
	id      uint32
	settled bool // the client sent it settled: nothing to answer
	conf    *engine.Confirmation
	// out: an unsettled accepted of delivery id sent to the client, with
	// its engine tag and the client's state, rather than a transfer; the
	// server settles it once its acknowledgement is durable.
	out   bool
	tag   uint64
	state types.DeliveryState
}

// confirmLater queues pc for the confirmer, starting it on first use.
func (c *conn) confirmLater(pc pendingConfirm) {
	c.confirmOnce.Do(func() {
		c.confirms = make(chan pendingConfirm, confirmQueue)
		go c.confirmLoop()
	})
	c.unconfirmed.Add(1)
	select {
	case c.confirms <- pc:
	case <-c.done:
	}
}

// confirmNow reports whether the reader should wait for a confirmation
// itself rather than hand it to the confirmer: when nothing is queued for
// the confirmer and nothing more has arrived to read, the client is most
// likely waiting for this very settlement, and the hand-off would only add
// a goroutine switch to its round trip.
func (c *conn) confirmNow() bool {
	return c.unconfirmed.Load() == 0 && c.rd.Buffered() == 0
}

// confirmLoop waits for each queued confirmation in turn and sends the
// dispositions. It ends with the connection.
func (c *conn) confirmLoop() {
	ctx, cancel := netserve.UntilClosed(c.done)
	defer cancel()
	var run confirmRun
	for {
		var pc pendingConfirm
		select {
		case pc = <-c.confirms:
		case <-c.done:
			c.abandonConfirms(ctx)
			return
		}
		if !run.wait(ctx, c, pc) {
			c.abandonConfirms(ctx)
			return
		}
		// Take what else is queued; settle what is ready as one run and
		// wait for the rest in order.
		for more := true; more; {
			select {
			case pc = <-c.confirms:
				if !pc.conf.Ready() {
					run.flush(c)
				}
				if !run.wait(ctx, c, pc) {
					c.abandonConfirms(ctx)
					return
				}
			default:
				more = false
			}
		}
		run.flush(c)
	}
}

// abandonConfirms hands what is still queued to the engine once the
// connection has ended (ctx is done): Wait on a done context follows each
// confirmation to its end in the background, so a message whose write
// fails is still taken off its queue.
func (c *conn) abandonConfirms(ctx context.Context) {
	for {
		select {
		case pc := <-c.confirms:
			_ = pc.conf.Wait(ctx)
		default:
			return
		}
	}
}

// wait waits for pc's confirmation and adds it to the run; false means the
// connection ended meanwhile (nothing is settled then).
func (r *confirmRun) wait(ctx context.Context, c *conn, pc pendingConfirm) bool {
	err := pc.conf.Wait(ctx)
	if ctx.Err() != nil {
		return false
	}
	r.add(c, pc, err)
	c.unconfirmed.Add(-1)
	return true
}

// confirmRun is a run of accepted deliveries of one link with consecutive
// delivery ids, settled by one disposition.
type confirmRun struct {
	l           *link
	first, last uint32
	n           int
}

// add settles pc after err: accepted deliveries join the run, a failure is
// rejected on its own.
func (r *confirmRun) add(c *conn, pc pendingConfirm, err error) {
	if pc.out {
		r.flush(c)
		pc.l.confirmMu.Lock()
		defer pc.l.confirmMu.Unlock()
		if pc.l.closed.Load() {
			return
		}
		if serr := pc.l.settled(pc.id, pc.tag, pc.state, false, err); serr != nil {
			c.log.Warn("amqp acknowledgement not applied", slog.String("link", pc.l.name), slog.Any("err", serr))
		}
		return
	}
	if err != nil {
		c.log.Warn("amqp message not confirmed", slog.String("link", pc.l.name), slog.Any("err", err))
	}
	if pc.settled {
		return
	}
	if err != nil {
		r.flush(c)
		pc.l.settleIncoming(pc.id, pc.id, &types.Rejected{Error: condOf(err).wire()})
		return
	}
	if r.n > 0 && (r.l != pc.l || pc.id != r.last+1 || r.n >= maxConfirmRun) {
		r.flush(c)
	}
	if r.n == 0 {
		r.l, r.first = pc.l, pc.id
	}
	r.last = pc.id
	r.n++
}

// flush sends the run's disposition.
func (r *confirmRun) flush(c *conn) {
	if r.n == 0 {
		return
	}
	r.l.settleIncoming(r.first, r.last, &types.Accepted{})
	*r = confirmRun{}
}

// settleIncoming settles the client's deliveries first..last on this
// receiving link with state, unless the link has closed meanwhile (its
// session may be gone: a disposition then would be a protocol error).
func (l *link) settleIncoming(first, last uint32, st types.DeliveryState) {
	l.confirmMu.Lock()
	defer l.confirmMu.Unlock()
	if l.closed.Load() {
		return
	}
	d := &types.Disposition{Role: types.RoleReceiver, First: types.DeliveryNumber(first), Settled: true, State: st}
	if last != first {
		d.Last = types.Some(types.DeliveryNumber(last))
	}
	l.s.c.sendFrame(l.s.ch, d)
}
