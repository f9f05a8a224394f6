package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicemq/sluice/engine"
)

// TestImportSkipsIDsAlreadyOnTarget: importing a message whose
// JMSMessageID the target already holds (waiting, or delivered and not
// acknowledged), or that an earlier line carries, adds nothing and counts it
// as skipped; so importing one file twice leaves each message once.
func TestImportSkipsIDsAlreadyOnTarget(t *testing.T) {
	const file = `{"id":"ID:a","deliveryMode":"PERSISTENT","body":{"kind":"text","text":"a"}}
{"id":"ID:b","deliveryMode":"PERSISTENT","body":{"kind":"text","text":"b"}}
{"id":"ID:c","deliveryMode":"PERSISTENT","body":{"kind":"text","text":"c"}}
`
	ctx := context.Background()
	sub1, sub2 := engine.SubscriptionTarget("cid", "s1"), engine.SubscriptionTarget("cid", "s2")
	tests := []struct {
		name string
		// setup runs before the imports; it may hold a session open.
		setup   func(t *testing.T, h *admH)
		target  engine.Target
		imports []string
		want    []engine.ImportResult // one per import
		// wantBodies are what browsing each target shows afterwards, and
		// again after a restart unless wantRestarted says otherwise.
		wantBodies, wantRestarted map[engine.Target]string
	}{
		{
			name:       "the same file twice into a queue",
			target:     engine.Target{Dest: admQ1},
			imports:    []string{file, file},
			want:       []engine.ImportResult{{Imported: 3}, {Skipped: 3}},
			wantBodies: map[engine.Target]string{{Dest: admQ1}: "a b c"},
		},
		{
			name:   "a file repeating an ID",
			target: engine.Target{Dest: admQ1},
			imports: []string{`{"id":"ID:a","body":{"kind":"text","text":"first"}}
{"id":"ID:a","body":{"kind":"text","text":"second"}}
{"body":{"kind":"text","text":"no ID"}}
{"body":{"kind":"text","text":"no ID either"}}
`},
			want:       []engine.ImportResult{{Imported: 3, Skipped: 1}},
			wantBodies: map[engine.Target]string{{Dest: admQ1}: "first no ID no ID either"},
		},
		{
			name:   "one overlapping message into a queue",
			target: engine.Target{Dest: admQ1},
			imports: []string{`{"id":"ID:b","deliveryMode":"PERSISTENT","body":{"kind":"text","text":"b"}}
`, file},
			want:       []engine.ImportResult{{Imported: 1}, {Imported: 2, Skipped: 1}},
			wantBodies: map[engine.Target]string{{Dest: admQ1}: "b a c"},
		},
		{
			name: "a message delivered and not acknowledged",
			setup: func(t *testing.T, h *admH) {
				if res, err := h.b.Import(ctx, engine.Target{Dest: admQ1}, strings.NewReader(file)); err != nil || res.Imported != 3 {
					t.Fatalf("first import: %+v %v", res, err)
				}
				conn := h.conn(engine.ConnectionOptions{})
				if err := conn.Start(); err != nil {
					t.Fatal(err)
				}
				s := h.session(conn, engine.ClientAcknowledge)
				c := admConsumer(t, s, admQ1, engine.ConsumerOptions{Selector: "JMSMessageID = 'ID:a'"})
				if d := admRecv(t, c); admBody(d) != "a" {
					t.Fatalf("received %q", admBody(d))
				}
				_ = c.Close() // its session still holds ID:a unacknowledged
			},
			target:     engine.Target{Dest: admQ1},
			imports:    []string{file},
			want:       []engine.ImportResult{{Skipped: 3}},
			wantBodies: map[engine.Target]string{{Dest: admQ1}: "b c"},
			// The restart ends the session: ID:a is back, once.
			wantRestarted: map[engine.Target]string{{Dest: admQ1}: "a b c"},
		},
		{
			name: "into a topic: only the subscriptions without the ID get it",
			setup: func(t *testing.T, h *admH) {
				s := h.session(h.conn(engine.ConnectionOptions{ClientID: "cid"}), engine.AutoAcknowledge)
				for _, name := range []string{"s1", "s2"} {
					_ = admConsumer(t, s, admT, engine.ConsumerOptions{Durable: true, SubscriptionName: name}).Close()
				}
				if res, err := h.b.Import(ctx, sub1, strings.NewReader(file)); err != nil || res.Imported != 3 {
					t.Fatalf("import into s1: %+v %v", res, err)
				}
			},
			target:     engine.Target{Dest: admT},
			imports:    []string{file, file},
			want:       []engine.ImportResult{{Imported: 3}, {Skipped: 3}},
			wantBodies: map[engine.Target]string{sub1: "a b c", sub2: "a b c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := admNew(t, true, engine.Config{})
			admCreate(t, h.b, admQ1, admT)
			if tt.setup != nil {
				tt.setup(t, h)
			}
			for i, in := range tt.imports {
				res, err := h.b.Import(ctx, tt.target, strings.NewReader(in))
				if err != nil {
					t.Fatalf("import %d: %v", i+1, err)
				}
				if res != tt.want[i] {
					t.Errorf("import %d: %+v, want %+v", i+1, res, tt.want[i])
				}
			}
			check := func(when string, bodies map[engine.Target]string) {
				t.Helper()
				for tg, want := range bodies {
					if got := strings.Join(admBodies(t, h.b, tg), " "); got != want {
						t.Errorf("%s: %s holds %q, want %q", when, tg, got, want)
					}
				}
			}
			check("before restart", tt.wantBodies)
			h.restart()
			if tt.wantRestarted != nil {
				check("after restart", tt.wantRestarted)
			} else {
				check("after restart", tt.wantBodies)
			}
		})
	}
}
