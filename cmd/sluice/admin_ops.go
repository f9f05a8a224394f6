package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/engine/message"
)

// `sluice admin publish`, `get`, `policy` and `node`: the admin API's
// operations endpoints from the command line.

func (c *adminClient) publishCmd() *cobra.Command {
	var (
		body, bodyFile, replyTo, mode string
		headers, props                []string
		priority                      int
		ttl, delay                    time.Duration
		nonPersistent, binary         bool
	)
	cmd := &cobra.Command{
		Use:   "publish DEST [--body TEXT | --body-file FILE] [--header NAME=VALUE]… [--property NAME[:TYPE]=VALUE]…",
		Short: "Send a test message to a queue or topic",
		Long: `Send a test message to an existing queue or topic, as a client would: the
destination's policy applies, the broker assigns the JMSMessageID and timestamp,
and a persistent message is stored before the command returns. It prints the
JMSMessageID. Needs the admin grant.

Headers (--header, repeatable): correlation-id, type, reply-to (or the
--reply-to flag). Properties (--property, repeatable) are strings unless
typed: --property qty:int=3, --property urgent:boolean=true; the types are
boolean, byte, short, int, long, float, double, string.

The body is --body, or the contents of --body-file (- reads standard input);
a file that is not UTF-8 text, or --binary, is sent as a bytes body.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := admParseDest(args[0])
			if err != nil {
				return err
			}
			req := map[string]any{}
			data := []byte(body)
			if bodyFile != "" {
				if body != "" {
					return errors.New("give --body or --body-file, not both")
				}
				if bodyFile == "-" {
					data, err = readBody(cmd.InOrStdin())
				} else {
					data, err = os.ReadFile(bodyFile)
				}
				if err != nil {
					return fmt.Errorf("read the body: %w", err)
				}
			}
			if binary || !utf8.Valid(data) {
				req["body"], req["bodyEncoding"], req["bodyKind"] = base64.StdEncoding.EncodeToString(data), "base64", "bytes"
			} else {
				req["body"] = string(data)
			}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, "=")
				if !ok {
					return fmt.Errorf("--header %q: want NAME=VALUE", h)
				}
				switch strings.ToLower(k) {
				case "correlation-id", "correlationid", "jmscorrelationid":
					req["correlationId"] = v
				case "type", "jmstype":
					req["type"] = v
				case "reply-to", "replyto", "jmsreplyto":
					req["replyTo"] = v
				default:
					return fmt.Errorf("--header %q: the headers are correlation-id, type and reply-to (--priority, --ttl, --delay and --non-persistent set the others; a property is --property)", k)
				}
			}
			if replyTo != "" {
				req["replyTo"] = replyTo
			}
			fields, err := admProperties(props)
			if err != nil {
				return err
			}
			if len(fields) > 0 {
				req["properties"] = fields
			}
			if cmd.Flags().Changed("priority") {
				req["priority"] = priority
			}
			switch {
			case nonPersistent:
				req["deliveryMode"] = "NON_PERSISTENT"
			case mode != "":
				req["deliveryMode"] = strings.ToUpper(strings.ReplaceAll(mode, "-", "_"))
			}
			if ttl > 0 {
				req["timeToLive"] = ttl.Milliseconds()
			}
			if delay > 0 {
				req["deliveryDelay"] = delay.Milliseconds()
			}
			var out struct{ ID, Destination string }
			if err := c.call("POST", admDestPath(d)+"/messages/publish", req, &out); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "published %s to %s\n", out.ID, out.Destination)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&body, "body", "", "the message body (text)")
	f.StringVar(&bodyFile, "body-file", "", "read the body from a file (- for standard input)")
	f.BoolVar(&binary, "binary", false, "send the body as bytes, not text")
	f.StringArrayVar(&headers, "header", nil, "a header, NAME=VALUE: correlation-id, type, reply-to (repeatable)")
	f.StringArrayVarP(&props, "property", "p", nil, "a property, NAME=VALUE or NAME:TYPE=VALUE (repeatable)")
	f.StringVar(&replyTo, "reply-to", "", "JMSReplyTo, e.g. /queue/replies")
	f.IntVar(&priority, "priority", 4, "JMSPriority, 0-9")
	f.BoolVar(&nonPersistent, "non-persistent", false, "send it non-persistent")
	f.StringVar(&mode, "delivery-mode", "", "persistent (the default) or non_persistent")
	f.DurationVar(&ttl, "ttl", 0, "time to live (0: never expires)")
	f.DurationVar(&delay, "delay", 0, "delivery delay (time to deliver)")
	return cmd
}

// readBody reads a body from r, up to 64 MiB.
func readBody(r io.Reader) ([]byte, error) {
	const limit = 64 << 20
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("the body is larger than %d bytes", limit)
	}
	return b, nil
}

// admProperties turns NAME=VALUE and NAME:TYPE=VALUE into typed fields.
func admProperties(props []string) ([]message.Field, error) {
	var out []message.Field
	for _, p := range props {
		nt, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--property %q: want NAME=VALUE or NAME:TYPE=VALUE", p)
		}
		name, typ, typed := strings.Cut(nt, ":")
		if !typed {
			typ = "string"
		}
		val, err := admValue(typ, v)
		if err != nil {
			return nil, fmt.Errorf("--property %s: %w", name, err)
		}
		out = append(out, message.Field{Name: name, Value: val})
	}
	return out, nil
}

// admValue parses one property value of the named type.
func admValue(typ, v string) (message.Value, error) {
	bad := func(err error) (message.Value, error) {
		return message.Value{}, fmt.Errorf("%q is not a %s: %w", v, typ, err)
	}
	switch typ {
	case "string":
		return message.StringValue(v), nil
	case "boolean", "bool":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(err)
		}
		return message.BoolValue(b), nil
	case "byte", "short", "int", "long":
		bits := map[string]int{"byte": 8, "short": 16, "int": 32, "long": 64}[typ]
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return bad(err)
		}
		switch typ {
		case "byte":
			return message.ByteValue(int8(n)), nil
		case "short":
			return message.ShortValue(int16(n)), nil
		case "int":
			return message.IntValue(int32(n)), nil
		}
		return message.LongValue(n), nil
	case "float", "double":
		bits := 64
		if typ == "float" {
			bits = 32
		}
		f, err := strconv.ParseFloat(v, bits)
		if err != nil {
			return bad(err)
		}
		if typ == "float" {
			return message.FloatValue(float32(f)), nil
		}
		return message.DoubleValue(f), nil
	}
	return message.Value{}, fmt.Errorf("type %q: want boolean, byte, short, int, long, float, double or string", typ)
}

// admGotMessage is the part of a got message the table shows.
type admGotMessage struct {
	ID            string          `json:"id"`
	Destination   string          `json:"destination"`
	CorrelationID string          `json:"correlationId"`
	Type          string          `json:"type"`
	DeliveryMode  string          `json:"deliveryMode"`
	Priority      int             `json:"priority"`
	Timestamp     int64           `json:"timestamp"`
	DeliveryCount int             `json:"deliveryCount"`
	Properties    []message.Field `json:"properties"`
	BodyKind      string          `json:"bodyKind"`
	Body          string          `json:"body"`
	BodyEncoding  string          `json:"bodyEncoding"`
}

func (c *adminClient) getCmd() *cobra.Command {
	var selector string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "get QUEUE [--selector S] [--timeout 1s]",
		Short: "Consume one message from a queue (destructive: it is gone from the queue)",
		Long: `Consume the next message of a queue, the one a consumer would get (by
priority, then arrival; --selector picks among them), acknowledge it and print
it. This is destructive: the message is gone from the queue afterwards. To look
at messages without taking them, use browse; to keep a copy, export first.

It waits up to --timeout for a message and prints "no message" when none came.
Needs the admin grant. --json prints the whole typed message.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			d, err := admParseDest(args[0])
			if err != nil {
				return err
			}
			if timeout < 0 {
				return errors.New("--timeout must not be negative")
			}
			req := map[string]any{"timeout": timeout.Milliseconds()}
			if selector != "" {
				req["selector"] = selector
			}
			var out struct {
				Message *admGotMessage `json:"message"`
			}
			if err := c.call("POST", admDestPath(d)+"/messages/get", req, &out); err != nil || c.json {
				return err
			}
			m := out.Message
			if m == nil {
				fmt.Fprintf(c.out, "no message on %s within %s\n", d, timeout)
				return nil
			}
			var props []string
			for _, f := range m.Properties {
				props = append(props, f.Name+"="+f.Value.String())
			}
			rows := [][]string{
				{"JMSMessageID", m.ID}, {"JMSDestination", m.Destination}, {"JMSTimestamp", admTime(m.Timestamp)},
				{"JMSPriority", admNum(m.Priority)}, {"JMSDeliveryMode", m.DeliveryMode},
				{"JMSCorrelationID", admDash(m.CorrelationID)}, {"JMSType", admDash(m.Type)},
				{"JMSXDeliveryCount", admNum(m.DeliveryCount)}, {"properties", admDash(strings.Join(props, " "))},
				{"body", m.BodyKind + " (" + m.BodyEncoding + ")"},
			}
			c.table("HEADER\tVALUE", rows)
			fmt.Fprintln(c.out, m.Body)
			return nil
		},
	}
	cmd.Flags().StringVar(&selector, "selector", "", "take the first message this JMS selector matches")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Second, "how long to wait for a message (at most 1m)")
	return cmd
}

func (c *adminClient) policyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "policy DEST",
		Short: "Show a destination's effective policy and where each value comes from",
		Long: `Show which [[destination]] section of the configuration applies to a
destination and, for every setting, its value and its source: the section
(destination[N]), the connection factory ([connection]) or the built-in default.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			d, err := admParseDest(args[0])
			if err != nil {
				return err
			}
			var p struct {
				Destination string `json:"destination"`
				Exists      bool   `json:"exists"`
				Section     int    `json:"section"`
				Match       string `json:"match"`
				Kind        string `json:"kind"`
				Values      []struct {
					Name, Value, Source, Key string
					Override                 bool
				} `json:"values"`
			}
			if err := c.call("GET", admDestPath(d)+"/policy", nil, &p); err != nil || c.json {
				return err
			}
			switch {
			case p.Section < 0:
				fmt.Fprintf(c.out, "%s: no [[destination]] section applies\n", p.Destination)
			default:
				kind := ""
				if p.Kind != "" {
					kind = fmt.Sprintf(", kind %q", p.Kind)
				}
				fmt.Fprintf(c.out, "%s: [[destination]] section %d (match %q%s)\n", p.Destination, p.Section, p.Match, kind)
			}
			if !p.Exists {
				fmt.Fprintln(c.out, "(the destination does not exist now)")
			}
			var rows [][]string
			for _, v := range p.Values {
				val := v.Value
				if val == "" {
					val = "(none)"
				}
				if v.Override {
					val += " (override)"
				}
				rows = append(rows, []string{v.Name, val, v.Source, admDash(v.Key)})
			}
			c.table("SETTING\tVALUE\tSOURCE\tKEY", rows)
			return nil
		},
	}
}

func (c *adminClient) nodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "node",
		Short: "Show the broker process: memory, goroutines, open files, data directory, uptime",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var raw json.RawMessage
			if err := c.call("GET", "/api/node", nil, &raw); err != nil || c.json {
				return err
			}
			var n struct {
				Version, GoVersion, OS, Arch, Started string
				PID, Goroutines, CPUs                 int
				UptimeSeconds                         float64
				Memory                                struct{ RSSBytes, HeapAllocBytes, HeapSysBytes *int64 }
				OpenFiles, MaxOpenFiles               *int64
				Data                                  *struct {
					Path                  string
					Bytes                 int64
					Files                 int
					FreeBytes, TotalBytes *int64
				}
			}
			if err := json.Unmarshal(raw, &n); err != nil {
				return err
			}
			opt := func(p *int64, bytes bool) string {
				switch {
				case p == nil:
					return "-"
				case bytes:
					return admBytes(*p)
				}
				return strconv.FormatInt(*p, 10)
			}
			rows := [][]string{
				{"version", n.Version + " (" + n.GoVersion + ", " + n.OS + "/" + n.Arch + ")"},
				{"pid", admNum(n.PID)}, {"started", n.Started},
				{"uptime", (time.Duration(n.UptimeSeconds) * time.Second).String()},
				{"goroutines", admNum(n.Goroutines)}, {"cpus", admNum(n.CPUs)},
				{"rss", opt(n.Memory.RSSBytes, true)}, {"go heap", opt(n.Memory.HeapAllocBytes, true) + " in use, " + opt(n.Memory.HeapSysBytes, true) + " reserved"},
				{"open files", opt(n.OpenFiles, false) + " of " + opt(n.MaxOpenFiles, false)},
			}
			if d := n.Data; d != nil {
				rows = append(rows, []string{"data directory", d.Path},
					[]string{"store size", admBytes(d.Bytes) + " in " + admNum(d.Files) + " files"},
					[]string{"disk free", opt(d.FreeBytes, true) + " of " + opt(d.TotalBytes, true)})
			}
			c.table("NODE\t", rows)
			return nil
		},
	}
}

// admBytes renders a size for people.
func admBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
