package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// TestSluiceProfileMatchesConfig checks that profiles/sluice.toml configures
// what the sluice profile claims for every need, so that the two cannot
// drift apart.
func TestSluiceProfileMatchesConfig(t *testing.T) {
	file, err := os.ReadFile("profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != SluiceConfig() {
		t.Fatal("the embedded configuration differs from profiles/sluice.toml")
	}
	cfg, err := config.Load("profiles/sluice.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	policy, err := cfg.PolicyFunc()
	if err != nil {
		t.Fatal(err)
	}
	prof := SluiceProfile()
	for n := range configNeeds {
		if _, ok := prof.Provides[n]; !ok {
			t.Errorf("the sluice profile does not provide %s", n)
		}
	}
	errDest := func(n Need) message.Destination {
		return message.Destination{Kind: message.Queue, Name: prof.Provides[n].ErrorQueue}
	}
	checks := map[Need]func(p engine.Policy) bool{
		NeedRedeliveryLimit: func(p engine.Policy) bool {
			return p.RedeliveryLimit == 2 && p.ErrorDestination == errDest(NeedRedeliveryLimit)
		},
		NeedRedeliveryLimitNoErrorDest: func(p engine.Policy) bool { return p.RedeliveryLimit == 1 && p.ErrorDestination.IsZero() },
		NeedErrorDestination: func(p engine.Policy) bool {
			return p.RedeliveryLimit == -1 && p.ErrorDestination == errDest(NeedErrorDestination)
		},
		NeedRedeliveryDelayOverride: func(p engine.Policy) bool { return p.RedeliveryDelayOverride == time.Second },
		NeedExpireRedirect: func(p engine.Policy) bool {
			return p.Expiration == engine.ExpireRedirect && p.ErrorDestination == errDest(NeedExpireRedirect)
		},
		NeedExpireDiscard: func(p engine.Policy) bool {
			return p.Expiration == engine.ExpireDiscard && p.ErrorDestination == errDest(NeedExpireDiscard)
		},
		NeedExpireLog: func(p engine.Policy) bool {
			return p.Expiration == engine.ExpireLog && p.ErrorDestination == errDest(NeedExpireLog)
		},
		NeedTTLOverride: func(p engine.Policy) bool { return p.TimeToLiveOverride == 300*time.Millisecond },
		NeedTTDOverride: func(p engine.Policy) bool { return p.TimeToDeliverOverride == 800*time.Millisecond },
		NeedTTDSchedule: func(p engine.Policy) bool {
			if p.TimeToDeliverSchedule == nil {
				return false
			}
			at := time.Date(2026, 1, 1, 10, 0, 2, 0, time.UTC)
			return p.TimeToDeliverSchedule(at).Equal(at.Add(3 * time.Second))
		},
		NeedPriorityOverride:     func(p engine.Policy) bool { return p.PriorityOverride == 9 },
		NeedDeliveryModeOverride: func(p engine.Policy) bool { return p.DeliveryModeOverride == message.NonPersistent },
		NeedQuota:                func(p engine.Policy) bool { return p.MaxMessages == 3 && p.BlockingSendTimeout == 0 },
		NeedQuotaBlocking:        func(p engine.Policy) bool { return p.MaxMessages == 1 && p.BlockingSendTimeout == 5*time.Second },
	}
	for n, pv := range prof.Provides {
		check, ok := checks[n]
		if !ok {
			t.Errorf("no check for %s", n)
			continue
		}
		p := policy(message.Destination{Kind: message.Queue, Name: pv.Prefix + "x-1"})
		if !check(p) {
			t.Errorf("%s: the policy of %sx-1 is %+v, not %s", n, pv.Prefix, p, n.Doc())
		}
		if pv.ErrorQueue != "" {
			if ep := policy(errDest(n)); ep.RedeliveryLimit != -1 || !ep.ErrorDestination.IsZero() || ep.Expiration != engine.ExpireDiscard {
				t.Errorf("%s: its error destination %s has a policy of its own: %+v", n, pv.ErrorQueue, ep)
			}
		}
	}
	// The plain prefixes carry no policy.
	for _, name := range []string{"conf.q.x-1", "conf.t.x-1"} {
		p := policy(message.Destination{Kind: message.Queue, Name: name})
		p.TimeToDeliverSchedule = nil
		if fmt.Sprintf("%+v", p) != fmt.Sprintf("%+v", engine.DefaultPolicy()) {
			t.Errorf("%s has a policy: %+v", name, p)
		}
	}
}

func TestScenariosAreWellFormed(t *testing.T) {
	all := All() // panics on duplicates and missing descriptions
	if len(all) < 100 {
		t.Fatalf("only %d scenarios", len(all))
	}
	for _, s := range all {
		for _, n := range s.Needs {
			if needDocs[n] == "" {
				t.Errorf("%s needs %q, which is not documented in need.go", s.ID, n)
			}
		}
		if strings.ContainsAny(s.ID, " \t") || !strings.Contains(s.ID, "/") {
			t.Errorf("scenario ID %q: want area/name", s.ID)
		}
	}
	for _, mk := range Profiles() {
		p := mk()
		for n := range p.Lacks {
			if needDocs[n] == "" {
				t.Errorf("profile %s lacks undocumented need %q", p.Name, n)
			}
		}
	}
}

func TestSelect(t *testing.T) {
	all := All()
	for _, tc := range []struct {
		only string
		want func(id string) bool
	}{
		{"selector/*", func(id string) bool { return strings.HasPrefix(id, "selector/") }},
		{"*/unsubscribe", func(id string) bool { return strings.HasSuffix(id, "/unsubscribe") }},
		{"nack", func(id string) bool { return strings.Contains(id, "nack") }},
	} {
		got, err := Select(all, tc.only)
		if err != nil {
			t.Fatalf("%s: %v", tc.only, err)
		}
		n := 0
		for _, s := range all {
			if tc.want(s.ID) {
				n++
			}
		}
		if len(got) != n || n == 0 {
			t.Errorf("--only %q selected %d, want %d", tc.only, len(got), n)
		}
	}
	if _, err := Select(all, "no-such-scenario"); err == nil {
		t.Error("a pattern matching nothing is not an error")
	}
	if _, err := Select(all, "[bad"); err == nil {
		t.Error("a bad glob is not an error")
	}
}

// fakeDriver is a driver whose connections fail or refuse, to test the
// runner's statuses and the reports without a broker.
type fakeDriver struct{ proto string }

func (d fakeDriver) Protocol() string { return d.proto }
func (d fakeDriver) Addr() string     { return "fake:1" }
func (d fakeDriver) Dial(context.Context, ConnOptions) (Conn, error) {
	return nil, NotExpressible("the fake driver cannot connect")
}

func TestRunStatusesAndReports(t *testing.T) {
	pass := &Scenario{ID: "x/pass", Title: "passes", Checks: "c", Expect: "e", Run: func(t *T) { t.Note("fine") }}
	fail := &Scenario{ID: "x/fail", Title: "fails", Checks: "c", Expect: "e", Run: func(t *T) {
		t.Step("step one")
		t.Expect(false, "wanted <%s>", "this")
	}}
	ne := &Scenario{ID: "x/ne", Title: "not expressible", Checks: "c", Expect: "e", Run: func(t *T) { t.Dial() }}
	ns := &Scenario{ID: "x/ns", Title: "not supported", Checks: "c", Expect: "e", Needs: []Need{NeedQuota}, Run: func(t *T) {}}
	panics := &Scenario{ID: "x/panic", Title: "panics", Checks: "c", Expect: "e", Run: func(t *T) { panic("boom") }}
	cross := &Scenario{ID: "x/cross", Mode: Cross, Title: "cross", Checks: "c", Expect: "e", Run: func(t *T) {}}
	restart := &Scenario{ID: "x/restart", Title: "restart", Checks: "c", Expect: "e", Needs: []Need{NeedRestart}, Run: func(t *T) {}}
	prof := &Profile{Name: "test", Provides: map[Need]Provision{}}
	rep := Run(context.Background(), []*Scenario{pass, fail, ne, ns, panics, cross, restart}, Options{
		Drivers:     map[string]Driver{"stomp": fakeDriver{"stomp"}},
		Unavailable: map[string]string{"amqp": "AMQP listener not available at fake:2"},
		Profile:     prof,
	})
	want := map[string]map[string]Status{
		"x/pass":    {"stomp": Pass, "amqp": Unavailable, "stomp→amqp": NotApplicable},
		"x/fail":    {"stomp": Fail},
		"x/ne":      {"stomp": NotExpressibleStatus},
		"x/ns":      {"stomp": NotSupported},
		"x/panic":   {"stomp": Fail},
		"x/cross":   {"stomp": NotApplicable, "stomp→amqp": Unavailable, "amqp→stomp": Unavailable},
		"x/restart": {"stomp": NotSupported},
	}
	for _, row := range rep.Rows {
		for col, st := range want[row.ID] {
			if got := row.Results[col].Status; got != st {
				t.Errorf("%s [%s] = %s (%s), want %s", row.ID, col, got, row.Results[col].Detail, st)
			}
		}
	}
	if !rep.Failed() {
		t.Error("a failing cell does not fail the report")
	}
	for _, r := range rep.Rows {
		if r.ID == "x/fail" && !strings.Contains(r.Results["stomp"].Detail, "step one: wanted <this>") {
			t.Errorf("failure detail %q", r.Results["stomp"].Detail)
		}
	}
	var text, md, html, js bytes.Buffer
	for _, w := range []func() error{
		func() error { return rep.WriteText(&text, true) },
		func() error { return rep.WriteMarkdown(&md) },
		func() error { return rep.WriteHTML(&html) },
		func() error { return rep.WriteJSON(&js) },
	} {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]string{"text": text.String(), "markdown": md.String(), "html": html.String()} {
		for _, want := range []string{"x/fail", "FAIL", "n/e", "n/s", "AMQP listener not available"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s report lacks %q", name, want)
			}
		}
	}
	if !strings.Contains(html.String(), "wanted &lt;this&gt;") || strings.Contains(html.String(), "wanted <this>") {
		t.Error("the HTML report does not escape details")
	}
	if strings.Contains(html.String(), "<script") || strings.Contains(html.String(), "http://") || strings.Contains(html.String(), "https://") {
		t.Error("the HTML report is not self-contained")
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != 7 || back.Counts["stomp"][Fail] != 2 {
		t.Errorf("JSON round trip: %v, %d rows, counts %v", err, len(back.Rows), back.Counts["stomp"])
	}
}
