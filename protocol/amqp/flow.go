package amqp

import (
	"sync"

	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// Flow control of producers.
//
// While the broker's flow gate holds producers (memory or disk, see
// engine.Flow), the server grants no more link credit on the links a
// client sends on: transfers within the credit already granted are still
// taken, then the client waits, as AMQP 1.0 means a sender to. The
// connection's frames keep being read, so the client's consumers still
// settle and the backlog drains. When the gate opens, the connection's
// flow watcher grants the withheld credit again.

// inCredit is the credit of a link on which the client sends. The reader
// takes one per delivery and tops it up; the flow watcher grants it again
// after flow control withheld a top-up. A flow stating it is sent under
// mu, so that the flows of a link leave in the order of their states.
type inCredit struct {
	mu     sync.Mutex
	credit uint32
	count  uint32 // the link's delivery-count
	held   bool   // a top-up was withheld by flow control
}

// init sets the credit and delivery-count of a new link; held says its
// credit waits for flow control to end.
func (ic *inCredit) init(credit, count uint32, held bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.credit, ic.count, ic.held = credit, count, held
}

// take uses one credit for a new delivery; false when there is none.
func (ic *inCredit) take() bool {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.credit == 0 {
		return false
	}
	ic.credit--
	ic.count++
	return true
}

// state sends the link's flow with its credit and delivery-count.
func (ic *inCredit) state(send func(count, credit uint32)) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	send(ic.count, ic.credit)
}

// replenish tops the credit up to full once half is used, unless blocked:
// then it withholds the top-up and reports true (the link must be handed
// to the flow watcher).
func (ic *inCredit) replenish(full uint32, blocked bool, send func(count, credit uint32)) (held bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.credit > full/2 || ic.held {
		return false
	}
	if blocked {
		ic.held = true
		return true
	}
	ic.credit = full
	send(ic.count, ic.credit)
	return false
}

// release grants a withheld top-up.
func (ic *inCredit) release(full uint32, send func(count, credit uint32)) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if !ic.held {
		return
	}
	ic.held = false
	ic.credit = full
	send(ic.count, ic.credit)
}

// flowHeld is the connection's set of links whose credit flow control
// withheld, and the watcher that grants it again.
type flowHeld struct {
	mu      sync.Mutex
	links   map[*link]struct{}
	wake    chan struct{} // a link was added
	started bool
}

// hold hands l to the connection's flow watcher, starting it on first use.
func (c *conn) hold(l *link) {
	h := &c.held
	h.mu.Lock()
	if h.links == nil {
		h.links = map[*link]struct{}{}
		h.wake = make(chan struct{}, 1)
	}
	h.links[l] = struct{}{}
	start := !h.started
	h.started = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	if start {
		go c.flowWatch()
	}
}

// takeHeld returns the held links and forgets them.
func (c *conn) takeHeld() []*link {
	h := &c.held
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*link, 0, len(h.links))
	for l := range h.links {
		out = append(out, l)
	}
	clear(h.links)
	return out
}

// flowWatch waits for the flow gate to open and grants the credit withheld
// meanwhile; it ends with the connection.
func (c *conn) flowWatch() {
	fl := c.srv.eng.Flow()
	for {
		if !fl.WaitChan(c.done) {
			return
		}
		for _, l := range c.takeHeld() {
			if l.closed.Load() || l.serverDetached.Load() {
				continue
			}
			l.in.release(c.srv.opts.LinkCredit, l.sendReceiverFlow)
		}
		select {
		case <-c.held.wake:
		case <-c.done:
			return
		}
	}
}

// sendReceiverFlow sends the flow stating a receiving link's credit.
func (l *link) sendReceiverFlow(count, credit uint32) {
	f := l.s.sessionFlow()
	f.Handle = types.Some(types.Handle(l.handle))
	f.DeliveryCount = types.Some(types.SequenceNo(count))
	f.LinkCredit = types.Some(credit)
	l.s.c.sendFrame(l.s.ch, f)
}
