package raftstore

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
)

// FuzzDecodeEntry feeds arbitrary bytes to the entry decoder, which reads
// what a peer's AppendEntries carried: it must fail cleanly or decode ops
// that encode back to the same entry.
func FuzzDecodeEntry(f *testing.F) {
	ops := []store.Op{{Kind: store.Put, Bucket: "q", Key: []byte("k"), Value: []byte("v")}, {Kind: store.DeleteBucket, Bucket: "gone"}}
	f.Add(encodeOps(encodeHeader(nil, 0), ops))
	f.Add(encodeOps(encodeHeader(nil, 42), ops))
	f.Add([]byte{entryBegin})
	f.Add([]byte{entryGenOps, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, gen, ops, err := decodeEntry(data)
		if err != nil {
			return
		}
		if kind == entryBegin {
			if len(data) != 1 || ops != nil {
				t.Fatalf("begin entry %x decoded with ops %v", data, ops)
			}
			return
		}
		if kind == entryGenOps && gen == 0 {
			t.Fatalf("entry %x decoded with generation 0", data)
		}
		again := encodeOps(encodeHeader(nil, gen), ops)
		_, gen2, ops2, err := decodeEntry(again)
		if err != nil || gen2 != gen || len(ops2) != len(ops) {
			t.Fatalf("entry %x re-encoded as %x: %v", data, again, err)
		}
		for i := range ops {
			a, b := ops[i], ops2[i]
			if a.Kind != b.Kind || a.Bucket != b.Bucket || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("op %d: %+v re-decoded as %+v", i, a, b)
			}
		}
	})
}

// FuzzDecodeLog feeds arbitrary bytes to the bbolt raft log's entry
// decoder: it must fail cleanly or decode an entry.
func FuzzDecodeLog(f *testing.F) {
	f.Add(encodeLog(nil, &raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("x"), Extensions: []byte("e")}))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var l raft.Log
		if err := decodeLog(7, data, &l); err != nil {
			return
		}
		if l.Index != 7 {
			t.Fatalf("decoded index %d, want the key's 7", l.Index)
		}
	})
}
