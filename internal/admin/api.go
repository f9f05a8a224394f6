package admin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
	"github.com/sluicemq/sluice/grammar/selector"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// Request limits.
const (
	maxJSONBody    = 1 << 20
	defaultLimit   = 100
	maxLimit       = 10000
	defaultPreview = 256
)

func (s *Server) routes() {
	s.sessionRoutes()
	s.handle("GET /api/overview", s.overview)
	s.handle("GET /api/history", s.brokerHistory)
	s.handle("GET /api/node", s.node)

	s.handle("GET /api/destinations", s.listDestinations)
	s.handle("POST /api/destinations", s.createDestination)
	s.handle("GET /api/destinations/{kind}/{name}", s.getDestination)
	s.handle("DELETE /api/destinations/{kind}/{name}", s.deleteDestination)
	s.handle("POST /api/destinations/{kind}/{name}/purge", s.purge)
	s.handle("GET /api/destinations/{kind}/{name}/history", s.destinationHistory)
	s.handle("GET /api/destinations/{kind}/{name}/policy", s.policy)
	s.handle("POST /api/destinations/{kind}/{name}/messages/publish", s.publish)
	s.handle("POST /api/destinations/{kind}/{name}/messages/get", s.getMessage)

	s.handle("GET /api/subscriptions", s.listSubscriptions)
	s.handle("DELETE /api/subscriptions/{clientID}/{sub}", s.deleteSubscription)
	s.handle("POST /api/subscriptions/{clientID}/{sub}/purge", s.purge)

	for _, base := range []string{"/api/destinations/{kind}/{name}", "/api/subscriptions/{clientID}/{sub}"} {
		s.handle("GET "+base+"/messages", s.browse)
		s.handle("POST "+base+"/messages/move", s.move)
		s.handle("POST "+base+"/messages/delete", s.deleteMessages)
		s.handle("GET "+base+"/messages/export", s.export)
		s.handle("POST "+base+"/messages/import", s.importMessages)
	}

	s.handle("GET /api/connections", s.listConnections)
	s.handle("GET /api/connections/{id}", s.getConnection)
	s.handle("DELETE /api/connections/{id}", s.closeConnection)
}

// sessionRoutes are the console's login, logout and whoami.
func (s *Server) sessionRoutes() {
	s.apiRoutes = append(s.apiRoutes, "POST /api/login", "POST /api/logout")
	s.mux.HandleFunc("POST /api/login", s.login)
	s.mux.HandleFunc("POST /api/logout", s.logout)
	s.handle("GET /api/whoami", s.whoami)
}

// statusOnly records what the mux answers a request no pattern matches
// (404, or 405 with Allow), so that API clients get a JSON error instead.
type statusOnly struct {
	h    http.Header
	code int
}

func (s *statusOnly) Header() http.Header         { return s.h }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.code = code }

// unmatched answers API requests that match no route with a JSON error.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return false
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		return false
	}
	rec := &statusOnly{h: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, r)
	switch rec.code {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.h.Get("Allow"))
		writeError(w, rec.code, "method "+r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+rec.h.Get("Allow")+")")
	case http.StatusNotFound:
		writeError(w, rec.code, "no such API endpoint: "+r.Method+" "+r.URL.Path+" (see docs/admin-api.md)")
	default:
		return false
	}
	return true
}

// ---------------------------------------------------------------------------
// Request parsing

// decodeJSON reads a small JSON request body strictly: unknown fields and
// trailing data are errors.
func decodeJSON(r *http.Request, w http.ResponseWriter, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return badRequest("the request needs a JSON body")
		}
		return badRequest("malformed JSON request: %v", err)
	}
	if dec.More() {
		return badRequest("malformed JSON request: data after the JSON object")
	}
	return nil
}

func parseKind(s string) (message.DestKind, error) {
	for k := message.Queue; k <= message.TempTopic; k++ {
		if s == k.String() {
			return k, nil
		}
	}
	return 0, badRequest("unknown destination kind %q: want queue, topic, temp-queue or temp-topic", s)
}

func pathDest(r *http.Request) (message.Destination, error) {
	k, err := parseKind(r.PathValue("kind"))
	if err != nil {
		return message.Destination{}, err
	}
	name := r.PathValue("name")
	if name == "" {
		return message.Destination{}, badRequest("the destination name is empty")
	}
	return message.Destination{Kind: k, Name: name}, nil
}

// EmptyClientID stands for the empty client ID of a shared durable
// subscription in API paths.
const EmptyClientID = "-"

// pathTarget reads the queue or durable subscription of a messages path.
func pathTarget(r *http.Request) (engine.Target, error) {
	if sub := r.PathValue("sub"); sub != "" {
		cid := r.PathValue("clientID")
		if cid == EmptyClientID {
			cid = ""
		}
		return engine.SubscriptionTarget(cid, sub), nil
	}
	d, err := pathDest(r)
	if err != nil {
		return engine.Target{}, err
	}
	return engine.Target{Dest: d}, nil
}

func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("query parameter %s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

// selectorPosition digs the position out of a selector error.
func selectorPosition(err error) (position, bool) {
	var se *selector.Error
	if errors.As(err, &se) {
		return position{Offset: se.Pos.Offset, Line: se.Pos.Line, Column: se.Pos.Column}, true
	}
	return position{}, false
}

// ---------------------------------------------------------------------------
// Session

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

type whoamiResponse struct {
	User string `json:"user"`
	// Role is admin, monitor (read-only) or none; admin without
	// credentials configured.
	Role         string `json:"role"`
	AuthRequired bool   `json:"authRequired"`
	// Cluster is true on a node of a cluster: GET /api/cluster has its
	// view.
	Cluster bool `json:"cluster,omitempty"`
}

func (s *Server) toWhoami(c Caller, authRequired bool) whoamiResponse {
	return whoamiResponse{User: c.Name, Role: c.Role.String(), AuthRequired: authRequired, Cluster: s.opts.Cluster != nil}
}

// login checks the console's user and password with the realm and starts
// a session. A user without the admin or monitor grant gets 403 and no
// session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.auth.Enabled() {
		c, err := s.auth.Check(r)
		if err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, s.toWhoami(c, false))
		return
	}
	at := security.Attempt{Protocol: "admin", Remote: r.RemoteAddr, Mechanism: "console"}
	c, err := s.auth.login(r.Context(), at, req.User, req.Password, s.uncountedAttempt)
	if err != nil {
		s.log.Info("console login refused", slog.String("remote", r.RemoteAddr), slog.String("user", req.User))
		writeError(w, http.StatusUnauthorized, errWrongPassword.Error())
		return
	}
	if c.Role == RoleNone {
		msg := noGrant(c)
		if s.metrics != nil {
			s.metrics.deniedAdmin("monitor")
		}
		s.log.Info("console login refused", slog.String("remote", r.RemoteAddr), c.logAttr(), slog.String("reason", msg))
		writeError(w, http.StatusForbidden, msg)
		return
	}
	v, err := s.auth.newSession(c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("console login", slog.String("remote", r.RemoteAddr), c.logAttr(), slog.String("role", c.Role.String()))
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionFor / time.Second)})
	writeJSON(w, http.StatusOK, s.toWhoami(c, true))
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && s.auth != nil {
		s.auth.endSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, whoamiResponse{Role: RoleNone.String(), AuthRequired: s.auth.Enabled()})
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.toWhoami(callerOf(r), s.auth.Enabled()))
}

// ---------------------------------------------------------------------------
// Overview

type overviewResponse struct {
	Version              string   `json:"version"`
	Started              string   `json:"started"`
	UptimeSeconds        float64  `json:"uptimeSeconds"`
	Ready                bool     `json:"ready"`
	Queues               int      `json:"queues"`
	Topics               int      `json:"topics"`
	Temporary            int      `json:"temporary"`
	Messages             int64    `json:"messages"`
	InFlight             int      `json:"inFlight"`
	Scheduled            int      `json:"scheduled"`
	Paged                int64    `json:"paged"`
	Bytes                int64    `json:"bytes"`
	Consumers            int      `json:"consumers"`
	Connections          int      `json:"connections"`
	DurableSubscriptions int      `json:"durableSubscriptions"`
	Enqueued             uint64   `json:"enqueued"`
	Dequeued             uint64   `json:"dequeued"`
	Expired              uint64   `json:"expired"`
	Redelivered          uint64   `json:"redelivered"`
	Flow                 flowJSON `json:"flow"`
	Time                 int64    `json:"time"`
}

// flowJSON is the state of the engine's flow gate: whether producers are
// held, why and since when, and the limits behind it.
type flowJSON struct {
	Blocked        bool     `json:"blocked"`
	Reasons        []string `json:"reasons"`
	Since          string   `json:"since,omitempty"`
	BlockedSeconds float64  `json:"blockedSeconds"`
	MemoryLimit    int64    `json:"memoryLimit"`
	MemoryUsed     int64    `json:"memoryUsed"`
	DiskFreeLimit  int64    `json:"diskFreeLimit"`
	DiskFree       int64    `json:"diskFree"`
}

func flowOf(st engine.FlowStats) flowJSON {
	f := flowJSON{Blocked: st.Blocked(), Reasons: []string{}, BlockedSeconds: st.BlockedTime.Seconds(),
		MemoryLimit: st.MemoryLimit, MemoryUsed: st.MemoryUsed, DiskFreeLimit: st.DiskFreeLimit, DiskFree: st.DiskFree}
	if st.Reasons&engine.FlowMemory != 0 {
		f.Reasons = append(f.Reasons, "memory")
	}
	if st.Reasons&engine.FlowDisk != 0 {
		f.Reasons = append(f.Reasons, "disk")
	}
	if !st.Since.IsZero() {
		f.Since = st.Since.UTC().Format(time.RFC3339Nano)
	}
	return f
}

func (s *Server) overview(w http.ResponseWriter, _ *http.Request) {
	o := overviewResponse{Version: s.opts.Version, Started: s.started.UTC().Format(time.RFC3339),
		UptimeSeconds: time.Since(s.started).Seconds(), Ready: s.ready.Load(), Time: time.Now().UnixMilli()}
	for _, d := range s.eng.Destinations() {
		switch d.Kind {
		case message.Queue:
			o.Queues++
		case message.Topic:
			o.Topics++
		default:
			o.Temporary++
		}
		o.Messages += d.Messages
		o.InFlight += d.InFlight
		o.Scheduled += d.Scheduled
		o.Paged += d.Paged
		o.Bytes += d.Bytes
		o.Consumers += d.Consumers
		o.Enqueued += d.Enqueued
		o.Dequeued += d.Dequeued
		o.Expired += d.Expired
		o.Redelivered += d.Redelivered
	}
	o.Connections = len(s.eng.Connections())
	o.Flow = flowOf(s.eng.Flow().Stats())
	for _, sub := range s.eng.Subscriptions() {
		if sub.Durable {
			o.DurableSubscriptions++
		}
	}
	writeJSON(w, http.StatusOK, o)
}

// ---------------------------------------------------------------------------
// Destinations

type destinationJSON struct {
	Kind            string `json:"kind"`
	Name            string `json:"name"`
	Destination     string `json:"destination"`
	Temporary       bool   `json:"temporary"`
	Messages        int64  `json:"messages"`
	Ready           int    `json:"ready"`
	InFlight        int    `json:"inFlight"`
	Scheduled       int    `json:"scheduled"`
	Paged           int64  `json:"paged"`
	PagedBytes      int64  `json:"pagedBytes"`
	Bytes           int64  `json:"bytes"`
	Consumers       int    `json:"consumers"`
	Subscriptions   int    `json:"subscriptions"`
	Enqueued        uint64 `json:"enqueued"`
	Dequeued        uint64 `json:"dequeued"`
	Expired         uint64 `json:"expired"`
	Redelivered     uint64 `json:"redelivered"`
	Undelivered     uint64 `json:"undelivered"`
	Delivered       uint64 `json:"delivered"`
	Created         string `json:"created"`
	OldestTimestamp int64  `json:"oldestTimestamp"`
	Owner           uint64 `json:"ownerConnection,omitempty"`
}

func toDestinationJSON(d engine.DestinationInfo) destinationJSON {
	return destinationJSON{Kind: d.Kind.String(), Name: d.Name, Destination: d.Destination().String(),
		Temporary: d.Kind.IsTemporary(), Messages: d.Messages, Ready: d.Ready, InFlight: d.InFlight,
		Scheduled: d.Scheduled, Paged: d.Paged, PagedBytes: d.PagedBytes, Bytes: d.Bytes, Consumers: d.Consumers, Subscriptions: d.Subscriptions,
		Enqueued: d.Enqueued, Dequeued: d.Dequeued, Expired: d.Expired, Redelivered: d.Redelivered,
		Undelivered: d.Undelivered, Delivered: d.Delivered, Created: d.Created.UTC().Format(time.RFC3339Nano),
		OldestTimestamp: d.OldestTimestamp, Owner: d.Owner}
}

func (s *Server) listDestinations(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("kind")
	if kind != "" {
		if _, err := parseKind(kind); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	out := []destinationJSON{}
	for _, d := range s.eng.Destinations() {
		if kind == "" || d.Kind.String() == kind {
			out = append(out, toDestinationJSON(d))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type createRequest struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func (s *Server) createDestination(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Kind != "queue" && req.Kind != "topic" {
		s.fail(w, r, badRequest("kind %q: want queue or topic", req.Kind))
		return
	}
	k, _ := parseKind(req.Kind)
	dest := message.Destination{Kind: k, Name: req.Name}
	created, err := s.eng.CreateDestination(r.Context(), dest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.eng.DestinationInfo(dest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toDestinationJSON(info))
}

func (s *Server) getDestination(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.eng.DestinationInfo(dest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toDestinationJSON(info))
}

func (s *Server) deleteDestination(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.eng.DestinationInfo(dest); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.eng.DeleteDestination(r.Context(), dest); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": dest.String()})
}

// purge deletes every waiting message of a queue or durable subscription.
func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.eng.DeleteMessages(r.Context(), t, engine.Filter{})
	if err != nil {
		s.failDone(w, r, err, &n)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}

// ---------------------------------------------------------------------------
// Subscriptions

type subscriptionJSON struct {
	ClientID       string `json:"clientId"`
	Name           string `json:"name"`
	Topic          string `json:"topic"`
	Selector       string `json:"selector"`
	NoLocal        bool   `json:"noLocal"`
	Durable        bool   `json:"durable"`
	Shared         bool   `json:"shared"`
	ClientIDPolicy string `json:"clientIdPolicy"`
	Active         bool   `json:"active"`
	Consumers      int    `json:"consumers"`
	Pending        int64  `json:"pending"`
	InFlight       int    `json:"inFlight"`
	Scheduled      int    `json:"scheduled"`
	Bytes          int64  `json:"bytes"`
	Enqueued       uint64 `json:"enqueued"`
	Dequeued       uint64 `json:"dequeued"`
	Expired        uint64 `json:"expired"`
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	durableOnly := false
	switch v := r.URL.Query().Get("durable"); v {
	case "", "false":
	case "true":
		durableOnly = true
	default:
		s.fail(w, r, badRequest("query parameter durable=%q: want true or false", v))
		return
	}
	out := []subscriptionJSON{}
	for _, x := range s.eng.Subscriptions() {
		if durableOnly && !x.Durable {
			continue
		}
		out = append(out, subscriptionJSON{ClientID: x.ClientID, Name: x.Name, Topic: x.Topic.String(),
			Selector: x.Selector, NoLocal: x.NoLocal, Durable: x.Durable, Shared: x.Shared,
			ClientIDPolicy: x.ClientIDPolicy.String(), Active: x.Consumers > 0, Consumers: x.Consumers,
			Pending: x.Pending, InFlight: x.InFlight, Scheduled: x.Scheduled, Bytes: x.Bytes,
			Enqueued: x.Enqueued, Dequeued: x.Dequeued, Expired: x.Expired})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.eng.DeleteSubscription(r.Context(), t.ClientID, t.Subscription); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": t.Subscription, "clientId": t.ClientID})
}

// ---------------------------------------------------------------------------
// Messages

type messageJSON struct {
	ID              string           `json:"id"`
	Destination     string           `json:"destination"`
	ReplyTo         string           `json:"replyTo,omitempty"`
	CorrelationID   string           `json:"correlationId,omitempty"`
	Type            string           `json:"type,omitempty"`
	DeliveryMode    string           `json:"deliveryMode"`
	Priority        int              `json:"priority"`
	Timestamp       int64            `json:"timestamp"`
	Expiration      int64            `json:"expiration"`
	DeliveryTime    int64            `json:"deliveryTime"`
	RedeliveryLimit int32            `json:"redeliveryLimit"`
	DeliveryCount   int32            `json:"deliveryCount"`
	Redelivered     bool             `json:"redelivered"`
	Scheduled       bool             `json:"scheduled"`
	DeliverAt       int64            `json:"deliverAt,omitempty"`
	Properties      []message.Field  `json:"properties"`
	BodyKind        string           `json:"bodyKind"`
	BodySize        int              `json:"bodySize"`
	Body            string           `json:"body"`
	BodyEncoding    string           `json:"bodyEncoding"`
	BodyTruncated   bool             `json:"bodyTruncated"`
	Size            int              `json:"size"`
	Message         *message.Message `json:"message,omitempty"`
}

type pageJSON struct {
	Total    int           `json:"total"`
	Offset   int           `json:"offset"`
	Limit    int           `json:"limit"`
	Messages []messageJSON `json:"messages"`
}

// readable reports whether b reads as text: valid UTF-8 without control
// characters other than tabs and line breaks.
func readable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return true
}

// preview renders a body for people: text, and bytes that are readable
// (what a STOMP client with content-length sends is a bytes body), as
// text; other bodies as base64; map and stream bodies as their JSON
// entries; cut to n bytes (0: whole).
func preview(b message.Body, n int) (text, encoding string, size int, truncated bool) {
	switch b.Kind {
	case message.BodyNone:
		return "", "none", 0, false
	case message.BodyText, message.BodyXML:
		size = len(b.Data)
		if readable(b.Data) {
			text, encoding = string(b.Data), "text"
		} else {
			text, encoding = base64.StdEncoding.EncodeToString(b.Data), "base64"
		}
	case message.BodyBytes:
		size = len(b.Data)
		if readable(b.Data) {
			text, encoding = string(b.Data), "text"
		} else {
			text, encoding = base64.StdEncoding.EncodeToString(b.Data), "base64"
		}
	case message.BodyMap:
		j, _ := json.Marshal(b.Map)
		size, text, encoding = b.Size(), string(j), "json"
	case message.BodyStream:
		j, _ := json.Marshal(b.Stream)
		size, text, encoding = b.Size(), string(j), "json"
	}
	if n > 0 && len(text) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, truncated = text[:cut], true
	}
	return text, encoding, size, truncated
}

func toMessageJSON(e engine.MessageEntry, previewBytes int, full bool) messageJSON {
	m := e.Msg
	j := messageJSON{ID: m.ID, Destination: m.Destination.String(), ReplyTo: m.ReplyTo.String(),
		CorrelationID: m.CorrelationID, Type: m.Type, DeliveryMode: m.DeliveryMode.String(),
		Priority: int(m.Priority), Timestamp: m.Timestamp, Expiration: m.Expiration, DeliveryTime: m.DeliveryTime,
		RedeliveryLimit: m.RedeliveryLimit, DeliveryCount: e.DeliveryCount, Redelivered: e.Redelivered,
		Scheduled: e.Scheduled, DeliverAt: e.DeliverAt, Properties: m.Props, BodyKind: m.Body.Kind.String(), Size: m.Size()}
	if j.Properties == nil {
		j.Properties = []message.Field{}
	}
	if full {
		previewBytes = 0
		j.Message = m
	}
	j.Body, j.BodyEncoding, j.BodySize, j.BodyTruncated = preview(m.Body, previewBytes)
	return j
}

func (s *Server) browse(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	offset, err := queryInt(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := queryInt(r, "limit", defaultLimit, 1, maxLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pv, err := queryInt(r, "preview", defaultPreview, 0, 1<<20)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	full := q.Get("full") == "true"
	sortBy := q.Get("sort")
	if sortBy != "" && !validSort(sortBy) {
		s.fail(w, r, badRequest("sort=%q: want one of %s, with a leading - for descending order", sortBy, strings.Join(engine.SortFields(), ", ")))
		return
	}
	opts := engine.BrowseOptions{Selector: q.Get("selector"), Sort: sortBy, Offset: offset, Limit: limit}
	var ids map[string]bool
	if idList := q["id"]; len(idList) > 0 {
		ids = map[string]bool{}
		for _, id := range idList {
			ids[id] = true
		}
		opts.Offset, opts.Limit = 0, 0
	}
	page, err := s.eng.BrowseMessages(t, opts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := pageJSON{Total: page.Total, Offset: offset, Limit: limit, Messages: []messageJSON{}}
	for _, e := range page.Messages {
		if ids != nil && !ids[e.Msg.ID] {
			continue
		}
		out.Messages = append(out.Messages, toMessageJSON(e, pv, full))
	}
	if ids != nil {
		out.Total, out.Offset = len(out.Messages), 0
	}
	writeJSON(w, http.StatusOK, out)
}

func validSort(s string) bool {
	s = strings.TrimLeft(s, "+-")
	for _, f := range engine.SortFields() {
		l, name := strings.ToLower(s), strings.ToLower(f)
		if l == name || "jms"+l == name || (l == "id" && name == "jmsmessageid") || (l == "deliverycount" && name == "jmsxdeliverycount") {
			return true
		}
	}
	return false
}

// selection is the body of move and delete: exactly one of ids, selector
// or all.
type selection struct {
	IDs      []string `json:"ids"`
	Selector *string  `json:"selector"`
	All      bool     `json:"all"`
	To       string   `json:"to"`
}

func (sel selection) filter() (engine.Filter, error) {
	n := 0
	if sel.IDs != nil {
		n++
		if len(sel.IDs) == 0 {
			return engine.Filter{}, badRequest("ids is empty")
		}
	}
	if sel.Selector != nil {
		n++
		if strings.TrimSpace(*sel.Selector) == "" {
			return engine.Filter{}, badRequest(`selector is empty: to take every message say "all": true`)
		}
	}
	if sel.All {
		n++
	}
	if n != 1 {
		return engine.Filter{}, badRequest(`say which messages: exactly one of "ids" (a list of JMSMessageIDs), "selector" or "all": true`)
	}
	f := engine.Filter{IDs: sel.IDs}
	if sel.Selector != nil {
		f.Selector = *sel.Selector
	}
	return f, nil
}

func (s *Server) move(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req selection
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := req.filter()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.To == "" {
		s.fail(w, r, badRequest(`"to" is missing: the destination to move to, as /queue/NAME or /topic/NAME`))
		return
	}
	to, err := message.ParseDestination(req.To)
	if err != nil {
		s.fail(w, r, badRequest("to: %v", err))
		return
	}
	n, err := s.eng.MoveMessages(r.Context(), t, f, to)
	if err != nil {
		s.failDone(w, r, err, &n)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"moved": n})
}

func (s *Server) deleteMessages(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req selection
	if err := decodeJSON(r, w, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.To != "" {
		s.fail(w, r, badRequest(`"to" belongs to move, not delete`))
		return
	}
	f, err := req.filter()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.eng.DeleteMessages(r.Context(), t, f)
	if err != nil {
		s.failDone(w, r, err, &n)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Export into memory first, so that an error is still a clean 4xx/5xx.
	var buf bytes.Buffer
	n, err := s.eng.Export(t, r.URL.Query().Get("selector"), &buf)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name := t.Subscription
	if !t.IsSubscription() {
		name = t.Dest.Kind.String() + "-" + t.Dest.Name
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.ndjson"`, safeFileName(name)))
	h.Set("X-Sluice-Messages", strconv.Itoa(n))
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = buf.WriteTo(w)
}

func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

func (s *Server) importMessages(w http.ResponseWriter, r *http.Request) {
	t, err := pathTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	msgs, err := engine.ReadMessages(http.MaxBytesReader(w, r.Body, s.opts.MaxImportBytes))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.eng.ImportMessages(r.Context(), t, msgs)
	if err != nil {
		s.failDone(w, r, err, &res.Imported)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"imported": res.Imported, "skipped": res.Skipped})
}

// ---------------------------------------------------------------------------
// Connections

type connectionJSON struct {
	ID         uint64        `json:"id"`
	ClientID   string        `json:"clientId"`
	User       string        `json:"user"`
	RemoteAddr string        `json:"remoteAddr"`
	Protocol   string        `json:"protocol"`
	Started    bool          `json:"started"`
	Created    string        `json:"created"`
	Consumers  int           `json:"consumers"`
	Sessions   []sessionJSON `json:"sessions"`
}

type sessionJSON struct {
	ID             uint64         `json:"id"`
	Mode           string         `json:"mode"`
	Unacknowledged int            `json:"unacknowledged"`
	Browsers       int            `json:"browsers"`
	Consumers      []consumerJSON `json:"consumers"`
}

type consumerJSON struct {
	Destination  string `json:"destination"`
	Selector     string `json:"selector"`
	Subscription string `json:"subscription,omitempty"`
	Durable      bool   `json:"durable"`
}

func toConnectionJSON(c engine.ConnectionInfo) connectionJSON {
	out := connectionJSON{ID: c.ID, ClientID: c.ClientID, User: c.User, RemoteAddr: c.RemoteAddr, Protocol: c.Protocol,
		Started: c.Started, Created: c.Created.UTC().Format(time.RFC3339Nano), Consumers: c.Consumers, Sessions: []sessionJSON{}}
	for _, s := range c.Sessions {
		sj := sessionJSON{ID: s.ID, Mode: s.Mode.String(), Unacknowledged: s.Unacknowledged, Browsers: s.Browsers, Consumers: []consumerJSON{}}
		for _, x := range s.Consumers {
			sj.Consumers = append(sj.Consumers, consumerJSON{Destination: x.Destination.String(), Selector: x.Selector,
				Subscription: x.Subscription, Durable: x.Durable})
		}
		out.Sessions = append(out.Sessions, sj)
	}
	return out
}

func (s *Server) listConnections(w http.ResponseWriter, _ *http.Request) {
	out := []connectionJSON{}
	for _, c := range s.eng.Connections() {
		out = append(out, toConnectionJSON(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func pathConnID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, badRequest("connection ID %q is not a number", r.PathValue("id"))
	}
	return id, nil
}

func (s *Server) getConnection(w http.ResponseWriter, r *http.Request) {
	id, err := pathConnID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, c := range s.eng.Connections() {
		if c.ID == id {
			writeJSON(w, http.StatusOK, toConnectionJSON(c))
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("connection %d does not exist", id))
}

func (s *Server) closeConnection(w http.ResponseWriter, r *http.Request) {
	id, err := pathConnID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.eng.CloseConnection(id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"closed": id})
}
