package web

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/leader"
)

// rig is a real leader on a Unix socket with the web approver in front.
type rig struct {
	t      *testing.T
	leader *leader.Server
	web    *Server
	client *leader.Client
	logs   *acptest.SyncBuffer
	secret []byte
}

func newRig(t *testing.T, mod func(*Options)) *rig {
	t.Helper()
	dir, err := os.MkdirTemp("", "phweb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s", "leader.sock")
	secret, err := LoadSecret(filepath.Join(dir, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &acptest.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := Options{Addr: "127.0.0.1:0", Secret: secret, Logger: logger}
	if mod != nil {
		mod(&opts)
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := leader.Listen(context.Background(), leader.Options{
		Socket: sock,
		// No terminal: the page answers.
		Prompter:   leader.PrompterFunc(func(ctx context.Context, _ leader.Prompt) (string, error) { <-ctx.Done(); return "", ctx.Err() }),
		OnDecision: w.Record,
		Logger:     logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	w.SetLeader(ls)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c, err := leader.NewClient(sock)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, leader: ls, web: w, client: c, logs: logs, secret: secret}
}

// question is a shell request offering allow once, allow always and
// reject.
func question(title string) leader.Question {
	return leader.Question{
		Worker: leader.Worker{Cwd: "/home/u/proj", Agent: "likeagent 1.0", Session: "s1"},
		Request: abi.Request{
			DecisionID: "d-" + title,
			Session:    abi.Session{ID: "s1", Cwd: "/home/u/proj"},
			ToolCall:   abi.ToolCall{ID: "tc-" + title, Title: title, Kind: "execute"},
			Shell:      &abi.Shell{Source: "rm -rf build"},
			Options: []abi.Option{
				{OptionID: "allow", Name: "Allow", Kind: "allow_once"},
				{OptionID: "always", Name: "Always allow", Kind: "allow_always", Durable: true, Grants: &abi.Grant{Scope: "project", Rule: "Bash(rm *)"}},
				{OptionID: "reject", Name: "Reject", Kind: "reject_once"},
			},
		},
		Explanations: []leader.Explanation{{Plugin: "explain", Summary: "deletes the build directory", RiskLevel: "high", Risk: "deletes files"}},
	}
}

type asked struct {
	a   leader.Answer
	err error
}

// ask puts q to the leader as a worker would, in the background.
func (r *rig) ask(ctx context.Context, q leader.Question) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		a, err := r.client.Ask(ctx, q)
		ch <- asked{a, err}
	}()
	return ch
}

// waitReady waits until n requests are ready for a person.
func (r *rig) waitReady(n int) []leader.Prompt {
	r.t.Helper()
	for {
		ch := r.leader.Changed()
		var ready []leader.Prompt
		for _, p := range r.leader.Queued() {
			if p.Ready {
				ready = append(ready, p)
			}
		}
		if len(ready) >= n {
			return ready
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			r.t.Fatalf("%d requests ready, want %d", len(ready), n)
		}
	}
}

// login returns an HTTP client holding a session cookie.
func (r *rig) login() *http.Client {
	r.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(r.web.LoginURL())
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("login: %s", resp.Status)
	}
	return c
}

// csrfOf reads the page's CSRF token as the browser would.
func (r *rig) csrfOf(c *http.Client) string {
	r.t.Helper()
	resp, err := c.Get(r.web.URL() + "/")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	_, rest, ok := strings.Cut(b.String(), `name="csrf" content="`)
	if !ok {
		r.t.Fatalf("no csrf token in the page: %s", b.String())
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

// post sends a state change with the given headers.
func (r *rig) post(c *http.Client, path, body string, hdr map[string]string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.web.URL()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func hostOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Host
}
