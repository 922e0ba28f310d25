package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/permhost/permhost/internal/grants"
)

// This file lists the person's grants and revokes one.

// Grants is the grant store (grants.Store).
type Grants interface {
	List() ([]grants.Grant, error)
	Revoke(id string) (grants.Grant, error)
}

func (s *Server) grants(w http.ResponseWriter, r *http.Request, _ *session) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if s.opts.Grants == nil {
		fmt.Fprint(w, `<p class="empty">No grant store.</p>`)
		return
	}
	list, err := s.opts.Grants.List()
	if err != nil {
		s.log.Warn("web: listing grants", "err", err)
		fmt.Fprint(w, `<p class="empty">The grants cannot be read.</p>`)
		return
	}
	if len(list) == 0 {
		fmt.Fprint(w, `<p class="empty">No grants.</p>`)
		return
	}
	var b strings.Builder
	b.WriteString(`<table class="grants"><thead><tr><th>grant</th><th>scope</th><th>project</th><th>agent</th><th>created</th><th></th></tr></thead><tbody>`)
	for _, g := range list {
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td><button type="button" class="revoke" data-id="%s">revoke</button></td></tr>`,
			esc(g.String()), esc(g.Scope), esc(g.Project), esc(g.Agent), g.Created.Local().Format("2006-01-02 15:04"), esc(g.ID))
	}
	b.WriteString(`</tbody></table>`)
	w.Write([]byte(b.String()))
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		ID string `json:"id"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.ID == "" {
		reply(w, http.StatusBadRequest, "want {\"id\": \"…\"}")
		return
	}
	if s.opts.Grants == nil {
		reply(w, http.StatusNotFound, "no grant store")
		return
	}
	if _, err := s.opts.Grants.Revoke(body.ID); err != nil {
		reply(w, http.StatusNotFound, "no such grant")
		return
	}
	s.log.Info("web: grant revoked", "id", body.ID, "by", sess.name)
	reply(w, http.StatusOK, "")
}
