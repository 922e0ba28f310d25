package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file is who may use the page: a person holding the per-install
// secret's login link. The secret itself is never sent, shown or logged:
// a login token is a nonce this process issued, MACed with the secret,
// good once and for loginTTL; it is exchanged for a session cookie
// (HttpOnly, SameSite=Strict, Secure under TLS) whose value is MACed too;
// every state change carries a CSRF token derived from the session.

const (
	cookieName  = "permhost_web"
	csrfHeader  = "X-Csrf-Token"
	loginTTL    = 15 * time.Minute
	sessionTTL  = 12 * time.Hour
	secretBytes = 32
)

// ErrSecret is returned by LoadSecret for a secret file that cannot be
// used.
var ErrSecret = errors.New("web: secret file")

// LoadSecret reads the per-install secret at path, creating it (0600, in
// a 0700 directory) with fresh random bytes when missing. A file others
// may read is refused.
func LoadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSecret, err)
		}
		raw := make([]byte, secretBytes)
		rand.Read(raw)
		b = []byte(hex.EncodeToString(raw) + "\n")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSecret, err)
		}
		_, werr := f.Write(b)
		if err := errors.Join(werr, f.Close()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSecret, err)
		}
		return raw, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSecret, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is readable by others (mode %v); chmod 600 it", ErrSecret, path, fi.Mode().Perm())
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) < 16 {
		return nil, fmt.Errorf("%w: %s does not hold a hex secret of at least 16 bytes", ErrSecret, path)
	}
	return raw, nil
}

// auth issues login tokens and checks cookies and CSRF tokens.
type auth struct {
	secret []byte
	secure bool // under TLS: the cookie is Secure

	mu     sync.Mutex
	issued map[string]time.Time // login nonce → expiry; deleted when used
}

func newAuth(secret []byte, secure bool) *auth {
	return &auth{secret: secret, secure: secure, issued: map[string]time.Time{}}
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:20])
}

func nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// loginToken issues a one-time login token.
func (a *auth) loginToken() string {
	n := nonce()
	a.mu.Lock()
	now := time.Now()
	for k, exp := range a.issued {
		if now.After(exp) {
			delete(a.issued, k)
		}
	}
	a.issued[n] = now.Add(loginTTL)
	a.mu.Unlock()
	return n + "." + a.mac("login", n)
}

// redeem checks a login token and uses it up.
func (a *auth) redeem(token string) bool {
	n, m, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(m), []byte(a.mac("login", n))) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.issued[n]
	delete(a.issued, n)
	return ok && time.Now().Before(exp)
}

// session is a logged-in browser.
type session struct {
	id string
	// name is how the decision log and the pages name the person who
	// answered from this browser.
	name string
	csrf string
}

// newSession returns the cookie for a new session.
func (a *auth) newSession() *http.Cookie {
	id := nonce()
	exp := strconv.FormatInt(time.Now().Add(sessionTTL).Unix(), 10)
	return &http.Cookie{Name: cookieName, Value: id + "." + exp + "." + a.mac("session", id, exp),
		Path: "/", HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)}
}

// session returns the request's valid session, or nil.
func (a *auth) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || !hmac.Equal([]byte(parts[2]), []byte(a.mac("session", parts[0], parts[1]))) {
		return nil
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() > exp {
		return nil
	}
	id := parts[0]
	sum := sha256.Sum256([]byte(a.mac("name", id)))
	return &session{id: id, name: "web:" + hex.EncodeToString(sum[:3]), csrf: a.mac("csrf", id)}
}

// sameOrigin refuses a state change a browser says came from another
// site: Sec-Fetch-Site, when sent, must be same-origin; Origin, when
// sent, must be this server's.
func sameOrigin(r *http.Request, secure bool) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		scheme := "http://"
		if secure {
			scheme = "https://"
		}
		return o == scheme+r.Host
	}
	return true
}

// checkCSRF reports whether a state change carries the session's token.
func (s *session) checkCSRF(r *http.Request) bool {
	t := r.Header.Get(csrfHeader)
	return t != "" && hmac.Equal([]byte(t), []byte(s.csrf))
}
