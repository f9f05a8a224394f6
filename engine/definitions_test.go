package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/enginetest"
)

// Definitions are kept per namespace across a restart, replaced and
// deleted by key, and leave the engine's own records alone.
func TestDefinitions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	list := func(b *engine.Broker, ns string) string {
		t.Helper()
		var out []string
		if err := b.Definitions(ns, func(k string, v []byte) error { out = append(out, k+"="+string(v)); return nil }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, ",")
	}
	b, closeB := enginetest.Durable(t, dir, engine.Config{})
	for _, d := range []struct{ ns, k, v string }{{"a", "x", "1"}, {"a", "y", "2"}, {"ab", "x", "other"}, {"a", "x", "3"}} {
		if err := b.PutDefinition(ctx, d.ns, d.k, []byte(d.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteDefinition(ctx, "a", "y"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteDefinition(ctx, "a", "never"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if err := b.PutDefinition(ctx, "", "k", nil); err == nil {
		t.Fatal("an empty namespace was accepted")
	}
	if err := b.PutDefinition(ctx, "a", "big", make([]byte, 70<<10)); err == nil {
		t.Fatal("an oversize definition was accepted")
	}
	closeB()
	b, closeB = enginetest.Durable(t, dir, engine.Config{})
	defer closeB()
	if got := list(b, "a"); got != "x=3" {
		t.Fatalf("namespace a after a restart: %q, want x=3", got)
	}
	if got := list(b, "ab"); got != "x=other" {
		t.Fatalf("namespace ab: %q", got)
	}
	if got := list(b, "none"); got != "" {
		t.Fatalf("an empty namespace lists %q", got)
	}
}
