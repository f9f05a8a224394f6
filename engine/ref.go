package engine

import (
	"sync/atomic"

	"github.com/sluicemq/sluice/engine/message"
)

// refState is where a ref is in its life.
type refState uint8

const (
	refReady     refState = iota // in the queue's ready lists
	refScheduled                 // waiting in the scheduler for its delivery time
	refInflight                  // dispatched to a consumer, not yet settled
	refGone                      // acknowledged, expired, moved or purged
	refHeld                      // back from a consumer, waiting for its store record
	refPaged                     // left memory: only its store record holds it (page.go)
	refIndexing                  // scheduled, its time index entry being written (pager.go)
)

// stored is the store-side identity of a persistent message shared by the
// refs of every queue and subscription that holds it. The message record is
// deleted when the last ref goes.
type stored struct {
	key  uint64
	refs atomic.Int32
	// shared is set, before any of its refs is enqueued, when more than
	// one queue holds the message (a topic's subscriptions): its ref
	// records say so, so that recovery and paging count its holders.
	shared bool
	// transient is set for a non-persistent message written only to wait
	// in the store behind a backlog (queueRef): recovery discards it.
	transient bool
	// early is set for a message sent "consume before store": its first
	// write may still be taken back (see early.go).
	early *earlyWrite
	// uncounted is set once a holder of a shared message was paged out:
	// refs no longer counts every holder, so no holder deletes the
	// message record; each removal leaves it to the collector (collect.go).
	uncounted atomic.Bool
}

// ref is one queue's (or subscription's) hold on a message: the immutable
// message plus this queue's delivery state.
type ref struct {
	msg  *message.Message
	rec  *stored // nil when the message is not in the store for this queue
	seq  uint64  // arrival order; also the store key of message and ref
	size int32   // the message's size, for byte quotas (computed once)
	q    *queue

	count     int32 // delivery attempts made (JMSXDeliveryCount of the latest)
	marked    int32 // delivery attempts recorded in the store
	deliverAt int64 // ms; while in the future the ref is invisible
	state     refState
	indexed   bool      // read back from the time index: its removal deletes the entry (pager.go)
	gen       uint32    // the queue generation it was scheduled in
	owner     *Consumer // while in flight
}

// persistent reports whether the ref is kept in the store.
func (r *ref) persistent() bool { return r.rec != nil }

// refList is a FIFO of refs ordered by seq, allowing the sorted insert that
// ordered redelivery needs and removal in the middle for selectors.
type refList struct {
	items []*ref
	head  int
}

func (l *refList) len() int { return len(l.items) - l.head }

func (l *refList) at(i int) *ref { return l.items[l.head+i] }

// insert adds r in seq order; a new message lands at the tail in O(1).
func (l *refList) insert(r *ref) {
	n := len(l.items)
	if n == l.head || l.items[n-1].seq < r.seq {
		l.items = append(l.items, r)
		return
	}
	lo, hi := l.head, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.items[mid].seq < r.seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == l.head && l.head > 0 {
		l.head--
		l.items[l.head] = r
		return
	}
	l.items = append(l.items, nil)
	copy(l.items[lo+1:], l.items[lo:])
	l.items[lo] = r
}

// removeAt removes and returns the i-th ref.
func (l *refList) removeAt(i int) *ref {
	j := l.head + i
	r := l.items[j]
	if i == 0 {
		l.items[j] = nil
		l.head++
		if l.head == len(l.items) {
			l.items = l.items[:0]
			l.head = 0
		} else if l.head > 1024 && l.head > len(l.items)/2 {
			n := copy(l.items, l.items[l.head:])
			clear(l.items[n:])
			l.items = l.items[:n]
			l.head = 0
		}
		return r
	}
	copy(l.items[j:], l.items[j+1:])
	l.items[len(l.items)-1] = nil
	l.items = l.items[:len(l.items)-1]
	return r
}

// removeRef removes r if present (linear search from the head).
func (l *refList) removeRef(r *ref) bool {
	for i := 0; i < l.len(); i++ {
		if l.at(i) == r {
			l.removeAt(i)
			return true
		}
	}
	return false
}
