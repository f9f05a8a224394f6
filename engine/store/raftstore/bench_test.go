package raftstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

// BenchmarkUpdate64 measures Update throughput with 64 concurrent writers
// (one 256-byte put each) on a single node and on the leader of three
// nodes in this process, and reports the batching factor (Updates per
// log entry). All nodes share this machine's disk and cores.
func BenchmarkUpdate64(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c := newCluster(b, nodes, nil)
			leader := c.nodes[c.leader(10*time.Second)]
			val := make([]byte, 256)
			before := leader.Stats()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			b.ResetTimer()
			start := time.Now()
			for w := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						k := fmt.Appendf(nil, "w%02d-%09d", w, i)
						if err := leader.Update(context.Background(), []store.Op{{Kind: store.Put, Bucket: "bench", Key: k, Value: val}}); err != nil {
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
			st := leader.Stats()
			updates, entries := st.Updates-before.Updates, st.Entries-before.Entries
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "updates/s")
			if entries > 0 {
				b.ReportMetric(float64(updates)/float64(entries), "updates/entry")
			}
		})
	}
}
