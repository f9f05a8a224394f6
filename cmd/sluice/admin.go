package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/admin"
)

// adminClient talks to a running broker's admin API (docs/admin-api.md).
type adminClient struct {
	url, user, password, token string
	caFile                     string
	json                       bool
	timeout                    time.Duration
	http                       *http.Client
	out, errOut                io.Writer
}

// newAdminCommand builds `sluice admin`: the management API from the
// command line.
func newAdminCommand() *cobra.Command {
	c := &adminClient{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage a running broker: destinations, messages, subscriptions, connections",
		Long: `Manage a running broker through its admin HTTP API (docs/admin-api.md).

Destinations are written /queue/NAME or /topic/NAME (queue://NAME and
topic://NAME work too; a bare NAME is a queue). A durable subscription is
named with --subscription NAME and --client-id ID instead of a destination.

Credentials: --user and --password (HTTP basic authentication) or --token
(bearer), or the environment variables SLUICE_ADMIN_URL, SLUICE_ADMIN_USER,
SLUICE_ADMIN_PASSWORD and SLUICE_ADMIN_TOKEN. --json prints the API's JSON
instead of tables. For an admin listener with admin_tls, give an https://
URL, and --ca-file (SLUICE_ADMIN_CA) when its certificate is not signed by a
CA the system trusts (the server.crt of gen-cert, say).`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			c.out, c.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			c.http = &http.Client{Timeout: c.timeout}
			if c.caFile != "" {
				tr, err := adminTransport(c.caFile)
				if err != nil {
					return err
				}
				c.http.Transport = tr
			}
			return nil
		},
	}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&c.url, "url", env("SLUICE_ADMIN_URL", "http://127.0.0.1:8161"), "admin API base URL")
	pf.StringVar(&c.user, "user", env("SLUICE_ADMIN_USER", ""), "user name (HTTP basic authentication)")
	pf.StringVar(&c.password, "password", env("SLUICE_ADMIN_PASSWORD", ""), "password")
	pf.StringVar(&c.token, "token", env("SLUICE_ADMIN_TOKEN", ""), "bearer token")
	pf.StringVar(&c.caFile, "ca-file", env("SLUICE_ADMIN_CA", ""), "PEM CA certificates to trust for an https:// URL")
	pf.BoolVar(&c.json, "json", false, "print JSON instead of tables")
	pf.DurationVar(&c.timeout, "timeout", 5*time.Minute, "timeout of each request")

	cmd.AddCommand(
		c.destinationsCmd(), c.createCmd(), c.deleteCmd(), c.purgeCmd(),
		c.subscriptionsCmd(), c.deleteSubscriptionCmd(),
		c.connectionsCmd(), c.closeConnectionCmd(),
		c.browseCmd(), c.moveCmd(), c.deleteMessagesCmd(), c.exportCmd(), c.importCmd(),
		c.publishCmd(), c.getCmd(), c.policyCmd(), c.nodeCmd(), c.clusterCmd(),
		admHashPasswordCmd(), admNewTokenCmd(), admGenCertCmd(),
	)
	return cmd
}

// ---------------------------------------------------------------------------
// HTTP

// adminAPIError is an error answer of the admin API.
type adminAPIError struct {
	Status   int
	Message  string `json:"error"`
	Position *struct {
		Line, Column int
	} `json:"position"`
	Line int  `json:"line"`
	Done *int `json:"done"`
}

func (e *adminAPIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Done != nil && *e.Done > 0 {
		msg += fmt.Sprintf(" (%d messages were handled before the failure)", *e.Done)
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.Status)
}

// do sends a request and returns the response body; an error answer
// becomes an *adminAPIError.
func (c *adminClient) do(method, path string, body io.Reader, contentType string) ([]byte, http.Header, error) {
	req, err := http.NewRequest(method, strings.TrimRight(c.url, "/")+path, body)
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.user != "":
		req.SetBasicAuth(c.user, c.password)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("admin API at %s: %w", c.url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode >= 400 {
		e := &adminAPIError{Status: res.StatusCode}
		_ = json.Unmarshal(raw, e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(raw))
		}
		return nil, nil, e
	}
	return raw, res.Header, nil
}

// call sends a JSON request (body may be nil) and decodes the answer into
// out, or prints it as it is with --json.
func (c *adminClient) call(method, path string, body, out any) error {
	raw, err := c.send(method, path, body)
	if err != nil {
		return err
	}
	if c.json {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// fetch is call for an answer the command reads but does not print, even
// with --json.
func (c *adminClient) fetch(method, path string, body, out any) error {
	raw, err := c.send(method, path, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// send makes a request with body (nil: none) as JSON and returns the
// answer's body.
func (c *adminClient) send(method, path string, body any) ([]byte, error) {
	var rd io.Reader
	ct := ""
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd, ct = bytes.NewReader(j), "application/json"
	}
	raw, _, err := c.do(method, path, rd, ct)
	return raw, err
}

// ---------------------------------------------------------------------------
// Targets

// admParseDest reads /queue/NAME, /topic/NAME, queue://NAME, … or a bare
// queue name.
func admParseDest(s string) (message.Destination, error) {
	if !strings.HasPrefix(s, "/") && !strings.Contains(s, "://") {
		if s == "" {
			return message.Destination{}, errors.New("the destination is empty")
		}
		return message.Destination{Kind: message.Queue, Name: s}, nil
	}
	return message.ParseDestination(s)
}

func admDestPath(d message.Destination) string {
	return "/api/destinations/" + url.PathEscape(d.Kind.String()) + "/" + url.PathEscape(d.Name)
}

// admTarget name a queue (the argument) or a durable subscription.
type admTarget struct {
	sub, clientID string
}

func (t *admTarget) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.sub, "subscription", "", "a durable subscription's name instead of a destination")
	cmd.Flags().StringVar(&t.clientID, "client-id", "", "the durable subscription's client ID")
}

// path returns the API path of the target: args[0] or the subscription.
func (t *admTarget) path(args []string) (path, label string, err error) {
	if t.sub != "" {
		if len(args) > 0 {
			return "", "", errors.New("give either a destination or --subscription, not both")
		}
		cid := t.clientID
		if cid == "" {
			cid = admin.EmptyClientID
		}
		return "/api/subscriptions/" + url.PathEscape(cid) + "/" + url.PathEscape(t.sub), "subscription " + t.sub, nil
	}
	if len(args) != 1 {
		return "", "", errors.New("name a destination (/queue/NAME) or a durable subscription (--subscription NAME --client-id ID)")
	}
	d, err := admParseDest(args[0])
	if err != nil {
		return "", "", err
	}
	return admDestPath(d), d.String(), nil
}

// admSelect pick messages for move and delete-messages.
type admSelect struct {
	ids      []string
	selector string
	all      bool
}

func (s *admSelect) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&s.ids, "ids", nil, "JMSMessageIDs of the messages (comma-separated or repeated)")
	cmd.Flags().StringVar(&s.selector, "selector", "", "a JMS selector choosing the messages")
	cmd.Flags().BoolVar(&s.all, "all", false, "every waiting message")
}

func (s *admSelect) body() (map[string]any, error) {
	b := map[string]any{}
	n := 0
	if len(s.ids) > 0 {
		b["ids"], n = s.ids, n+1
	}
	if s.selector != "" {
		b["selector"], n = s.selector, n+1
	}
	if s.all {
		b["all"], n = true, n+1
	}
	if n != 1 {
		return nil, errors.New("say which messages: exactly one of --ids, --selector or --all")
	}
	return b, nil
}

// ---------------------------------------------------------------------------
// Tables

func (c *adminClient) table(header string, rows [][]string) {
	w := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	_ = w.Flush()
}

func admNum[T int | int64 | uint64](v T) string { return strconv.FormatInt(int64(v), 10) }

func admTime(t int64) string {
	if t == 0 {
		return "-"
	}
	return time.UnixMilli(t).UTC().Format("2006-01-02 15:04:05.000")
}

func admDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func admCut(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ---------------------------------------------------------------------------
// Commands

type admDestinationRow struct {
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Destination string `json:"destination"`
	Messages    int64  `json:"messages"`
	Ready       int    `json:"ready"`
	InFlight    int    `json:"inFlight"`
	Scheduled   int    `json:"scheduled"`
	Consumers   int    `json:"consumers"`
	Enqueued    uint64 `json:"enqueued"`
	Dequeued    uint64 `json:"dequeued"`
	Expired     uint64 `json:"expired"`
	Redelivered uint64 `json:"redelivered"`
}

func (c *adminClient) destinationsCmd() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:     "destinations",
		Aliases: []string{"ls", "list"},
		Short:   "List queues and topics with their counters",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path := "/api/destinations"
			if kind != "" {
				path += "?kind=" + url.QueryEscape(kind)
			}
			var ds []admDestinationRow
			if err := c.call("GET", path, nil, &ds); err != nil || c.json {
				return err
			}
			var rows [][]string
			for _, d := range ds {
				rows = append(rows, []string{d.Kind, d.Name, admNum(d.Messages), admNum(d.Ready), admNum(d.InFlight), admNum(d.Scheduled),
					admNum(d.Consumers), admNum(d.Enqueued), admNum(d.Dequeued), admNum(d.Expired), admNum(d.Redelivered)})
			}
			c.table("KIND\tNAME\tMESSAGES\tREADY\tIN-FLIGHT\tSCHEDULED\tCONSUMERS\tENQUEUED\tDEQUEUED\tEXPIRED\tREDELIVERED", rows)
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only queue, topic, temp-queue or temp-topic")
	return cmd
}

// admKindAndName reads "queue NAME", "topic NAME" or one destination.
func admKindAndName(args []string) (message.Destination, error) {
	switch len(args) {
	case 1:
		return admParseDest(args[0])
	case 2:
		switch args[0] {
		case "queue":
			return message.Destination{Kind: message.Queue, Name: args[1]}, nil
		case "topic":
			return message.Destination{Kind: message.Topic, Name: args[1]}, nil
		}
		return message.Destination{}, fmt.Errorf("kind %q: want queue or topic", args[0])
	}
	return message.Destination{}, errors.New("want queue NAME, topic NAME or /queue/NAME")
}

func (c *adminClient) createCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "create (queue|topic) NAME | create /queue/NAME",
		Short: "Create a queue or topic (no error if it exists)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(_ *cobra.Command, args []string) error {
			d, err := admKindAndName(args)
			if err != nil {
				return err
			}
			var out admDestinationRow
			if err := c.call("POST", "/api/destinations", map[string]string{"kind": d.Kind.String(), "name": d.Name}, &out); err != nil || c.json {
				return err
			}
			fmt.Fprintln(c.out, "created", out.Destination)
			return nil
		},
	}
}

func (c *adminClient) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete (queue|topic) NAME | delete /queue/NAME",
		Short: "Delete a destination with its messages and durable subscriptions",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(_ *cobra.Command, args []string) error {
			d, err := admKindAndName(args)
			if err != nil {
				return err
			}
			if err := c.call("DELETE", admDestPath(d), nil, nil); err != nil || c.json {
				return err
			}
			fmt.Fprintln(c.out, "deleted", d)
			return nil
		},
	}
}

func (c *adminClient) purgeCmd() *cobra.Command {
	var t admTarget
	cmd := &cobra.Command{
		Use:   "purge DEST | purge --subscription NAME --client-id ID",
		Short: "Delete every waiting message of a queue or durable subscription",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, label, err := t.path(args)
			if err != nil {
				return err
			}
			var out struct{ Purged int }
			if err := c.call("POST", p+"/purge", nil, &out); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "purged %d messages from %s\n", out.Purged, label)
			return nil
		},
	}
	t.add(cmd)
	return cmd
}

type admSubscriptionRow struct {
	ClientID  string `json:"clientId"`
	Name      string `json:"name"`
	Topic     string `json:"topic"`
	Selector  string `json:"selector"`
	NoLocal   bool   `json:"noLocal"`
	Durable   bool   `json:"durable"`
	Shared    bool   `json:"shared"`
	Active    bool   `json:"active"`
	Consumers int    `json:"consumers"`
	Pending   int64  `json:"pending"`
	InFlight  int    `json:"inFlight"`
}

func (c *adminClient) subscriptionsCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "subscriptions",
		Aliases: []string{"subs"},
		Short:   "List durable subscriptions (--all: every topic subscription)",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path := "/api/subscriptions?durable=true"
			if all {
				path = "/api/subscriptions"
			}
			var subs []admSubscriptionRow
			if err := c.call("GET", path, nil, &subs); err != nil || c.json {
				return err
			}
			var rows [][]string
			for _, s := range subs {
				state := "inactive"
				if s.Active {
					state = fmt.Sprintf("active(%d)", s.Consumers)
				}
				flags := []string{}
				if s.Durable {
					flags = append(flags, "durable")
				}
				if s.Shared {
					flags = append(flags, "shared")
				}
				if s.NoLocal {
					flags = append(flags, "noLocal")
				}
				rows = append(rows, []string{s.Topic, admDash(s.ClientID), admDash(s.Name), strings.Join(flags, ","), state,
					admNum(s.Pending), admNum(s.InFlight), admDash(s.Selector)})
			}
			c.table("TOPIC\tCLIENT-ID\tNAME\tFLAGS\tSTATE\tPENDING\tIN-FLIGHT\tSELECTOR", rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "non-durable subscriptions too")
	return cmd
}

func (c *adminClient) deleteSubscriptionCmd() *cobra.Command {
	var clientID string
	cmd := &cobra.Command{
		Use:   "delete-subscription NAME --client-id ID",
		Short: "Delete an inactive durable subscription and its messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			t := admTarget{sub: args[0], clientID: clientID}
			p, label, _ := t.path(nil)
			if err := c.call("DELETE", p, nil, nil); err != nil || c.json {
				return err
			}
			fmt.Fprintln(c.out, "deleted", label)
			return nil
		},
	}
	cmd.Flags().StringVar(&clientID, "client-id", "", "the subscription's client ID")
	return cmd
}

type admConnectionRow struct {
	ID         uint64 `json:"id"`
	ClientID   string `json:"clientId"`
	User       string `json:"user"`
	RemoteAddr string `json:"remoteAddr"`
	Protocol   string `json:"protocol"`
	Started    bool   `json:"started"`
	Created    string `json:"created"`
	Consumers  int    `json:"consumers"`
	Sessions   []struct {
		Unacknowledged int `json:"unacknowledged"`
	} `json:"sessions"`
}

func (c *adminClient) connectionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "connections",
		Aliases: []string{"conns"},
		Short:   "List client connections",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var cs []admConnectionRow
			if err := c.call("GET", "/api/connections", nil, &cs); err != nil || c.json {
				return err
			}
			var rows [][]string
			for _, x := range cs {
				unacked := 0
				for _, s := range x.Sessions {
					unacked += s.Unacknowledged
				}
				state := "stopped"
				if x.Started {
					state = "started"
				}
				created := x.Created
				if t, err := time.Parse(time.RFC3339Nano, created); err == nil {
					created = t.UTC().Format("2006-01-02 15:04:05")
				}
				user := x.User
				if user == "" {
					user = "anonymous"
				}
				rows = append(rows, []string{admNum(x.ID), admDash(x.ClientID), user, admDash(x.RemoteAddr), admDash(x.Protocol), state,
					admNum(len(x.Sessions)), admNum(x.Consumers), admNum(unacked), created})
			}
			c.table("ID\tCLIENT-ID\tUSER\tREMOTE\tPROTOCOL\tSTATE\tSESSIONS\tCONSUMERS\tUNACKED\tCONNECTED", rows)
			return nil
		},
	}
}

func (c *adminClient) closeConnectionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "close-connection ID",
		Short: "Close a client connection (its unacknowledged messages return to their queues)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := c.call("DELETE", "/api/connections/"+url.PathEscape(args[0]), nil, nil); err != nil || c.json {
				return err
			}
			fmt.Fprintln(c.out, "closed connection", args[0])
			return nil
		},
	}
}

type admMessageRow struct {
	ID            string          `json:"id"`
	Priority      int             `json:"priority"`
	Timestamp     int64           `json:"timestamp"`
	DeliveryCount int             `json:"deliveryCount"`
	Scheduled     bool            `json:"scheduled"`
	DeliverAt     int64           `json:"deliverAt"`
	Type          string          `json:"type"`
	CorrelationID string          `json:"correlationId"`
	Properties    []message.Field `json:"properties"`
	BodyKind      string          `json:"bodyKind"`
	Body          string          `json:"body"`
	BodyTruncated bool            `json:"bodyTruncated"`
}

func (c *adminClient) browseCmd() *cobra.Command {
	var t admTarget
	var selector, sort string
	var offset, limit int
	cmd := &cobra.Command{
		Use:   "browse DEST | browse --subscription NAME --client-id ID",
		Short: "Show waiting messages: headers, typed properties, a body preview",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, label, err := t.path(args)
			if err != nil {
				return err
			}
			q := url.Values{}
			q.Set("offset", strconv.Itoa(offset))
			q.Set("limit", strconv.Itoa(limit))
			q.Set("preview", "60")
			if selector != "" {
				q.Set("selector", selector)
			}
			if sort != "" {
				q.Set("sort", sort)
			}
			var page struct {
				Total    int             `json:"total"`
				Messages []admMessageRow `json:"messages"`
			}
			if err := c.call("GET", p+"/messages?"+q.Encode(), nil, &page); err != nil || c.json {
				return err
			}
			var rows [][]string
			for _, m := range page.Messages {
				var props []string
				for _, f := range m.Properties {
					props = append(props, f.Name+"="+f.Value.String())
				}
				state := "ready"
				if m.Scheduled {
					state = "at " + admTime(m.DeliverAt)
				}
				body := m.Body
				if m.BodyTruncated {
					body += "…"
				}
				rows = append(rows, []string{m.ID, admNum(m.Priority), admTime(m.Timestamp), admNum(m.DeliveryCount), state,
					admDash(m.Type), admCut(admDash(strings.Join(props, " ")), 50), m.BodyKind + ":" + admCut(body, 50)})
			}
			c.table("JMSMessageID\tPRIO\tTIMESTAMP (UTC)\tDELIVERIES\tSTATE\tTYPE\tPROPERTIES\tBODY", rows)
			shown := len(page.Messages)
			fmt.Fprintf(c.out, "%d of %d messages on %s", shown, page.Total, label)
			if shown > 0 {
				fmt.Fprintf(c.out, " (%d-%d)", offset+1, offset+shown)
			}
			fmt.Fprintln(c.out)
			return nil
		},
	}
	t.add(cmd)
	cmd.Flags().StringVar(&selector, "selector", "", "JMS selector")
	cmd.Flags().StringVar(&sort, "sort", "", "header to sort by, e.g. JMSTimestamp or -JMSPriority (descending)")
	cmd.Flags().IntVar(&offset, "offset", 0, "skip this many messages")
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most this many messages (up to 10000)")
	return cmd
}

// selection resolves the target of a move or delete and the messages it
// selects: the API path, the label to print, and the request body.
func selection(t *admTarget, s *admSelect, args []string) (path, label string, body map[string]any, err error) {
	if path, label, err = t.path(args); err != nil {
		return "", "", nil, err
	}
	if body, err = s.body(); err != nil {
		return "", "", nil, err
	}
	return path, label, body, nil
}

func (c *adminClient) moveCmd() *cobra.Command {
	var t admTarget
	var s admSelect
	var to string
	cmd := &cobra.Command{
		Use:   "move DEST --to DEST (--ids … | --selector … | --all)",
		Short: "Move waiting messages to another queue or topic",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, label, body, err := selection(&t, &s, args)
			if err != nil {
				return err
			}
			if to == "" {
				return errors.New("--to is required: the destination to move to")
			}
			d, err := admParseDest(to)
			if err != nil {
				return err
			}
			body["to"] = d.String()
			var out struct{ Moved int }
			if err := c.call("POST", p+"/messages/move", body, &out); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "moved %d messages from %s to %s\n", out.Moved, label, d)
			return nil
		},
	}
	t.add(cmd)
	s.add(cmd)
	cmd.Flags().StringVar(&to, "to", "", "destination to move to")
	return cmd
}

func (c *adminClient) deleteMessagesCmd() *cobra.Command {
	var t admTarget
	var s admSelect
	cmd := &cobra.Command{
		Use:   "delete-messages DEST (--ids … | --selector … | --all)",
		Short: "Delete waiting messages of a queue or durable subscription",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, label, body, err := selection(&t, &s, args)
			if err != nil {
				return err
			}
			var out struct{ Deleted int }
			if err := c.call("POST", p+"/messages/delete", body, &out); err != nil || c.json {
				return err
			}
			fmt.Fprintf(c.out, "deleted %d messages from %s\n", out.Deleted, label)
			return nil
		},
	}
	t.add(cmd)
	s.add(cmd)
	return cmd
}

func (c *adminClient) exportCmd() *cobra.Command {
	var t admTarget
	var selector, file string
	cmd := &cobra.Command{
		Use:   "export DEST [-o FILE]",
		Short: "Write waiting messages as JSON lines (standard output by default)",
		Long: `Write the waiting messages of a queue or durable subscription as JSON lines,
one message per line in the typed JSON form of docs/admin-api.md, which keeps
every header and the type of every property. import reads the same format.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, label, err := t.path(args)
			if err != nil {
				return err
			}
			q := ""
			if selector != "" {
				q = "?selector=" + url.QueryEscape(selector)
			}
			raw, hdr, err := c.do("GET", p+"/messages/export"+q, nil, "")
			if err != nil {
				return err
			}
			if file == "" || file == "-" {
				_, err = c.out.Write(raw)
				return err
			}
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(c.errOut, "exported %s messages from %s to %s\n", hdr.Get("X-Sluice-Messages"), label, file)
			return nil
		},
	}
	t.add(cmd)
	cmd.Flags().StringVar(&selector, "selector", "", "export only the messages this selector matches")
	cmd.Flags().StringVarP(&file, "output", "o", "", "file to write (default: standard output)")
	return cmd
}

func (c *adminClient) importCmd() *cobra.Command {
	var t admTarget
	cmd := &cobra.Command{
		Use:   "import DEST [FILE|-]",
		Short: "Add the messages of a JSON-lines file (as export writes) to a queue, topic or durable subscription",
		Long: `Add every message of a JSON-lines file, as export writes it, to a queue, a
topic (published to its subscriptions) or a durable subscription. Messages
keep their JMSMessageID, timestamp, priority, expiration, delivery mode and
typed properties. The whole file is checked first: a bad line imports
nothing. FILE - (or no FILE) reads standard input.

Import skips a message whose JMSMessageID the target already holds (waiting,
scheduled, or delivered and not yet acknowledged) or that an earlier line of
the file carries, and says how many it skipped: importing a file twice adds
its messages once. Into a topic, a subscription that holds the ID already is
skipped; the others get the message.`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var file string
			if t.sub != "" {
				if len(args) > 1 {
					return errors.New("with --subscription give only the FILE")
				}
				if len(args) == 1 {
					file, args = args[0], nil
				}
			} else if len(args) == 2 {
				file, args = args[1], args[:1]
			}
			p, label, err := t.path(args)
			if err != nil {
				return err
			}
			var in io.Reader = cmd.InOrStdin()
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			raw, _, err := c.do("POST", p+"/messages/import", bufio.NewReader(in), "application/x-ndjson")
			if err != nil {
				return err
			}
			if c.json {
				_, err = c.out.Write(raw)
				return err
			}
			var out struct{ Imported, Skipped int }
			if err := json.Unmarshal(raw, &out); err != nil {
				return fmt.Errorf("import answer: %w", err)
			}
			fmt.Fprintf(c.out, "imported %d messages into %s, skipped %d already present\n", out.Imported, label, out.Skipped)
			return nil
		},
	}
	t.add(cmd)
	return cmd
}

func admHashPasswordCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash-password",
		Short: "Read a password from standard input and print its bcrypt hash for [[admin.users]]",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			h, err := admin.HashPassword(strings.TrimRight(line, "\r\n"))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), h)
			return nil
		},
	}
}

func admNewTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "new-token",
		Short: "Print a new random bearer token and the hash to list in admin.tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, hash, err := admin.NewToken()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token: %s\nconfig: tokens = [%q]\n", tok, hash)
			return nil
		},
	}
}
