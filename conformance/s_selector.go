package conformance

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The selector table: each row is a selector, the message set it runs
// against, and the messages it must select. Rows on the string set run over
// every protocol; rows on the typed set need typed properties, which STOMP
// cannot carry (they are "not expressible" there).

type selMsg struct {
	body  string
	prio  int
	typ   string
	corr  string
	pers  bool
	props Props
}

// stringSet has only string properties, and header fields set through
// their protocol headers. Its lowest priority is 1, not 0: amqp091-go
// cannot send priority 0 (priority/order covers 0 on the other columns).
var stringSet = []selMsg{
	{"s1", 7, "order", "c-1", true, Props{{"color", "red"}, {"name", "Alice"}, {"code", "A_1"}, {"region", "emea"}, {"qty", "7"}}},
	{"s2", 2, "order", "c-2", false, Props{{"color", "blue"}, {"name", "Bob"}, {"code", "B%2"}, {"region", "apac"}}},
	{"s3", 5, "invoice", "c-3", true, Props{{"color", "green"}, {"name", "alice"}, {"code", "AB1"}, {"region", "emea"}}},
	{"s4", 4, "invoice", "c-4", false, Props{{"name", "Carol"}, {"region", "amer"}}},
	{"s5", 9, "refund", "c-5", true, Props{{"color", "red"}, {"name", "O'Brien"}, {"code", "A_12"}, {"region", "amer"}}},
	{"s6", 1, "order", "c-6", false, Props{{"color", "Red"}, {"name", ""}, {"region", ""}}},
}

// typedSet has properties of every JMS type.
var typedSet = []selMsg{
	{"t1", 4, "", "", true, Props{{"n", int32(10)}, {"l", int64(5000000000)}, {"d", 2.5}, {"f", float32(1.5)}, {"b", true}, {"by", int8(3)}, {"sh", int16(300)}, {"s", "10"}}},
	{"t2", 4, "", "", true, Props{{"n", int32(20)}, {"l", int64(-1)}, {"d", 7.25}, {"f", float32(0.25)}, {"b", false}, {"by", int8(-3)}, {"sh", int16(-300)}, {"s", "20"}}},
	{"t3", 4, "", "", true, Props{{"n", int32(30)}, {"l", int64(5000000001)}, {"d", -1.0}, {"f", float32(100.5)}, {"b", true}, {"by", int8(0)}, {"sh", int16(0)}, {"s", "30"}}},
	{"t4", 4, "", "", true, Props{{"d", 1e10}, {"b", false}, {"s", "x"}}},
}

type selRow struct {
	id    string
	sel   string
	typed bool
	want  []string
	note  string
}

var selectorTable = []selRow{
	// Strings, comparison, NULL and three-valued logic.
	{"string-equals", "color = 'red'", false, []string{"s1", "s5"}, "string comparison is case-sensitive"},
	{"string-not-equals", "color <> 'red'", false, []string{"s2", "s3", "s6"}, "a missing property is NULL: the comparison is unknown"},
	{"is-null", "color IS NULL", false, []string{"s4"}, ""},
	{"is-not-null", "color IS NOT NULL", false, []string{"s1", "s2", "s3", "s5", "s6"}, ""},
	{"in", "color IN ('red', 'blue')", false, []string{"s1", "s2", "s5"}, ""},
	{"not-in", "color NOT IN ('red', 'blue')", false, []string{"s3", "s6"}, "NOT IN on NULL is unknown"},
	{"like-percent", "name LIKE 'A%'", false, []string{"s1"}, ""},
	{"like-underscore", "name LIKE '_ob'", false, []string{"s2"}, ""},
	{"like-escape-underscore", `code LIKE 'A\_%' ESCAPE '\'`, false, []string{"s1", "s5"}, ""},
	{"like-escape-percent", "code LIKE 'B!%%' ESCAPE '!'", false, []string{"s2"}, ""},
	{"not-like", "name NOT LIKE 'A%'", false, []string{"s2", "s3", "s4", "s5", "s6"}, ""},
	{"quote-in-literal", "name = 'O''Brien'", false, []string{"s5"}, ""},
	{"empty-string", "region = ''", false, []string{"s6"}, "an empty string is not NULL"},
	{"and", "color = 'red' AND region = 'emea'", false, []string{"s1"}, ""},
	{"or", "color = 'red' OR region = 'apac'", false, []string{"s1", "s2", "s5"}, ""},
	{"not", "NOT (color = 'red')", false, []string{"s2", "s3", "s6"}, "NOT unknown is unknown"},
	{"not-precedence", "NOT color = 'red'", false, []string{"s2", "s3", "s6"}, "NOT binds looser than a comparison: NOT (color = 'red')"},
	{"or-null", "color = 'red' OR color IS NULL", false, []string{"s1", "s4", "s5"}, ""},
	{"nested", "(color = 'red' OR color = 'blue') AND NOT name LIKE 'B%'", false, []string{"s1", "s5"}, ""},
	{"missing-property", "missing = 'x'", false, nil, ""},
	{"missing-is-null", "missing IS NULL", false, []string{"s1", "s2", "s3", "s4", "s5", "s6"}, ""},
	{"true-literal", "TRUE", false, []string{"s1", "s2", "s3", "s4", "s5", "s6"}, ""},
	{"string-vs-number-unknown", "qty > 5", false, nil, "qty is the string '7': comparing a string with a number is unknown"},
	{"keywords-case-insensitive", "color in ('red') and NAME is null", false, []string{"s1", "s5"}, "keywords are case-insensitive, identifiers are not (NAME is not name)"},
	// Header fields.
	{"priority-seed-example", "JMSPriority >= 6", false, []string{"s1", "s5"}, "WebLogic's example (Defining Message Selectors Using SQL Statements)"},
	{"priority-between", "JMSPriority BETWEEN 2 AND 5", false, []string{"s2", "s3", "s4"}, ""},
	{"jmstype", "JMSType = 'invoice'", false, []string{"s3", "s4"}, ""},
	{"correlation-id", "JMSCorrelationID = 'c-2'", false, []string{"s2"}, ""},
	{"delivery-mode", "JMSDeliveryMode = 'PERSISTENT'", false, []string{"s1", "s3", "s5"}, ""},
	{"header-and-property", "JMSType IN ('order', 'refund') AND JMSPriority > 5 AND color = 'red'", false, []string{"s1", "s5"}, ""},
	{"message-id-not-null", "JMSMessageID IS NOT NULL", false, []string{"s1", "s2", "s3", "s4", "s5", "s6"}, ""},
	{"timestamp-positive", "JMSTimestamp > 0", false, []string{"s1", "s2", "s3", "s4", "s5", "s6"}, ""},
	// Typed properties: numbers, booleans, arithmetic.
	{"int-greater", "n > 15", true, []string{"t2", "t3"}, ""},
	{"int-between", "n BETWEEN 10 AND 20", true, []string{"t1", "t2"}, ""},
	{"int-not-between", "n NOT BETWEEN 10 AND 20", true, []string{"t3"}, "NULL is excluded"},
	{"int-is-null", "n IS NULL", true, []string{"t4"}, ""},
	{"int-addition", "n + 5 = 15", true, []string{"t1"}, ""},
	{"int-multiplication", "n * 2 > 50", true, []string{"t3"}, ""},
	{"unary-minus", "-n < -25", true, []string{"t3"}, ""},
	{"int-equals-float-literal", "n = 10.0", true, []string{"t1"}, "numeric promotion"},
	{"long", "l > 4000000000", true, []string{"t1", "t3"}, ""},
	{"long-plus-int", "l + n = 5000000010", true, []string{"t1"}, ""},
	{"double-range", "d > 2.0 AND d < 8", true, []string{"t1", "t2"}, ""},
	{"double-division", "d / 2 = 1.25", true, []string{"t1"}, ""},
	{"double-exponent-literal", "d > 1E9", true, []string{"t4"}, ""},
	{"float", "f = 1.5", true, []string{"t1"}, ""},
	{"boolean-equals", "b = TRUE", true, []string{"t1", "t3"}, ""},
	{"boolean-identifier", "b", true, []string{"t1", "t3"}, "a boolean property is a boolean expression"},
	{"boolean-not", "NOT b", true, []string{"t2", "t4"}, ""},
	{"byte", "by < 0", true, []string{"t2"}, ""},
	{"short", "sh = 300", true, []string{"t1"}, ""},
	{"string-property-vs-number", "s = 10", true, nil, "s is the string '10': a type mismatch is unknown"},
}

func init() {
	for _, row := range selectorTable {
		register(selectorScenario(row))
	}
	register(
		&Scenario{
			ID:     "selector/invalid-refused",
			Title:  "an invalid selector is refused when the consumer is created",
			Checks: "JMS 2.0 §3.8.1 (InvalidSelectorException); CONVENTIONS.md (STOMP ERROR, AMQP attach refused with amqp:invalid-field)",
			Expect: "each of \"color =\", \"color == 'red'\", \"name LIKE 5\", \"n IN (1, 2)\" is refused",
			Run: func(t *T) {
				q := t.Queue()
				for _, sel := range []string{"color =", "color == 'red'", "name LIKE 5", "n IN (1, 2)"} {
					t.Step("subscribe with selector %q", sel)
					c := t.Dial()
					_, err := t.TrySubscribe(c, q, SubOptions{Selector: sel})
					t.ExpectRefused(err, fmt.Sprintf("selector %q", sel))
					_ = c.Close()
				}
			},
		},
		&Scenario{
			ID:     "selector/topic-subscriber",
			Title:  "a topic subscriber's selector filters what it receives",
			Checks: "JMS 2.0 §3.8.1; WebLogic JMS \"Managing Your Applications\": Filtering Messages (TopicSession.createSubscriber with a selector)",
			Expect: "a subscriber with \"region = 'emea'\" gets only the emea message; one without a selector gets both",
			Run: func(t *T) {
				c := t.Dial()
				tp := t.Topic()
				sel := t.Subscribe(c, tp, SubOptions{Selector: "region = 'emea'"})
				all := t.Subscribe(c, tp, SubOptions{})
				t.Send(c, tp, &Message{Body: "apac", Props: Props{{"region", "apac"}}})
				t.Send(c, tp, &Message{Body: "emea", Props: Props{{"region", "emea"}}})
				t.ReceiveBodies(all, "apac", "emea")
				t.ReceiveBody(sel, "emea")
				t.NoMessage(sel)
			},
		},
		&Scenario{
			ID:     "selector/xpath",
			Title:  "JMS_BEA_SELECT selects XML messages by an XPath expression",
			Checks: "WebLogic JMS \"Managing Your Applications\": Defining XML Message Selectors Using XML Selector Method",
			Expect: "JMS_BEA_SELECT('xpath', '/order/@region') = 'emea' selects the emea order only; a malformed document matches nothing",
			Needs:  []Need{NeedXPathSelector},
			Run: func(t *T) {
				c := t.Dial()
				q := t.Queue()
				t.Send(c, q, &Message{Body: `<order region="apac"><item>saw</item></order>`, XML: true})
				t.Send(c, q, &Message{Body: `<order region="emea"><item>drill</item></order>`, XML: true})
				t.Send(c, q, &Message{Body: `<order region="emea"><item>broken</order>`, XML: true})
				sub := t.Subscribe(c, q, SubOptions{Selector: "JMS_BEA_SELECT('xpath', '/order/@region') = 'emea'"})
				t.ReceiveBody(sub, `<order region="emea"><item>drill</item></order>`)
				t.NoMessage(sub)
			},
		},
	)
}

func selectorScenario(row selRow) *Scenario {
	set, setName := stringSet, "the string message set"
	if row.typed {
		set, setName = typedSet, "the typed message set"
	}
	want := "no message"
	if len(row.want) > 0 {
		want = strings.Join(row.want, ", ")
	}
	expect := fmt.Sprintf("of %s, exactly %s", setName, want)
	if row.note != "" {
		expect += " (" + row.note + ")"
	}
	return &Scenario{
		ID:     "selector/" + row.id,
		Title:  "selector " + row.sel,
		Checks: "JMS 2.0 §3.8.1 (message selector syntax and semantics); WebLogic JMS \"Managing Your Applications\": Filtering Messages",
		Expect: expect,
		Run: func(t *T) {
			c := t.Dial()
			q := t.Queue()
			for _, m := range set {
				msg := &Message{Body: m.body, Props: m.props, Priority: Prio(m.prio), CorrelationID: m.corr, Type: m.typ}
				if m.pers {
					msg.Persistent = Persistent
				} else {
					msg.Persistent = NonPersistent
				}
				t.Send(c, q, msg)
			}
			sub := t.Subscribe(c, q, SubOptions{Selector: row.sel})
			var got []string
			for range row.want {
				m := t.TryReceive(sub, t.Within(3*time.Second))
				if m == nil {
					break
				}
				got = append(got, m.Body)
			}
			if m := t.TryReceive(sub, t.Quiet()); m != nil {
				got = append(got, m.Body)
			}
			sort.Strings(got)
			t.Expect(strings.Join(got, ",") == strings.Join(row.want, ","), "selected %v, want %v", got, row.want)
		},
	}
}
