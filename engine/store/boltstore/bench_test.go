package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	opts := quietOptions()
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// runCallers runs b.N calls of fn spread over g goroutines and reports
// throughput and the group-commit figures. fn gets a unique sequence number.
func runCallers(b *testing.B, s *Store, g int, unit string, fn func(n uint64) error) {
	b.Helper()
	var next atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	before := s.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > uint64(b.N) {
					return
				}
				if err := fn(n); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	st := s.Stats()
	commits := st.Commits - before.Commits
	ops := st.Ops - before.Ops
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit+"/s")
	b.ReportMetric(float64(ops)/elapsed.Seconds(), "storeops/s")
	b.ReportMetric(float64(commits)/elapsed.Seconds(), "commits/s")
	if commits > 0 {
		b.ReportMetric(float64(st.Updates-before.Updates)/float64(commits), "updates/commit")
		b.ReportMetric(float64(ops)/float64(commits), "ops/commit")
		commitTime := st.CommitTime - before.CommitTime
		b.ReportMetric(float64(commitTime.Microseconds())/float64(commits), "µs/commit")
		if commitTime > 0 {
			// The disk's share of commit time: near 100 means the store
			// is bound by the disk's write and sync speed, not by CPU.
			b.ReportMetric(100*float64(st.WriteTime-before.WriteTime)/float64(commitTime), "disk%")
		}
	}
}

// BenchmarkUpdate measures Update with one 1 KiB Put (sequential keys, as
// message ids are) from 1 and from 64 concurrent callers. ns/op is wall time
// divided by calls, so with many callers it is the inverse throughput.
func BenchmarkUpdate(b *testing.B) {
	value := make([]byte, 1024)
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("put1KiB/callers=%d", g), func(b *testing.B) {
			s := benchStore(b)
			b.SetBytes(int64(len(value)))
			runCallers(b, s, g, "updates", func(n uint64) error {
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], n)
				return s.Update(context.Background(), []store.Op{{Kind: store.Put, Bucket: "q", Key: key[:], Value: value}})
			})
		})
	}
}

// BenchmarkSendAck models the engine's persistent messaging: each
// iteration is one message, stored by an Update with a 1 KiB Put (the send)
// and removed by a later Update with a Delete (the acknowledgement), from g
// concurrent callers. msgs/s is the figure the engine's 50,000 msg/s target
// is about; the store then does two Updates per message.
func BenchmarkSendAck(b *testing.B) {
	value := make([]byte, 1024)
	for _, g := range []int{64, 128} {
		b.Run(fmt.Sprintf("callers=%d", g), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			runCallers(b, s, g, "msgs", func(n uint64) error {
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], n)
				if err := s.Update(ctx, []store.Op{{Kind: store.Put, Bucket: "q", Key: key[:], Value: value}}); err != nil {
					return err
				}
				return s.Update(ctx, []store.Op{{Kind: store.Delete, Bucket: "q", Key: key[:]}})
			})
		})
	}
}
