package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/raftstore"
)

// openSingleRaft opens a one-node raft store that leads.
func openSingleRaft(t *testing.T) *raftstore.Store {
	t.Helper()
	rs, err := raftstore.Open(raftstore.Options{NodeID: "n1", BindAddr: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "raft"), Bootstrap: true,
		HeartbeatTimeout: 50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond, LeaderLeaseTimeout: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	waitUntil(t, 10*time.Second, "the single node leads", rs.IsLeader)
	return rs
}

// A term's store writes until it is fenced and refuses every write after,
// Update and Submit alike; an unknown outcome fences it and wakes the
// cluster node once; and an engine on a fenced store confirms no send.
func TestFencedStore(t *testing.T) {
	rs := openSingleRaft(t)
	woken := 0
	fs := &fencedStore{rs: rs, onIndeterminate: func() { woken++ }}
	ctx := context.Background()
	put := []store.Op{{Kind: store.Put, Bucket: "b", Key: []byte("k"), Value: []byte("v")}}
	if err := fs.Update(ctx, put); err != nil {
		t.Fatalf("Update before the fence: %v", err)
	}
	p := fs.Submit(put, 0)
	<-p.Done()
	if err := p.Err(); err != nil {
		t.Fatalf("Submit before the fence: %v", err)
	}

	eng, err := engine.New(ctx, engine.Config{Store: fs, AutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	conn, err := eng.Connect(engine.ConnectionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.CreateSession(engine.AutoAcknowledge)
	if err != nil {
		t.Fatal(err)
	}
	q := message.Destination{Kind: message.Queue, Name: "fenced"}
	prod, err := sess.CreateProducer(q)
	if err != nil {
		t.Fatal(err)
	}
	persistent := func(body string) *message.Message {
		return &message.Message{DeliveryMode: message.Persistent, Body: message.TextBody(body)}
	}
	if err := prod.Send(ctx, persistent("before"), engine.SendOptions{}); err != nil {
		t.Fatalf("send before the fence: %v", err)
	}

	// An unknown outcome fences the term, and wakes the node once.
	unknown := fmt.Errorf("update: %w", raftstore.ErrIndeterminate)
	if err := fs.check(unknown); !errors.Is(err, raftstore.ErrIndeterminate) {
		t.Fatalf("check passed on %v", err)
	}
	_ = fs.check(unknown)
	if !fs.fenced() || woken != 1 {
		t.Fatalf("after unknown outcomes: fenced %v, woken %d times; want true, 1", fs.fenced(), woken)
	}
	if err := fs.Update(ctx, put); !errors.Is(err, errFenced) {
		t.Errorf("Update after the fence: %v, want errFenced", err)
	}
	p = fs.Submit(put, 0)
	<-p.Done()
	if err := p.Err(); !errors.Is(err, errFenced) {
		t.Errorf("Submit after the fence: %v, want errFenced", err)
	}

	// The engine is told its writes failed: no send is confirmed.
	if err := prod.Send(ctx, persistent("after"), engine.SendOptions{}); err == nil {
		t.Error("a persistent send on a fenced store was confirmed")
	}
	c, err := prod.SendToAsync(ctx, q, persistent("after-async"), engine.SendOptions{})
	if err == nil && c != nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = c.Wait(wctx)
		cancel()
	}
	if err == nil {
		t.Error("an asynchronous persistent send on a fenced store was confirmed")
	}
	n := 0
	if err := rs.ForEach("msgs", func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the replicated store holds %d messages, want 1 (the one sent before the fence)", n)
	}
}
