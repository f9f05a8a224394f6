package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// unsureStore is a real store whose next write carrying mark (in any op's
// value) fails with an error wrapping store.ErrIndeterminate, after being
// applied (apply) or not: what a replicated store's deposed leader sees.
type unsureStore struct {
	store.Store
	mark []byte

	mu    sync.Mutex
	armed bool
	apply bool
	hits  int
}

var errUnsure = fmt.Errorf("test store: leadership lost after the write was taken: %w", store.ErrIndeterminate)

// arm makes the next write carrying the mark indeterminate.
func (s *unsureStore) arm(apply bool) {
	s.mu.Lock()
	s.armed, s.apply = true, apply
	s.mu.Unlock()
}

// hit reports whether ops are the armed write, and disarms.
func (s *unsureStore) hit(ops []store.Op) (hit, apply bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return false, false
	}
	for _, op := range ops {
		if bytes.Contains(op.Value, s.mark) {
			s.armed = false
			s.hits++
			return true, s.apply
		}
	}
	return false, false
}

func (s *unsureStore) Update(ctx context.Context, ops []store.Op) error {
	hit, apply := s.hit(ops)
	if !hit {
		return s.Store.Update(ctx, ops)
	}
	if apply {
		if err := s.Store.Update(ctx, ops); err != nil {
			return err
		}
	}
	return errUnsure
}

// unsureSubmitter is an unsureStore over a store.Submitter (a journal):
// the armed write may be a submitted one.
type unsureSubmitter struct {
	*unsureStore
	sub store.Submitter
}

func (s *unsureSubmitter) Submit(ops []store.Op, linger time.Duration) store.Pending {
	hit, apply := s.hit(ops)
	if !hit {
		return s.sub.Submit(ops, linger)
	}
	if !apply {
		return failedPending{}
	}
	return unsurePending{s.sub.Submit(ops, linger)}
}

// unsurePending is a write that is applied and then reported
// indeterminate.
type unsurePending struct{ store.Pending }

func (p unsurePending) Err() error {
	if err := p.Pending.Err(); err != nil {
		return err
	}
	return errUnsure
}

// failedPending is a write never applied, reported indeterminate.
type failedPending struct{}

func (failedPending) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }
func (failedPending) Err() error            { return errUnsure }
func (failedPending) Withdraw() bool        { return false }

const unsureMark = "UNSURE-WRITE"

// wantUnknown checks err is an unknown outcome, as a client is told.
func wantUnknown(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want an unknown outcome", what)
	}
	if !errors.Is(err, store.ErrIndeterminate) || !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("%s: %v, want it to wrap store.ErrIndeterminate and engine.ErrFenced", what, err)
	}
	if !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), "may have been stored") {
		t.Fatalf("%s: %q does not tell the outcome is unknown", what, err)
	}
	if c := engine.CodeOf(err); c != engine.CodeJMS {
		t.Fatalf("%s: code %v, want JMSException (not a rollback or a refusal)", what, c)
	}
}

// wantRefused checks err is a write refused by a fenced engine.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("%s: %v, want it to wrap engine.ErrFenced", what, err)
	}
	if errors.Is(err, store.ErrIndeterminate) || !strings.Contains(err.Error(), "was not made") {
		t.Fatalf("%s: %v: a refused write's outcome is known, and must say it was not made", what, err)
	}
}

func isFenced(b *engine.Broker) bool {
	select {
	case <-b.Fenced():
		return true
	default:
		return false
	}
}

// TestFenceOnIndeterminateWrite sends persistent messages over a store
// whose write of one of them has an unknown outcome, applied or not, by
// each way a send reaches the store: the sender is told the outcome is
// unknown, the engine refuses every later write, and an engine opened on
// the same store afterwards has the message exactly when it was applied.
func TestFenceOnIndeterminateWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		journal bool // a journal (store.Submitter): SendToAsync submits
		async   bool
		txn     bool
		applied bool
	}{
		{name: "bolt send, applied", applied: true},
		{name: "bolt send, not applied"},
		{name: "bolt commit, applied", txn: true, applied: true},
		{name: "bolt commit, not applied", txn: true},
		{name: "journal async send, applied", journal: true, async: true, applied: true},
		{name: "journal async send, not applied", journal: true, async: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var base store.Store
			var st store.Store
			if tc.journal {
				js, _ := openDurable(t, dir)
				t.Cleanup(func() { _ = js.Close() })
				base = js
				st = &unsureSubmitter{unsureStore: &unsureStore{Store: js, mark: []byte(unsureMark)}, sub: js}
			} else {
				bs, err := boltstore.Open(filepath.Join(dir, "sluice.db"), boltstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = bs.Close() })
				base = bs
				st = &unsureStore{Store: bs, mark: []byte(unsureMark)}
			}
			u, _ := st.(*unsureStore)
			if us, ok := st.(*unsureSubmitter); ok {
				u = us.unsureStore
			}
			ctx := context.Background()
			b, err := engine.New(ctx, engine.Config{Store: st, AutoCreate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()
			if _, err := b.CreateDestination(ctx, queueA); err != nil {
				t.Fatal(err)
			}
			c, err := b.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			mode := engine.AutoAcknowledge
			if tc.txn {
				mode = engine.Transacted
			}
			s, err := c.CreateSession(mode)
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.CreateProducer(queueA)
			if err != nil {
				t.Fatal(err)
			}
			sendOne := func(body string) error {
				if tc.async {
					conf, err := p.SendToAsync(ctx, queueA, text(body), engine.SendOptions{})
					if err != nil {
						return err
					}
					return conf.Wait(ctx)
				}
				if err := p.Send(ctx, text(body), engine.SendOptions{}); err != nil {
					return err
				}
				if tc.txn {
					return s.Commit(ctx)
				}
				return nil
			}
			if err := sendOne("before"); err != nil {
				t.Fatal(err)
			}
			if isFenced(b) {
				t.Fatal("fenced before any unknown outcome")
			}
			u.arm(tc.applied)
			err = sendOne(unsureMark)
			if u.hits != 1 {
				t.Fatalf("the armed write was made %d times, want 1", u.hits)
			}
			wantUnknown(t, "the unsure send", err)
			if !isFenced(b) {
				t.Fatal("not fenced after an unknown outcome")
			}
			if cause := b.FenceCause(); !errors.Is(cause, store.ErrIndeterminate) {
				t.Fatalf("FenceCause = %v", cause)
			}
			// Every later write is refused, and says so.
			wantRefused(t, "a send after the fence", sendOne("after"))
			if _, err := b.CreateDestination(ctx, message.Destination{Kind: message.Queue, Name: "other"}); err == nil {
				t.Fatal("a destination was created by a fenced engine")
			} else {
				wantRefused(t, "create after the fence", err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			// A new engine on the same store has what was applied.
			b2, err := engine.New(ctx, engine.Config{Store: base})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b2.Close() }()
			c2, err := b2.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c2.Start(); err != nil {
				t.Fatal(err)
			}
			s2, err := c2.CreateSession(engine.AutoAcknowledge)
			if err != nil {
				t.Fatal(err)
			}
			got := bodies(recvAll(t, consumer(t, s2, queueA, engine.ConsumerOptions{}), 300*time.Millisecond))
			want := []string{"before"}
			if tc.applied {
				want = append(want, unsureMark)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("recovered %q, want %q", got, want)
			}
			if isFenced(b2) {
				t.Fatal("the new engine is fenced")
			}
		})
	}
}

// TestFenceKeepsAcknowledgedDelivery acknowledges a delivery whose delete
// has an unknown outcome: the acknowledgement is not reported failed, the
// delivery is not given back to the session, and a new engine on the store
// has the message exactly when the delete was not applied.
func TestFenceKeepsAcknowledgedDelivery(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			bs, err := boltstore.Open(filepath.Join(t.TempDir(), "sluice.db"), boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = bs.Close() })
			u := &deleteUnsure{Store: bs}
			ctx := context.Background()
			b, err := engine.New(ctx, engine.Config{Store: u, AutoCreate: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()
			c, err := b.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			s, err := c.CreateSession(engine.ClientAcknowledge)
			if err != nil {
				t.Fatal(err)
			}
			send(t, s, queueA, "m", engine.SendOptions{})
			d := recv(t, consumer(t, s, queueA, engine.ConsumerOptions{}))
			u.arm(applied)
			wantUnknown(t, "the unsure acknowledgement", s.Acknowledge(ctx, d.Tag))
			// Not given back: acknowledging it again finds no delivery.
			if err := s.Acknowledge(ctx, d.Tag); err == nil || errors.Is(err, engine.ErrFenced) {
				t.Fatalf("second acknowledgement: %v, want no such delivery (it was not given back)", err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b2, err := engine.New(ctx, engine.Config{Store: bs})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b2.Close() }()
			c2, err := b2.Connect(engine.ConnectionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c2.Start(); err != nil {
				t.Fatal(err)
			}
			s2, err := c2.CreateSession(engine.AutoAcknowledge)
			if err != nil {
				t.Fatal(err)
			}
			got := recvAll(t, consumer(t, s2, queueA, engine.ConsumerOptions{}), 300*time.Millisecond)
			if want := map[bool]int{true: 0, false: 1}[applied]; len(got) != want {
				t.Fatalf("recovered %d messages, want %d", len(got), want)
			}
			if !applied && !got[0].Redelivered {
				t.Fatal("the message whose acknowledgement was not applied came back not flagged redelivered")
			}
		})
	}
}

// deleteUnsure is a real store whose next write made only of deletes has
// an unknown outcome, applied or not.
type deleteUnsure struct {
	store.Store
	mu           sync.Mutex
	armed, apply bool
}

func (s *deleteUnsure) arm(apply bool) {
	s.mu.Lock()
	s.armed, s.apply = true, apply
	s.mu.Unlock()
}

func (s *deleteUnsure) Update(ctx context.Context, ops []store.Op) error {
	s.mu.Lock()
	hit := s.armed && len(ops) > 0
	for _, op := range ops {
		hit = hit && op.Kind == store.Delete
	}
	apply := s.apply
	if hit {
		s.armed = false
	}
	s.mu.Unlock()
	if !hit {
		return s.Store.Update(ctx, ops)
	}
	if apply {
		if err := s.Store.Update(ctx, ops); err != nil {
			return err
		}
	}
	return errUnsure
}
