package raftstore

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// peerWatch is the leader's news of its followers' heartbeats, from raft's
// observations: hashicorp/raft keeps each follower's last contact to
// itself, but tells an observer when heartbeats to a follower start to fail
// (with the last contact) and when they resume. Its lock is taken only by
// its methods.
type peerWatch struct {
	mu      sync.Mutex
	failing map[string]time.Time // peer ID → its last answer (zero: none) while its heartbeats fail
}

// observe registers a raft observer feeding w until stop is closed; done is
// closed when it has stopped. Observations are not blocked on: raft drops
// one the channel has no room for, and its buffer is far bigger than the
// observations of one heartbeat round.
func (w *peerWatch) observe(r *raft.Raft, stop <-chan struct{}, done chan<- struct{}) {
	ch := make(chan raft.Observation, 256)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.RaftState, raft.PeerObservation:
			return true
		}
		return false
	})
	r.RegisterObserver(obs)
	go func() {
		defer close(done)
		defer r.DeregisterObserver(obs)
		for {
			select {
			case <-stop:
				return
			case o := <-ch:
				w.note(o.Data)
			}
		}
	}()
}

// note takes in one observation.
func (w *peerWatch) note(data any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch d := data.(type) {
	case raft.FailedHeartbeatObservation:
		if w.failing == nil {
			w.failing = map[string]time.Time{}
		}
		if _, ok := w.failing[string(d.PeerID)]; !ok {
			w.failing[string(d.PeerID)] = d.LastContact
		}
	case raft.ResumedHeartbeatObservation:
		delete(w.failing, string(d.PeerID))
	case raft.PeerObservation:
		if d.Removed {
			delete(w.failing, string(d.Peer.ID))
		}
	case raft.RaftState:
		// A new role: heartbeats, if any, start again from this leadership.
		clear(w.failing)
	}
}

// failingSince reports whether heartbeats to peer id fail, and its last
// answer before they did (zero when it never answered this leader).
func (w *peerWatch) failingSince(id string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.failing[id]
	return t, ok
}
