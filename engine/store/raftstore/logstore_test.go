package raftstore

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/engine/store"
)

// The log keeps entries whole across a reopen, reports its first and last
// index, deletes ranges, and keeps stable values (missing ones read as
// nil and 0, as raft expects).
func TestLogStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	l, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := l.FirstIndex(); f != 0 {
		t.Fatalf("empty log: first index %d", f)
	}
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: i / 3, Type: raft.LogCommand, Data: []byte{byte(i), 0, 1}, Extensions: []byte("x"), AppendedAt: at})
	}
	logs[4].Data = nil
	if err := l.StoreLogs(logs[:9]); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLog(logs[9]); err != nil {
		t.Fatal(err)
	}
	if err := l.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := l.SetUint64([]byte("term"), 42); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = openLogStore(path); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, want := range logs {
		var got raft.Log
		if err := l.GetLog(want.Index, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d read back as %+v, want %+v", want.Index, got, *want)
		}
	}
	if err := l.DeleteRange(1, 4); err != nil {
		t.Fatal(err)
	}
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	if first != 5 || last != 10 {
		t.Fatalf("after deleting 1-4: first %d last %d, want 5 and 10", first, last)
	}
	var got raft.Log
	if err := l.GetLog(3, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry: %v, want ErrLogNotFound", err)
	}
	if v, err := l.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get k = %q, %v", v, err)
	}
	if v, err := l.Get([]byte("missing")); err != nil || v != nil {
		t.Fatalf("Get missing = %q, %v; want nil, nil", v, err)
	}
	if n, err := l.GetUint64([]byte("term")); err != nil || n != 42 {
		t.Fatalf("GetUint64 term = %d, %v", n, err)
	}
	if n, err := l.GetUint64([]byte("missing")); err != nil || n != 0 {
		t.Fatalf("GetUint64 missing = %d, %v; want 0, nil", n, err)
	}
}

// Entries round-trip through the codec (empty values and keys of bucket
// deletes included), and a truncated or unversioned entry is refused.
func TestEntryCodec(t *testing.T) {
	in := []store.Op{
		{Kind: store.Put, Bucket: "queue/a", Key: []byte("k1"), Value: []byte("value")},
		{Kind: store.Put, Bucket: "δ", Key: []byte{0, 0xff}, Value: nil},
		{Kind: store.Delete, Bucket: "queue/a", Key: []byte("k0")},
		{Kind: store.DeleteBucket, Bucket: "gone"},
	}
	for _, gen := range []uint64{0, 1, 300} {
		data := encodeOps(encodeHeader(nil, gen), in)
		kind, g, out, err := decodeEntry(data)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]byte{true: entryVersion, false: entryGenOps}[gen == 0]; kind != want || g != gen {
			t.Fatalf("generation %d decoded as kind %d generation %d", gen, kind, g)
		}
		if len(out) != len(in) {
			t.Fatalf("decoded %d ops, want %d", len(out), len(in))
		}
		for i := range in {
			a, b := in[i], out[i]
			if a.Kind != b.Kind || a.Bucket != b.Bucket || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("op %d decoded as %+v, want %+v", i, b, a)
			}
		}
		if _, _, _, err := decodeEntry(data[:len(data)-3]); err == nil {
			t.Fatalf("truncated entry %x decoded", data[:len(data)-3])
		}
	}
	data := encodeOps(encodeHeader(nil, 0), in)
	if kind, _, ops, err := decodeEntry([]byte{entryBegin}); err != nil || kind != entryBegin || ops != nil {
		t.Fatalf("a generation's beginning decoded as %d, %v, %v", kind, ops, err)
	}
	for _, bad := range [][]byte{nil, append([]byte{9}, data[1:]...), append([]byte{entryGenOps, 0}, data[1:]...), {entryBegin, 1}} {
		if _, _, _, err := decodeEntry(bad); err == nil {
			t.Fatalf("corrupt entry %x decoded", bad)
		}
	}
}

// The WAL backend, as raft uses it after a leader change: a suffix of
// uncommitted entries is deleted (a tail truncation) and new ones are
// appended; after a close (or a crash: the WAL is not closed), the log
// opens again with every kept entry readable. raft-wal v0.4.0 left the
// truncated segment sealed without its index, and the next start
// panicked ("sealed segment has no index block"); v0.4.1 fixed it.
func TestWALTailTruncationSurvivesRestart(t *testing.T) {
	for _, closeIt := range []bool{true, false} {
		name := map[bool]string{true: "closed", false: "crashed"}[closeIt]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hl := hclogFor(slog.New(slog.DiscardHandler))
			l, err := openLogBackend(dir, 0, hl)
			if err != nil {
				t.Fatal(err)
			}
			put := func(l logBackend, from, to, term uint64) {
				t.Helper()
				var logs []*raft.Log
				for i := from; i <= to; i++ {
					logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte{byte(i), byte(term)}})
				}
				if err := l.StoreLogs(logs); err != nil {
					t.Fatal(err)
				}
			}
			put(l, 1, 10, 1)
			if err := l.DeleteRange(8, 10); err != nil { // the suffix a new leader does not have
				t.Fatal(err)
			}
			put(l, 8, 12, 2)
			if closeIt {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else if w, ok := l.(*walLog); ok {
				_ = w.meta.Close() // release its file lock, as the process's death would
			}
			l2, err := openLogBackend(dir, 0, hl)
			if err != nil {
				t.Fatalf("reopen after a tail truncation: %v", err)
			}
			defer l2.Close()
			for i := uint64(1); i <= 12; i++ {
				var got raft.Log
				if err := l2.GetLog(i, &got); err != nil {
					t.Fatalf("entry %d after reopening: %v", i, err)
				}
				want := uint64(1)
				if i >= 8 {
					want = 2
				}
				if got.Term != want || got.Data[0] != byte(i) {
					t.Fatalf("entry %d after reopening: term %d data %v, want term %d", i, got.Term, got.Data, want)
				}
			}
		})
	}
}
