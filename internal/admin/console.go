package admin

import (
	"embed"
	"io/fs"
	"net/http"
)

// The web console: plain HTML, CSS and JavaScript embedded in the binary.
// It fetches nothing from anywhere but this listener, and its
// Content-Security-Policy says so to the browser.
//
//go:embed console
var consoleFiles embed.FS

const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (s *Server) console() {
	sub, _ := fs.Sub(consoleFiles, "console")
	files := http.FileServerFS(sub)
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", consoleCSP)
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	s.mux.Handle("GET /ui/", http.StripPrefix("/ui", static))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/"
		static.ServeHTTP(w, r2)
	})
}
