package engine

// Collecting shared messages kept only in the store.
//
// A message a topic routes to several durable subscriptions has one
// message record and a ref record per subscription. While every holder is
// in memory they share one store identity (stored) whose count says when
// the last one goes, and that one deletes the message record. Once a
// holder is paged out (page.go, pager.go) nothing in memory stands for it
// (that would cost memory per message), so the identity is marked
// uncounted: from then on no holder deletes the message record. Each
// removal of a ref record writes, in the same update, a candidate record
// in records.Collect (key: the message's sequence number, then the holder's
// bucket). The collector goroutine reads the candidates a chunk at a time
// and, for each message, looks for a ref record in the buckets of the
// topic's durable subscriptions: when there is none, it deletes the message
// record; either way it deletes the candidates it read. Every write is a
// blind put or delete, so a replicated store applies them alike.
//
// A candidate and the removal of its ref record are one update, so a
// collector that finds no ref record of a message has the candidate of
// every removal. A removal it did not see yet (its ref record still there)
// writes a candidate of its own, which the next pass reads. Only the
// subscriptions the broker knows are searched: one being deleted leaves
// the broker's table before its records go, and its candidates are
// written after.
//
// Lock order: the collector takes broker.mu (read) alone to list a
// topic's subscriptions, and no queue lock.

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
)

// collectEvery is how often the collector looks for candidates when
// nothing pokes it.
const collectEvery = 5 * time.Second

// collectOp is the candidate record of a removal from bucket of the shared
// message seq.
func collectOp(seq uint64, bucket string) store.Op {
	return store.Op{Kind: store.Put, Bucket: records.Collect, Key: records.CollectKey(seq, bucket)}
}

// collector deletes the message records of shared messages no ref record
// names any more (see above).
type collector struct {
	b    *Broker
	wake chan struct{}
}

func newCollector(b *Broker) *collector {
	return &collector{b: b, wake: make(chan struct{}, 1)}
}

// poke asks for a pass soon.
func (c *collector) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run collects until ctx ends: a pass at start (candidates left by the
// previous run), then on pokes and every collectEvery.
func (c *collector) run(ctx context.Context) {
	t := time.NewTicker(collectEvery)
	defer t.Stop()
	for {
		for c.pass(ctx) {
			// a full chunk: more may wait
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// pass handles one chunk of candidates and reports whether the chunk was
// full.
func (c *collector) pass(ctx context.Context) bool {
	b := c.b
	type candidate struct {
		key []byte
		seq uint64
	}
	var cands []candidate
	err := b.store.Range(records.Collect, nil, pageScanRecords, func(k, _ []byte) error {
		seq, _ := records.ParseCollectKey(k) // 0 for a bad key: only deleted
		cands = append(cands, candidate{key: append([]byte(nil), k...), seq: seq})
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			b.log.Error("read the collector's candidates", slog.Any("err", err))
		}
		return false
	}
	if len(cands) == 0 {
		return false
	}
	var ops []store.Op
	var seqs []uint64
	for i, cd := range cands {
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Collect, Key: cd.key})
		if cd.seq != 0 && (i == 0 || cands[i-1].seq != cd.seq) {
			seqs = append(seqs, cd.seq)
		}
	}
	for _, seq := range seqs {
		held, err := c.held(seq)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Error("look for the holders of a shared message", slog.Uint64("seq", seq), slog.Any("err", err))
			}
			return false
		}
		if !held {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(seq)})
		}
	}
	if err := b.updateLinger(ctx, ops, markLinger); err != nil {
		if ctx.Err() == nil {
			b.log.Error("delete shared messages no subscription holds", slog.Any("err", err))
		}
		return false
	}
	return len(cands) == pageScanRecords
}

// held reports whether a ref record of a durable subscription (or queue)
// still names the message seq: the buckets searched are those of the
// subscriptions of the message's topic.
func (c *collector) held(seq uint64) (bool, error) {
	b := c.b
	var m *message.Message
	err := b.store.Get(records.Messages, [][]byte{records.SeqKey(seq)}, func(_ int, v []byte) error {
		m = new(message.Message)
		return m.UnmarshalBinary(v)
	})
	if err != nil || m == nil {
		return false, err // gone already
	}
	var buckets []string
	b.mu.RLock()
	for _, s := range b.subs {
		if s.q.bucket != "" && s.topic.dest == m.Destination {
			buckets = append(buckets, s.q.bucket)
		}
	}
	if d := b.dests[m.Destination]; d != nil && d.q != nil && d.q.bucket != "" {
		buckets = append(buckets, d.q.bucket)
	}
	b.mu.RUnlock()
	key := [][]byte{records.SeqKey(seq)}
	for _, bucket := range buckets {
		found := false
		if err := b.store.Get(bucket, key, func(int, []byte) error { found = true; return nil }); err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}
