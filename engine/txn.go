package engine

import (
	"context"
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

type txSend struct {
	d *destination
	m *message.Message
}

func (t *Txn) addSend(d *destination, m *message.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errorf(CodeIllegalState, "transaction already ended")
	}
	t.sends = append(t.sends, txSend{d: d, m: m})
	return nil
}

// Commit applies the transaction. When the store refuses the work, nothing
// is applied, the acknowledged messages are redelivered, and the error has
// CodeTransactionRolledBack.
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

	var plan []*ref
	for _, s := range sends {
		refs, err := t.b.route(s.d, s.m)
		if err != nil {
			t.b.requeue(ctx, acks, false, 0)
			return &Error{Code: CodeTransactionRolledBack, Msg: "transaction rolled back", Err: err}
		}
		plan = append(plan, refs...)
	}
	ops := t.b.storeOpsForAdd(plan, nil)
	ops = t.b.storeOpsForRemove(acks, ops)
	if len(ops) > 0 {
		if err := t.b.store.Update(ctx, ops); err != nil {
			t.b.undoAdd(plan)
			t.b.requeue(context.Background(), acks, false, 0)
			return &Error{Code: CodeTransactionRolledBack, Msg: "transaction rolled back: store failed", Err: err}
		}
	}
	byQueue(acks, func(q *queue, rs []*ref) { q.settle(rs) })
	t.b.enqueue(plan)
	return nil
}

// Rollback discards the sends and redelivers the acknowledged messages with
// the redelivery delay of the session that acknowledged them.
func (t *Txn) Rollback(ctx context.Context) {
	t.rollback(ctx, true)
}

// abandon rolls back a transaction its client left open (connection or
// session closed): the acknowledged messages come back without a
// redelivery delay, as the seed requires for work left uncommitted.
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
	acks := t.acks
	t.sends, t.acks = nil, nil
	t.mu.Unlock()
	t.conn.forgetTxn(t)
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
