package netserve

import "github.com/sluicemq/sluice/engine"

// Settle is what the items of one writer batch leave to do once the batch
// has been written: deliveries of consumers that acknowledge on write
// (STOMP ack:auto, AMQP 0-9-1 no-ack), the output budget the items took,
// and waiters to release (a DISCONNECT's receipt). A Writer's Put adds to
// it, its Flushed callback calls Flushed. It belongs to the writer
// goroutine.
type Settle struct {
	// Budget gets back what the batch's items took.
	Budget *Budget
	acks   []settleAck
	taken  int64
	dones  []chan struct{}
}

type settleAck struct {
	sess *engine.Session
	tag  uint64
}

// Add counts an item of size budget bytes, and done, if not nil, to be
// closed once the batch is written (or failed).
func (s *Settle) Add(size int64, done chan struct{}) {
	s.taken += size
	if done != nil {
		s.dones = append(s.dones, done)
	}
}

// AckOnWrite acknowledges the delivery tag of sess once the batch is
// written.
func (s *Settle) AckOnWrite(sess *engine.Session, tag uint64) {
	s.acks = append(s.acks, settleAck{sess, tag})
}

// Flushed settles the batch: on success (err nil) its deliveries are
// acknowledged; either way the budget comes back and the waiters go.
func (s *Settle) Flushed(err error) {
	if err == nil {
		for _, a := range s.acks {
			_ = a.sess.AcknowledgeAsync(a.tag)
		}
	}
	clear(s.acks)
	s.acks = s.acks[:0]
	if s.Budget != nil {
		s.Budget.Give(s.taken)
	}
	s.taken = 0
	for _, d := range s.dones {
		close(d)
	}
	clear(s.dones)
	s.dones = s.dones[:0]
}
