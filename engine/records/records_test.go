package records_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// openStore opens a bbolt store in a fresh directory holding ops.
func openStore(t *testing.T, ops []store.Op) store.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "sluice.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if len(ops) > 0 {
		if err := st.Update(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func put(bucket string, k, v []byte) store.Op {
	return store.Op{Kind: store.Put, Bucket: bucket, Key: k, Value: v}
}

var (
	queueA = message.Destination{Kind: message.Queue, Name: "a"}
	topicT = message.Destination{Kind: message.Topic, Name: "t"}
)

func TestLoad(t *testing.T) {
	sub := records.Subscription{Key: "cid\x00s1", Topic: "t", Name: "s1", ClientID: "cid", Policy: 1,
		Selector: "x > 1", NoLocal: true}
	shared := records.Subscription{Key: "\x00s2", Topic: "t", Name: "s2", Shared: true}
	ref := records.Ref{Seq: 7, Count: 2, Prio: 4, Size: 100}
	for _, tc := range []struct {
		name    string
		ops     []store.Op
		want    records.Image
		wantErr string
	}{
		{name: "empty store"},
		{
			name: "destinations, subscriptions and buckets",
			ops: []store.Op{
				records.Destination{Dest: topicT, Created: 2000}.Op(),
				records.Destination{Dest: queueA, Created: 1000}.Op(),
				sub.Op(), shared.Op(),
				put(records.QueueBucket("a"), ref.Key(), ref.Value()),
				put(records.SubBucket(sub.Key), ref.Key(), ref.Value()),
				put(records.SchedBucket(records.QueueBucket("a")), records.SchedKey(5000, 8), ref.Value()),
				put(records.QueueBucket("gone"), ref.Key(), ref.Value()), // no record names it
				put(records.Messages, records.SeqKey(7), []byte("m")),
				put(records.Collect, records.CollectKey(7, "s:x"), nil),
				put(records.Definitions, records.DefinitionKey("amqp091", "x"), []byte("{}")),
			},
			want: records.Image{
				// Key order: a queue's kind byte sorts before a topic's.
				Destinations:  []records.Destination{{Dest: queueA, Created: 1000}, {Dest: topicT, Created: 2000}},
				Subscriptions: []records.Subscription{shared, sub},
				RefBuckets:    []string{records.QueueBucket("a"), records.QueueBucket("gone"), records.SubBucket(sub.Key)},
				SchedBuckets:  []string{records.SchedBucket(records.QueueBucket("a"))},
			},
		},
		{
			name:    "destination record of the wrong size",
			ops:     []store.Op{put(records.Destinations, records.DestinationKey(queueA), []byte{1, 2, 3})},
			wantErr: "bad destination record",
		},
		{
			name:    "destination of a kind that is not stored",
			ops:     []store.Op{put(records.Destinations, []byte{byte(message.TempQueue), 'x'}, make([]byte, 8))},
			wantErr: "bad destination kind",
		},
		{
			name:    "subscription record that is not JSON",
			ops:     []store.Op{put(records.Subscriptions, []byte("k"), []byte("{"))},
			wantErr: `subscription record "k"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := records.Load(openStore(t, tc.ops))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := records.Image{Destinations: img.Destinations, Subscriptions: img.Subscriptions,
				RefBuckets: img.RefBuckets, SchedBuckets: img.SchedBuckets}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("image\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRefs(t *testing.T) {
	bucket := records.QueueBucket("a")
	all := records.Ref{Seq: 3, Count: 9, At: 123456, Prio: 7, Shared: true, Transient: true, Indexed: true,
		Size: 1 << 20, Expiration: 999}
	plain := records.Ref{Seq: 1, Prio: 4, Size: 10}
	legacy := make([]byte, records.LegacyRefSize)
	legacy[3] = 2 // two delivery attempts
	legacy[11] = 5
	loudPrio := plain.Value()
	loudPrio[12] = 200
	for _, tc := range []struct {
		name    string
		ops     []store.Op
		want    []records.Ref
		wantErr string
	}{
		{name: "missing bucket"},
		{
			name: "key order, every flag",
			ops:  []store.Op{put(bucket, all.Key(), all.Value()), put(bucket, plain.Key(), plain.Value())},
			want: []records.Ref{plain, all},
		},
		{
			name: "legacy record",
			ops:  []store.Op{put(bucket, records.SeqKey(5), legacy)},
			want: []records.Ref{{Seq: 5, Count: 2, At: 5, Legacy: true}},
		},
		{
			name: "priority past 9 reads as 9",
			ops:  []store.Op{put(bucket, plain.Key(), loudPrio)},
			want: []records.Ref{{Seq: 1, Prio: 9, Size: 10}},
		},
		{
			name:    "record of a bad size stops the walk",
			ops:     []store.Op{put(bucket, plain.Key(), plain.Value()), put(bucket, records.SeqKey(2), []byte{1})},
			want:    []records.Ref{plain},
			wantErr: "bad ref record in q:a",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := records.Load(openStore(t, tc.ops))
			if err != nil {
				t.Fatal(err)
			}
			var got []records.Ref
			err = img.Refs(bucket, func(rr records.Ref) error { got = append(got, rr); return nil })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Refs: %v, want an error with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("refs\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMessageSeqs(t *testing.T) {
	img, err := records.Load(openStore(t, []store.Op{
		put(records.Messages, records.SeqKey(9), []byte("nine")),
		put(records.Messages, records.SeqKey(2), []byte("two")),
		put(records.Messages, []byte("short"), []byte("not a message key")),
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	if err := img.MessageSeqs(func(seq uint64) error { got = append(got, seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []uint64{2, 9}) {
		t.Fatalf("MessageSeqs = %v, want [2 9]", got)
	}
}

func TestKeys(t *testing.T) {
	// The time index is walked in due order, then arrival order; a due
	// time before the epoch sorts first.
	keys := [][]byte{records.SchedKey(-5, 9), records.SchedKey(10, 1), records.SchedKey(10, 2), records.SchedKey(11, 0)}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("time index key %d does not sort after key %d", i, i-1)
		}
	}
	rr := records.Ref{Seq: 4, Count: 1, Prio: 2, Indexed: true, Size: 3}
	got, err := records.ParseSchedEntry("t:q:a", records.SchedKey(777, 4), rr.Value())
	if err != nil {
		t.Fatal(err)
	}
	rr.At = 777
	if got != rr {
		t.Fatalf("ParseSchedEntry = %+v, want %+v", got, rr)
	}
	if _, err := records.ParseSchedEntry("t:q:a", records.SeqKey(4), rr.Value()); err == nil {
		t.Fatal("ParseSchedEntry took an 8-byte key")
	}
	if seq, ok := records.ParseCollectKey(records.CollectKey(42, "s:x")); !ok || seq != 42 {
		t.Fatalf("ParseCollectKey = %d, %v, want 42", seq, ok)
	}
	if _, ok := records.ParseCollectKey([]byte("short")); ok {
		t.Fatal("ParseCollectKey took a 5-byte key")
	}
}
