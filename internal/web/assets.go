package web

import (
	"embed"
	"net/http"
)

// The page's files are in the binary: nothing is fetched at run time.
//
//go:embed assets
var assets embed.FS

var assetTypes = map[string]string{
	"app.js":    "text/javascript; charset=utf-8",
	"style.css": "text/css; charset=utf-8",
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request, _ *session) {
	name := r.PathValue("name")
	typ, ok := assetTypes[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Write(b)
}

// page is the page itself, with the session's CSRF token and name.
func (s *Server) page(w http.ResponseWriter, r *http.Request, sess *session) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.index.Execute(w, struct{ CSRF, Name string }{sess.csrf, sess.name})
}
