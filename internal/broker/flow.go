package broker

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/internal/config"
)

// DiskPollInterval is how often the free space of the data directory is
// looked at.
const DiskPollInterval = time.Second

// HeldPercent is the share of [limits] memory_limit the live heap may
// reach before producers are held: the rest is room for the garbage the
// collector has yet to free, so that it does not run without pause at the
// limit. memory_limit itself is the Go runtime's soft memory limit.
const HeldPercent = 90

// heldAt is the live heap at which producers are held, for memory_limit
// limit.
func heldAt(limit int64) int64 { return limit / 100 * HeldPercent }

// diskUsage returns the free space (for an unprivileged user) and the size
// of the file system holding dir.
type diskUsage func(dir string) (free, size int64, err error)

// memoryLimit resolves [limits] memory_limit against the machine's memory.
// Where the machine's memory cannot be read, a percentage means no limit,
// with a warning.
func memoryLimit(cfg config.Config, log *slog.Logger) int64 {
	n, err := cfg.Limits.MemoryBytes(config.MachineMemory)
	if err != nil {
		log.Warn("no memory limit", slog.Any("err", err))
		return 0
	}
	return n
}

// setRuntimeLimit makes limit the Go runtime's soft memory limit, so that
// the garbage collector works harder as the heap nears it, and returns
// the previous one for Shutdown to restore; without a limit it changes
// nothing.
func setRuntimeLimit(limit int64) (restore func()) {
	if limit <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// diskReading is a reading of the data directory's free space against
// disk_free_limit.
type diskReading struct {
	low         bool
	free, limit int64
}

// watchDisk reports the data directory's free space to the flow gate of
// the engine serving clients (flowGate) every interval until ctx ends:
// below disk_free_limit it holds producers. A file system that cannot be
// measured is not watched. The last reading is kept for a cluster's next
// term (applyDisk).
func (b *Broker) watchDisk(ctx context.Context, interval time.Duration, usage diskUsage) {
	var limit int64
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		free, size, err := usage(b.cfg.Data)
		if err != nil {
			b.log.Warn("the data directory's free space is not watched", slog.String("dir", b.cfg.Data), slog.Any("err", err))
			return
		}
		if first {
			if limit, err = b.cfg.Limits.DiskFreeBytes(size); err != nil || limit <= 0 {
				return
			}
		}
		b.disk.Store(&diskReading{low: free < limit, free: free, limit: limit})
		if fl := b.flowGate(); fl != nil {
			b.applyDisk(fl)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// flowGate is the flow gate of the engine serving clients: the broker's,
// or the serving term's in a cluster (nil on a follower).
func (b *Broker) flowGate() *engine.Flow {
	if b.cluster != nil {
		if t := b.cluster.current(); t != nil {
			return t.eng.Flow()
		}
		return nil
	}
	return b.engine.Flow()
}

// applyDisk gives fl the disk watcher's last reading, if there is one.
func (b *Broker) applyDisk(fl *engine.Flow) {
	if r := b.disk.Load(); r != nil {
		fl.SetDiskAlarm(r.low, r.free, r.limit)
	}
}
