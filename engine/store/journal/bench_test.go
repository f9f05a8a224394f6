package journal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/journal"
)

// BenchmarkUpdate64 confirms 1 KiB puts from 64 concurrent callers, then
// deletes them, as persistent sends and acknowledgements do.
func BenchmarkUpdate64(b *testing.B) {
	s := open(&testing.T{}, b.TempDir(), journal.Options{})
	defer s.Close()
	js := s.(*journal.Store)
	value := make([]byte, 1024)
	before := js.Stats()
	b.SetBytes(1024)
	b.ResetTimer()
	var wg sync.WaitGroup
	const callers = 64
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < b.N; i += callers {
				k := []byte(fmt.Sprintf("%016d", i))
				if err := s.Update(context.Background(), []store.Op{{Kind: store.Put, Bucket: "m", Key: k, Value: value}}); err != nil {
					b.Error(err)
					return
				}
				if err := s.Update(context.Background(), []store.Op{{Kind: store.Delete, Bucket: "m", Key: k}}); err != nil {
					b.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	b.StopTimer()
	st := js.Stats()
	if c := st.Commits - before.Commits; c > 0 {
		b.ReportMetric(float64(st.Updates-before.Updates)/float64(c), "updates/commit")
	}
}
