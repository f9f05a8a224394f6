package journal

import (
	"encoding/binary"

	"github.com/sluicemq/sluice/engine/store"
)

// compact drops the ops of a batch that a later op of the same batch makes
// moot, before the batch goes to the inner store: of the puts and deletes
// of one key only the last counts, and none of those before a bucket's last
// DeleteBucket. The ops are blind writes, so the inner store ends in the
// same state, with one exception that exists guards: a put creates its
// bucket, so a put is dropped only when its bucket is known to exist
// already. A message stored and acknowledged within one application
// interval then costs the inner store one delete of a missing key instead
// of an insert and a delete. The order of the kept ops is kept.
func compact(ops []store.Op, exists func(bucket string) bool) []store.Op {
	if len(ops) < 2 {
		return ops
	}
	last := make(map[string]int, len(ops))
	var bucketDeleted map[string]int
	var key []byte
	for i, op := range ops {
		if op.Kind == store.DeleteBucket {
			if bucketDeleted == nil {
				bucketDeleted = map[string]int{}
			}
			bucketDeleted[op.Bucket] = i
			continue
		}
		key = appendKey(key[:0], op)
		last[string(key)] = i
	}
	if bucketDeleted == nil && len(last) == len(ops) {
		return ops // nothing to drop
	}
	out := ops[:0:0]
	for i, op := range ops {
		if op.Kind != store.DeleteBucket {
			d, deleted := bucketDeleted[op.Bucket]
			if deleted && d > i {
				continue
			}
			key = appendKey(key[:0], op)
			if last[string(key)] != i && (op.Kind != store.Put || (!deleted && exists(op.Bucket))) {
				continue
			}
		}
		out = append(out, op)
	}
	return out
}

// appendKey appends the identity of op's key: its bucket's length and
// name, then the key.
func appendKey(b []byte, op store.Op) []byte {
	b = binary.AppendUvarint(b, uint64(len(op.Bucket)))
	b = append(b, op.Bucket...)
	return append(b, op.Key...)
}
