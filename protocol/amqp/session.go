package amqp

import (
	"context"
	"sync"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// session is one AMQP session. The reader goroutine owns the incoming side
// and the link table; the outgoing side (transfer ids, the peer's incoming
// window, unsettled deliveries) is shared with the links' delivery
// goroutines under mu.
type session struct {
	c  *conn
	ch uint16

	// Reader goroutine only.
	ending bool             // we sent end and wait for the peer's
	links  map[uint32]*link // by the peer's handle

	// sendMu keeps the frames of one delivery together and transfer ids in
	// wire order.
	sendMu sync.Mutex

	mu             sync.Mutex
	cond           *sync.Cond
	nextIncomingID uint32 // written by the reader under mu
	incomingWindow uint32 // written by the reader under mu
	nextOutgoingID uint32
	nextDeliveryID uint32
	remoteWindow   int64 // transfers the peer will still take
	unsettled      map[uint32]outDelivery
	closed         bool
}

// outDelivery is a delivery the server sent and the client has not
// settled.
type outDelivery struct {
	l   *link
	tag uint64 // engine delivery tag; 0 for browse deliveries
}

func newSession(c *conn, ch uint16, b *types.Begin) *session {
	s := &session{
		c:              c,
		ch:             ch,
		nextIncomingID: uint32(b.NextOutgoingID),
		incomingWindow: c.srv.opts.SessionWindow,
		links:          map[uint32]*link{},
		remoteWindow:   int64(b.IncomingWindow),
		unsettled:      map[uint32]outDelivery{},
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// handle processes one frame for this session.
func (s *session) handle(f frames.Frame) error {
	switch b := f.Body.(type) {
	case *types.Attach:
		return s.attach(b)
	case *types.Flow:
		return s.flow(b)
	case *types.Transfer:
		return s.transfer(b, f.Payload)
	case *types.Disposition:
		return s.disposition(b)
	case *types.Detach:
		return s.detach(b)
	}
	return errf(types.ConnectionErrorFramingError, "unexpected %s on a session", bodyName(f.Body))
}

// endWith ends the session from the server side with an error; frames
// until the peer's end are ignored.
func (s *session) endWith(e *amqpError) {
	s.c.log.Info("amqp session ended with an error", "channel", s.ch, "condition", string(e.Cond), "description", e.Desc)
	s.closeAll(false)
	s.ending = true
	s.c.sendFrame(s.ch, &types.End{Error: e.wire()})
}

// remoteEnd handles the peer's end: answer it (unless we ended first) and
// forget the session.
func (s *session) remoteEnd(e *types.End) {
	if !s.ending {
		s.closeAll(false)
		s.c.sendFrame(s.ch, types.NewEnd())
	}
	delete(s.c.sessions, s.ch)
}

// closeAll closes every link of the session (a detach that is not
// closed keeps durable subscriptions).
func (s *session) closeAll(closed bool) {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	for h, l := range s.links {
		l.close(context.Background(), closed)
		delete(s.links, h)
	}
}

// flow handles a flow: the session part always, the link part when it
// names a handle.
func (s *session) flow(f *types.Flow) error {
	s.mu.Lock()
	// Serial arithmetic: the window is what lies between the peer's
	// next-incoming-id plus its window and our next-outgoing-id.
	d := uint32(f.NextIncomingID.Or(0)) + f.IncomingWindow - s.nextOutgoingID
	s.remoteWindow = int64(d)
	if d > 1<<31 {
		s.remoteWindow = 0
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	h, ok := f.Handle.Get()
	if !ok {
		if f.Echo {
			s.sendSessionFlow()
		}
		return nil
	}
	l := s.links[uint32(h)]
	if l == nil {
		return sessionErr(types.SessionErrorUnattachedHandle, "flow for handle %d, which is not attached", h)
	}
	if l.gone() {
		return nil
	}
	return l.flow(f)
}

// sessionFlow returns a flow frame with the session's state.
func (s *session) sessionFlow() *types.Flow {
	f := types.NewFlow()
	s.mu.Lock()
	f.NextIncomingID = types.Some(types.TransferNumber(s.nextIncomingID))
	f.IncomingWindow = s.incomingWindow
	f.NextOutgoingID = types.TransferNumber(s.nextOutgoingID)
	s.mu.Unlock()
	f.OutgoingWindow = 1<<32 - 1
	return f
}

func (s *session) sendSessionFlow() { s.c.sendFrame(s.ch, s.sessionFlow()) }

// transfer handles one incoming transfer frame.
func (s *session) transfer(t *types.Transfer, payload []byte) error {
	s.mu.Lock()
	if s.incomingWindow == 0 {
		s.mu.Unlock()
		return sessionErr(types.SessionErrorWindowViolation, "transfer beyond the session's incoming window")
	}
	s.incomingWindow--
	s.nextIncomingID++
	s.mu.Unlock()
	l := s.links[uint32(t.Handle)]
	if l == nil {
		return sessionErr(types.SessionErrorUnattachedHandle, "transfer on handle %d, which is not attached", t.Handle)
	}
	var err error
	if !l.gone() {
		if l.role != types.RoleReceiver {
			err = sessionErr(types.AMQPErrorNotAllowed, "transfer on link %q, on which the server sends", l.name)
		} else {
			err = l.transfer(t, payload)
		}
	}
	s.mu.Lock()
	low := s.incomingWindow <= s.c.srv.opts.SessionWindow/2
	if low {
		s.incomingWindow = s.c.srv.opts.SessionWindow
	}
	s.mu.Unlock()
	if low {
		s.sendSessionFlow()
	}
	return err
}

// disposition handles the client's disposition of deliveries.
func (s *session) disposition(d *types.Disposition) error {
	if d.Role == types.RoleSender {
		// The client settles deliveries it sent; the server settles first,
		// so there is nothing to do.
		return nil
	}
	first := uint32(d.First)
	last := uint32(d.Last.Or(d.First))
	if last < first {
		return sessionErr(types.AMQPErrorInvalidField, "disposition range %d..%d", first, last)
	}
	s.mu.Lock()
	var hits []uint32
	if uint64(last-first) < uint64(len(s.unsettled)) {
		for id := first; ; id++ {
			if _, ok := s.unsettled[id]; ok {
				hits = append(hits, id)
			}
			if id == last {
				break
			}
		}
	} else {
		for id := range s.unsettled {
			if id >= first && id <= last {
				hits = append(hits, id)
			}
		}
		sortUint32(hits)
	}
	ds := make([]outDelivery, len(hits))
	for i, id := range hits {
		ds[i] = s.unsettled[id]
		if d.Settled || isTerminal(d.State) {
			delete(s.unsettled, id)
		}
	}
	s.mu.Unlock()
	for i, od := range ds {
		if od.l.closedFlag() {
			continue
		}
		if err := od.l.settle(hits[i], od.tag, d.State, d.Settled); err != nil {
			return err
		}
	}
	return nil
}

func isTerminal(st types.DeliveryState) bool {
	switch st.(type) {
	case *types.Accepted, *types.Rejected, *types.Released, *types.Modified:
		return true
	case *types.TransactionalState:
		return st.(*types.TransactionalState).Outcome != nil
	}
	return false
}

func sortUint32(a []uint32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// detach handles the client's detach.
func (s *session) detach(d *types.Detach) error {
	l := s.links[uint32(d.Handle)]
	if l == nil {
		return sessionErr(types.SessionErrorUnattachedHandle, "detach of handle %d, which is not attached", d.Handle)
	}
	delete(s.links, uint32(d.Handle))
	if l.gone() {
		_ = l.close(context.Background(), false)
		return nil // the answer to our detach
	}
	var reply *types.Detach
	if err := l.close(context.Background(), d.Closed); err != nil {
		reply = &types.Detach{Handle: d.Handle, Closed: d.Closed, Error: condOf(err).wire()}
	} else {
		reply = &types.Detach{Handle: d.Handle, Closed: d.Closed}
	}
	s.c.sendFrame(s.ch, reply)
	return nil
}

// detachWith detaches a link from the server side with an error.
func (s *session) detachWith(l *link, e *amqpError) {
	s.c.log.Info("amqp link detached with an error", "link", l.name, "condition", string(e.Cond), "description", e.Desc)
	_ = l.close(context.Background(), false)
	l.detaching = true
	s.c.sendFrame(s.ch, &types.Detach{Handle: types.Handle(l.handle), Closed: true, Error: e.wire()})
}

// reserveTransfer waits until the peer's incoming window allows one more
// transfer frame and returns its transfer id. It reports false when the
// session closed meanwhile.
func (s *session) reserveTransfer(l *link) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.remoteWindow <= 0 && !s.closed && !l.closedFlag() {
		s.cond.Wait()
	}
	if s.closed || l.closedFlag() {
		return false
	}
	s.remoteWindow--
	s.nextOutgoingID++
	return true
}
