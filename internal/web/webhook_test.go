package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type posted struct {
	title, click, body string
}

func TestWebhookTitleOnly(t *testing.T) {
	got := make(chan posted, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- posted{r.Header.Get("Title"), r.Header.Get("Click"), string(b)}
	}))
	defer hook.Close()
	r := newRig(t, func(o *Options) { o.Webhook = &Webhook{URL: hook.URL} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, question("Run rm -rf build"))
	var p posted
	select {
	case p = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook post")
	}
	if p.title == "" || p.click != r.web.URL() || !strings.Contains(p.body, "Run rm -rf build") {
		t.Fatalf("posted %+v", p)
	}
	for _, secret := range []string{"/home/u/proj", "likeagent", "login", "rm -rf build\n"} {
		if strings.Contains(p.body+p.click, secret) {
			t.Errorf("the notice carries %q: %+v", secret, p)
		}
	}
}

// TestWebhookFailureNeverBlocks: a webhook that never answers holds up
// neither the page nor the answer.
func TestWebhookFailureNeverBlocks(t *testing.T) {
	stuck := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stuck }))
	defer hook.Close()
	defer close(stuck)
	r := newRig(t, func(o *Options) { o.Webhook = &Webhook{URL: hook.URL} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.ask(ctx, question("t"))
	p := r.waitReady(1)[0]
	if err := r.leader.Answer(p.Seq, "allow", "web:x", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-ch:
		if a.err != nil || a.a.OptionID != "allow" {
			t.Fatalf("worker got %+v %v", a.a, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the answer waited for the webhook")
	}
}
