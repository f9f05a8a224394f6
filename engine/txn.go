package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/message"
)

// Txn is a local transaction over sends and acknowledgements: on Commit
// every send becomes visible and every acknowledgement takes effect, durably
// and at once; on Rollback the sends vanish and the acknowledged messages
// are redelivered.
type Txn struct {
	b    *Broker
	conn *Connection

	mu       sync.Mutex
	sends    []txSend
	acks     []*ref
	ackDelay time.Duration
	done     bool
}

// txSend is one send of a transaction, routed when it was made: its refs
// hold the message's room under the destination's quota (queue.reserve,
// topic.reserve) until the transaction ends, so that a transaction cannot
// take more than the quota allows, nor lose its room to later senders.
type txSend struct {
	d    *destination
	m    *message.Message
	refs []*ref
}

// addSend takes m's room under d's quota and adds it to the transaction.
// A send over quota fails at once (or once the policy's
// BlockingSendTimeout passes) with CodeResourceAllocation, as a send
// outside a transaction does; the transaction stays open.
func (t *Txn) addSend(d *destination, m *message.Message) error {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done {
		return errorf(CodeIllegalState, "transaction already ended")
	}
	refs, err := t.b.reserveSend(d, m)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if t.done {
		// Ended while the send waited for room.
		t.mu.Unlock()
		t.b.undoAdd(refs)
		return errorf(CodeIllegalState, "transaction already ended")
	}
	t.sends = append(t.sends, txSend{d: d, m: m, refs: refs})
	t.mu.Unlock()
	return nil
}

// reserveSend routes a stamped message to d and reserves its room under
// d's quota (a queue's, or what a topic's subscriptions hold together),
// waiting up to the policy's BlockingSendTimeout. The refs are neither
// stored nor enqueued: b.enqueue turns the reservation into held messages,
// b.undoAdd gives it back.
func (b *Broker) reserveSend(d *destination, m *message.Message) ([]*ref, error) {
	pol := b.policyFor(d.dest)
	if d.q != nil {
		if err := d.q.reserve(m, pol); err != nil {
			return nil, err
		}
	}
	refs, err := b.route(d, m)
	if err != nil {
		if d.q != nil {
			d.q.unreserve(m)
		}
		return nil, fmt.Errorf("route message to %s: %w", d.dest, err)
	}
	if d.t != nil {
		if err := d.t.reserve(m, refs, pol); err != nil {
			b.undoAdd(refs)
			return nil, err
		}
	}
	return refs, nil
}

// Commit applies the transaction, all or nothing: its sends (routed and
// holding their room under the quota since they were made) are stored with
// its acknowledgements in one store update, then enqueued. When the store
// refuses the work, nothing is applied: the sends give their room back,
// the acknowledged messages are redelivered, and the error has
// CodeTransactionRolledBack. When the store cannot tell whether it applied
// the work (store.ErrIndeterminate), the outcome is unknown: the error has
// CodeJMS, wraps ErrFenced, and nothing is undone (fence.go).
func (t *Txn) Commit(ctx context.Context) error {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return errorf(CodeIllegalState, "transaction already ended")
	}
	t.done = true
	sends, acks := t.sends, t.acks
	t.sends, t.acks = nil, nil
	t.mu.Unlock()
	t.conn.forgetTxn(t)

	plan := sendRefs(sends)
	recs := recsOf(acks)
	ops := t.b.storeOpsForAdd(plan, nil)
	ops = t.b.storeOpsForUndoableRemove(acks, ops)
	if len(ops) > 0 {
		if err := t.b.store.Update(ctx, ops); err != nil {
			if indeterminate(err) {
				// Fenced: the commit may be stored; it is not reported
				// rolled back, and nothing is undone.
				return outcomeUnknown("the transaction's commit", err)
			}
			t.b.undoAdd(plan)
			// storeOpsForUndoableRemove let go of the acknowledged
			// messages' store records: they are still there, and so are
			// the messages.
			for i, r := range acks {
				if recs[i] != nil && r.rec == nil {
					recs[i].refs.Add(1)
					r.rec = recs[i]
				}
			}
			t.b.requeue(context.Background(), acks, false, 0)
			return &Error{Code: CodeTransactionRolledBack, Msg: "transaction rolled back: store failed", Err: err}
		}
	}
	byQueue(acks, func(q *queue, rs []*ref) { q.settle(rs) })
	t.b.enqueue(plan)
	return nil
}

// sendRefs returns the refs of sends, in the order they were made.
func sendRefs(sends []txSend) []*ref {
	var refs []*ref
	for _, s := range sends {
		refs = append(refs, s.refs...)
	}
	return refs
}

// Rollback discards the sends, giving back their room under the quota, and
// redelivers the acknowledged messages with the redelivery delay of the
// session that acknowledged them.
func (t *Txn) Rollback(ctx context.Context) {
	t.rollback(ctx, true)
}

// abandon rolls back a transaction its client left open (connection or session
// closed): its sends give back their room under the quota, and the
// acknowledged messages come back without a redelivery delay, as WebLogic JMS
// "Managing Your Applications", "Setting a Redelivery Delay for Messages",
// requires for work left uncommitted.
func (t *Txn) abandon() {
	t.rollback(context.Background(), false)
}

func (t *Txn) rollback(ctx context.Context, failed bool) {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.done = true
	sends, acks := t.sends, t.acks
	t.sends, t.acks = nil, nil
	t.mu.Unlock()
	t.conn.forgetTxn(t)
	t.b.undoAdd(sendRefs(sends)) // their room under the quota comes back
	t.b.requeue(ctx, acks, failed, t.ackDelay)
}

// byQueue calls fn once per queue with that queue's refs, in order.
func byQueue(refs []*ref, fn func(*queue, []*ref)) {
	if len(refs) == 0 {
		return
	}
	first := refs[0].q
	same := true
	for _, r := range refs[1:] {
		if r.q != first {
			same = false
			break
		}
	}
	if same {
		fn(first, refs)
		return
	}
	groups := map[*queue][]*ref{}
	var order []*queue
	for _, r := range refs {
		if _, ok := groups[r.q]; !ok {
			order = append(order, r.q)
		}
		groups[r.q] = append(groups[r.q], r)
	}
	for _, q := range order {
		fn(q, groups[q])
	}
}
