package amqp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// link is one attached link. role is the server's role: RoleSender when
// the server sends messages to the client (a consumer), RoleReceiver when
// the client sends to the server (a producer, or the transaction
// coordinator).
type link struct {
	s      *session
	handle uint32
	name   string
	role   types.Role

	// Reader goroutine only.
	detaching bool                // we sent a detach and wait for the peer's
	ownTemp   message.Destination // a dynamic node this link made

	// Receiving (the client sends).
	dest        message.Destination // zero: anonymous relay (properties.to)
	coordinator bool
	in          inCredit // the client's credit (flow.go)
	inDelivery  bool
	partial     []byte
	curID       uint32
	curSettled  bool
	curState    types.DeliveryState

	// Sending (the server sends).
	engConn    *engine.Connection
	engSess    *engine.Session
	cons       *engine.Consumer
	browser    *engine.Browser
	kick       chan struct{} // wakes a browse loop
	preSettled bool
	maxPayload int
	subName    string // durable subscription: deleted by a closed detach
	durable    bool

	closed atomic.Bool
	// confirmMu orders the confirmer's dispositions before the link's
	// close (see settleIncoming).
	confirmMu sync.Mutex
	// serverDetached: the engine closed the consumer (its destination was
	// deleted) and the server sent a detach; the client's detach answers it.
	serverDetached atomic.Bool

	mu           sync.Mutex
	cond         *sync.Cond
	dc           uint32 // delivery-count
	credit       int64  // link credit as the server sees it
	granted      int64  // credit given to the engine consumer, in total
	queued       int64  // deliveries handed to the writer, in total
	drainPending bool
	waiting      bool // the delivery goroutine waits for credit
}

func (l *link) closedFlag() bool { return l.closed.Load() }

// gone reports whether the server detached the link and waits for the
// client's detach; frames for it meanwhile are ignored.
func (l *link) gone() bool { return l.detaching || l.serverDetached.Load() }

// engineClosed is told by the engine that it closed the link's consumer
// (its destination was deleted): the link detaches with
// amqp:resource-deleted.
func (l *link) engineClosed(err error) {
	if l.closed.Load() || !l.serverDetached.CompareAndSwap(false, true) {
		return
	}
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
	l.s.c.sendFrame(l.s.ch, &types.Detach{Handle: types.Handle(l.handle), Closed: true,
		Error: &types.Error{Condition: types.AMQPErrorResourceDeleted, Description: err.Error()}})
}

// attach handles a client's attach.
func (s *session) attach(a *types.Attach) error {
	h := uint32(a.Handle)
	if h > s.c.srv.opts.HandleMax {
		return sessionErr(types.AMQPErrorResourceLimitExceeded, "handle %d is above handle-max %d", h, s.c.srv.opts.HandleMax)
	}
	if s.links[h] != nil {
		return sessionErr(types.SessionErrorHandleInUse, "handle %d is already attached", h)
	}
	l := &link{s: s, handle: h, name: a.Name, kick: make(chan struct{}, 1)}
	l.cond = sync.NewCond(&l.mu)
	s.links[h] = l
	if a.Role == types.RoleReceiver {
		l.role = types.RoleSender
		return l.attachSender(a)
	}
	l.role = types.RoleReceiver
	return l.attachReceiver(a)
}

// refuse answers an attach the server cannot grant: an attach with no
// source (or target) on its side, then a closing detach with the reason.
func (l *link) refuse(a *types.Attach, e *amqpError) error {
	reply := &types.Attach{Name: a.Name, Handle: a.Handle, Role: l.role, SndSettleMode: a.SndSettleMode, RcvSettleMode: a.RcvSettleMode}
	if l.role == types.RoleSender {
		reply.Target = a.Target
		reply.InitialDeliveryCount = types.Some(types.SequenceNo(0))
	} else {
		reply.Source = a.Source
	}
	c := l.s.c
	c.sendFrame(l.s.ch, reply)
	l.s.detachWith(l, e)
	return nil
}

// parseFilters reads the JMS selector and no-local filters and returns the
// filter set the server accepts.
func parseFilters(fs types.FilterSet) (sel string, noLocal bool, accepted types.FilterSet, err error) {
	for _, e := range fs {
		d, ok := e.Value.(types.Described)
		if !ok {
			continue
		}
		switch d.Descriptor {
		case selectorFilterCode, selectorFilterName:
			s, ok := d.Value.(string)
			if !ok {
				return "", false, nil, errf(types.AMQPErrorInvalidField, "the jms-selector filter must hold a string")
			}
			sel = s
			accepted = append(accepted, e)
		case noLocalFilterCode, noLocalFilterName:
			noLocal = true
			accepted = append(accepted, e)
		}
	}
	return sel, noLocal, accepted, nil
}

// subscriptionName is a link name without the "|…" suffix Qpid JMS adds
// to tell apart the links of one shared subscription.
func subscriptionName(link string) string {
	name, _, _ := strings.Cut(link, "|")
	return name
}

func (c *conn) transferOverhead() int {
	t := &types.Transfer{Handle: 1<<32 - 1, DeliveryID: types.Some(types.DeliveryNumber(1<<32 - 1)),
		DeliveryTag: make([]byte, 8), MessageFormat: types.Some(types.MessageFormat(0)), Settled: types.Some(true), More: true}
	b, _ := t.AppendAMQP(nil)
	return len(b) + frames.HeaderSize + 8
}

// attachSender sets up a link on which the server sends: a consumer on a
// queue or topic subscription, or a queue browser.
func (l *link) attachSender(a *types.Attach) error {
	c := l.s.c
	src := a.Source
	if src == nil {
		return l.attachLookup(a)
	}
	sel, noLocal, accepted, err := parseFilters(src.Filter)
	if err != nil {
		return l.refuse(a, err.(*amqpError))
	}
	var dest message.Destination
	if src.Dynamic {
		kind := message.TempQueue
		if hasCap(src.Capabilities, capTempTopic) || hasCap(src.Capabilities, capTopic) {
			kind = message.TempTopic
		}
		if kind == message.TempQueue {
			dest, err = c.prodSess.CreateTemporaryQueue()
		} else {
			dest, err = c.prodSess.CreateTemporaryTopic()
		}
		if err != nil {
			return l.refuse(a, condOf(err))
		}
		l.ownTemp = dest
	} else {
		addr, ok := addressString(src.Address)
		if !ok || addr == "" {
			return l.refuse(a, errf(types.AMQPErrorInvalidField, "the source has no address"))
		}
		if dest, err = parseAddress(addr, kindFromCaps(src.Capabilities)); err != nil {
			return l.refuse(a, errf(types.AMQPErrorInvalidField, "%v", err))
		}
	}
	browse := src.DistributionMode == types.StdDistModeCopy
	if browse && dest.Kind.IsTopic() {
		return l.refuseTemp(a, errf(types.AMQPErrorNotAllowed, "topics cannot be browsed (distribution-mode copy): %s", renderAddress(dest)))
	}
	shared := hasCap(src.Capabilities, capShared)
	global := hasCap(src.Capabilities, capGlobal)
	durable := dest.Kind.IsTopic() && !src.Dynamic &&
		(src.Durable != types.TerminusDurabilityNone || src.ExpiryPolicy == types.TerminusExpiryPolicyNever)
	opts := engine.ConsumerOptions{Selector: sel, NoLocal: noLocal, CreditMode: engine.CreditManual}
	if dest.Kind.IsTopic() && (durable || shared) {
		opts.SubscriptionName = subscriptionName(a.Name)
		opts.Durable = durable
		opts.Shared = shared
	}
	engConn, err := c.engineFor(shared && global)
	if err != nil {
		return l.refuseTemp(a, condOf(err))
	}
	sess, err := engConn.CreateSession(engine.IndividualAcknowledge)
	if err != nil {
		return l.refuseTemp(a, condOf(err))
	}
	l.engConn, l.engSess = engConn, sess
	sess.SetExceptionListener(l.engineClosed)
	if d, ok := redeliveryDelayProperty(a.Properties); ok {
		sess.SetRedeliveryDelay(d)
	}
	if browse {
		if l.browser, err = sess.CreateBrowser(dest, sel); err != nil {
			_ = sess.Close()
			l.engSess = nil
			return l.refuseTemp(a, condOf(err))
		}
	} else {
		if l.cons, err = sess.CreateConsumer(dest, opts); err != nil {
			_ = sess.Close()
			l.engSess = nil
			return l.refuseTemp(a, condOf(err))
		}
	}
	if opts.Durable {
		l.durable, l.subName = true, opts.SubscriptionName
	}
	l.preSettled = a.SndSettleMode == types.SenderSettleModeSettled
	maxFrame := min(c.remoteMaxFrame, c.srv.opts.MaxFrameSize)
	l.maxPayload = int(maxFrame) - c.transferOverhead()
	if l.maxPayload < 64 {
		return l.refuseTemp(a, errf(types.AMQPErrorFrameSizeTooSmall, "max-frame-size %d leaves no room for a transfer", maxFrame))
	}

	rs := *src
	rs.Filter = accepted
	if src.Dynamic {
		rs.Address = renderAddress(dest)
		rs.Capabilities = append(append([]types.Symbol(nil), src.Capabilities...), capsOf(dest.Kind)...)
	} else if kindFromCaps(src.Capabilities) == message.NoDest {
		rs.Capabilities = append(append([]types.Symbol(nil), src.Capabilities...), capsOf(dest.Kind)...)
	}
	sndMode := a.SndSettleMode
	if sndMode == types.SenderSettleModeMixed {
		sndMode = types.SenderSettleModeUnsettled
	}
	reply := &types.Attach{Name: a.Name, Handle: a.Handle, Role: types.RoleSender,
		SndSettleMode: sndMode, RcvSettleMode: a.RcvSettleMode,
		Source: &rs, Target: a.Target, InitialDeliveryCount: types.Some(types.SequenceNo(0))}
	c.sendFrame(l.s.ch, reply)
	if browse {
		go l.browseLoop()
		return nil
	}
	if err := l.cons.SetListener(l.deliver); err != nil {
		l.s.detachWith(l, condOf(err))
	}
	return nil
}

// refuseTemp refuses an attach and deletes the dynamic node it made.
func (l *link) refuseTemp(a *types.Attach, e *amqpError) error {
	if !l.ownTemp.IsZero() {
		_ = l.s.c.eng.DeleteTemporary(l.ownTemp)
		l.ownTemp = message.Destination{}
	}
	return l.refuse(a, e)
}

// attachLookup answers an attach without a source: Qpid JMS looks up a
// durable subscription by link name this way before it deletes it with a
// closed detach. The answer describes the subscription, or has no source
// when there is none.
func (l *link) attachLookup(a *types.Attach) error {
	c := l.s.c
	name := subscriptionName(a.Name)
	global := hasCap(a.DesiredCapabilities, capGlobal) || strings.Contains(a.Name, "|global")
	engConn, err := c.engineFor(global)
	if err != nil {
		return l.refuse(a, condOf(err))
	}
	clientID := engConn.ClientID()
	var found *engine.SubscriptionInfo
	for _, si := range c.srv.eng.Subscriptions() {
		if si.Durable && si.Name == name && si.ClientID == clientID && si.ClientIDPolicy == engConn.ClientIDPolicy() {
			found = &si
			break
		}
	}
	if found == nil {
		return l.refuse(a, errf(types.AMQPErrorNotFound, "no durable subscription %q for client ID %q", name, clientID))
	}
	src := types.NewSource()
	src.Address = found.Topic.Name
	src.Durable = types.TerminusDurabilityUnsettledState
	src.ExpiryPolicy = types.TerminusExpiryPolicyNever
	src.Capabilities = []types.Symbol{capTopic}
	if found.Shared {
		src.Capabilities = append(src.Capabilities, capShared)
		if global {
			src.Capabilities = append(src.Capabilities, capGlobal)
		}
	}
	if found.Selector != "" {
		src.Filter = types.FilterSet{{Key: types.Symbol("jms-selector"),
			Value: types.Described{Descriptor: selectorFilterName, Value: found.Selector}}}
	}
	if found.NoLocal {
		src.Filter = append(src.Filter, types.MapEntry{Key: types.Symbol("no-local"),
			Value: types.Described{Descriptor: noLocalFilterName, Value: []any{}}})
	}
	l.engConn, l.durable, l.subName = engConn, true, name
	c.sendFrame(l.s.ch, &types.Attach{Name: a.Name, Handle: a.Handle, Role: types.RoleSender,
		SndSettleMode: a.SndSettleMode, RcvSettleMode: a.RcvSettleMode,
		Source: src, Target: a.Target, InitialDeliveryCount: types.Some(types.SequenceNo(0))})
	return nil
}

// attachReceiver sets up a link on which the client sends: to a
// destination, to the anonymous relay, or to the transaction coordinator.
func (l *link) attachReceiver(a *types.Attach) error {
	c := l.s.c
	var replyTarget types.TargetArchetype = a.Target
	switch t := a.Target.(type) {
	case *types.Coordinator:
		l.coordinator = true
		replyTarget = &types.Coordinator{Capabilities: []types.TxnCapability{types.TxnCapabilityLocalTransactions}}
	case *types.Target:
		if t.Dynamic {
			var err error
			if hasCap(t.Capabilities, capTempTopic) || hasCap(t.Capabilities, capTopic) {
				l.dest, err = c.prodSess.CreateTemporaryTopic()
			} else {
				l.dest, err = c.prodSess.CreateTemporaryQueue()
			}
			if err != nil {
				return l.refuse(a, condOf(err))
			}
			l.ownTemp = l.dest
			rt := *t
			rt.Address = renderAddress(l.dest)
			rt.Capabilities = append(append([]types.Symbol(nil), t.Capabilities...), capsOf(l.dest.Kind)...)
			replyTarget = &rt
			break
		}
		addr, ok := addressString(t.Address)
		if !ok {
			return l.refuse(a, errf(types.AMQPErrorInvalidField, "the target address must be a string"))
		}
		if addr != "" {
			d, err := parseAddress(addr, kindFromCaps(t.Capabilities))
			if err != nil {
				return l.refuse(a, errf(types.AMQPErrorInvalidField, "%v", err))
			}
			// Resolving now refuses unknown destinations at attach, as JMS
			// clients expect (InvalidDestinationException).
			if _, err := c.prodSess.CreateProducer(d); err != nil {
				return l.refuse(a, condOf(err))
			}
			l.dest = d
		}
	case nil:
		// The anonymous relay: each message names its destination in "to".
	default:
		return l.refuse(a, errf(types.AMQPErrorNotImplemented, "unsupported target"))
	}
	reply := &types.Attach{Name: a.Name, Handle: a.Handle, Role: types.RoleReceiver,
		SndSettleMode: a.SndSettleMode, RcvSettleMode: types.ReceiverSettleModeFirst,
		Source: a.Source, Target: replyTarget, MaxMessageSize: types.Some(c.srv.opts.MaxMessageSize)}
	c.sendFrame(l.s.ch, reply)
	if blocked, _ := c.srv.eng.Flow().Blocked(); blocked {
		// Held from the start: a link attached while producers are held
		// gets its credit once they resume.
		l.in.init(0, uint32(a.InitialDeliveryCount.Or(0)), true)
		l.in.state(l.sendReceiverFlow)
		c.hold(l)
		return nil
	}
	l.in.init(c.srv.opts.LinkCredit, uint32(a.InitialDeliveryCount.Or(0)), false)
	l.in.state(l.sendReceiverFlow)
	return nil
}

// flow handles the link part of a client's flow.
func (l *link) flow(f *types.Flow) error {
	if l.role == types.RoleReceiver {
		if f.Echo {
			l.in.state(l.sendReceiverFlow)
		}
		return nil
	}
	l.mu.Lock()
	if credit, ok := f.LinkCredit.Get(); ok {
		rdc := uint32(f.DeliveryCount.Or(0))
		d := rdc + credit - l.dc
		if d > 1<<31 {
			d = 0 // the client has not seen deliveries in flight yet
		}
		l.credit = int64(d)
	}
	if f.Drain {
		l.drainPending = true
	}
	grant := l.topUpLocked()
	l.cond.Broadcast()
	l.mu.Unlock()
	if grant > 0 {
		l.cons.Flow(int(grant))
	}
	if l.browser != nil {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	answered := false
	if f.Drain && l.cons != nil {
		back := l.cons.Drain()
		l.mu.Lock()
		l.granted -= int64(back)
		fl := l.drainAnswerLocked()
		l.mu.Unlock()
		if fl != nil {
			l.s.c.sendFrame(l.s.ch, fl)
			answered = true
		}
	}
	if f.Echo && !answered {
		l.mu.Lock()
		fl := l.senderFlowLocked(false)
		l.mu.Unlock()
		l.s.c.sendFrame(l.s.ch, fl)
	}
	return nil
}

// topUpLocked returns how much more credit the engine consumer must be
// given so that what it may dispatch (granted, less what is already
// handed to the writer) matches the client's link credit, but no more
// than the server's LinkWindow outside a drain, and counts it as granted.
// It runs on both sides of the race between a client's flow and the count
// of a delivery just written: a flow that comes before
// deliver has counted its transfer sees it still in flight, and the
// delivery's count then grants what that flow could not.
func (l *link) topUpLocked() int64 {
	if l.cons == nil {
		return 0
	}
	want := l.credit
	if !l.drainPending {
		// A client's credit can be any size: what waits for the writer is
		// bounded by the window, the rest of the credit is granted as
		// deliveries are written (deliver tops up). A drain gets it all,
		// so that it is answered only once nothing is left to send.
		want = min(want, int64(l.s.c.srv.opts.LinkWindow))
	}
	need := want - (l.granted - l.queued)
	if need <= 0 {
		return 0
	}
	l.granted += need
	return need
}

// drainAnswerLocked returns the flow that answers a drain once every
// message the engine dispatched within the credit has been written (or
// the delivery goroutine waits for credit it will not get): the
// delivery-count advanced by the unused credit, and credit 0. It returns
// nil while the answer must wait.
func (l *link) drainAnswerLocked() *types.Flow {
	if !l.drainPending {
		return nil
	}
	if l.cons != nil && l.granted-l.queued > 0 && !l.waiting {
		return nil
	}
	l.drainPending = false
	if l.credit > 0 {
		l.dc += uint32(l.credit)
		if l.cons != nil {
			l.granted -= l.credit
			l.granted = max(l.granted, l.queued)
		}
		l.credit = 0
	}
	return l.senderFlowLocked(true)
}

// senderFlowLocked is the flow stating the state of a sending link. It
// reads the session's incoming state, which only the reader writes; the
// values are advisory for a link flow.
func (l *link) senderFlowLocked(drain bool) *types.Flow {
	f := types.NewFlow()
	s := l.s
	s.mu.Lock()
	f.NextOutgoingID = types.TransferNumber(s.nextOutgoingID)
	f.NextIncomingID = types.Some(types.TransferNumber(s.nextIncomingID))
	f.IncomingWindow = s.incomingWindow
	s.mu.Unlock()
	f.OutgoingWindow = 1<<32 - 1
	f.Handle = types.Some(types.Handle(l.handle))
	f.DeliveryCount = types.Some(types.SequenceNo(l.dc))
	f.LinkCredit = types.Some(uint32(max(l.credit, 0)))
	f.Drain = drain
	return f
}

// waitCredit waits until the link has credit and takes one. It reports
// false when the link closed.
func (l *link) waitCredit() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.credit <= 0 && !l.closed.Load() && !l.serverDetached.Load() {
		l.waiting = true
		if fl := l.drainAnswerLocked(); fl != nil {
			l.mu.Unlock()
			l.s.c.sendFrame(l.s.ch, fl)
			l.mu.Lock()
			continue
		}
		l.cond.Wait()
	}
	l.waiting = false
	if l.closed.Load() || l.serverDetached.Load() {
		return false
	}
	l.credit--
	l.dc++
	return true
}

// deliver is the engine listener of a consumer link: it writes the
// delivery as one or more transfers.
func (l *link) deliver(d message.Delivery) {
	if l.closed.Load() {
		return
	}
	srv := l.s.c.srv
	am := fromEngine(d, time.Now().UnixMilli())
	payload, err := am.AppendAMQP(srv.payloadBuf(encodedSizeHint(d.Msg)))
	if err != nil {
		srv.recyclePayload(payload)
		l.s.c.log.Warn("amqp message not encodable; released", "err", err)
		_ = l.engSess.Settle(context.Background(), d.Tag, engine.Released)
		return
	}
	if !l.waitCredit() {
		srv.recyclePayload(payload)
		return
	}
	l.sendDelivery(d.Tag, payload, true)
	l.mu.Lock()
	l.queued++
	grant := int64(0)
	if !l.drainPending {
		grant = l.topUpLocked()
	}
	fl := l.drainAnswerLocked()
	l.mu.Unlock()
	if grant > 0 {
		l.cons.Flow(int(grant))
	}
	if fl != nil {
		l.s.c.sendFrame(l.s.ch, fl)
	}
}

func deliveryTag(tag uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], tag)
	i := 0
	for i < 7 && b[i] == 0 {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

// sendDelivery writes one delivery, split into transfers that fit the
// peer's max-frame-size, within the session's outgoing window. tag 0 marks
// a browse delivery, which needs no acknowledgement. pooled: payload is
// from Server.payloadBuf, and goes back once its last frame is flushed
// (the writer copies each frame as it takes it).
func (l *link) sendDelivery(tag uint64, payload []byte, pooled bool) bool {
	s := l.s
	// The bytes of the delivery count against the connection's output
	// buffer until the writer flushed its last transfer.
	size := int64(len(payload))
	if !s.c.budget.Take(size, s.c.done) {
		return false
	}
	given := false
	give := func() {
		if !given {
			given = true
			s.c.budget.Give(size)
		}
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	off := 0
	first := true
	for first || off < len(payload) {
		n := min(len(payload)-off, l.maxPayload)
		if !s.reserveTransfer(l) {
			give()
			return false
		}
		t := &types.Transfer{Handle: types.Handle(l.handle)}
		if first {
			s.mu.Lock()
			id := s.nextDeliveryID
			s.nextDeliveryID++
			if !l.preSettled {
				s.unsettled[id] = outDelivery{l: l, tag: tag}
			}
			s.mu.Unlock()
			t.DeliveryID = types.Some(types.DeliveryNumber(id))
			t.DeliveryTag = deliveryTag(tag)
			t.MessageFormat = types.Some(types.MessageFormat(0))
			t.Settled = types.Some(l.preSettled)
		}
		t.More = off+n < len(payload)
		it := outItem{fr: frames.Frame{Type: frames.TypeAMQP, Channel: s.ch, Body: t, Payload: payload[off : off+n]}}
		if !t.More {
			budget := s.c.budget
			var srv *Server
			if pooled {
				srv = s.c.srv
			}
			if l.preSettled && tag != 0 {
				sess := l.engSess
				it.after = func() {
					budget.Give(size)
					_ = sess.AcknowledgeAsync(tag)
					if srv != nil {
						srv.recyclePayload(payload)
					}
				}
			} else {
				it.after = func() {
					budget.Give(size)
					if srv != nil {
						srv.recyclePayload(payload)
					}
				}
			}
		}
		if !s.c.send(it) {
			give() // not queued: its after never runs
			return false
		}
		off += n
		first = false
	}
	return true
}

// browseLoop sends a browsing link's messages: the queue as it is, then
// messages that arrive later, without consuming any.
func (l *link) browseLoop() {
	seen := map[string]bool{}
	var items []message.Delivery
	for !l.closed.Load() {
		if len(items) == 0 {
			if e, err := l.browser.Enumeration(); err == nil {
				for e.HasMoreElements() {
					d, err := e.NextElement()
					if err != nil {
						break
					}
					if !seen[d.Msg.ID] {
						items = append(items, d)
					}
				}
			}
		}
		l.mu.Lock()
		if len(items) == 0 || l.credit <= 0 {
			if l.drainPending {
				fl := l.drainAnswerLocked()
				l.mu.Unlock()
				l.s.c.sendFrame(l.s.ch, fl)
				continue
			}
			l.mu.Unlock()
			select {
			case <-l.kick:
			case <-l.s.c.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		l.credit--
		l.dc++
		l.mu.Unlock()
		d := items[0]
		items = items[1:]
		seen[d.Msg.ID] = true
		payload, err := fromEngine(d, time.Now().UnixMilli()).AppendAMQP(make([]byte, 0, encodedSizeHint(d.Msg)))
		if err != nil {
			continue
		}
		if !l.sendDelivery(0, payload, false) {
			return
		}
	}
}

// settle applies the client's disposition of one delivery.
func (l *link) settle(id uint32, tag uint64, st types.DeliveryState, settled bool) error {
	ctx := context.Background()
	c := l.s.c
	var err error
	if tag != 0 && l.engSess != nil {
		switch x := st.(type) {
		case nil:
			if settled {
				err = l.engSess.AcknowledgeAsync(tag)
			}
		case *types.Received:
			return nil
		case *types.TransactionalState:
			tx := c.txns[txnKey(x.TxnID)]
			if tx == nil {
				l.s.detachWith(l, errf(types.TransactionErrorUnknownID, "disposition in transaction %x, which is not declared", x.TxnID))
				return nil
			}
			switch x.Outcome.(type) {
			case nil, *types.Accepted:
				err = l.engSess.AcknowledgeIn(tx, tag)
			default:
				err = l.applyOutcome(ctx, tag, x.Outcome, settled)
			}
		case *types.Accepted:
			if !settled {
				return l.acceptLater(id, tag, st)
			}
			err = l.applyOutcome(ctx, tag, st, settled)
		default:
			err = l.applyOutcome(ctx, tag, st, settled)
		}
	}
	return l.settled(id, tag, st, settled, err)
}

// acceptLater applies an accepted outcome the client left unsettled
// without holding up the reader: the acknowledgement's delete is committed
// with other writes, and the server settles the delivery once it is
// durable; the confirmer does, when the write is not done at once and the
// client has more for the reader (confirm.go).
func (l *link) acceptLater(id uint32, tag uint64, st types.DeliveryState) error {
	c := l.s.c
	conf, err := l.engSess.AcknowledgeLater(tag)
	if err == nil && !conf.Ready() && !c.confirmNow() {
		c.confirmLater(pendingConfirm{l: l, id: id, conf: conf, out: true, tag: tag, state: st})
		return nil
	}
	if err == nil {
		err = conf.Wait(c.ctx)
	}
	return l.settled(id, tag, st, false, err)
}

// settled answers the client's disposition st of delivery id once the
// engine has applied it (err nil) or not.
func (l *link) settled(id uint32, tag uint64, st types.DeliveryState, settled bool, err error) error {
	ctx := context.Background()
	c := l.s.c
	if err != nil {
		if errors.Is(err, engine.ErrIllegalState) {
			// No longer the session's: the link or session closed and
			// returned it to its queue.
			c.log.Debug("amqp disposition not applied", "link", l.name, "err", err)
			if !settled && isTerminal(st) {
				c.sendFrame(l.s.ch, &types.Disposition{Role: types.RoleSender, First: types.DeliveryNumber(id), Settled: true, State: notApplied(st)})
			}
			return nil
		}
		// The engine refused it (the store failed an acknowledgement):
		// the delivery is still the session's. A client waiting for our
		// settlement must not hear the outcome it asked for: the message
		// goes back to its queue and the client is told it was released.
		c.log.Warn("amqp disposition refused by the engine: the message will be delivered again",
			"link", l.name, "err", err)
		if rerr := l.engSess.Settle(ctx, tag, engine.Released); rerr != nil && !errors.Is(rerr, engine.ErrIllegalState) {
			return fmt.Errorf("release delivery after a failed disposition: %w", rerr)
		}
		if !settled && isTerminal(st) {
			c.sendFrame(l.s.ch, &types.Disposition{Role: types.RoleSender, First: types.DeliveryNumber(id), Settled: true, State: notApplied(st)})
		}
		return nil
	}
	if !settled && isTerminal(st) {
		c.sendFrame(l.s.ch, &types.Disposition{Role: types.RoleSender, First: types.DeliveryNumber(id), Settled: true, State: st})
	}
	return nil
}

// notApplied is the state the server settles a delivery with when the
// client's outcome st could not be applied and the message went back to
// its queue: released, inside st's transaction when st is transactional.
func notApplied(st types.DeliveryState) types.DeliveryState {
	if ts, ok := st.(*types.TransactionalState); ok {
		return &types.TransactionalState{TxnID: ts.TxnID, Outcome: &types.Released{}}
	}
	return &types.Released{}
}

func (l *link) applyOutcome(ctx context.Context, tag uint64, st any, settled bool) error {
	switch x := st.(type) {
	case *types.Accepted:
		if settled {
			return l.engSess.AcknowledgeAsync(tag)
		}
		return l.engSess.Acknowledge(ctx, tag)
	case *types.Released:
		return l.settleAs(ctx, tag, engine.Released, settled)
	case *types.Rejected:
		return l.settleAs(ctx, tag, engine.Rejected, settled)
	case *types.Modified:
		// The engine cannot keep a message from one consumer, so
		// undeliverable-here counts as a failed delivery too.
		if x.DeliveryFailed.Value || x.UndeliverableHere.Value {
			return l.settleAs(ctx, tag, engine.Failed, settled)
		}
		return l.settleAs(ctx, tag, engine.Released, settled)
	}
	return nil
}

// settleAs applies a released, modified or rejected outcome. A client that
// settled the delivery itself waits for nothing, so the reader does not
// wait for the redelivery records either: they are committed with other
// writes (the message is not delivered again before they are durable).
// An unsettled one is answered once they are durable.
func (l *link) settleAs(ctx context.Context, tag uint64, o engine.Outcome, settled bool) error {
	if !settled {
		return l.engSess.Settle(ctx, tag, o)
	}
	conf, err := l.engSess.SettleConfirm(tag, o)
	if err != nil {
		return err
	}
	if conf.Ready() {
		return conf.Wait(ctx)
	}
	return nil
}

// transfer handles one transfer frame on a receiving link.
func (l *link) transfer(t *types.Transfer, payload []byte) error {
	opts := &l.s.c.srv.opts
	if !l.inDelivery {
		id, ok := t.DeliveryID.Get()
		if !ok {
			l.s.detachWith(l, errf(types.AMQPErrorInvalidField, "the first transfer of a delivery has no delivery-id"))
			return nil
		}
		if !l.in.take() {
			l.s.detachWith(l, errf(types.LinkErrorTransferLimitExceeded, "transfer without link credit"))
			return nil
		}
		l.inDelivery = true
		l.curID = uint32(id)
		l.curSettled = t.Settled.Or(false)
		l.curState = t.State
		l.partial = nil
	} else {
		if id, ok := t.DeliveryID.Get(); ok && uint32(id) != l.curID {
			l.s.detachWith(l, errf(types.AMQPErrorInvalidField, "delivery %d started before delivery %d ended", id, l.curID))
			return nil
		}
		if t.Settled.Or(false) {
			l.curSettled = true
		}
		if t.State != nil {
			l.curState = t.State
		}
	}
	if t.Aborted {
		l.inDelivery = false
		l.partial = nil
		l.replenish()
		return nil
	}
	if uint64(len(l.partial))+uint64(len(payload)) > opts.MaxMessageSize {
		l.inDelivery = false
		l.partial = nil
		l.s.detachWith(l, errf(types.LinkErrorMessageSizeExceeded, "message larger than %d bytes", opts.MaxMessageSize))
		return nil
	}
	if t.More {
		l.partial = append(l.partial, payload...)
		return nil
	}
	data := payload
	if l.partial != nil {
		data = append(l.partial, payload...)
	}
	l.partial = nil
	l.inDelivery = false
	l.received(l.curID, data, l.curSettled, l.curState)
	l.replenish()
	return nil
}

// replenish gives the client credit back once half is used, unless the
// broker's flow gate holds producers: then the connection's flow watcher
// gives it once they may send again (flow.go).
func (l *link) replenish() {
	if l.gone() {
		return
	}
	c := l.s.c
	blocked, _ := c.srv.eng.Flow().Blocked()
	if l.in.replenish(c.srv.opts.LinkCredit, blocked, l.sendReceiverFlow) {
		c.hold(l)
	}
}

func txnKey(id any) string {
	switch v := id.(type) {
	case []byte:
		return string(v)
	case types.TransactionID:
		return string(v)
	}
	return ""
}

// received handles one complete incoming message. data is the message's
// own (the frame reader reads each frame into a buffer of its own; a
// message of several frames is appended into a new one), so the engine's
// body may keep it.
func (l *link) received(id uint32, data []byte, settled bool, state types.DeliveryState) {
	c := l.s.c
	am, err := types.DecodeMessage(data)
	if err != nil {
		l.outcome(id, settled, nil, &types.Rejected{Error: errf(types.AMQPErrorDecodeError, "%v", err).wire()})
		return
	}
	if l.coordinator {
		l.coordinate(id, am, settled)
		return
	}
	var txnID any
	var tx *engine.Txn
	if ts, ok := state.(*types.TransactionalState); ok {
		txnID = ts.TxnID
		if tx = c.txns[txnKey(ts.TxnID)]; tx == nil {
			l.outcome(id, settled, nil, &types.Rejected{Error: errf(types.TransactionErrorUnknownID, "transaction %x is not declared", ts.TxnID).wire()})
			return
		}
	}
	in, err := toEngine(am, cap(data))
	if err != nil {
		l.outcome(id, settled, txnID, &types.Rejected{Error: errf(types.AMQPErrorInvalidField, "%v", err).wire()})
		return
	}
	dest := l.dest
	if dest.IsZero() {
		if in.to == "" {
			l.outcome(id, settled, txnID, &types.Rejected{Error: errf(types.AMQPErrorInvalidField, "a message on the anonymous relay needs properties.to").wire()})
			return
		}
		if dest, err = parseAddress(in.to, in.kind); err != nil {
			l.outcome(id, settled, txnID, &types.Rejected{Error: errf(types.AMQPErrorInvalidField, "%v", err).wire()})
			return
		}
	}
	ctx := context.Background()
	var conf *engine.Confirmation
	if tx != nil {
		err = c.prod.SendIn(ctx, tx, dest, in.msg, in.opts)
	} else {
		conf, err = c.prod.SendToAsync(ctx, dest, in.msg, in.opts)
	}
	if err != nil {
		c.log.Debug("amqp message refused", "link", l.name, "err", err)
		if settled && engine.CodeOf(err) == engine.CodeSecurity {
			// A pre-settled transfer has no outcome to carry the refusal:
			// the link is detached with it instead, so that the client
			// learns; the connection and its other links carry on.
			l.s.detachWith(l, condOf(err))
			return
		}
		l.outcome(id, settled, txnID, &types.Rejected{Error: condOf(err).wire()})
		return
	}
	if !conf.Ready() && !c.confirmNow() {
		// Stored in the background: the confirmer settles it (confirm.go).
		c.confirmLater(pendingConfirm{l: l, id: id, settled: settled, conf: conf})
		return
	}
	if err := conf.Wait(c.ctx); err != nil {
		l.outcome(id, settled, txnID, &types.Rejected{Error: condOf(err).wire()})
		return
	}
	l.outcome(id, settled, txnID, &types.Accepted{})
}

// outcome settles an incoming delivery with its outcome (inside the
// transactional state when it was sent in a transaction).
func (l *link) outcome(id uint32, settled bool, txnID any, o types.Outcome) {
	if settled {
		return
	}
	var st types.DeliveryState = o.(types.DeliveryState)
	if txnID != nil {
		st = &types.TransactionalState{TxnID: txnID, Outcome: o}
	}
	l.s.c.sendFrame(l.s.ch, &types.Disposition{Role: types.RoleReceiver, First: types.DeliveryNumber(id), Settled: true, State: st})
}

// close detaches the link on the engine side. closed deletes what the link
// made: its durable subscription and its dynamic node.
func (l *link) close(ctx context.Context, closed bool) error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	// A disposition the confirmer is sending goes out before what follows
	// the close (a detach, an end); later ones are not sent.
	l.confirmMu.Lock()
	l.confirmMu.Unlock() //nolint:staticcheck // an empty critical section: the barrier
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
	s := l.s
	s.mu.Lock()
	for id, od := range s.unsettled {
		if od.l == l {
			delete(s.unsettled, id)
		}
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	if l.browser != nil {
		l.browser.Close()
	}
	if l.preSettled && l.cons != nil {
		// Stop deliveries, then let those already queued reach the wire
		// and be acknowledged (sendDelivery acknowledges a pre-settled
		// delivery once flushed) before the session takes back what is
		// still unacknowledged.
		_ = l.cons.Close()
		s.c.flushWrites()
	}
	if l.engSess != nil {
		_ = l.engSess.Close()
	}
	l.partial = nil
	var err error
	if closed && l.durable && l.subName != "" && l.engConn != nil {
		if sess, e := l.engConn.CreateSession(engine.AutoAcknowledge); e == nil {
			err = sess.Unsubscribe(ctx, l.subName)
			_ = sess.Close()
			if errors.Is(err, engine.ErrIllegalState) && l.cons != nil {
				err = nil // a shared subscription other links still use
			}
		}
	}
	if !l.ownTemp.IsZero() {
		_ = s.c.eng.DeleteTemporary(l.ownTemp)
	}
	return err
}

// redeliveryDelayProperty reads Sluice's attach property
// "sluice-redelivery-delay" (milliseconds, any integer type): the session
// redelivery delay of the link's consumer, which no JMS mapping carries.
func redeliveryDelayProperty(props types.Fields) (time.Duration, bool) {
	v, ok := props.Get(types.Symbol("sluice-redelivery-delay"))
	if !ok {
		return 0, false
	}
	var ms int64
	switch n := v.(type) {
	case int8:
		ms = int64(n)
	case int16:
		ms = int64(n)
	case int32:
		ms = int64(n)
	case int64:
		ms = n
	case uint8:
		ms = int64(n)
	case uint16:
		ms = int64(n)
	case uint32:
		ms = int64(n)
	case uint64:
		ms = int64(min(n, 1<<40))
	default:
		return 0, false
	}
	if ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}
