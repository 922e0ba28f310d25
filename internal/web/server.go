package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/permhost/permhost/internal/leader"
)

// Bounds on what one client may cost the leader.
const (
	maxBodyBytes   = 16 << 10
	maxHeaderBytes = 16 << 10
	maxStreams     = 32
	// Failed logins and unauthenticated requests: a few a second.
	failRate, failBurst = 5, 20
	// State changes (answers, revocations) of every session together.
	changeRate, changeBurst = 200, 400
)

// Errors of New.
var (
	// ErrNeedTLS means a non-loopback address was asked for without a
	// certificate and key.
	ErrNeedTLS = errors.New("web: an address other than loopback needs --web-cert and --web-key (TLS)")
	// ErrOptions means the options are incomplete.
	ErrOptions = errors.New("web: bad options")
)

// Leader is what the page needs of the leader (leader.Server).
type Leader interface {
	Queued() []leader.Prompt
	Changed() <-chan struct{}
	Answer(seq uint64, optionID, by, said string) error
}

// Options configure a Server.
type Options struct {
	// Addr is host:port to listen on; a host other than loopback needs
	// CertFile and KeyFile.
	Addr              string
	CertFile, KeyFile string
	// Secret is the per-install secret (LoadSecret).
	Secret []byte
	Leader Leader
	// LogPath is the decision log the history shows; "" for none.
	LogPath string
	// Grants lists and revokes grants; nil hides them.
	Grants Grants
	// Webhook, when set, is told of every request that waits for a person.
	Webhook *Webhook
	Logger  *slog.Logger
}

// Server is the web approver. Create it with New, start it with Start,
// stop it with Close.
type Server struct {
	opts     Options
	log      *slog.Logger
	auth     *auth
	tls      bool
	fails    *bucket
	changes  *bucket
	resolved *resolved
	index    *template.Template

	streamMu sync.Mutex
	streams  int

	hs   *http.Server
	l    net.Listener
	base string
	stop chan struct{}

	closeOnce sync.Once
}

// New checks opts: a non-loopback address without TLS is refused.
func New(opts Options) (*Server, error) {
	if len(opts.Secret) < 16 {
		return nil, fmt.Errorf("%w: a secret of at least 16 bytes is required", ErrOptions)
	}
	useTLS := opts.CertFile != "" || opts.KeyFile != ""
	if useTLS && (opts.CertFile == "" || opts.KeyFile == "") {
		return nil, fmt.Errorf("%w: give both the certificate and the key", ErrOptions)
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: %v", ErrOptions, opts.Addr, err)
	}
	if !useTLS && !loopback(host) {
		return nil, fmt.Errorf("%w (asked for %q)", ErrNeedTLS, opts.Addr)
	}
	s := &Server{opts: opts, log: opts.Logger, auth: newAuth(opts.Secret, useTLS), tls: useTLS,
		fails: newBucket(failRate, failBurst), changes: newBucket(changeRate, changeBurst),
		resolved: newResolved(), index: template.Must(template.ParseFS(assets, "assets/index.html"))}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SetLeader sets the leader the page shows, when it was not known at New
// (the leader's OnDecision calls Record); call it before Start.
func (s *Server) SetLeader(l Leader) { s.opts.Leader = l }

// Start listens and serves until Close.
func (s *Server) Start() error {
	if s.opts.Leader == nil {
		return fmt.Errorf("%w: no leader", ErrOptions)
	}
	l, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	scheme := "http"
	if s.tls {
		cert, err := tls.LoadX509KeyPair(s.opts.CertFile, s.opts.KeyFile)
		if err != nil {
			l.Close()
			return fmt.Errorf("web: TLS: %w", err)
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	s.l = l
	s.base = scheme + "://" + l.Addr().String()
	s.hs = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.stop = make(chan struct{})
	go s.hs.Serve(l)
	if s.opts.Webhook != nil && s.opts.Webhook.URL != "" {
		go s.watchWebhook(s.stop)
	}
	return nil
}

// TLS reports whether the page is served over TLS.
func (s *Server) TLS() bool { return s.tls }

// URL is the page's address once started.
func (s *Server) URL() string { return s.base }

// LoginURL returns a new one-time login link. It holds a token: print it
// to the person, never to a log.
func (s *Server) LoginURL() string { return s.base + "/login?t=" + s.auth.loginToken() }

// Close stops serving; open event streams end. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.hs == nil {
			return
		}
		close(s.stop)
		// Closing stop ends the event streams; Shutdown then waits a
		// moment for the other requests, Close ends the rest.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.hs.Shutdown(ctx)
		err = s.hs.Close()
	})
	return err
}

// Handler is the page's routes, each behind its checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.login)
	mux.Handle("GET /{$}", s.authed(s.page))
	mux.Handle("GET /assets/{name}", s.authed(s.asset))
	mux.Handle("GET /events", s.authed(s.events))
	mux.Handle("GET /history", s.authed(s.history))
	mux.Handle("GET /grants", s.authed(s.grants))
	mux.Handle("POST /api/answer", s.changing(s.answer))
	mux.Handle("POST /api/revoke", s.changing(s.revoke))
	mux.Handle("POST /api/login-link", s.changing(s.loginLink))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		mux.ServeHTTP(w, r)
	})
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, sess *session)

// unauthorized answers 401 with nothing in it but the word: it says
// nothing of what the leader holds.
func (s *Server) unauthorized(w http.ResponseWriter) {
	if !s.fails.take() {
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	}
	http.Error(w, "unauthorized", http.StatusUnauthorized)
}

// authed serves only a logged-in browser.
func (s *Server) authed(h sessionHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess := s.auth.session(r)
		if sess == nil {
			s.unauthorized(w)
			return
		}
		h(w, r, sess)
	})
}

// changing serves a state change: a logged-in browser, from this site,
// with its CSRF token, within the rate bound.
func (s *Server) changing(h sessionHandler) http.Handler {
	return s.authed(func(w http.ResponseWriter, r *http.Request, sess *session) {
		switch {
		case !sameOrigin(r, s.tls):
			s.log.Warn("web: refused a cross-site request", "path", r.URL.Path, "session", sess.name)
			http.Error(w, "cross-site request refused", http.StatusForbidden)
		case !sess.checkCSRF(r):
			s.log.Warn("web: refused a request without its CSRF token", "path", r.URL.Path, "session", sess.name)
			http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
		case !s.changes.take():
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		default:
			h(w, r, sess)
		}
	})
}

// login exchanges a one-time token for the session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.auth.redeem(r.URL.Query().Get("t")) {
		s.log.Warn("web: refused a login link (wrong, used or expired)")
		s.unauthorized(w)
		return
	}
	http.SetCookie(w, s.auth.newSession())
	s.log.Info("web: a browser logged in")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) loginLink(w http.ResponseWriter, r *http.Request, sess *session) {
	s.log.Info("web: a new login link was issued", "by", sess.name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, s.LoginURL())
}

// Record is told how every leader request ended (leader.Options.OnDecision):
// the pages show who answered and when.
func (s *Server) Record(rec leader.Record) {
	s.resolved.add(rec)
}
