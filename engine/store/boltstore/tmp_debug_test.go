package boltstore

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine/store"
)

func TestTmpBreakdown(t *testing.T) {
	s := openTest(t, Options{})
	value := make([]byte, 1024)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], uint64(g*1000000+i))
				s.Update(context.Background(), []store.Op{{Kind: store.Put, Bucket: "q", Key: key[:], Value: value}})
				s.Update(context.Background(), []store.Op{{Kind: store.Delete, Bucket: "q", Key: key[:]}})
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	st := s.Stats()
	ts := s.db.Stats().TxStats
	t.Logf("elapsed %v commits %d mean %.1f commit avg %v", el, st.Commits, st.MeanBatch(), st.CommitTime/time.Duration(st.Commits))
	c := time.Duration(st.Commits)
	t.Logf("per commit: write(+sync) %v spill %v rebalance %v writes %d pages %d", ts.GetWriteTime()/c, ts.GetSpillTime()/c, ts.GetRebalanceTime()/c, ts.GetWrite()/int64(st.Commits), ts.GetPageCount()/int64(st.Commits))
}
