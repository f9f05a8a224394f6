package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/grammar/selector"
)

// newSelectorCommand builds `sluice selector`, whose one subcommand, check,
// compiles a message selector and optionally evaluates it.
func newSelectorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "selector",
		Short: "Check and try out JMS message selectors",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSelectorCheckCommand())
	return cmd
}

// selectorCheckHelp is the long help of `sluice selector check`; it also
// defines the JSON form of a message.
const selectorCheckHelp = `Compile a JMS message selector, as a consumer's selector would be.

Without --message, print "ok" (noting an empty selector, which selects every
message, and the indexable form "name IS NOT NULL", giving the name), or print
the error with its line and column and exit with status 1.

With --message FILE (or - for standard input), evaluate the selector against
the message in FILE and print true, false or unknown (SQL's third truth value;
a message is delivered only when the result is true). The exit status is 0
for all three.

Put -- before a selector that begins with '-'.

A message is a JSON object; every member is optional:

  {
    "headers": {
      "JMSDeliveryMode": "PERSISTENT",      (or "NON_PERSISTENT")
      "JMSPriority": 6,                     (0-9)
      "JMSMessageID": "ID:1",
      "JMSTimestamp": 1700000000000,        (ms since the epoch)
      "JMSCorrelationID": "c-1",
      "JMSType": "order",
      "JMSRedelivered": false,
      "JMSDeliveryTime": 1700000000000
    },
    "properties": {
      "count":  {"type": "int",    "value": 5},
      "region": {"type": "string", "value": "emea"}
    },
    "body": {"type": "xml", "text": "<order><item><id>66</id></item></order>"}
  }

Header names are exactly those above; a header left out (or null) is NULL.
Property types are boolean, byte, short, int, long (integers, range-checked),
float, double (numbers; a float is rounded to single precision first) and
string. The body type is "xml" or "text"; JMS_BEA_SELECT reads its text.`

// newSelectorCheckCommand builds `sluice selector check`.
func newSelectorCheckCommand() *cobra.Command {
	var messageFile string
	cmd := &cobra.Command{
		Use:   "check <selector>",
		Short: "Check a selector, or evaluate it against a JSON message",
		Long:  selectorCheckHelp,
		Example: `  sluice selector check "JMSPriority >= 6 AND region IN ('emea', 'apac')"
  sluice selector check "Wilma IS NOT NULL"
  sluice selector check "count > 3" --message msg.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			sel, err := selector.Compile(src)
			if err != nil {
				return withSourceLine(src, err)
			}
			out := cmd.OutOrStdout()
			if messageFile == "" {
				_, err := fmt.Fprintln(out, describeSelector(src, sel))
				return err
			}
			msg, err := loadMessage(cmd.InOrStdin(), messageFile)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(out, sel.Eval(msg))
			return err
		},
	}
	cmd.Flags().StringVar(&messageFile, "message", "", "evaluate against the JSON message in this `file` (- for standard input)")
	return cmd
}

// describeSelector is the one-line report on a selector that compiled.
func describeSelector(src string, sel *selector.Selector) string {
	if selector.IsEmpty(src) {
		return "ok: empty selector, selects every message"
	}
	if name, ok := sel.Target(); ok {
		return fmt.Sprintf("ok: indexed subscriber target %q (selects messages that have the property %s)", name, name)
	}
	return "ok"
}

// withSourceLine adds the offending source line and a caret under the
// error's column to a compile error; errors.As still finds the
// *selector.Error.
func withSourceLine(src string, err error) error {
	var se *selector.Error
	if !errors.As(err, &se) {
		return err
	}
	lines := strings.Split(src, "\n")
	if se.Pos.Line < 1 || se.Pos.Line > len(lines) {
		return err
	}
	line := strings.TrimRight(lines[se.Pos.Line-1], "\r")
	col := min(max(se.Pos.Column-1, 0), len(line))
	var pad strings.Builder
	for _, r := range line[:col] {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	return &sourceError{err: err, context: "  " + line + "\n  " + pad.String() + "^"}
}

// sourceError is a compile error shown with its source line.
type sourceError struct {
	err     error
	context string
}

func (e *sourceError) Error() string { return e.err.Error() + "\n" + e.context }
func (e *sourceError) Unwrap() error { return e.err }

// jsonMessage is the JSON form of a message (see selectorCheckHelp).
type jsonMessage struct {
	Headers    map[string]json.RawMessage `json:"headers"`
	Properties map[string]jsonProperty    `json:"properties"`
	Body       *jsonBody                  `json:"body"`
}

// jsonProperty is one typed property value.
type jsonProperty struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// jsonBody is a text or XML body.
type jsonBody struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// cliMessage is a message read from JSON, as a selector.Message.
type cliMessage struct {
	headers map[selector.Header]selector.Value
	props   map[string]selector.Value
	body    []byte
	hasBody bool
}

// Header returns a header field, Null when the JSON left it out.
func (m *cliMessage) Header(h selector.Header) selector.Value { return m.headers[h] }

// Property returns a property, Null when the JSON has none of that name.
func (m *cliMessage) Property(name string) selector.Value { return m.props[name] }

// Body returns the body text, if the JSON gave one.
func (m *cliMessage) Body() ([]byte, bool) { return m.body, m.hasBody }

// loadMessage reads and converts the JSON message in file ("-" is stdin).
func loadMessage(stdin io.Reader, file string) (*cliMessage, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading message: %w", err)
	}
	msg, err := parseMessage(data)
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", file, err)
	}
	return msg, nil
}

// parseMessage converts the JSON form of a message.
func parseMessage(data []byte) (*cliMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var jm jsonMessage
	if err := dec.Decode(&jm); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("bad JSON: more than one value")
	}
	m := &cliMessage{headers: map[selector.Header]selector.Value{}, props: map[string]selector.Value{}}
	for _, name := range sortedKeys(jm.Headers) {
		h, ok := selector.HeaderNamed(name)
		if !ok {
			return nil, fmt.Errorf("header %q: not a selectable header (want one of %s)", name, headerList())
		}
		v, err := headerValue(h, jm.Headers[name])
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", name, err)
		}
		m.headers[h] = v
	}
	for _, name := range sortedKeys(jm.Properties) {
		v, err := propertyValue(jm.Properties[name])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		m.props[name] = v
	}
	if jm.Body != nil {
		switch jm.Body.Type {
		case "xml", "text":
			m.body, m.hasBody = []byte(jm.Body.Text), true
		default:
			return nil, fmt.Errorf("body type %q: want \"xml\" or \"text\"", jm.Body.Type)
		}
	}
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func headerList() string {
	var names []string
	for _, h := range selector.Headers() {
		names = append(names, h.String())
	}
	return strings.Join(names, ", ")
}

// headerValue converts a header's JSON value to its selector type.
func headerValue(h selector.Header, raw json.RawMessage) (selector.Value, error) {
	if string(raw) == "null" {
		return selector.Value{}, nil
	}
	switch h {
	case selector.JMSPriority, selector.JMSTimestamp, selector.JMSDeliveryTime:
		n, err := jsonInt(raw, 64)
		if err != nil {
			return selector.Value{}, err
		}
		if h == selector.JMSPriority && (n < 0 || n > 9) {
			return selector.Value{}, fmt.Errorf("priority %d is not in 0-9", n)
		}
		return selector.Value{Kind: selector.Long, Long: n}, nil
	case selector.JMSRedelivered:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return selector.Value{}, errors.New("want true or false")
		}
		return selector.Value{Kind: selector.Bool, Bool: b}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return selector.Value{}, errors.New("want a string")
	}
	if h == selector.JMSDeliveryMode && s != "PERSISTENT" && s != "NON_PERSISTENT" {
		return selector.Value{}, fmt.Errorf("%q is not PERSISTENT or NON_PERSISTENT", s)
	}
	return selector.Value{Kind: selector.String, Str: s}, nil
}

// propertyValue converts a typed property to its selector value.
func propertyValue(p jsonProperty) (selector.Value, error) {
	if len(p.Value) == 0 || string(p.Value) == "null" {
		return selector.Value{}, errors.New("no value")
	}
	bits := map[string]int{"byte": 8, "short": 16, "int": 32, "long": 64}
	switch p.Type {
	case "boolean":
		var b bool
		if err := json.Unmarshal(p.Value, &b); err != nil {
			return selector.Value{}, errors.New("boolean value must be true or false")
		}
		return selector.Value{Kind: selector.Bool, Bool: b}, nil
	case "byte", "short", "int", "long":
		n, err := jsonInt(p.Value, bits[p.Type])
		if err != nil {
			return selector.Value{}, fmt.Errorf("%s value: %w", p.Type, err)
		}
		return selector.Value{Kind: selector.Long, Long: n}, nil
	case "float", "double":
		var num json.Number
		if err := json.Unmarshal(p.Value, &num); err != nil {
			return selector.Value{}, fmt.Errorf("%s value must be a number", p.Type)
		}
		size := 64
		if p.Type == "float" {
			size = 32
		}
		f, err := strconv.ParseFloat(num.String(), size)
		if err != nil || math.IsInf(f, 0) {
			return selector.Value{}, fmt.Errorf("%s value %s is out of range", p.Type, num)
		}
		return selector.Value{Kind: selector.Double, Double: f}, nil
	case "string":
		var s string
		if err := json.Unmarshal(p.Value, &s); err != nil {
			return selector.Value{}, errors.New("string value must be a JSON string")
		}
		return selector.Value{Kind: selector.String, Str: s}, nil
	}
	return selector.Value{}, fmt.Errorf("type %q: want boolean, byte, short, int, long, float, double or string", p.Type)
}

// jsonInt reads a JSON integer that fits in bits.
func jsonInt(raw json.RawMessage, bits int) (int64, error) {
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil {
		return 0, errors.New("want an integer")
	}
	n, err := strconv.ParseInt(num.String(), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s does not fit in %d bits", num, bits)
		}
		return 0, fmt.Errorf("%s is not an integer", num)
	}
	return n, nil
}
