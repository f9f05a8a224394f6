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
// order. A ref record (refRecordSize bytes) is what the queue needs to know
// of a message without reading it, so that a message kept only in the
// store (paging, see page.go) costs no memory:
//
//	0:4    delivery attempts recorded so far
//	4:12   the time (ms) before which it is invisible; 0 = none
//	12     priority
//	13     flags: refShared when other queues' refs hold the same message;
//	       refTransient when the message is non-persistent, written only
//	       to wait in the store behind a backlog (recovery discards it);
//	       refIndexed when the message is scheduled and paged out: the
//	       queue's time index has an entry for it (pager.go)
//	14:18  the message's size (message.Message.Size), for quotas
//	18:26  its expiration (ms); 0 = never
//
// Stores written before paging have 12-byte ref records (count and time
// only); recovery reads their messages to learn the rest.
const (
	bucketMsgs  = "msgs"
	bucketDests = "dests"
	bucketSubs  = "subs"
	prefixQueue = "q:"
	prefixSub   = "s:"
)

// sweepMax bounds the ref records for which recovery also sweeps the
// message records for ones nothing refers to.
const sweepMax = 100000

// Ref record sizes and flags.
const (
	refRecordSize       = 26
	legacyRefRecordSize = 12
	refShared           = 1 << 0
	refTransient        = 1 << 1
	refIndexed          = 1 << 2
)

func queueBucket(name string) string { return prefixQueue + name }
func subBucket(key string) string    { return prefixSub + key }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// refValue encodes r's ref record with count delivery attempts.
func refValue(r *ref, count int32) []byte { return refValueFlags(r, count, 0) }

// refValueFlags is refValue with more flags set.
func refValueFlags(r *ref, count int32, flags byte) []byte {
	var v [refRecordSize]byte
	v[13] = flags
	binary.BigEndian.PutUint32(v[:4], uint32(count))
	binary.BigEndian.PutUint64(v[4:12], uint64(r.deliverAt))
	v[12] = r.msg.Priority
	if r.rec != nil && r.rec.shared {
		v[13] |= refShared
	}
	if r.rec != nil && r.rec.transient {
		v[13] |= refTransient
	}
	binary.BigEndian.PutUint32(v[14:18], uint32(r.size))
	binary.BigEndian.PutUint64(v[18:26], uint64(r.msg.Expiration))
	return v[:]
}

// refRecord is a decoded ref record.
type refRecord struct {
	seq        uint64
	count      int32
	at         int64
	prio       uint8
	shared     bool
	transient  bool
	indexed    bool // paged out scheduled: in the queue's time index
	size       int32
	expiration int64
	legacy     bool // 12 bytes: prio, shared, size and expiration unknown
}

// parseRefRecord decodes a ref record of bucket.
func parseRefRecord(bucket string, k, v []byte) (refRecord, error) {
	if len(k) != 8 || (len(v) != refRecordSize && len(v) != legacyRefRecordSize) {
		return refRecord{}, fmt.Errorf("bad ref record in %s (key %d bytes, value %d bytes)", bucket, len(k), len(v))
	}
	rr := refRecord{seq: binary.BigEndian.Uint64(k), count: int32(binary.BigEndian.Uint32(v[:4])),
		at: int64(binary.BigEndian.Uint64(v[4:12]))}
	if len(v) == legacyRefRecordSize {
		rr.legacy = true
		return rr, nil
	}
	rr.prio = min(v[12], 9)
	rr.shared = v[13]&refShared != 0
	rr.transient = v[13]&refTransient != 0
	rr.indexed = v[13]&refIndexed != 0
	rr.size = int32(binary.BigEndian.Uint32(v[14:18]))
	rr.expiration = int64(binary.BigEndian.Uint64(v[18:26]))
	return rr, nil
}

// value encodes rr as a ref record.
func (rr refRecord) value() []byte {
	var v [refRecordSize]byte
	binary.BigEndian.PutUint32(v[:4], uint32(rr.count))
	binary.BigEndian.PutUint64(v[4:12], uint64(rr.at))
	v[12] = rr.prio
	if rr.shared {
		v[13] |= refShared
	}
	if rr.transient {
		v[13] |= refTransient
	}
	if rr.indexed {
		v[13] |= refIndexed
	}
	binary.BigEndian.PutUint32(v[14:18], uint32(rr.size))
	binary.BigEndian.PutUint64(v[18:26], uint64(rr.expiration))
	return v[:]
}

func refRecordOp(bucket string, r *ref, count int32) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: seqKey(r.seq), Value: refValue(r, count)}
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
		if r.indexed {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: schedBucket(r.q.bucket), Key: schedKey(r.deliverAt, r.seq)})
		}
		switch {
		case r.rec.uncounted.Load():
			// Some holders live only in the store: the collector deletes
			// the message once no ref record names it.
			r.rec.refs.Add(-1)
			ops = append(ops, collectOp(r.rec.key, r.q.bucket))
		case r.rec.refs.Add(-1) == 0:
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
	return b.store.UpdateLinger(ctx, ops, linger)
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
	// key (arrival) order. Only what the queue will keep in memory is
	// noted for reading: its window of ready messages and its scheduled
	// ones due soon. The rest stays in the store: paged (page.go), or
	// scheduled far ahead (pager.go). Neither time nor memory grows with
	// what stays, beyond reading its ref records once.
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
	type queueRecords struct {
		q     *queue
		name  string
		load  []refRecord // read the message and put it in memory
		lanes [10]pageLane
		// sched counts the scheduled messages paged out to the time index
		// (flagged records), schedShared those other queues hold too, and
		// schedNext is the earliest due time among them.
		sched       schedPages
		schedShared []uint64
		schedNext   int64
		// pagedShared are the paged messages other queues hold too.
		pagedShared []uint64
		minExp      int64 // the earliest expiration of a paged message
	}
	now := b.nowMillis()
	var perQueue []*queueRecords
	// Store identities of messages more than one queue holds (flagged
	// records), or of unknown holders (records of an older format).
	shared := map[uint64]*stored{}
	var maxSeq uint64
	var gone []string
	held := map[uint64]struct{}{} // every seq a ref record names, while few (sweepMax)
	var index []store.Op          // records put into the time index (see below)
	for _, name := range names {
		if base, ok := strings.CutPrefix(name, prefixSched); ok {
			if queues[base] == nil || (queues[base].sub == nil && older[queues[base].dest]) {
				stale = append(stale, store.Op{Kind: store.DeleteBucket, Bucket: name}) // its queue is gone
			}
			continue
		}
		if !strings.HasPrefix(name, prefixQueue) && !strings.HasPrefix(name, prefixSub) {
			continue
		}
		q := queues[name]
		if q == nil || (q.sub == nil && older[q.dest]) {
			gone = append(gone, name)
			continue
		}
		qr := &queueRecords{q: q, name: name}
		winMsgs, winBytes := q.window()
		inMem, inMemBytes := 0, int64(0)
		err := st.ForEach(name, func(k, v []byte) error {
			rr, err := parseRefRecord(name, k, v)
			if err != nil {
				return err
			}
			maxSeq = max(maxSeq, rr.seq)
			if held != nil {
				if len(held) >= sweepMax {
					held = nil // too many to sweep at start
				} else {
					held[rr.seq] = struct{}{}
				}
			}
			if rr.transient {
				// A non-persistent message that waited in the store: it
				// does not outlive the broker.
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: name, Key: seqKey(rr.seq)},
					store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: seqKey(rr.seq)})
				return nil
			}
			if rr.shared || rr.legacy {
				rec := shared[rr.seq]
				if rec == nil {
					rec = &stored{key: rr.seq}
					shared[rr.seq] = rec
				}
				rec.refs.Add(1)
			}
			switch {
			case rr.legacy:
				qr.load = append(qr.load, rr)
			case !rr.indexed && b.pager.after > 0 && rr.at-now > b.pager.after:
				// Scheduled far ahead but not paged out yet (the broker
				// stopped first): into the time index now, from the record.
				rr.indexed = true
				v := rr.value()
				index = append(index, store.Op{Kind: store.Put, Bucket: schedBucket(name), Key: schedKey(rr.at, rr.seq), Value: v},
					store.Op{Kind: store.Put, Bucket: name, Key: seqKey(rr.seq), Value: v})
				fallthrough
			case rr.indexed:
				qr.sched.n++
				qr.sched.bytes += int64(rr.size)
				if rr.shared {
					qr.schedShared = append(qr.schedShared, rr.seq)
				}
				if qr.schedNext == 0 || rr.at < qr.schedNext {
					qr.schedNext = max(rr.at, 1)
				}
			case rr.at > now:
				qr.load = append(qr.load, rr)
				qr.lanes[rr.prio].inMemory(rr.seq)
			default:
				l := &qr.lanes[rr.prio]
				if l.n == 0 && inMem < winMsgs && inMemBytes < winBytes {
					qr.load = append(qr.load, rr)
					l.hi = max(l.hi, rr.seq)
					inMem++
					inMemBytes += int64(rr.size)
					return nil
				}
				if l.n == 0 {
					l.from = rr.seq
				}
				l.n++
				l.bytes += int64(rr.size)
				l.tail = rr.seq
				if rr.expiration != 0 && (qr.minExp == 0 || rr.expiration < qr.minExp) {
					qr.minExp = rr.expiration
				}
				if rr.shared {
					qr.pagedShared = append(qr.pagedShared, rr.seq)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		perQueue = append(perQueue, qr)
	}
	// The buckets of deleted queues and subscriptions go, with the
	// messages no live queue holds.
	for _, name := range gone {
		err := st.ForEach(name, func(k, v []byte) error {
			rr, err := parseRefRecord(name, k, v)
			if err != nil {
				return nil // going anyway
			}
			if shared[rr.seq] == nil {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: seqKey(rr.seq)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		stale = append(stale, store.Op{Kind: store.DeleteBucket, Bucket: name})
	}
	for _, rec := range shared {
		rec.shared = rec.refs.Load() > 1
	}
	// A small store is swept for messages no ref record names (left by a
	// failure between writes that should have gone together); a large one
	// is not, since that reads every message.
	if held != nil {
		err := st.ForEach(bucketMsgs, func(k, _ []byte) error {
			if len(k) != 8 {
				return nil
			}
			if _, ok := held[binary.BigEndian.Uint64(k)]; !ok {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: bucketMsgs, Key: append([]byte(nil), k...)})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	recOf := func(rr refRecord) *stored {
		if rec := shared[rr.seq]; rec != nil {
			return rec
		}
		rec := &stored{key: rr.seq}
		rec.refs.Store(1)
		return rec
	}
	// Pass 2: read the messages kept in memory, and put every queue
	// together: its paged lanes first, then what it keeps in memory, in
	// arrival order, through add (which pages what no longer fits).
	loaded, paged, decoded := 0, 0, 0
	for _, qr := range perQueue {
		msgs, err := b.readMessages(qr.load)
		if err != nil {
			return err
		}
		refs := make([]*ref, 0, len(qr.load))
		for i, rr := range qr.load {
			m := msgs[i]
			if m == nil {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: qr.name, Key: seqKey(rr.seq)})
				if rec := shared[rr.seq]; rec != nil {
					rec.refs.Add(-1)
				}
				continue
			}
			decoded++
			size := rr.size
			if rr.legacy {
				size = int32(m.Size())
			}
			r := &ref{msg: m, rec: recOf(rr), seq: rr.seq, q: qr.q, count: rr.count, marked: rr.count, size: size, deliverAt: rr.at}
			if rr.legacy {
				// Rewritten in the current format.
				stale = append(stale, refRecordOp(qr.name, r, rr.count))
			}
			refs = append(refs, r)
		}
		// A shared message with a holder kept only in the store is the
		// collector's to delete (collect.go).
		for _, seq := range qr.pagedShared {
			if rec := shared[seq]; rec != nil {
				rec.uncounted.Store(true)
			}
		}
		for _, seq := range qr.schedShared {
			if rec := shared[seq]; rec != nil {
				rec.uncounted.Store(true)
			}
		}
		paged += qr.q.installPages(qr.lanes, qr.minExp)
		if qr.sched.n > 0 {
			qr.q.installScheduled(qr.sched)
			b.pager.note(qr.q, qr.schedNext)
			paged += int(qr.sched.n)
		}
		loaded += len(refs)
		if len(refs) > 0 {
			qr.q.addAgain(refs)
		}
	}
	if len(stale) > 0 {
		if err := st.Update(ctx, stale); err != nil {
			return fmt.Errorf("remove stale records: %w", err)
		}
	}
	for len(index) > 0 {
		n := min(len(index), 2*pageInBatch)
		if err := st.Update(ctx, index[:n]); err != nil {
			return fmt.Errorf("page out scheduled messages: %w", err)
		}
		index = index[n:]
	}
	b.seq.Store(maxSeq)
	b.log.Info("store recovered", slog.Int("destinations", len(b.dests)), slog.Int("durable_subscriptions", len(b.subs)),
		slog.Int("decoded", decoded), slog.Int("in_memory", loaded), slog.Int("paged", paged),
		slog.Int("records_rewritten_or_removed", len(stale)))
	return nil
}
