package journal

import (
	"reflect"
	"testing"

	"github.com/sluicemq/sluice/engine/store"
)

func put(b, k, v string) store.Op {
	return store.Op{Kind: store.Put, Bucket: b, Key: []byte(k), Value: []byte(v)}
}

func del(b, k string) store.Op { return store.Op{Kind: store.Delete, Bucket: b, Key: []byte(k)} }

func delBucket(b string) store.Op { return store.Op{Kind: store.DeleteBucket, Bucket: b} }

func TestCompact(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out []store.Op
	}{
		{"empty", nil, nil},
		{"distinct keys kept in order", []store.Op{put("q", "1", "a"), put("q", "2", "b"), del("q", "3")},
			[]store.Op{put("q", "1", "a"), put("q", "2", "b"), del("q", "3")}},
		{"stored then acknowledged: only the delete", []store.Op{put("q", "1", "a"), put("q", "2", "b"), del("q", "1")},
			[]store.Op{put("q", "2", "b"), del("q", "1")}},
		{"rewritten with a delivery mark: the last put", []store.Op{put("q", "1", "a"), put("q", "1", "a+mark")},
			[]store.Op{put("q", "1", "a+mark")}},
		{"deleted then put again: the put", []store.Op{del("q", "1"), put("q", "1", "b")},
			[]store.Op{put("q", "1", "b")}},
		{"same key in two buckets", []store.Op{put("a", "1", "x"), put("b", "1", "y"), del("a", "1")},
			[]store.Op{put("b", "1", "y"), del("a", "1")}},
		{"bucket name and key split differently", []store.Op{put("ab", "c", "x"), put("a", "bc", "y")},
			[]store.Op{put("ab", "c", "x"), put("a", "bc", "y")}},
		{"ops before a bucket delete are moot", []store.Op{put("q", "1", "a"), put("r", "1", "b"), delBucket("q"), put("q", "2", "c")},
			[]store.Op{put("r", "1", "b"), delBucket("q"), put("q", "2", "c")}},
		{"a put after the bucket delete stays", []store.Op{put("q", "1", "a"), delBucket("q"), put("q", "1", "b")},
			[]store.Op{delBucket("q"), put("q", "1", "b")}},
		{"a put creates its bucket: kept when the bucket may not exist", []store.Op{put("new", "1", "a"), del("new", "1")},
			[]store.Op{put("new", "1", "a"), del("new", "1")}},
		{"after a bucket delete a put is what creates the bucket", []store.Op{delBucket("q"), put("q", "1", "a"), del("q", "1")},
			[]store.Op{delBucket("q"), put("q", "1", "a"), del("q", "1")}},
		{"two bucket deletes kept", []store.Op{delBucket("q"), put("q", "1", "a"), delBucket("q")},
			[]store.Op{delBucket("q"), delBucket("q")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exists := func(b string) bool { return b == "q" || b == "a" || b == "b" || b == "r" }
			got := compact(append([]store.Op(nil), tc.in...), exists)
			if len(got) == 0 && len(tc.out) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.out) {
				t.Fatalf("compact:\n got %v\nwant %v", got, tc.out)
			}
		})
	}
}
