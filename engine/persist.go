package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
)

// The store's record layout (buckets, keys, the encoding of each record)
// is package records'; recovery reads it through records.Load.

// sweepMax bounds the ref records for which recovery also sweeps the
// message records for ones nothing refers to.
const sweepMax = 100000

// refValue encodes r's ref record with count delivery attempts.
func refValue(r *ref, count int32) []byte { return refValueFlags(r, count, 0) }

// refValueFlags is refValue with more flags set.
func refValueFlags(r *ref, count int32, flags byte) []byte {
	rr := records.Ref{Count: count, At: r.deliverAt, Prio: r.msg.Priority, Size: r.size, Expiration: r.msg.Expiration,
		Shared: flags&records.FlagShared != 0, Transient: flags&records.FlagTransient != 0, Indexed: flags&records.FlagIndexed != 0}
	if r.rec != nil {
		rr.Shared = rr.Shared || r.rec.shared
		rr.Transient = rr.Transient || r.rec.transient
	}
	return rr.Value()
}

func refRecordOp(bucket string, r *ref, count int32) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: records.SeqKey(r.seq), Value: refValue(r, count)}
}

func destRecordOp(d *destination) store.Op {
	return records.Destination{Dest: d.dest, Created: d.created}.Op()
}

func subRecordOp(s *subscription) store.Op {
	return records.Subscription{Key: s.key, Topic: s.topic.dest.Name, Name: s.name, ClientID: s.clientID,
		Policy: uint8(s.policy), Selector: s.selSrc, NoLocal: s.noLocal, Shared: s.shared}.Op()
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
			ops = append(ops, store.Op{Kind: store.Put, Bucket: records.Messages, Key: records.SeqKey(r.rec.key), Value: data})
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
		if b.withdrawEarly(r) {
			// Consumed before it was ever written: nothing to delete.
			r.rec.refs.Add(-1)
			r.rec = nil
			continue
		}
		ops = append(ops, store.Op{Kind: store.Delete, Bucket: r.q.bucket, Key: records.SeqKey(r.seq)})
		if r.indexed {
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.SchedBucket(r.q.bucket), Key: records.SchedKey(r.deliverAt, r.seq)})
		}
		switch {
		case r.rec.uncounted.Load():
			// Some holders live only in the store: the collector deletes
			// the message once no ref record names it.
			r.rec.refs.Add(-1)
			ops = append(ops, collectOp(r.rec.key, r.q.bucket))
		case r.rec.refs.Add(-1) == 0:
			ops = append(ops, store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(r.rec.key)})
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
// the store's image (records.Load). Refs recorded as delivered come back
// flagged redelivered with their delivery count.
func (b *Broker) recover(ctx context.Context) error {
	img, err := records.Load(b.store)
	if err != nil {
		return err
	}
	older, stale, err := b.recoverDestinations(img)
	if err != nil {
		return err
	}
	return b.recoverMessages(ctx, img, older, stale)
}

// recoverDestinations makes the destinations and durable subscriptions of
// img, and then the configured destinations (configure). It returns the
// destinations whose stored messages belong to an older incarnation, and
// the store writes recovery is to make (configure's, and the removal of
// the records of those incarnations' subscriptions).
func (b *Broker) recoverDestinations(img *records.Image) (older map[message.Destination]bool, stale []store.Op, err error) {
	for _, rd := range img.Destinations {
		b.dests[rd.Dest] = b.newDestination(rd.Dest, nil, rd.Created)
	}
	older, stale, err = b.configure()
	if err != nil {
		return nil, nil, err
	}
	for _, rec := range img.Subscriptions {
		d := b.dests[message.Destination{Kind: message.Topic, Name: rec.Topic}]
		if d == nil {
			b.log.Warn("durable subscription of a topic that no longer exists dropped", slog.String("subscription", rec.Name))
			continue
		}
		if older[d.dest] {
			// A durable subscription of a deleted incarnation of the topic.
			stale = append(stale, store.Op{Kind: store.Delete, Bucket: records.Subscriptions, Key: []byte(rec.Key)})
			continue
		}
		sel, err := compileSelector(rec.Selector)
		if err != nil {
			return nil, nil, fmt.Errorf("subscription %q: %w", rec.Name, err)
		}
		s := &subscription{key: rec.Key, name: rec.Name, clientID: rec.ClientID, policy: ClientIDPolicy(rec.Policy),
			topic: d, sel: sel, selSrc: rec.Selector, noLocal: rec.NoLocal, durable: true, shared: rec.Shared}
		s.target = targetOf(sel)
		s.q = newQueue(b, d.dest, s, records.SubBucket(s.key))
		b.subs[s.key] = s
		d.t.add(s)
	}
	return older, stale, nil
}

// recoverMessages puts the messages of img on their queues and durable
// subscriptions (older names the destinations whose records are of an
// older incarnation), and makes stale and the store writes it finds
// necessary: records of messages that do not outlive the broker, of
// deleted queues and of older incarnations removed, records of an older
// format rewritten, messages scheduled far ahead moved to their time
// index.
func (b *Broker) recoverMessages(ctx context.Context, img *records.Image, older map[message.Destination]bool, stale []store.Op) error {
	st := b.store
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
	type queueRecords struct {
		q     *queue
		name  string
		load  []records.Ref // read the message and put it in memory
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
	for _, name := range img.SchedBuckets {
		base := strings.TrimPrefix(name, records.PrefixSched)
		if queues[base] == nil || (queues[base].sub == nil && older[queues[base].dest]) {
			stale = append(stale, store.Op{Kind: store.DeleteBucket, Bucket: name}) // its queue is gone
		}
	}
	for _, name := range img.RefBuckets {
		q := queues[name]
		if q == nil || (q.sub == nil && older[q.dest]) {
			gone = append(gone, name)
			continue
		}
		qr := &queueRecords{q: q, name: name}
		winMsgs, winBytes := q.window()
		inMem, inMemBytes := 0, int64(0)
		err := img.Refs(name, func(rr records.Ref) error {
			maxSeq = max(maxSeq, rr.Seq)
			if held != nil {
				if len(held) >= sweepMax {
					held = nil // too many to sweep at start
				} else {
					held[rr.Seq] = struct{}{}
				}
			}
			if rr.Transient {
				// A non-persistent message that waited in the store: it
				// does not outlive the broker.
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: name, Key: records.SeqKey(rr.Seq)},
					store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(rr.Seq)})
				return nil
			}
			if rr.Shared || rr.Legacy {
				rec := shared[rr.Seq]
				if rec == nil {
					rec = &stored{key: rr.Seq}
					shared[rr.Seq] = rec
				}
				rec.refs.Add(1)
			}
			switch {
			case rr.Legacy:
				qr.load = append(qr.load, rr)
			case !rr.Indexed && b.pager.after > 0 && rr.At-now > b.pager.after:
				// Scheduled far ahead but not paged out yet (the broker
				// stopped first): into the time index now, from the record.
				rr.Indexed = true
				v := rr.Value()
				index = append(index, store.Op{Kind: store.Put, Bucket: records.SchedBucket(name), Key: records.SchedKey(rr.At, rr.Seq), Value: v},
					store.Op{Kind: store.Put, Bucket: name, Key: records.SeqKey(rr.Seq), Value: v})
				fallthrough
			case rr.Indexed:
				qr.sched.n++
				qr.sched.bytes += int64(rr.Size)
				if rr.Shared {
					qr.schedShared = append(qr.schedShared, rr.Seq)
				}
				if qr.schedNext == 0 || rr.At < qr.schedNext {
					qr.schedNext = max(rr.At, 1)
				}
			case rr.At > now:
				qr.load = append(qr.load, rr)
				qr.lanes[rr.Prio].inMemory(rr.Seq)
			default:
				l := &qr.lanes[rr.Prio]
				if l.n == 0 && inMem < winMsgs && inMemBytes < winBytes {
					qr.load = append(qr.load, rr)
					l.hi = max(l.hi, rr.Seq)
					inMem++
					inMemBytes += int64(rr.Size)
					return nil
				}
				if l.n == 0 {
					l.from = rr.Seq
				}
				l.n++
				l.bytes += int64(rr.Size)
				l.tail = rr.Seq
				if rr.Expiration != 0 && (qr.minExp == 0 || rr.Expiration < qr.minExp) {
					qr.minExp = rr.Expiration
				}
				if rr.Shared {
					qr.pagedShared = append(qr.pagedShared, rr.Seq)
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
			rr, err := records.ParseRef(name, k, v)
			if err != nil {
				return nil // going anyway
			}
			if shared[rr.Seq] == nil {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(rr.Seq)})
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
		err := img.MessageSeqs(func(seq uint64) error {
			if _, ok := held[seq]; !ok {
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: records.Messages, Key: records.SeqKey(seq)})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	recOf := func(rr records.Ref) *stored {
		if rec := shared[rr.Seq]; rec != nil {
			return rec
		}
		rec := &stored{key: rr.Seq}
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
				stale = append(stale, store.Op{Kind: store.Delete, Bucket: qr.name, Key: records.SeqKey(rr.Seq)})
				if rec := shared[rr.Seq]; rec != nil {
					rec.refs.Add(-1)
				}
				continue
			}
			decoded++
			size := rr.Size
			if rr.Legacy {
				size = int32(m.Size())
			}
			r := &ref{msg: m, rec: recOf(rr), seq: rr.Seq, q: qr.q, count: rr.Count, marked: rr.Count, size: size, deliverAt: rr.At}
			if rr.Legacy {
				// Rewritten in the current format.
				stale = append(stale, refRecordOp(qr.name, r, rr.Count))
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
