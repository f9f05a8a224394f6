// Package admin serves Sluice's administrative HTTP listener: health and
// readiness probes, the JSON management API (docs/admin-api.md,
// docs/openapi.yaml), Prometheus metrics and the web console. It works on
// the engine's management API (engine/admin.go) and knows nothing of the
// network front-ends.
//
// Everything but /healthz and /readyz goes through Auth.Check: an
// administrator may do everything, a monitor only read. Every request that
// changes something is logged with who made it, and refused when a browser
// sends it from another origin (net/http.CrossOriginProtection).
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// StoreStats are the store counters /metrics reports, when the broker has
// a store that keeps them.
type StoreStats struct {
	Commits      uint64 `json:"commits"`      // durable commits (journal syncs)
	Updates      uint64 `json:"updates"`      // updates confirmed
	Ops          uint64 `json:"ops"`          // writes confirmed
	JournalBytes uint64 `json:"journalBytes"` // bytes written to the journal
	AppliedOps   uint64 `json:"appliedOps"`   // writes applied to the store behind the journal
}

// Options configure a Server.
type Options struct {
	// Version is reported by /healthz, the overview and sluice_build_info.
	Version string
	// Engine is the broker to manage; without it only the probes answer.
	Engine *engine.Broker
	// Auth holds the credentials; nil (or empty) means none are needed,
	// which only a loopback listener may allow (CheckListen).
	Auth *Auth
	// StoreStats, when set, feeds the sluice_store_* metrics.
	StoreStats func() StoreStats
	// Logger receives the API's log lines (changes made, failures).
	Logger *slog.Logger
	// MaxImportBytes bounds an import request's body; 0 means 1 GiB.
	MaxImportBytes int64
	// Latency, when set, is served as sluice_delivery_latency_seconds.
	Latency *DeliveryLatency
	// AuthMetrics, when set, are served (sluice_auth_attempts_total,
	// sluice_authorization_denied_total) and count the admin listener's
	// bearer-token checks and refused requests; the realm and the engine
	// count the rest through AuthMetrics.Attempt and Denied.
	AuthMetrics *AuthMetrics
	// StoreSync, when set, is served as sluice_store_sync_seconds.
	StoreSync *StoreSyncLatency
	// DataDir is the broker's data directory: the node page and the
	// sluice_data_directory_* gauges report its size and free space.
	DataDir string
	// Policy explains a destination's effective policy (the broker passes
	// config.Config.ExplainPolicy); nil explains the defaults.
	Policy func(message.Destination) config.PolicyExplanation
	// Cluster, when set, is the node of a clustered broker: /api/cluster
	// reports it and changes its membership, and /readyz says "follower"
	// while the server is not ready. With Cluster and no Engine the server
	// is a follower's: the probes, /api/cluster, the console's session
	// (login, logout, whoami), its static files, /api/node and /metrics.
	Cluster Cluster
	// ClusterMetrics, when set, are served in /metrics (the node's
	// sluice_cluster_* series, which outlive each term's server).
	ClusterMetrics *ClusterMetrics
	// HistoryInterval, HistoryLength and HistoryDestinations shape the
	// rate history (history.go); zero means DefaultHistoryInterval,
	// DefaultHistoryLength, DefaultHistoryDestinations.
	HistoryInterval     time.Duration
	HistoryLength       time.Duration
	HistoryDestinations int
}

// Server is the admin HTTP handler.
type Server struct {
	opts      Options
	eng       *engine.Broker
	auth      *Auth
	metrics   *AuthMetrics
	log       *slog.Logger
	mux       *http.ServeMux
	handler   http.Handler
	ready     atomic.Bool
	started   time.Time
	reg       *prometheus.Registry
	apiRoutes []string // "METHOD /path" of every API route, for the docs test

	history     *history
	stopHistory context.CancelFunc
	historyDone chan struct{}
}

// New builds the handler.
func New(opts Options) *Server {
	s := &Server{opts: opts, eng: opts.Engine, auth: opts.Auth, metrics: opts.AuthMetrics, log: opts.Logger, mux: http.NewServeMux(), started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.MaxImportBytes <= 0 {
		s.opts.MaxImportBytes = 1 << 30
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.clusterRoutes()
	if s.eng != nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(newCollector(s.eng, opts.Version, opts.StoreStats),
			collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		if opts.Latency != nil {
			s.reg.MustRegister(opts.Latency.vec)
		}
		if opts.AuthMetrics != nil {
			s.reg.MustRegister(opts.AuthMetrics.attempts, opts.AuthMetrics.denied)
		}
		s.reg.MustRegister(newTotalsCollector(s.eng, opts.DataDir), newFlowCollector(s.eng))
		if opts.StoreSync != nil {
			s.reg.MustRegister(opts.StoreSync.h)
		}
		if opts.ClusterMetrics != nil {
			s.reg.MustRegister(opts.ClusterMetrics)
		}
		s.history = newHistory(opts.HistoryInterval, opts.HistoryLength, opts.HistoryDestinations)
		ctx, cancel := context.WithCancel(context.Background())
		s.stopHistory, s.historyDone = cancel, make(chan struct{})
		h := s.history // the sampler's, read once: tests put another in s.history
		go func() { defer close(s.historyDone); h.run(ctx, s.eng) }()
		s.mux.Handle("GET /metrics", s.authed(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
		s.routes()
		s.console()
	} else if opts.Cluster != nil {
		s.followerRoutes()
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused: the admin API accepts changes only from its own pages and from non-browser clients")
	}))
	s.handler = cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (s.eng != nil || s.opts.Cluster != nil) && s.unmatched(w, r) {
			return
		}
		s.mux.ServeHTTP(w, r)
	}))
	return s
}

// Close stops the rate-history sampler. The handler still answers, with
// the history it has.
func (s *Server) Close() {
	if s.stopHistory != nil {
		s.stopHistory()
		<-s.historyDone
	}
}

// followerRoutes are the server of a cluster's follower, which has no
// engine: the console's session and static files, so that an operator can
// open the console on any node and see the cluster; the node page (the
// process and the data directory); and /metrics with the process's and
// the node's cluster series.
func (s *Server) followerRoutes() {
	s.reg = prometheus.NewRegistry()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_build_info",
		Help: "Sluice's version; the value is always 1.", ConstLabels: prometheus.Labels{"version": s.opts.Version}})
	buildInfo.Set(1)
	s.reg.MustRegister(buildInfo, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.opts.AuthMetrics != nil {
		s.reg.MustRegister(s.opts.AuthMetrics.attempts, s.opts.AuthMetrics.denied)
	}
	if s.opts.ClusterMetrics != nil {
		s.reg.MustRegister(s.opts.ClusterMetrics)
	}
	s.mux.Handle("GET /metrics", s.authed(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	s.sessionRoutes()
	s.handle("GET /api/node", s.node)
	s.console()
}

// Handles reports whether the server has a route for r (the probes and
// the routes of its role), rather than the JSON 404 or 405 it answers
// the rest.
func (s *Server) Handles(r *http.Request) bool {
	_, pattern := s.mux.Handler(r)
	return pattern != ""
}

// Registry returns the Prometheus registry /metrics serves (nil without an
// engine or a cluster), for tests and for adding collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// SetReady marks the broker ready (recovered and listening) or not.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	s.handler.ServeHTTP(w, r)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.opts.Version})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		status := "starting"
		if s.opts.Cluster != nil {
			status = "follower" // a cluster's leader serves; see /api/cluster
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": status})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// callerKey carries the request's Caller in its context.
type callerKey struct{}

// callerOf returns the Caller that authed put in r's context.
func callerOf(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}

// changes reports whether a request may change something: every method
// but GET and HEAD. Only RoleAdmin may send one.
func changes(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// refusal says why c may not make request r ("" when it may), and the
// grant it lacks.
func refusal(c Caller, r *http.Request) (msg, lacks string) {
	switch {
	case c.Role == RoleNone:
		return noGrant(c), "monitor"
	case c.Role == RoleMonitor && changes(r):
		return c.label() + " has the monitor role, which is read-only: " + r.Method + " " + r.URL.Path +
			" needs the admin grant", "admin"
	}
	return "", ""
}

// noGrant is the refusal of a user without the admin or monitor grant.
func noGrant(c Caller) string { return c.label() + " has no admin or monitor grant" }

// logAttr names the caller in a log line: its user, or its token's label.
func (c Caller) logAttr() slog.Attr {
	if c.Token {
		return slog.String("token", c.Name)
	}
	if c.Name == "" {
		return slog.String("user", "anonymous")
	}
	return slog.String("user", c.Name)
}

// statusRecorder remembers the status a handler answers, for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// authed wraps h with Auth.Check and the caller's role. A request without
// valid credentials gets 401 and a JSON error; the basic-authentication
// challenge is left out for the console's own requests, so that the
// browser shows the console's login form rather than its own dialog. A
// caller whose role does not allow the request gets 403. Every request
// that may change something is logged at info once answered, with who
// made it and the status.
func (s *Server) authed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := s.auth.check(r, s.uncountedAttempt)
		if err != nil {
			if !s.auth.Enabled() {
				writeError(w, http.StatusForbidden, err.Error())
				return
			}
			if r.Header.Get("X-Sluice-Console") == "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			}
			s.log.Info("admin request refused", slog.String("remote", r.RemoteAddr), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Int("status", http.StatusUnauthorized), slog.String("reason", err.Error()))
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
		if msg, lacks := refusal(caller, r); msg != "" {
			if s.metrics != nil {
				s.metrics.deniedAdmin(lacks)
			}
			s.log.Info("admin request refused", caller.logAttr(), slog.String("role", caller.Role.String()),
				slog.String("remote", r.RemoteAddr), slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", http.StatusForbidden), slog.String("reason", msg))
			writeError(w, http.StatusForbidden, msg)
			return
		}
		if !changes(r) {
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.log.Info("admin request", caller.logAttr(), slog.String("role", caller.Role.String()),
			slog.String("remote", r.RemoteAddr), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status))
	})
}

// uncountedAttempt counts the authentications the realm does not see:
// bearer tokens, and passwords refused without a realm user.
func (s *Server) uncountedAttempt(result string) {
	if s.metrics != nil {
		s.metrics.Attempt("admin", result)
	}
}

func (s *Server) handle(pattern string, fn http.HandlerFunc) {
	s.apiRoutes = append(s.apiRoutes, pattern)
	s.mux.Handle(pattern, s.authed(fn))
}

// errorBody is every error answer: {"error": "..."} plus details where
// they help (a selector's position, an import file's line).
type errorBody struct {
	Error    string    `json:"error"`
	Code     string    `json:"code,omitempty"`
	Position *position `json:"position,omitempty"`
	Line     int       `json:"line,omitempty"`
	Done     *int      `json:"done,omitempty"`
}

type position struct {
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Column int `json:"column"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// apiError is an error with its HTTP status, from request parsing.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: sprintf(format, args...)}
}

// fail answers err with the status its kind calls for.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.failDone(w, r, err, nil)
}

// failDone is fail for an operation that may have done part of its work
// (done counts the messages handled before the failure).
func (s *Server) failDone(w http.ResponseWriter, r *http.Request, err error, done *int) {
	body := errorBody{Error: err.Error(), Done: done}
	status := http.StatusInternalServerError
	var ae *apiError
	var ee *engine.Error
	var ie *engine.ImportError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		status = ae.status
	case errors.As(err, &mbe):
		status = http.StatusRequestEntityTooLarge
	case errors.As(err, &ie):
		status, body.Line = http.StatusBadRequest, ie.Line
	case errors.Is(err, engine.ErrNotFound):
		status = http.StatusNotFound
	case errors.As(err, &ee):
		body.Code = ee.Code.String()
		switch ee.Code {
		case engine.CodeInvalidSelector:
			status = http.StatusBadRequest
			if p, ok := selectorPosition(err); ok {
				body.Position = &p
			}
		case engine.CodeInvalidDestination, engine.CodeMessageFormat, engine.CodeInvalidClientID:
			status = http.StatusBadRequest
		case engine.CodeIllegalState, engine.CodeResourceAllocation:
			status = http.StatusConflict
		}
	}
	if status >= 500 {
		s.log.Error("admin request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	writeJSON(w, status, body)
}
