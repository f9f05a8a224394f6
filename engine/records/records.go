// Package records is the layout of the engine's records in its store
// (package store): which bucket holds what, how keys are made, and how each
// record is encoded. The engine writes these records and, when it starts,
// reads them back through Load into an Image of destinations, durable
// subscriptions and the ref records of each queue and subscription, from
// which it builds its state in memory (recovery). Anything else that must
// understand a store the engine wrote reads it the same way: a follower of
// a replicated store (engine/store/raftstore) promoted to leader, or a
// tool. The package knows nothing of the engine's memory (it does not
// import package engine): what a record means for a running queue —
// which messages stay in memory, which are paged — is the engine's.
//
// # Layout
//
// Every persistent message is one record in bucket Messages keyed by its
// 8-byte big-endian sequence number (SeqKey), its value the message's
// binary encoding (message.Message.MarshalBinary). Each queue or durable
// subscription holding it has a ref record under the same key in its own
// bucket (QueueBucket, SubBucket), so that walking a bucket in key order
// yields the queue in arrival order. A ref record (RefSize bytes) is what
// a queue needs to know of a message without reading it, so that a message
// kept only in the store (paging) costs no memory:
//
//	0:4    delivery attempts recorded so far
//	4:12   the time (ms) before which it is invisible; 0 = none
//	12     priority
//	13     flags: FlagShared when other queues' refs hold the same message;
//	       FlagTransient when the message is non-persistent, written only
//	       to wait in the store behind a backlog (recovery discards it);
//	       FlagIndexed when the message is scheduled and paged out: the
//	       queue's time index (SchedBucket) has an entry for it
//	14:18  the message's size (message.Message.Size), for quotas
//	18:26  its expiration (ms); 0 = never
//
// Stores written before paging have LegacyRefSize-byte ref records (count
// and time only); the engine reads their messages to learn the rest.
//
// A queue's time index (SchedBucket of its bucket) keys the ref records of
// its paged-out scheduled messages by due time, then sequence number
// (SchedKey); its values are the ref records themselves. Bucket
// Destinations holds one record per queue or topic (DestinationKey; the
// value is its creation time, 8 bytes big-endian, ms); bucket
// Subscriptions one JSON record per durable subscription, keyed by the
// subscription's identity. Bucket Collect holds the collector's candidates:
// one per removal of a ref record of a message other queues may hold
// (CollectKey), written with the removal. Bucket Definitions holds what
// the front-ends store beside the engine's destinations (DefinitionKey),
// which recovery leaves alone.
package records

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/store"
)

// Bucket names and the prefixes of per-queue buckets.
const (
	// Messages holds the persistent messages, keyed by SeqKey.
	Messages = "msgs"
	// Destinations holds the destination records.
	Destinations = "dests"
	// Subscriptions holds the durable subscription records.
	Subscriptions = "subs"
	// PrefixQueue starts the name of a queue's ref bucket.
	PrefixQueue = "q:"
	// PrefixSub starts the name of a durable subscription's ref bucket.
	PrefixSub = "s:"
	// PrefixSched starts the name of a ref bucket's time index.
	PrefixSched = "t:"
	// Collect holds the collector's candidates (CollectKey).
	Collect = "collect"
	// Definitions holds the front-ends' definitions (DefinitionKey).
	Definitions = "defs"
)

// QueueBucket is the ref bucket of the queue named name.
func QueueBucket(name string) string { return PrefixQueue + name }

// SubBucket is the ref bucket of the durable subscription keyed key.
func SubBucket(key string) string { return PrefixSub + key }

// SchedBucket is the time index of ref bucket bucket.
func SchedBucket(bucket string) string { return PrefixSched + bucket }

// SeqKey is the key of the message, and of its ref records, with sequence
// number seq: 8 bytes, big-endian.
func SeqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// SchedKey is a time index key: due time (ms, negative as 0), then
// sequence number, both big-endian, so that the index is walked in due
// order.
func SchedKey(at int64, seq uint64) []byte {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:8], uint64(max(at, 0)))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k[:]
}

// CollectKey is the key of a candidate record: the removal from bucket of
// a ref record of the shared message seq (8 bytes big-endian, then the
// bucket's name).
func CollectKey(seq uint64, bucket string) []byte {
	k := make([]byte, 8, 8+len(bucket))
	binary.BigEndian.PutUint64(k, seq)
	return append(k, bucket...)
}

// ParseCollectKey returns the message sequence number of a candidate
// record's key; false for a key too short to hold one.
func ParseCollectKey(k []byte) (seq uint64, ok bool) {
	if len(k) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k), true
}

// DefinitionKey is the key of a definition: its namespace, a zero byte,
// then its key.
func DefinitionKey(namespace, key string) []byte {
	return append(append([]byte(namespace), 0), key...)
}

// Ref record sizes and flags.
const (
	RefSize       = 26
	LegacyRefSize = 12
	FlagShared    = 1 << 0
	FlagTransient = 1 << 1
	FlagIndexed   = 1 << 2
)

// Ref is a decoded ref record: one message held by one queue or durable
// subscription.
type Ref struct {
	Seq   uint64 // the message's sequence number (the record's key)
	Count int32  // delivery attempts recorded so far
	At    int64  // when (ms) it becomes visible; 0: at once
	Prio  uint8  // 0-9
	// Shared: other queues' ref records hold the same message.
	Shared bool
	// Transient: a non-persistent message waiting in the store behind a
	// backlog; it does not outlive the broker.
	Transient bool
	// Indexed: scheduled and paged out; the time index has an entry.
	Indexed    bool
	Size       int32 // message.Message.Size
	Expiration int64 // ms; 0: never
	// Legacy: a LegacyRefSize record; Prio, Shared, Size and Expiration
	// are unknown (the message says).
	Legacy bool
}

// ParseRef decodes the ref record k, v of bucket (named in the error).
// A priority over 9 reads as 9.
func ParseRef(bucket string, k, v []byte) (Ref, error) {
	if len(k) != 8 || (len(v) != RefSize && len(v) != LegacyRefSize) {
		return Ref{}, fmt.Errorf("bad ref record in %s (key %d bytes, value %d bytes)", bucket, len(k), len(v))
	}
	rr := Ref{Seq: binary.BigEndian.Uint64(k), Count: int32(binary.BigEndian.Uint32(v[:4])),
		At: int64(binary.BigEndian.Uint64(v[4:12]))}
	if len(v) == LegacyRefSize {
		rr.Legacy = true
		return rr, nil
	}
	rr.Prio = min(v[12], 9)
	rr.Shared = v[13]&FlagShared != 0
	rr.Transient = v[13]&FlagTransient != 0
	rr.Indexed = v[13]&FlagIndexed != 0
	rr.Size = int32(binary.BigEndian.Uint32(v[14:18]))
	rr.Expiration = int64(binary.BigEndian.Uint64(v[18:26]))
	return rr, nil
}

// Key is rr's key: SeqKey(rr.Seq).
func (rr Ref) Key() []byte { return SeqKey(rr.Seq) }

// Value encodes rr as a ref record (always RefSize bytes).
func (rr Ref) Value() []byte {
	var v [RefSize]byte
	binary.BigEndian.PutUint32(v[:4], uint32(rr.Count))
	binary.BigEndian.PutUint64(v[4:12], uint64(rr.At))
	v[12] = rr.Prio
	if rr.Shared {
		v[13] |= FlagShared
	}
	if rr.Transient {
		v[13] |= FlagTransient
	}
	if rr.Indexed {
		v[13] |= FlagIndexed
	}
	binary.BigEndian.PutUint32(v[14:18], uint32(rr.Size))
	binary.BigEndian.PutUint64(v[18:26], uint64(rr.Expiration))
	return v[:]
}

// ParseSchedEntry decodes a time index entry of bucket into the ref record
// it copies, with At from the key (the due time).
func ParseSchedEntry(bucket string, k, v []byte) (Ref, error) {
	if len(k) != 16 {
		return Ref{}, fmt.Errorf("bad time index key in %s", bucket)
	}
	rr, err := ParseRef(bucket, k[8:], v)
	if err != nil {
		return Ref{}, err
	}
	rr.At = int64(binary.BigEndian.Uint64(k[:8]))
	return rr, nil
}

// Destination is a destination record: a queue or topic and when it was
// created.
type Destination struct {
	Dest    message.Destination
	Created int64 // ms
}

// DestinationKey is the key of d's destination record: its kind, then its
// name.
func DestinationKey(d message.Destination) []byte {
	return append([]byte{byte(d.Kind)}, d.Name...)
}

// ParseDestination decodes the destination record k, v.
func ParseDestination(k, v []byte) (Destination, error) {
	if len(k) < 2 || len(v) != 8 {
		return Destination{}, fmt.Errorf("bad destination record %q", k)
	}
	dest := message.Destination{Kind: message.DestKind(k[0]), Name: string(k[1:])}
	if dest.Kind != message.Queue && dest.Kind != message.Topic {
		return Destination{}, fmt.Errorf("bad destination kind in record %q", k)
	}
	return Destination{Dest: dest, Created: int64(binary.BigEndian.Uint64(v))}, nil
}

// Op is the write that stores d's record.
func (d Destination) Op() store.Op {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(d.Created))
	return store.Op{Kind: store.Put, Bucket: Destinations, Key: DestinationKey(d.Dest), Value: v[:]}
}

// Subscription is a durable subscription record.
type Subscription struct {
	// Key is the record's key, the subscription's identity; its ref
	// bucket is SubBucket(Key). It is not part of the value.
	Key      string `json:"-"`
	Topic    string `json:"topic"`
	Name     string `json:"name"`
	ClientID string `json:"clientId"`
	Policy   uint8  `json:"policy"`
	Selector string `json:"selector,omitempty"`
	NoLocal  bool   `json:"noLocal,omitempty"`
	Shared   bool   `json:"shared,omitempty"`
}

// ParseSubscription decodes the subscription record k, v.
func ParseSubscription(k, v []byte) (Subscription, error) {
	var s Subscription
	if err := json.Unmarshal(v, &s); err != nil {
		return Subscription{}, fmt.Errorf("subscription record %q: %w", k, err)
	}
	s.Key = string(k)
	return s, nil
}

// Op is the write that stores s's record.
func (s Subscription) Op() store.Op {
	v, _ := json.Marshal(s) // plain strings, numbers and bools: cannot fail
	return store.Op{Kind: store.Put, Bucket: Subscriptions, Key: []byte(s.Key), Value: v}
}

// Image is what a store holds of the engine's state, as Load reads it:
// every destination and durable subscription record, and the name of
// every ref bucket and time index. The ref records themselves are read
// per bucket with Refs, in key order, and are not kept: a queue's backlog
// in the store costs the reader one walk of its ref records, not memory.
type Image struct {
	st store.Store
	// Destinations are the destination records, in key order.
	Destinations []Destination
	// Subscriptions are the durable subscription records, in key order.
	Subscriptions []Subscription
	// RefBuckets are the ref buckets of queues (PrefixQueue) and durable
	// subscriptions (PrefixSub), in name order, whether or not a record
	// above names them (a deleted one's bucket may be left).
	RefBuckets []string
	// SchedBuckets are the time indexes (PrefixSched), in name order.
	SchedBuckets []string
}

// Load reads the image of st. A record that cannot be decoded fails it.
func Load(st store.Store) (*Image, error) {
	img := &Image{st: st}
	err := st.ForEach(Destinations, func(k, v []byte) error {
		d, err := ParseDestination(k, v)
		if err != nil {
			return err
		}
		img.Destinations = append(img.Destinations, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = st.ForEach(Subscriptions, func(k, v []byte) error {
		s, err := ParseSubscription(k, v)
		if err != nil {
			return err
		}
		img.Subscriptions = append(img.Subscriptions, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = st.Buckets(func(name string) error {
		switch {
		case strings.HasPrefix(name, PrefixSched):
			img.SchedBuckets = append(img.SchedBuckets, name)
		case strings.HasPrefix(name, PrefixQueue), strings.HasPrefix(name, PrefixSub):
			img.RefBuckets = append(img.RefBuckets, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

// Refs calls fn with every ref record of bucket, in key (arrival) order.
// A record that cannot be decoded stops the walk with an error; so does
// an error from fn, which is returned.
func (img *Image) Refs(bucket string, fn func(Ref) error) error {
	return img.st.ForEach(bucket, func(k, v []byte) error {
		rr, err := ParseRef(bucket, k, v)
		if err != nil {
			return err
		}
		return fn(rr)
	})
}

// MessageSeqs calls fn with the sequence number of every message record,
// in order; keys of another length are skipped. It reads keys only, but
// walks every message.
func (img *Image) MessageSeqs(fn func(seq uint64) error) error {
	return img.st.ForEach(Messages, func(k, _ []byte) error {
		if len(k) != 8 {
			return nil
		}
		return fn(binary.BigEndian.Uint64(k))
	})
}
