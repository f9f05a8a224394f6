package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/sluicemq/sluice/engine/store"
)

// AcknowledgeAsync acknowledges one delivery without waiting for the store:
// the acknowledgement is written in the background, as automatic
// acknowledgements are. A front-end uses it when the protocol's "auto" mode
// means "acknowledged once written to the client" (STOMP ack:auto); a crash
// before the write reaches the disk brings the message back flagged as
// redelivered.
func (s *Session) AcknowledgeAsync(tag uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.settleTags(context.Background(), tag, false, false)
}

// AcknowledgeConfirm acknowledges the delivery with the given tag as
// Acknowledge does (every delivery up to it in a CLIENT_ACKNOWLEDGE
// session), without waiting for the store. The acknowledgement takes effect
// at once: the message is never delivered again while the broker runs. Its
// delete is submitted to the store to be committed with other writes, after
// every write submitted before it; the Confirmation tells when it is durable.
//
// A crash before then, or a store that fails the write (Wait returns the
// error; the failure is logged even when nobody waits), leaves the message
// stored: it comes back after a restart flagged redelivered, with its
// delivery count. Over a store that cannot take a write back (no
// store.Submitter) it is Acknowledge, and the Confirmation is nil.
func (s *Session) AcknowledgeConfirm(tag uint64) (*Confirmation, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if s.mode == Transacted {
		return nil, errorf(CodeIllegalState, "acknowledge in a transacted session: commit instead")
	}
	b := s.conn.b
	sub, ok := b.submitter()
	if b.store != nil && !ok {
		return nil, s.settleTags(context.Background(), tag, s.mode == ClientAcknowledge, true)
	}
	ds, err := s.takePending(tag, s.mode == ClientAcknowledge)
	if err != nil {
		return nil, err
	}
	refs := refsOf(ds)
	if len(refs) == 0 {
		return nil, nil
	}
	ops := b.storeOpsForRemove(refs, nil)
	var conf *Confirmation
	if len(ops) > 0 && sub != nil {
		p := sub.Submit(ops, markLinger)
		conf = &Confirmation{ack: p, dest: refs[0].q.dest}
		b.acks.watch(b, p, len(refs))
	}
	byQueue(refs, func(q *queue, rs []*ref) { q.settle(rs) })
	return conf, nil
}

// ackWatch follows the acknowledgement writes submitted by
// AcknowledgeConfirm, in the order submitted, so that a failure is logged
// when no front-end waits for it, and Close can wait for them. A goroutine
// runs while there are any.
type ackWatch struct {
	mu      sync.Mutex
	pending []watchedAck
	running bool
	idle    chan struct{} // closed when pending empties; nil while idle
}

// watchedAck is one submitted write of n acknowledgements, or (n 0) of
// redelivery records; then, if set, runs once it is done, with its error.
type watchedAck struct {
	p    store.Pending
	n    int
	then func(error)
}

// watch adds p, the write of n acknowledgements.
func (w *ackWatch) watch(b *Broker, p store.Pending, n int) {
	w.watchThen(b, p, n, nil)
}

// watchThen adds p, and then to run, in order, once p is done.
func (w *ackWatch) watchThen(b *Broker, p store.Pending, n int, then func(error)) {
	w.mu.Lock()
	w.pending = append(w.pending, watchedAck{p: p, n: n, then: then})
	start := !w.running
	if start {
		w.running = true
		w.idle = make(chan struct{})
	}
	w.mu.Unlock()
	if start {
		go w.run(b)
	}
}

// run waits for the watched writes in order and logs the failed ones, one
// line per run of consecutive failures.
func (w *ackWatch) run(b *Broker) {
	failed, first := 0, error(nil)
	report := func() {
		if failed > 0 {
			b.log.Error("acknowledgements not stored: the messages come back, flagged redelivered, after a restart",
				slog.Int("acknowledgements", failed), slog.Any("err", first))
			failed, first = 0, nil
		}
	}
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.running = false
			close(w.idle)
			w.idle = nil
			w.mu.Unlock()
			report()
			return
		}
		a := w.pending[0]
		w.mu.Unlock()
		<-a.p.Done()
		err := a.p.Err()
		if a.then != nil {
			a.then(err)
		}
		switch {
		case err != nil && a.n > 0:
			if failed == 0 {
				first = err
			}
			failed += a.n
		case err == nil:
			report()
		}
		w.mu.Lock()
		w.pending[0] = watchedAck{}
		w.pending = w.pending[1:]
		w.mu.Unlock()
	}
}

// wait returns once every write watched so far is done, or ctx ends.
func (w *ackWatch) wait(ctx context.Context) error {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for acknowledgement writes: %w", ctx.Err())
	}
}

// AcknowledgeLater acknowledges the delivery with the given tag as
// Acknowledge does (every delivery up to it in a CLIENT_ACKNOWLEDGE
// session), without waiting for the store: its delete is submitted to be
// committed with other writes, and the acknowledgement takes effect once
// the delete is durable. Until then the message stays in flight to this
// session (it is not delivered to anyone else). Should the store fail the
// write, the deliveries are the session's again, unacknowledged, as after
// a failed Acknowledge: the Confirmation's Wait returns the error only
// once they are. A front-end uses it where the client waits for the
// broker to settle an acknowledgement (AMQP rcv-settle-mode second).
// Over a store that cannot take a write back (no store.Submitter) it is
// Acknowledge, and the Confirmation is nil.
func (s *Session) AcknowledgeLater(tag uint64) (*Confirmation, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if s.mode == Transacted {
		return nil, errorf(CodeIllegalState, "acknowledge in a transacted session: commit instead")
	}
	b := s.conn.b
	cumulative := s.mode == ClientAcknowledge
	sub, ok := b.submitter()
	if !ok {
		return nil, s.settleTags(context.Background(), tag, cumulative, true)
	}
	ds, err := s.takePending(tag, cumulative)
	if err != nil {
		return nil, err
	}
	refs := refsOf(ds)
	if len(refs) == 0 {
		return nil, nil
	}
	recs := recsOf(refs)
	ops := b.storeOpsForRemove(refs, nil)
	if len(ops) == 0 {
		byQueue(refs, func(q *queue, rs []*ref) { q.settle(rs) })
		return nil, nil
	}
	p := sub.Submit(ops, markLinger)
	rp := &releasedPending{Pending: p, done: make(chan struct{})}
	b.acks.watchThen(b, p, 0, func(err error) {
		defer close(rp.done)
		if err == nil {
			byQueue(refs, func(q *queue, rs []*ref) { q.settle(rs) })
			return
		}
		if indeterminate(err) {
			return // fenced: neither settled nor given back
		}
		var ae *ackError
		if errors.As(b.settleFailed(refs, recs, err), &ae) && len(ae.settled) > 0 {
			ds = slices.DeleteFunc(ds, func(d delivery) bool { return slices.Contains(ae.settled, d.r) })
		}
		s.restorePending(context.Background(), ds)
	})
	return &Confirmation{ack: rp, dest: refs[0].q.dest}, nil
}
