package storetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicemq/sluice/engine/store"
)

// model is the reference a simulated store is compared with: bucket name to
// key to value.
type model map[string]map[string]string

// apply applies ops to m as store.Store documents them.
func (m model) apply(ops []store.Op) {
	for _, op := range ops {
		switch op.Kind {
		case store.Put:
			b := m[op.Bucket]
			if b == nil {
				b = map[string]string{}
				m[op.Bucket] = b
			}
			b[string(op.Key)] = string(op.Value)
		case store.Delete:
			if b := m[op.Bucket]; b != nil {
				delete(b, string(op.Key))
			}
		case store.DeleteBucket:
			delete(m, op.Bucket)
		}
	}
}

// state returns m in the form snapshot gives a store.
func (m model) state() state {
	st := state{}
	for name, b := range m {
		pairs := make([]kv, 0, len(b))
		for _, k := range slices.Sorted(maps.Keys(b)) {
			pairs = append(pairs, kv{k, b[k]})
		}
		st[name] = pairs
	}
	return st
}

// simKey returns one of 48 keys: few on purpose, so that ops hit the same
// keys again and again.
func simKey(r *rand.Rand) string {
	n := r.IntN(48)
	switch n % 4 {
	case 0:
		return fmt.Sprintf("k%02d", n)
	case 1:
		return fmt.Sprintf("k%d", n) // a prefix of others
	case 2:
		return string([]byte{0, byte(n), 0xff})
	default:
		return fmt.Sprintf("msg-%016x", uint64(n)<<40)
	}
}

func simValue(r *rand.Rand) string {
	var n int
	switch r.IntN(10) {
	case 0:
		n = 0
	case 1:
		n = 2000 + r.IntN(6000) // spans pages
	default:
		n = r.IntN(200)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

// simBatch returns a random batch and whether it is valid.
func simBatch(r *rand.Rand) ([]store.Op, bool) {
	simBuckets := [...]string{"queue/a", "queue/b", "topic/δ", "x"}
	ops := make([]store.Op, 1+r.IntN(6))
	for i := range ops {
		b := simBuckets[r.IntN(len(simBuckets))]
		switch p := r.IntN(100); {
		case p < 60:
			ops[i] = put(b, simKey(r), simValue(r))
		case p < 92:
			ops[i] = del(b, simKey(r))
		default:
			ops[i] = delBucket(b)
		}
	}
	if r.IntN(20) == 0 {
		bad := []store.Op{put("", "k", "v"), put("x", "", "v"), {Kind: 0, Bucket: "x", Key: []byte("k")}}
		ops[r.IntN(len(ops))] = bad[r.IntN(len(bad))]
		return ops, false
	}
	return ops, true
}

// simulate applies steps random batches to the store and to a model, and
// compares the whole store with the model after every batch and after every
// reopen (every 250 batches and at the end).
func simulate(t *testing.T, h *harness, seed uint64, steps int) {
	t.Logf("seed %d, %d steps", seed, steps)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	m := model{}
	check := func(step int, what string) {
		t.Helper()
		if got, want := h.snapshot(), m.state(); !equalState(got, want) {
			t.Fatalf("seed %d step %d %s: store differs from model\nstore:\n%vmodel:\n%v", seed, step, what, got, want)
		}
	}
	for step := range steps {
		ops, valid := simBatch(r)
		err := h.s.Update(context.Background(), ops)
		switch {
		case valid && err != nil:
			t.Fatalf("seed %d step %d: valid batch failed: %v", seed, step, err)
		case !valid && err == nil:
			t.Fatalf("seed %d step %d: invalid batch returned nil", seed, step)
		case valid:
			m.apply(ops)
		}
		// Scribble over the batch: the store must not have kept it.
		for i := range ops {
			clear(ops[i].Key)
			clear(ops[i].Value)
		}
		check(step, "after update")
		if (step+1)%250 == 0 || step == steps-1 {
			h.reopen()
			check(step, "after reopen")
		}
	}
}
