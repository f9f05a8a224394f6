package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Store layout. Every persistent message is one record in bucketMsgs keyed
// by its 8-byte big-endian sequence number; each queue or durable
// subscription holding it has a ref record under the same key in its own
// bucket, so walking a bucket in key order rebuilds the queue in arrival
// order. A ref record is the delivery count recorded so far (4 bytes) and
// the time before which it is invisible (8 bytes).
const (
	bucketMsgs  = "msgs"
	bucketDests = "dests"
	bucketSubs  = "subs"
	prefixQueue = "q:"
	prefixSub   = "s:"
)

func queueBucket(name string) string { return prefixQueue + name }
func subBucket(key string) string    { return prefixSub + key }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func refValue(count int32, deliverAt int64) []byte {
	var v [12]byte
	binary.BigEndian.PutUint32(v[:4], uint32(count))
	binary.BigEndian.PutUint64(v[4:], uint64(deliverAt))
	return v[:]
}

func refRecordOp(bucket string, r *ref, count int32) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: seqKey(r.seq), Value: refValue(count, r.deliverAt)}
}

func destKey(d message.Destination) []byte {
	return append([]byte{byte(d.Kind)}, d.Name...)
}

func destRecordOp(d *destination) store.Op {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(d.created))
	return store.Op{Kind: store.Put, Bucket: bucketDests, Key: destKey(d.dest), Value: v[:]}
}

// subRecord is the stored form of a durable subscription.
type subRecord struct {
	Topic    string `json:"topic"`
	Name     string `json:"name"`
	ClientID string `json:"clientId"`
	Policy   uint8  `json:"policy"`
	Selector string `json:"selector,omitempty"`
	NoLocal  bool   `json:"noLocal,omitempty"`
	Shared   bool   `json:"shared,omitempty"`
}

func subRecordOp(s *subscription) store.Op {
	v, _ := json.Marshal(subRecord{Topic: s.topic.dest.Name, Name: s.name, ClientID: s.clientID,
		Policy: uint8(s.policy), Selector: s.selSrc, NoLocal: s.noLocal, Shared: s.shared})
	return store.Op{Kind: store.Put, Bucket: bucketSubs, Key: []byte(s.key), Value: v}
}

// storeOpsForAdd appends the writes that store newly routed refs.
func (b *Broker) storeOpsForAdd(refs []*ref, ops []store.Op) []store.Op {
	var last *stored
	for _, r := range refs {
		if r.rec == nil {
			continue
		}
		if r.rec != last {
			last = r.rec
			data, err := r.msg.MarshalBinary()
			if err != nil {
				b.log.Error("encode message", slog.String("message_id", r.msg.ID), slog.Any("err", err))
				continue
			}
			ops = append(ops, store.Op{Kind: store.Put, Bucket: bucketMsgs, Key: seqKey(r.rec.key), Value: data})
		}
		ops = append(ops, refRecordOp(r.q.bucket, r, 0))
	}
	return ops
}

// storeOpsForRemove appends the writes that delete refs, and their message
// when no other ref holds it.
func (b *Broker) storeOpsForRemove(refs []*ref, ops []store.Op) []store.Op {
	for _, r := range refs {
		if r.rec == nil || r.q.bucket == "" {
			continue
		}
		if withdrawEarly(r) {
			// Consumed before it was ever written: nothing to delete.
			r.rec.refs.Add(-1)
			r.rec = nil
			continue
		}
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: r.q.bucket, Key: seqKey(r.seq)})
		if r.rec.refs.Add(-1) == 0 {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: seqKey(r.rec.key)})
		}
		r.rec = nil
	}
	return ops
}

type opBuf struct {
	r *ref
	n int32
}

// writeMarks records delivery attempts durably.
func (b *Broker) writeMarks(ctx context.Context, bucket string, marks []opBuf) error {
	ops := make([]store.Op, 0, len(marks))
	for _, m := range marks {
		ops = append(ops, refRecordOp(bucket, m.r, m.n))
	}
	return b.updateLinger(ctx, ops, markLinger)
}

// How long writes off a sender's critical path may wait to share a sync:
// a delivery mark delays its delivery by at most markLinger; background
// writes (automatic acknowledgements, expiry) have nobody waiting.
const (
	markLinger       = 500 * time.Microsecond
	backgroundLinger = 5 * time.Millisecond
)

// updateLinger writes ops durably, letting a store that can (a journal)
// hold them up to linger to share a sync with the writes that follow.
func (b *Broker) updateLinger(ctx context.Context, ops []store.Op, linger time.Duration) error {
	if l, ok := b.store.(store.Lingerer); ok {
		return l.UpdateLinger(ctx, ops, linger)
	}
	return b.store.Update(ctx, ops)
}

// asyncWriter applies store writes nobody waits for (automatic
// acknowledgements, expiry deletions) in batches on one goroutine. A crash
// may lose the latest of them; the messages then come back flagged as
// redelivered, never silently twice.
type asyncWriter struct {
	b    *Broker
	mu   sync.Mutex
	ops  []store.Op
	wake chan struct{}
}

func (w *asyncWriter) add(ops []store.Op) {
	if w.b.store == nil || len(ops) == 0 {
		return
	}
	w.mu.Lock()
	w.ops = append(w.ops, ops...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *asyncWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		w.flush(ctx)
	}
}

func (w *asyncWriter) flush(ctx context.Context) {
	w.mu.Lock()
	ops := w.ops
	w.ops = nil
	w.mu.Unlock()
	if len(ops) == 0 || w.b.store == nil {
		return
	}
	if err := w.b.updateLinger(context.WithoutCancel(ctx), ops, backgroundLinger); err != nil {
		w.b.log.Error("background store write", slog.Int("ops", len(ops)), slog.Any("err", err))
	}
}

// recover rebuilds destinations, durable subscriptions and messages from
// the store. Refs recorded as delivered come back flagged redelivered with
// their delivery count.
func (b *Broker) recover(ctx context.Context) error {
	st := b.store
	err := st.ForEach(bucketDests, func(k, v []byte) error {
		if len(k) < 2 || len(v) != 8 {
			return fmt.Errorf("bad destination record %q", k)
		}
		dest := message.Destination{Kind: message.DestKind(k[0]), Name: string(k[1:])}
		if dest.Kind != message.Queue && dest.Kind != message.Topic {
			return fmt.Errorf("bad destination kind in record %q", k)
		}
		d := b.newDestination(dest, nil, int64(binary.BigEndian.Uint64(v)))
		b.dests[dest] = d
		return nil
	})
	if err != nil {
		return err
	}
	older, stale, err := b.configure()
	if err != nil {
		return err
	}
	err = st.ForEach(bucketSubs, func(k, v []byte) error {
		var rec subRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("subscription record %q: %w", k, err)
		}
		d := b.dests[message.Destination{Kind: message.Topic, Name: rec.Topic}]
		if d == nil {
			b.log.Warn("durable subscription of a topic that no longer exists dropped", slog.String("subscription", rec.Name))
			return nil
		}
		if older[d.dest] {
			// A durable subscription of a deleted incarnation of the topic.
			stale = append(stale, store.Op{Kind: store.Delete, Bucket: bucketSubs, Key: append([]byte(nil), k...)})
			return nil
		}
		sel, err := compileSelector(rec.Selector)
		if err != nil {
			return fmt.Errorf("subscription %q: %w", rec.Name, err)
		}
		s := &subscription{key: string(k), name: rec.Name, clientID: rec.ClientID, policy: ClientIDPolicy(rec.Policy),
			topic: d, sel: sel, selSrc: rec.Selector, noLocal: rec.NoLocal, durable: true, shared: rec.Shared}
		s.target = targetOf(sel)
		s.q = newQueue(b, d.dest, s, subBucket(s.key))
		b.subs[s.key] = s
		d.t.add(s)
		return nil
	})
	if err != nil {
		return err
	}
	// Pass 1: the ref records of every queue and durable subscription, in
	// key (arrival) order. Those due far ahead will be paged: their
	// messages are never decoded.
	queues := map[string]*queue{}
	for _, d := range b.dests {
		if d.q != nil && d.q.bucket != "" {
			queues[d.q.bucket] = d.q
		}
	}
	for _, s := range b.subs {
		queues[s.q.bucket] = s.q
	}
	var names []string
	if err := st.Buckets(func(name string) error { names = append(names, name); return nil }); err != nil {
		return err
	}
	type refRecord struct {
		seq   uint64
		count int32
		at    int64
	}
	type queueRecords struct {
		q    *queue
		name string
		recs []refRecord
	}
	// msgInfo is what recovery knows of a message its refs name.
	type msgInfo struct {
		refs    int32
		decode  bool // some ref of it is not paged
		present bool
		size    int32
		msg     *message.Message
		rec     *stored
	}
	now := b.nowMillis()
	var perQueue []queueRecords
	infos := map[uint64]*msgInfo{}
	for _, name := range names {
		if !strings.HasPrefix(name, prefixQueue) && !strings.HasPrefix(name, prefixSub) {
			continue
		}
		q := queues[name]
		if q == nil || (q.sub == nil && older[q.dest]) {
			stale = append(stale, store.Op{Kind: store.DeleteBucket, Bucket: name})
			continue
		}
		qr := queueRecords{q: q, name: name}
		err := st.ForEach(name, func(k, v []byte) error {
			if len(k) != 8 || len(v) != 12 {
				return fmt.Errorf("bad ref record in %s", name)
			}
			rr := refRecord{seq: binary.BigEndian.Uint64(k), count: int32(binary.BigEndian.Uint32(v[:4])),
				at: int64(binary.BigEndian.Uint64(v[4:]))}
			qr.recs = append(qr.recs, rr)
			info := infos[rr.seq]
			if info == nil {
				info = &msgInfo{}
				infos[rr.seq] = info
			}
			info.refs++
			if !(b.pager.after > 0 && rr.at-now > b.pager.after) {
				info.decode = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		perQueue = append(perQueue, qr)
	}
	// Pass 2: the messages. Unreferenced ones are stale.
	var maxSeq uint64
	decoded := 0
	err = st.ForEach(bucketMsgs, func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("bad message key %x", k)
		}
		seq := binary.BigEndian.Uint64(k)
		maxSeq = max(maxSeq, seq)
		info := infos[seq]
		if info == nil {
			stale = append(stale, store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: seqKey(seq)})
			return nil
		}
		info.present = true
		info.size = int32(len(v))
		if info.decode {
			m := new(message.Message)
			if err := m.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("message %d: %w", seq, err)
			}
			info.msg = m
			info.size = int32(m.Size())
			decoded++
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Pass 3: rebuild each queue in order; paged refs go to the pager.
	loaded, paged := 0, 0
	for _, qr := range perQueue {
		var refs []*ref
		var pagedRefs []pagedRef
		for _, rr := range qr.recs {
			info := infos[rr.seq]
			if !info.present {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: qr.name, Key: seqKey(rr.seq)})
				continue
			}
			if info.rec == nil {
				info.rec = &stored{key: rr.seq}
				info.rec.refs.Store(info.refs)
			}
			if b.pager.after > 0 && rr.at-now > b.pager.after {
				e := pagedRef{at: rr.at, seq: rr.seq, q: qr.q, count: rr.count, size: info.size}
				if info.refs > 1 {
					e.rec = info.rec
				}
				pagedRefs = append(pagedRefs, e)
				continue
			}
			refs = append(refs, &ref{msg: info.msg, rec: info.rec, seq: rr.seq, q: qr.q, count: rr.count, marked: rr.count,
				size: info.size, deliverAt: rr.at})
		}
		loaded += len(refs) + len(pagedRefs)
		paged += len(pagedRefs)
		if len(pagedRefs) > 0 {
			qr.q.addPaged(pagedRefs)
		}
		if len(refs) > 0 {
			qr.q.addAgain(refs)
		}
	}
	if len(stale) > 0 {
		if err := st.Update(ctx, stale); err != nil {
			return fmt.Errorf("remove stale records: %w", err)
		}
	}
	b.seq.Store(maxSeq)
	b.log.Info("store recovered", slog.Int("destinations", len(b.dests)), slog.Int("durable_subscriptions", len(b.subs)),
		slog.Int("messages", len(infos)), slog.Int("decoded", decoded), slog.Int("refs", loaded), slog.Int("paged", paged),
		slog.Int("stale_records_removed", len(stale)))
	return nil
}
