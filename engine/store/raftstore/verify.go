package raftstore

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
)

// Leadership verification.
//
// A write withdrawn before the batcher took it (the engine's consume
// before store: a consumer acknowledged the message first) reaches no log
// entry, so nothing in the log shows whether the node that confirmed it
// to its producer was still the leader. Verify closes that gap: it asks
// raft to confirm the leadership with a round of heartbeats that a
// majority must answer (raft.VerifyLeader; no log entry, no sync), so a
// node cut off from the majority confirms nothing. Callers that arrive
// while a round is under way join the next one, which starts when it
// ends: one round serves every caller that came during the round before.

var _ store.Verifier = (*Store)(nil)

// verifyRound is one raft.VerifyLeader and the callers it answers.
type verifyRound struct {
	waiters []verifyWaiter
}

// verifyWaiter is a caller of Verify: its Pending, and raft's term when it
// called, which must still be the term once the round is answered.
type verifyWaiter struct {
	p    *verifyPending
	term uint64
}

// verifyPending is Verify's store.Pending.
type verifyPending struct {
	fin chan struct{}
	err error
}

func (p *verifyPending) Done() <-chan struct{} { return p.fin }
func (p *verifyPending) Err() error            { return p.err }

// Withdraw takes nothing back: a verification is not a write.
func (p *verifyPending) Withdraw() bool { return false }

func (p *verifyPending) finish(err error) *verifyPending {
	p.err = err
	close(p.fin)
	return p
}

// Verify confirms that this node leads (store.Verifier): its Pending is
// done with Err nil once a majority has answered a heartbeat of this
// node's term sent after the call, and that term is still raft's. On a
// node that is not the leader, that has lost the leadership meanwhile,
// or with no answer within Options.ApplyTimeout, Err wraps
// store.ErrIndeterminate.
func (s *Store) Verify() store.Pending { return s.VerifyGen(0) }

// VerifyGen is Verify for writer generation gen (see Begin); 0 is any.
// It also fails unless gen is the generation this node began last, in the
// term it still leads: a writer whose generation began in an earlier
// leadership of this node is not confirmed by the current one.
func (s *Store) VerifyGen(gen uint64) store.Pending {
	p := &verifyPending{fin: make(chan struct{})}
	if s.isClosed() {
		return p.finish(fmt.Errorf("raftstore: verify: %w", store.ErrClosed))
	}
	term := s.raft.CurrentTerm()
	if gen != 0 {
		if b := s.begun.Load(); b == nil || b.gen != gen || b.term != term {
			return p.finish(fmt.Errorf("%w (verify): writer generation %d is not the one this node began in its current leadership", ErrIndeterminate, gen))
		}
	}
	if s.raft.State() != raft.Leader {
		return p.finish(fmt.Errorf("%w (verify): %w", ErrIndeterminate, s.notLeader(nil)))
	}
	s.vmu.Lock()
	if s.vnext == nil {
		s.vnext = &verifyRound{}
	}
	s.vnext.waiters = append(s.vnext.waiters, verifyWaiter{p: p, term: term})
	start := !s.vrunning
	s.vrunning = true
	s.vmu.Unlock()
	if start {
		go s.runVerify()
	}
	return p
}

// runVerify runs rounds while callers wait for one.
func (s *Store) runVerify() {
	for {
		s.vmu.Lock()
		r := s.vnext
		s.vnext = nil
		if r == nil {
			s.vrunning = false
			s.vmu.Unlock()
			return
		}
		s.vmu.Unlock()
		err := s.verifyLeader()
		term := s.raft.CurrentTerm()
		for _, w := range r.waiters {
			e := err
			if e == nil && term != w.term {
				e = fmt.Errorf("%w (verify): the leadership changed (term %d, now %d)", ErrIndeterminate, w.term, term)
			}
			w.p.finish(e)
		}
	}
}

// verifyLeader runs one raft.VerifyLeader, bounded by ApplyTimeout.
func (s *Store) verifyLeader() error {
	err, ok := s.wait(s.raft.VerifyLeader())
	switch {
	case !ok:
		return fmt.Errorf("%w (verify): no majority answered within %v", ErrIndeterminate, s.opts.ApplyTimeout)
	case err != nil:
		return fmt.Errorf("%w (verify): this node does not lead a majority: %w", ErrIndeterminate, err)
	}
	return nil
}
