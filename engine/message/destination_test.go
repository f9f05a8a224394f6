package message

import (
	"strings"
	"testing"
)

// The syntaxes the front-ends use: STOMP (strict) and AMQP 1.0 with no
// capability (bare names are queues) or the topic capability.
var (
	strictSyntax = DestinationSyntax{}
	amqpQueue    = DestinationSyntax{Bare: Queue}
	amqpTopic    = DestinationSyntax{Bare: Topic}
)

func TestDestinationSyntaxParse(t *testing.T) {
	type result struct {
		want Destination
		err  string // a substring of the error; "" when s parses
	}
	ok := func(k DestKind, name string) result { return result{want: Destination{k, name}} }
	bad := func(err string) result { return result{err: err} }
	tests := []struct {
		in                   string
		strict, aQueue, aTop result
	}{
		// Every prefixed form means the same under every syntax; the
		// prefix wins over the capabilities.
		{"/queue/a", ok(Queue, "a"), ok(Queue, "a"), ok(Queue, "a")},
		{"/topic/a.b", ok(Topic, "a.b"), ok(Topic, "a.b"), ok(Topic, "a.b")},
		{"/temp-queue/x", ok(TempQueue, "x"), ok(TempQueue, "x"), ok(TempQueue, "x")},
		{"/temp-topic/x", ok(TempTopic, "x"), ok(TempTopic, "x"), ok(TempTopic, "x")},
		{"/queue/a/b", ok(Queue, "a/b"), ok(Queue, "a/b"), ok(Queue, "a/b")},
		{"queue://a", ok(Queue, "a"), ok(Queue, "a"), ok(Queue, "a")},
		{"topic://a", ok(Topic, "a"), ok(Topic, "a"), ok(Topic, "a")},
		{"temp-queue://a", ok(TempQueue, "a"), ok(TempQueue, "a"), ok(TempQueue, "a")},
		{"temp-topic://a", ok(TempTopic, "a"), ok(TempTopic, "a"), ok(TempTopic, "a")},
		{"queue:///a", ok(Queue, "/a"), ok(Queue, "/a"), ok(Queue, "/a")},
		{"/queue/topic://a", ok(Queue, "topic://a"), ok(Queue, "topic://a"), ok(Queue, "topic://a")},
		// Bare names: refused by the strict syntax, the capability's kind
		// in AMQP.
		{"a", bad(`"a" has no known prefix`), ok(Queue, "a"), ok(Topic, "a")},
		{"orders.eu", bad("no known prefix"), ok(Queue, "orders.eu"), ok(Topic, "orders.eu")},
		{"/queue", bad("no known prefix"), ok(Queue, "/queue"), ok(Topic, "/queue")},
		{"/Queue/a", bad("no known prefix"), ok(Queue, "/Queue/a"), ok(Topic, "/Queue/a")},
		{"/exchange/a", bad("no known prefix"), ok(Queue, "/exchange/a"), ok(Topic, "/exchange/a")},
		{"queue:/a", bad("no known prefix"), ok(Queue, "queue:/a"), ok(Topic, "queue:/a")},
		// Refused everywhere.
		{"", bad("empty destination"), bad("empty destination"), bad("empty destination")},
		{"/queue/", bad(`"/queue/" has an empty name`), bad("empty name"), bad("empty name")},
		{"/temp-topic/", bad("empty name"), bad("empty name"), bad("empty name")},
		{"queue://", bad(`"queue://" has an empty name`), bad("empty name"), bad("empty name")},
		{"temp-queue://", bad("empty name"), bad("empty name"), bad("empty name")},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			what string
			sx   DestinationSyntax
			r    result
		}{{"strict", strictSyntax, tt.strict}, {"amqp queue", amqpQueue, tt.aQueue}, {"amqp topic", amqpTopic, tt.aTop}} {
			got, err := c.sx.Parse(tt.in)
			if c.r.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.r.err) {
					t.Errorf("%s: Parse(%q) = %v, %v; want error %q", c.what, tt.in, got, err, c.r.err)
				}
				continue
			}
			if err != nil || got != c.r.want {
				t.Errorf("%s: Parse(%q) = %v, %v; want %v", c.what, tt.in, got, err, c.r.want)
				continue
			}
			if back, err := ParseDestination(got.String()); err != nil || back != got {
				t.Errorf("%s: %q parsed as %v, whose String form %q parses as %v, %v", c.what, tt.in, got, got.String(), back, err)
			}
		}
		if got, err := ParseDestination(tt.in); tt.strict.err == "" && (err != nil || got != tt.strict.want) {
			t.Errorf("ParseDestination(%q) = %v, %v; want %v", tt.in, got, err, tt.strict.want)
		}
	}
}

// FuzzParseDestination checks that no input panics, that every syntax
// agrees on prefixed names, and that what parses prints back to itself.
func FuzzParseDestination(f *testing.F) {
	for _, s := range []string{"/queue/a", "/topic/a.b", "/temp-queue/x", "temp-topic://y", "queue://", "a", "", "/queue", "/queue/topic://a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		strict, serr := strictSyntax.Parse(s)
		bare, berr := amqpTopic.Parse(s)
		if serr == nil {
			if strict.Kind == NoDest || strict.Name == "" {
				t.Fatalf("Parse(%q) = %#v without an error", s, strict)
			}
			if berr != nil || bare != strict {
				t.Fatalf("syntaxes disagree on %q: strict %v, bare %v, %v", s, strict, bare, berr)
			}
			if back, err := ParseDestination(strict.String()); err != nil || back != strict {
				t.Fatalf("%q: %v prints as %q, which parses as %v, %v", s, strict, strict.String(), back, err)
			}
			return
		}
		if !strings.Contains(serr.Error(), "destination") {
			t.Fatalf("error %q does not say what it is about", serr)
		}
		if berr == nil && (bare != Destination{Topic, s}) {
			t.Fatalf("bare %q = %v; want the topic %q", s, bare, s)
		}
	})
}
