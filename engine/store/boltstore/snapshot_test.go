package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicemq/sluice/engine/store"
	"github.com/sluicemq/sluice/engine/store/boltstore"
)

// A Snapshot is the state as of when it was opened: writes after it are
// not in the file it writes, which ReadSnapshotFile and Open both read,
// empty buckets included.
func TestSnapshotWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	s, err := boltstore.Open(filepath.Join(dir, "live.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	put := func(b, k, v string) store.Op {
		return store.Op{Kind: store.Put, Bucket: b, Key: []byte(k), Value: []byte(v)}
	}
	var ops []store.Op
	for i := range 100 {
		ops = append(ops, put("a", fmt.Sprintf("k%03d", i), "v"))
	}
	ops = append(ops, put("b", "x", "1"), put("empty", "gone", ""), store.Op{Kind: store.Delete, Bucket: "empty", Key: []byte("gone")})
	if err := s.Update(ctx, ops); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot opened do not reach it. (One that grows
	// the file's map waits for the snapshot to close, so it runs aside.)
	later := make(chan error, 1)
	go func() {
		later <- s.Update(ctx, []store.Op{put("b", "x", "2"), put("later", "k", "v"), {Kind: store.DeleteBucket, Bucket: "a"}})
	}()
	path := filepath.Join(dir, "snap.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := sn.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if n != sn.Size() {
		t.Errorf("WriteTo wrote %d bytes, Size says %d", n, sn.Size())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sn.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := <-later; err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var bx string
	err = boltstore.ReadSnapshotFile(path, func(bucket string, each func(func(k, v []byte) error) error) error {
		got[bucket] = 0
		return each(func(k, v []byte) error {
			got[bucket]++
			if bucket == "b" {
				bx = string(v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a"] != 100 || got["b"] != 1 || got["empty"] != 0 || bx != "1" {
		t.Fatalf("snapshot holds %v (b/x=%q), want a:100 b:1 empty:0 with b/x=1", got, bx)
	}
	// The file is a store in its own right.
	s2, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var names []string
	if err := s2.Buckets(func(n string) error { names = append(names, n); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[a b empty]" {
		t.Fatalf("snapshot opened as a store has buckets %v", names)
	}
}

func TestSnapshotClosed(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(); err == nil {
		t.Fatal("Snapshot of a closed store succeeded")
	}
}
