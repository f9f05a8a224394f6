// Package admin serves Sluice's administrative HTTP listener: health and
// readiness probes now, the management API, console and metrics as they
// land. It reads the engine through the narrow Engine interface so it can
// be tested without a network front-end.
package admin

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// Server is the admin HTTP handler.
type Server struct {
	mux     *http.ServeMux
	ready   atomic.Bool
	version string
}

// New builds the handler. version is reported by /healthz.
func New(version string) *Server {
	s := &Server{mux: http.NewServeMux(), version: version}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	return s
}

// SetReady marks the broker ready (recovered and listening) or not.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.version})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
