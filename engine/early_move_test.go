package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/store"
)

// heldStore is a store that can hold back the writes the engine submits
// (consume before store) while hold is set, so that they stay
// withdrawable as long as a test needs, and refuses the updates refuse
// selects. It offers store.Store and store.Submitter only.
type heldStore struct {
	store.Store
	sub store.Submitter

	mu      sync.Mutex
	hold    bool
	held    []*heldWrite
	refuse  func([]store.Op) bool
	refused int
}

// heldWrite is a submitted write the store holds back: a store.Pending.
type heldWrite struct {
	s         *heldStore
	ops       []store.Op
	done      chan struct{}
	withdrawn bool // guarded by s.mu
	released  bool // guarded by s.mu
	err       error
}

// Done is closed when the write is durable, failed or withdrawn.
func (w *heldWrite) Done() <-chan struct{} { return w.done }

// Err is the write's outcome, once Done is closed.
func (w *heldWrite) Err() error { return w.err }

// Withdraw takes the write back while the store holds it.
func (w *heldWrite) Withdraw() bool {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.withdrawn || w.released {
		return false
	}
	w.withdrawn = true
	w.err = store.ErrWithdrawn
	close(w.done)
	return true
}

// Submit holds ops back while hold is set, and passes them on otherwise.
func (s *heldStore) Submit(ops []store.Op, linger time.Duration) store.Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hold {
		return s.sub.Submit(ops, linger)
	}
	w := &heldWrite{s: s, ops: ops, done: make(chan struct{})}
	s.held = append(s.held, w)
	return w
}

// Update fails when refuse selects ops.
func (s *heldStore) Update(ctx context.Context, ops []store.Op) error {
	s.mu.Lock()
	refuse := s.refuse != nil && s.refuse(ops)
	if refuse {
		s.refused++
	}
	s.mu.Unlock()
	if refuse {
		return errQuotaStoreDown
	}
	return s.Store.Update(ctx, ops)
}

// release stops holding writes back and makes the held ones that were
// not withdrawn durable, in the order they came.
func (s *heldStore) release(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	s.hold = false
	var ws []*heldWrite
	for _, w := range s.held {
		if !w.withdrawn {
			w.released = true
			ws = append(ws, w)
		}
	}
	s.held = nil
	s.mu.Unlock()
	for _, w := range ws {
		w.err = s.Store.Update(context.Background(), w.ops)
		if w.err != nil {
			t.Errorf("held write: %v", w.err)
		}
		close(w.done)
	}
}

// refusedUpdates returns how many updates the store refused.
func (s *heldStore) refusedUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// newHeld opens a broker (AutoCreate, ConsumeBeforeStore) on a heldStore
// over the journaled bbolt store in dir (a new one if "").
func newHeld(t *testing.T, dir string, cfg engine.Config) (*harness, *heldStore) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	js, _ := openDurable(t, dir)
	hs := &heldStore{Store: js, sub: js}
	cfg.Store = hs
	cfg.AutoCreate = true
	cfg.ConsumeBeforeStore = true
	b, err := engine.New(context.Background(), cfg)
	if err != nil {
		_ = js.Close()
		t.Fatal(err)
	}
	h := &harness{t: t, b: b, dir: dir, st: js, cfg: cfg}
	t.Cleanup(h.close)
	return h, hs
}

// TestEarlyMessageMovedToErrorDestinationNeverOnlyInMemory: a persistent
// message sent consume-before-store, rejected by its consumer while its
// first write is still pending, goes to the error destination only once
// that write is durable, and is in the store either way: when the store
// refuses the move, the message stays on its queue, there after a
// restart; when the store accepts it, the message is on the error
// destination only. Its producer is told the message is durable.
func TestEarlyMessageMovedToErrorDestinationNeverOnlyInMemory(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name          string
		refuseMove    bool
		wantA, wantEr int64
	}{
		{"store-refuses-the-move", true, 1, 0},
		{"store-accepts-the-move", false, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pols := newPolicies().set(queueA, func(p *engine.Policy) { p.ErrorDestination = errQueue })
			h, hs := newHeld(t, "", engine.Config{Policy: pols.get})
			h.create(errQueue)
			c := h.conn(engine.ConnectionOptions{})
			s := h.session(c, engine.ClientAcknowledge)
			cons := consumer(t, s, queueA, engine.ConsumerOptions{})
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			p, _ := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge).CreateProducer(queueA)

			hs.mu.Lock()
			hs.hold = true
			hs.mu.Unlock()
			conf, err := p.SendToAsync(ctx, queueA, text("poison"), engine.SendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d := recv(t, cons)
			if tc.refuseMove {
				hs.mu.Lock()
				hs.refuse = hasOp(store.Put, errQueue.Name)
				hs.mu.Unlock()
			}
			settled := make(chan error, 1)
			go func() { settled <- s.Settle(ctx, d.Tag, engine.Rejected) }()
			// The first write is still held back; let it through after a
			// while (at once would hide the order of the two writes).
			time.Sleep(50 * time.Millisecond)
			hs.release(t)
			select {
			case err := <-settled:
				if err != nil {
					t.Fatalf("reject: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the rejection did not return once the first write was durable")
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := conf.Wait(wctx); err != nil {
				t.Fatalf("the producer's confirmation: %v", err)
			}
			if tc.refuseMove {
				eventually(t, "the move refused", func() bool { return hs.refusedUpdates() >= 1 })
			} else {
				eventually(t, "the move made", func() bool { return quotaInfo(t, h.b, errQueue).Messages == 1 })
			}

			_ = c.Close()
			dir, cfg := h.dir, h.cfg
			h.close()
			h, _ = newHeld(t, dir, cfg)
			if a, e := quotaInfo(t, h.b, queueA).Messages, quotaInfo(t, h.b, errQueue).Messages; a != tc.wantA || e != tc.wantEr {
				t.Fatalf("after a restart queue a holds %d messages and the error destination %d; want %d and %d", a, e, tc.wantA, tc.wantEr)
			}
		})
	}
}
