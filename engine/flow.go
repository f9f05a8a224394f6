package engine

import (
	"context"
	"log/slog"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flow control: a broker-wide gate that says when producers must be held.
//
// Two resources engage it: the broker's message memory, measured as the
// process's live Go heap (as RabbitMQ's vm_memory_high_watermark measures
// process memory), and the free space of the data directory, which the
// composition root measures and reports through SetDiskAlarm. The engine
// itself does not block sends: each protocol front-end holds its producers
// with its own flow control (STOMP stops reading a publishing connection,
// AMQP 1.0 withholds link credit, AMQP 0-9-1 would send
// connection.blocked), so that consumers on the same connections keep
// acknowledging and the backlog drains. Nothing is dropped.

// FlowReason says which resources hold producers; a set of bits.
type FlowReason uint8

// Flow reasons.
const (
	// FlowMemory: the message memory reached Config.MemoryLimit.
	FlowMemory FlowReason = 1 << iota
	// FlowDisk: the data directory's free space fell below its limit.
	FlowDisk
)

// String names the reasons: "memory", "disk", "memory,disk", or "" for none.
func (r FlowReason) String() string {
	var parts []string
	if r&FlowMemory != 0 {
		parts = append(parts, "memory")
	}
	if r&FlowDisk != 0 {
		parts = append(parts, "disk")
	}
	return strings.Join(parts, ",")
}

// Memory gate defaults.
const (
	// DefaultMemoryCheckInterval is how often the memory is measured when
	// Config.MemoryCheckInterval is 0. Sends also trigger a measurement
	// once they have added a 64th of the limit since the last one.
	DefaultMemoryCheckInterval = 50 * time.Millisecond
	// MemoryReleasePercent is the share of the limit the memory must fall
	// below before a memory block ends (hysteresis: a gate that opened at
	// the limit would close again at the next message).
	MemoryReleasePercent = 90
)

// FlowStats is the state of the flow gate.
type FlowStats struct {
	// Reasons holds producers now; zero when they flow.
	Reasons FlowReason
	// Since is when the current block began (zero when not blocked).
	Since time.Time
	// MemoryLimit is the limit in bytes (0: no limit); MemoryUsed the last
	// measurement.
	MemoryLimit, MemoryUsed int64
	// DiskFree and DiskFreeLimit are the last free space of the data
	// directory that SetDiskAlarm reported, and its limit (0: not watched).
	DiskFree, DiskFreeLimit int64
	// Engaged counts the blocks begun, per reason.
	EngagedMemory, EngagedDisk uint64
	// BlockedTime is how long producers have been held in total, the
	// current block included.
	BlockedTime time.Duration
}

// Blocked reports whether producers are held.
func (s FlowStats) Blocked() bool { return s.Reasons != 0 }

// Flow is the broker's flow gate (Broker.Flow). Its methods are safe for
// concurrent use.
type Flow struct {
	limit   int64
	release int64
	measure func() int64
	log     *slog.Logger
	now     func() time.Time
	step    int64         // bytes sent between on-demand measurements
	poke    chan struct{} // asks run for a measurement now

	used     atomic.Int64
	sent     atomic.Int64 // bytes sent since the last measurement
	blocked  atomic.Bool  // reasons != 0, for the fast path
	diskLow  atomic.Bool
	diskFree atomic.Int64
	diskLim  atomic.Int64

	mu         sync.Mutex
	reasons    FlowReason
	since      time.Time
	changed    chan struct{} // closed at the next change of reasons
	engaged    [2]uint64
	blockedFor time.Duration // of the blocks that ended
}

// newFlow makes the gate for cfg; measure nil is the Go heap.
func newFlow(cfg Config, log *slog.Logger, now func() time.Time) *Flow {
	f := &Flow{
		limit:   max(cfg.MemoryLimit, 0),
		measure: cfg.MemoryUsage,
		log:     log,
		now:     now,
		poke:    make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
	f.release = f.limit / 100 * MemoryReleasePercent
	f.step = max(f.limit/64, 64<<10)
	if f.measure == nil {
		f.measure = liveHeap()
	}
	return f
}

// liveHeap returns a measure of the Go heap's live objects, in bytes, as
// the last garbage collection marked them: what the broker holds, without
// the garbage that a collection is about to free (a measure counting it
// would engage and end at every collection near the limit). It is used
// from one goroutine (Flow.run).
func liveHeap() func() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return func() int64 {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[0].Value.Uint64())
	}
}

// run measures the memory every interval, and at once when sends ask,
// until ctx ends. Without a limit there is nothing to watch.
func (f *Flow) run(ctx context.Context, interval time.Duration) {
	if f.limit <= 0 {
		return
	}
	if interval <= 0 {
		interval = DefaultMemoryCheckInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.poke:
		}
	}
}

// sample measures the memory and engages or releases the memory reason.
func (f *Flow) sample() {
	f.sent.Store(0)
	used := f.measure()
	f.used.Store(used)
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.reasons&FlowMemory != 0
	switch {
	case !held && used >= f.limit:
		f.setLocked(f.reasons|FlowMemory, FlowMemory)
	case held && used < f.release:
		f.setLocked(f.reasons&^FlowMemory, FlowMemory)
	}
}

// noteSent is told of every message a producer sends, with its size: once
// sends have added a 64th of the limit since the last measurement, the
// memory is measured now rather than at the next tick, so that a fast
// producer cannot run far past the limit between two ticks.
func (f *Flow) noteSent(n int) {
	if f.limit <= 0 {
		return
	}
	if f.sent.Add(int64(n)) >= f.step {
		f.sent.Store(0)
		select {
		case f.poke <- struct{}{}:
		default:
		}
	}
}

// SetDiskAlarm reports the free space of the data directory and its limit:
// low engages the disk reason, !low releases it. The composition root
// calls it as it polls the file system; the engine measures no disk.
func (f *Flow) SetDiskAlarm(low bool, free, limit int64) {
	f.diskFree.Store(free)
	f.diskLim.Store(limit)
	if f.diskLow.Load() == low {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.diskLow.Store(low)
	if low {
		f.setLocked(f.reasons|FlowDisk, FlowDisk)
	} else {
		f.setLocked(f.reasons&^FlowDisk, FlowDisk)
	}
}

// setLocked moves to reasons (changing reason r), logs the start or the
// end of a block, and wakes whoever waits for a change; under mu.
func (f *Flow) setLocked(reasons, r FlowReason) {
	if reasons == f.reasons {
		return
	}
	was := f.reasons
	f.reasons = reasons
	now := f.now()
	engaged := reasons&r != 0
	if engaged {
		if r == FlowMemory {
			f.engaged[0]++
		} else {
			f.engaged[1]++
		}
	}
	attrs := []any{slog.String("reason", r.String()), slog.String("holding", reasons.String())}
	if r == FlowMemory {
		attrs = append(attrs, slog.Int64("memory_used", f.used.Load()), slog.Int64("memory_limit", f.limit))
	} else {
		attrs = append(attrs, slog.Int64("disk_free", f.diskFree.Load()), slog.Int64("disk_free_limit", f.diskLim.Load()))
	}
	switch {
	case was == 0:
		f.since = now
		f.log.Info("flow control engaged: producers are held", attrs...)
	case reasons == 0:
		d := now.Sub(f.since)
		f.blockedFor += d
		f.since = time.Time{}
		f.log.Info("flow control ended: producers resume", append(attrs, slog.Duration("blocked_for", d))...)
	case engaged:
		f.log.Info("flow control: another resource holds producers", attrs...)
	default:
		f.log.Info("flow control: a resource has room again", attrs...)
	}
	f.blocked.Store(reasons != 0)
	close(f.changed)
	f.changed = make(chan struct{})
}

// Blocked reports whether producers must be held now, and why. It is a
// load of one word, cheap enough for every frame.
func (f *Flow) Blocked() (bool, FlowReason) {
	if !f.blocked.Load() {
		return false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reasons != 0, f.reasons
}

// Changed returns a channel that is closed at the next change of the
// gate's state: a front-end that holds producers (or tells its clients,
// as AMQP 0-9-1's connection.blocked and unblocked do) waits on it, then
// calls Blocked and Changed again.
func (f *Flow) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Wait returns once producers may send, or with ctx's error when ctx ends
// first.
func (f *Flow) Wait(ctx context.Context) error {
	for {
		ch := f.Changed()
		if blocked, _ := f.Blocked(); !blocked {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitChan is Wait for a caller that waits on a channel instead of a
// context: it reports false when done closed first.
func (f *Flow) WaitChan(done <-chan struct{}) bool {
	for {
		ch := f.Changed()
		if blocked, _ := f.Blocked(); !blocked {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		}
	}
}

// Stats returns the gate's state and counters.
func (f *Flow) Stats() FlowStats {
	s := FlowStats{
		MemoryLimit:   f.limit,
		MemoryUsed:    f.used.Load(),
		DiskFree:      f.diskFree.Load(),
		DiskFreeLimit: f.diskLim.Load(),
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Reasons, s.Since = f.reasons, f.since
	s.EngagedMemory, s.EngagedDisk = f.engaged[0], f.engaged[1]
	s.BlockedTime = f.blockedFor
	if f.reasons != 0 {
		s.BlockedTime += f.now().Sub(f.since)
	}
	return s
}

// Flow returns the broker's flow gate, which protocol front-ends consult
// before they take a producer's next message.
func (b *Broker) Flow() *Flow { return b.flow }
