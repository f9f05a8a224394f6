package stomp

import (
	"errors"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/protocol/internal/netserve"
	"github.com/sluicemq/sluice/protocol/stomp/frame"
)

// Pipelined sends.
//
// A SEND of a persistent message does not hold up the reader while the
// message is written: the engine enqueues it at once (SendToAsync) and
// the confirmer (a netserve.Confirmer) waits for the write, then answers
// the frame's receipt, or sends an ERROR when the write failed. While
// confirmations are pending, the receipts of other frames go through the
// confirmer too, so that receipts keep the order of their frames, and a
// DISCONNECT waits for them before its own receipt.

// confirmQueue bounds the frames waiting for their confirmation per
// connection; the reader waits when it is full.
const confirmQueue = 4096

// pendingConfirm is a frame whose receipt (or whose SEND's failure) waits
// for a confirmation; conf is nil for a frame that only waits its turn.
type pendingConfirm struct {
	f       *frame.Frame
	conf    *engine.Confirmation
	refusal error // f was denied: answered with an ERROR that leaves the connection open
}

// confirmer is a connection's confirmer; the reader goroutine starts it.
type confirmer = netserve.Confirmer[pendingConfirm]

// confirmAnswers is the connection as the confirmer's handler.
type confirmAnswers conn

// later queues pc for the confirmer, starting it on first use. It reports
// false when the connection is closing.
func (c *conn) later(pc pendingConfirm) bool {
	c.confirms.Start(c.done, confirmQueue, (*confirmAnswers)(c))
	return c.confirms.Later(pc.conf, pc)
}

// Confirmed answers pc once its confirmation returned err.
func (a *confirmAnswers) Confirmed(pc pendingConfirm, err error) {
	c := (*conn)(a)
	switch {
	case c.failing.Load():
		// An ERROR is on its way: nothing more is answered.
	case err != nil:
		c.fail(err, pc.f)
	case pc.refusal != nil:
		c.send(outItem{f: errorFrame(pc.refusal, pc.f)})
	case pc.f != nil:
		c.receipt(pc.f)
	}
}

// Flush does nothing: each frame is answered at once.
func (a *confirmAnswers) Flush() {}

// waitConfirms waits until every frame queued for the confirmer so far has
// been handled (or the connection ends, or a few seconds pass).
func (c *conn) waitConfirms() {
	c.confirms.WaitQueued(10 * time.Second)
}

// errPending tells handle that the confirmer answers the frame.
var errPending = errors.New("answered by the confirmer")
