package stomp

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Pipelined sends.
//
// A SEND of a persistent message does not hold up the reader while the
// message is written: the engine enqueues it at once (SendToAsync) and
// the confirmer goroutine waits for the write, then answers the frame's
// receipt, or sends an ERROR when the write failed. While confirmations
// are pending, the receipts of other frames go through the confirmer too,
// so that receipts keep the order of their frames, and a DISCONNECT waits
// for them before its own receipt.

// confirmQueue bounds the frames waiting for their confirmation per
// connection; the reader waits when it is full.
const confirmQueue = 4096

// pendingConfirm is a frame whose receipt (or whose SEND's failure) waits
// for a confirmation; conf is nil for a frame that only waits its turn.
type pendingConfirm struct {
	f       *frame.Frame
	conf    *engine.Confirmation
	refusal error         // f was denied: answered with an ERROR that leaves the connection open
	done    chan struct{} // closed once handled (DISCONNECT waits on it)
}

// confirmer is the state of a connection's confirmer goroutine.
type confirmer struct {
	queue   chan pendingConfirm
	pending atomic.Int64 // queued and not yet handled
}

// later queues pc for the confirmer, starting it on first use. It reports
// false when the connection is closing.
func (c *conn) later(pc pendingConfirm) bool {
	if c.confirms.queue == nil {
		c.confirms.queue = make(chan pendingConfirm, confirmQueue)
		go c.confirmLoop()
	}
	c.confirms.pending.Add(1)
	select {
	case c.confirms.queue <- pc:
		return true
	case <-c.done:
		c.confirms.pending.Add(-1)
		return false
	}
}

// confirmLoop handles the queued frames in order. It ends with the
// connection.
func (c *conn) confirmLoop() {
	ctx, cancel := netserve.UntilClosed(c.done)
	defer cancel()
	for {
		select {
		case pc := <-c.confirms.queue:
			switch err := pc.conf.Wait(ctx); {
			case c.failing.Load():
				// An ERROR is on its way: nothing more is answered.
			case err != nil:
				if ctx.Err() == nil {
					c.fail(err, pc.f)
				}
			case pc.refusal != nil:
				c.send(outItem{f: errorFrame(pc.refusal, pc.f)})
			case pc.f != nil:
				c.receipt(pc.f)
			}
			if pc.done != nil {
				close(pc.done)
			}
			c.confirms.pending.Add(-1)
		case <-c.done:
			// Hand what is still queued to the engine: Wait on a done
			// context follows each confirmation to its end in the
			// background, so a message whose write fails is still taken
			// off its queue.
			for {
				select {
				case pc := <-c.confirms.queue:
					_ = pc.conf.Wait(ctx)
				default:
					return
				}
			}
		}
	}
}

// waitConfirms waits until every frame queued for the confirmer so far has
// been handled (or the connection ends, or a few seconds pass).
func (c *conn) waitConfirms() {
	if c.confirms.pending.Load() == 0 {
		return
	}
	done := make(chan struct{})
	if c.later(pendingConfirm{done: done}) {
		netserve.WaitBounded(done, c.done, 10*time.Second)
	}
}

// errPending tells handle that the confirmer answers the frame.
var errPending = errors.New("answered by the confirmer")
