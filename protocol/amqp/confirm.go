package amqp

import (
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

// confirmer is a connection's confirmer; confirmLater starts it.
type confirmer struct {
	netserve.Confirmer[pendingConfirm]
	run confirmRun // the confirmer goroutine's
}

// confirmAnswers is the connection as the confirmer's handler.
type confirmAnswers conn

// confirmLater queues pc for the confirmer, starting it on first use.
func (c *conn) confirmLater(pc pendingConfirm) {
	c.confirms.Start(c.done, confirmQueue, (*confirmAnswers)(c))
	c.confirms.Later(pc.conf, pc)
}

// confirmNow reports whether the reader should wait for a confirmation
// itself rather than hand it to the confirmer: when nothing is queued for
// the confirmer and nothing more has arrived to read, the client is most
// likely waiting for this very settlement, and the hand-off would only add
// a goroutine switch to its round trip.
func (c *conn) confirmNow() bool {
	return c.confirms.Pending() == 0 && c.rd.Buffered() == 0
}

// Confirmed adds pc, whose confirmation returned err, to the run.
func (a *confirmAnswers) Confirmed(pc pendingConfirm, err error) {
	c := (*conn)(a)
	c.confirms.run.add(c, pc, err)
}

// Flush settles the run.
func (a *confirmAnswers) Flush() {
	c := (*conn)(a)
	c.confirms.run.flush(c)
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
