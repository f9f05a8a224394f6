package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFlow waits (boundedly) until the gate's blocked state is want.
func waitFlow(t *testing.T, f *engine.Flow, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ch := f.Changed()
		if blocked, _ := f.Blocked(); blocked == want {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("flow gate never became blocked=%v: %+v", want, f.Stats())
		}
	}
}

// TestFlowMemoryGate: the memory measure crossing the limit holds
// producers, falling just below it does not release them (hysteresis),
// falling below the release mark does; each change is logged and counted.
func TestFlowMemoryGate(t *testing.T) {
	var used atomic.Int64
	var logs syncBuffer
	h := newBroker(t, engine.Config{
		MemoryLimit:         1000,
		MemoryUsage:         used.Load,
		MemoryCheckInterval: time.Millisecond,
		Logger:              slog.New(slog.NewTextHandler(&logs, nil)),
	})
	f := h.b.Flow()
	used.Store(500)
	if blocked, _ := f.Blocked(); blocked {
		t.Fatal("blocked below the limit")
	}
	used.Store(1000)
	waitFlow(t, f, true)
	if _, why := f.Blocked(); why != engine.FlowMemory {
		t.Fatalf("reason %v, want memory", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := f.Wait(ctx); err == nil {
		t.Fatal("Wait returned while blocked")
	}
	cancel()
	used.Store(950) // below the limit, above the release mark: still held
	ch := f.Changed()
	select {
	case <-ch:
		t.Fatalf("released above the release mark: %+v", f.Stats())
	case <-time.After(30 * time.Millisecond):
	}
	released := make(chan error, 1)
	go func() { released <- f.Wait(context.Background()) }()
	used.Store(899)
	waitFlow(t, f, false)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.EngagedMemory != 1 || st.Blocked() || st.BlockedTime <= 0 || st.MemoryLimit != 1000 {
		t.Fatalf("stats %+v", st)
	}
	out := logs.String()
	for _, want := range []string{"flow control engaged", "memory_used=1000", "memory_limit=1000", "flow control ended", "blocked_for="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestFlowMeasuredOnSend: sends adding a 64th of the limit measure the
// memory at once, without waiting for the next tick.
func TestFlowMeasuredOnSend(t *testing.T) {
	var used atomic.Int64
	h := newBroker(t, engine.Config{
		MemoryLimit:         64 << 20,
		MemoryUsage:         used.Load,
		MemoryCheckInterval: time.Hour,
	})
	f := h.b.Flow()
	waitMeasured := func() {
		// The first measurement at start.
		for i := 0; i < 1000 && f.Stats().MemoryUsed == 0; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	used.Store(1)
	waitMeasured()
	used.Store(64 << 20)
	sess := h.session(h.conn(engine.ConnectionOptions{}), engine.AutoAcknowledge)
	prod, err := sess.CreateProducer(queueA)
	if err != nil {
		t.Fatal(err)
	}
	m := &message.Message{Body: message.BytesBody(make([]byte, 2<<20))}
	if err := prod.Send(context.Background(), m, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFlow(t, f, true)
}

// TestFlowDiskAlarm: the disk reason is engaged and released by whoever
// watches the disk, independently of memory.
func TestFlowDiskAlarm(t *testing.T) {
	var used atomic.Int64
	h := newBroker(t, engine.Config{MemoryLimit: 1000, MemoryUsage: used.Load, MemoryCheckInterval: time.Millisecond})
	f := h.b.Flow()
	f.SetDiskAlarm(true, 10, 100)
	if blocked, why := f.Blocked(); !blocked || why != engine.FlowDisk {
		t.Fatalf("blocked %v reason %v, want disk", blocked, why)
	}
	used.Store(2000)
	waitFlow(t, f, true)
	for i := 0; i < 10000; i++ {
		if _, why := f.Blocked(); why == engine.FlowDisk|engine.FlowMemory {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, why := f.Blocked(); why.String() != "memory,disk" {
		t.Fatalf("reasons %q", why)
	}
	f.SetDiskAlarm(false, 200, 100)
	if _, why := f.Blocked(); why != engine.FlowMemory {
		t.Fatalf("reasons %v after the disk alarm ended", why)
	}
	used.Store(0)
	waitFlow(t, f, false)
	st := f.Stats()
	if st.EngagedDisk != 1 || st.EngagedMemory != 1 || st.DiskFree != 200 || st.DiskFreeLimit != 100 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFlowNoLimit: without a limit the gate never engages for memory.
func TestFlowNoLimit(t *testing.T) {
	h := newBroker(t, engine.Config{MemoryUsage: func() int64 { return 1 << 60 }})
	if blocked, _ := h.b.Flow().Blocked(); blocked {
		t.Fatal("blocked without a limit")
	}
	if st := h.b.Flow().Stats(); st.MemoryLimit != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A front-end that tells its clients when they are held, as AMQP 0-9-1's
// connection.blocked and connection.unblocked do, waits on Changed and
// reads Blocked after each change.
func ExampleFlow_Changed() {
	b, err := engine.New(context.Background(), engine.Config{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	fl := b.Flow()
	say := func() {
		if blocked, why := fl.Blocked(); blocked {
			fmt.Println("connection.blocked reason:", why)
		} else {
			fmt.Println("connection.unblocked")
		}
	}
	changed := fl.Changed()
	fl.SetDiskAlarm(true, 10<<20, 1<<30) // the composition root's disk watcher
	<-changed
	say()
	changed = fl.Changed()
	fl.SetDiskAlarm(false, 2<<30, 1<<30)
	<-changed
	say()
	// Output:
	// connection.blocked reason: disk
	// connection.unblocked
}
