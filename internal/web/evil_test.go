package web

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// newEvilSite serves a page of another origin that posts body to target
// with the browser's credentials, as a cross-site attack would, and then
// shows #done.
func newEvilSite(t *testing.T, target, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body><script>
fetch(%q, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: %q})
  .then(r => "sent: " + r.type + " " + r.status, e => "failed: " + e)
  .then(s => { const p = document.createElement("p"); p.id = "done"; p.textContent = s; document.body.appendChild(p); });
</script></body>`, target, body)
	}))
	t.Cleanup(srv.Close)
	// Another port of the same loopback host is another origin but the same
	// site; localhost instead of 127.0.0.1 makes it another site too.
	return fmt.Sprintf("http://localhost:%d/", srv.Listener.Addr().(*net.TCPAddr).Port)
}
