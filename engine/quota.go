package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// quota is where sends wait for room under a destination's quota (its
// policy's MaxMessages and MaxBytes), a queue's or a topic's. What counts
// as held is its owner's business: a queue's messages and reservations,
// under the queue's mu; a topic's, the sum over its subscriptions'
// queues. The waiting and the waking are the quota's: a waiter takes the
// channel of the current round before it looks for room, and sleeps on
// it; freed closes that channel, which starts a new round, so a waiter
// never misses room that came back after it looked, and never polls.
//
// quota.mu is a leaf: nothing else is locked under it, and freed may be
// called with any lock held (a queue calls it under its mu).
type quota struct {
	mu      sync.Mutex
	round   chan struct{} // closed when room comes back; nil until a waiter needs one
	waiters atomic.Int32  // sends waiting: freed does nothing without any
}

// roomState is what a look for room under a quota found.
type roomState int

const (
	roomFull  roomState = iota // no room: wait, or fail
	roomTaken                  // room found and reserved
	roomGone                   // the destination was deleted
)

// next returns the channel that the next freed closes.
func (qt *quota) next() <-chan struct{} {
	qt.mu.Lock()
	defer qt.mu.Unlock()
	if qt.round == nil {
		qt.round = make(chan struct{})
	}
	return qt.round
}

// freed wakes the sends waiting for room: messages left, a reservation
// ended, or the destination was deleted.
func (qt *quota) freed() {
	if qt.waiters.Load() == 0 {
		return
	}
	qt.mu.Lock()
	if qt.round != nil {
		close(qt.round)
		qt.round = nil
	}
	qt.mu.Unlock()
}

// take looks for room with try, which reserves it when there is some, and
// while try finds none waits for freed and looks again, until timeout
// has passed (then it looks a last time). It returns what the last look
// found; with a timeout of zero or less it looks once. try is told
// whether the send has waited: a send that waited for room fails when its
// destination is deleted meanwhile, even if the deletion made room.
func (qt *quota) take(timeout time.Duration, try func(waited bool) roomState) roomState {
	if st := try(false); st != roomFull || timeout <= 0 {
		return st
	}
	// Counted before the round is taken and the room looked for, so that a
	// freed after that look sees the waiter.
	qt.waiters.Add(1)
	defer qt.waiters.Add(-1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		round := qt.next()
		if st := try(true); st != roomFull {
			return st
		}
		select {
		case <-round:
		case <-timer.C:
			return try(true)
		}
	}
}

// reserve checks the topic's quota for m, which refs (one per subscription
// that takes it) are about to add, and reserves the room in their queues
// (see queue.reserve), or fails with a resource-allocation error once
// pol.BlockingSendTimeout has passed without room. What the quota bounds is
// what the subscriptions hold together, each copy of a message counting
// once: a message two subscriptions take needs room for two. A message no
// subscription takes needs none. A send that waits sleeps on t.quota until
// a subscription's queue frees room (queue.roomFreed).
func (t *topic) reserve(m *message.Message, refs []*ref, pol Policy) error {
	if (pol.MaxMessages <= 0 && pol.MaxBytes <= 0) || len(refs) == 0 {
		return nil
	}
	n := int64(len(refs))
	size := int64(m.Size())
	var count, bytes int64
	st := t.quota.take(pol.BlockingSendTimeout, func(waited bool) roomState {
		t.quotaMu.Lock()
		defer t.quotaMu.Unlock()
		if waited && t.deleted {
			return roomGone
		}
		count, bytes = t.held()
		if (pol.MaxMessages > 0 && count+n > pol.MaxMessages) ||
			(pol.MaxBytes > 0 && bytes+n*size > pol.MaxBytes) {
			return roomFull
		}
		for _, r := range refs {
			r.q.reserveFor(m, size)
		}
		return roomTaken
	})
	switch {
	case st == roomTaken:
		return nil
	case pol.BlockingSendTimeout <= 0:
		return errorf(CodeResourceAllocation, "topic %s is full: its subscriptions hold %d messages, %d bytes and %d more copies (%d bytes) would exceed the quota of %d messages, %d bytes",
			t.d.dest, count, bytes, n, n*size, pol.MaxMessages, pol.MaxBytes)
	case st == roomGone:
		return errorf(CodeResourceAllocation, "destination %s was deleted while the send waited for quota", t.d.dest)
	}
	return errorf(CodeResourceAllocation, "topic %s is full (quota %d messages, %d bytes; its subscriptions hold %d, %d bytes); waited %s",
		t.d.dest, pol.MaxMessages, pol.MaxBytes, count, bytes, pol.BlockingSendTimeout)
}

// reserveRoom reserves room under d's quota for the messages of refs,
// routed to d by an administrator's move or import, without waiting: a
// queue's quota is checked for all of them at once, counting the room
// that sends in progress (and open transactions) have reserved; a topic's
// quota bounds what its subscriptions hold together (see topic.reserve),
// checked message by message. On failure some room may be reserved: the
// caller gives it back with undoAdd(refs), as it does when the store
// write fails; enqueue turns it into held messages.
func (b *Broker) reserveRoom(d *destination, refs []*ref) error {
	if len(refs) == 0 {
		return nil
	}
	pol := b.policyFor(d.dest)
	if pol.MaxMessages <= 0 && pol.MaxBytes <= 0 {
		return nil
	}
	pol.BlockingSendTimeout = 0 // an administrator's request fails at once
	if d.q != nil {
		msgs := make([]*message.Message, len(refs))
		for i, r := range refs {
			msgs[i] = r.msg
		}
		return d.q.reserveAll(msgs, pol)
	}
	// A topic: the refs of one message (one per subscription taking it)
	// are consecutive.
	for len(refs) > 0 {
		n := 1
		for n < len(refs) && refs[n].msg == refs[0].msg {
			n++
		}
		if err := d.t.reserve(refs[0].msg, refs[:n], pol); err != nil {
			return err
		}
		refs = refs[n:]
	}
	return nil
}
