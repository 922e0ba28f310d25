package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Each check of the page's security is its own test.

func TestNonLoopbackNeedsTLS(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "[::]:0"} {
		_, err := New(Options{Addr: addr, Secret: make([]byte, 32)})
		if !errors.Is(err, ErrNeedTLS) {
			t.Errorf("New(%q) = %v, want ErrNeedTLS", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if _, err := New(Options{Addr: addr, Secret: make([]byte, 32)}); err != nil {
			t.Errorf("New(%q) = %v, want loopback accepted", addr, err)
		}
	}
}

func TestUnauthenticatedGets401AndNothingElse(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, question("secret-title"))
	r.waitReady(1)
	for _, path := range []string{"/", "/events", "/history", "/grants", "/assets/app.js"} {
		resp, err := http.Get(r.web.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.TrimSpace(string(b)) != "unauthorized" {
			t.Errorf("GET %s without a cookie: %s %q, want 401 unauthorized", path, resp.Status, b)
		}
	}
}

func TestWrongLoginTokenRefused(t *testing.T) {
	r := newRig(t, nil)
	good := r.web.LoginURL()
	for _, u := range []string{
		r.web.URL() + "/login",
		r.web.URL() + "/login?t=abc.def",
		good[:len(good)-2] + "xx", // a MAC that does not match
	} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %s, want 401", u, resp.Status)
		}
	}
}

func TestLoginLinkWorksOnce(t *testing.T) {
	r := newRig(t, nil)
	link := r.web.LoginURL()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use: %s, want 303", resp.Status)
	}
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v: want one HttpOnly SameSite=Strict cookie", ck)
	}
	resp, err = c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("second use: %s, want 401", resp.Status)
	}
}

func TestForgedCookieRefused(t *testing.T) {
	r := newRig(t, nil)
	req, _ := http.NewRequest(http.MethodGet, r.web.URL()+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: "abc.99999999999.forged"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged cookie: %s, want 401", resp.Status)
	}
}

// answerBodyFor answers the first ready request with its last option.
func answerBodyFor(seq uint64) string {
	return fmt.Sprintf(`{"seq":%d,"option":2,"said":"no"}`, seq)
}

func TestAnswerWithoutCSRFRefused(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, question("t"))
	p := r.waitReady(1)[0]
	c := r.login()
	for _, hdr := range []map[string]string{nil, {csrfHeader: "wrong"}} {
		code, _ := r.post(c, "/api/answer", answerBodyFor(p.Seq), hdr)
		if code != http.StatusForbidden {
			t.Errorf("answer with CSRF header %v: %d, want 403", hdr, code)
		}
	}
	if len(r.waitReady(1)) != 1 {
		t.Fatal("the request was answered without a CSRF token")
	}
}

func TestCrossSiteAnswerRefused(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, question("t"))
	p := r.waitReady(1)[0]
	c := r.login()
	tok := r.csrfOf(c)
	for _, hdr := range []map[string]string{
		{csrfHeader: tok, "Origin": "http://evil.example"},
		{csrfHeader: tok, "Sec-Fetch-Site": "cross-site"},
		{csrfHeader: tok, "Sec-Fetch-Site": "same-site"},
	} {
		code, _ := r.post(c, "/api/answer", answerBodyFor(p.Seq), hdr)
		if code != http.StatusForbidden {
			t.Errorf("answer with %v: %d, want 403", hdr, code)
		}
	}
	// The same answer from the page itself is taken: the refusals above
	// were the origin's.
	code, body := r.post(c, "/api/answer", answerBodyFor(p.Seq), map[string]string{csrfHeader: tok, "Origin": "http://" + hostOf(r.web.URL())})
	if code != http.StatusOK {
		t.Fatalf("same-origin answer: %d %s", code, body)
	}
}

func TestAnswerBodyBounded(t *testing.T) {
	r := newRig(t, nil)
	c := r.login()
	tok := r.csrfOf(c)
	big := `{"seq":1,"option":0,"said":"` + strings.Repeat("a", maxBodyBytes) + `"}`
	if code, _ := r.post(c, "/api/answer", big, map[string]string{csrfHeader: tok}); code != http.StatusBadRequest {
		t.Fatalf("oversized body: %d, want 400", code)
	}
	if code, _ := r.post(c, "/api/answer", `{"seq":1,"option":0,"optionId":"allow"}`, map[string]string{csrfHeader: tok}); code != http.StatusBadRequest {
		t.Fatalf("unknown key: %d, want 400", code)
	}
}

func TestFailedAuthRateBounded(t *testing.T) {
	r := newRig(t, nil)
	got429 := false
	for range failBurst + 5 {
		resp, err := http.Get(r.web.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			got429 = true
			break
		}
	}
	if !got429 {
		t.Fatalf("%d unauthenticated requests in a row were never limited", failBurst+5)
	}
}

func TestSecretAndTokensNeverLogged(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.ask(ctx, question("t"))
	p := r.waitReady(1)[0]
	link := r.web.LoginURL()
	jarClient := r.login()
	http.Get(link + "x")
	tok := r.csrfOf(jarClient)
	if code, body := r.post(jarClient, "/api/answer", answerBodyFor(p.Seq), map[string]string{csrfHeader: tok}); code != http.StatusOK {
		t.Fatalf("answer: %d %s", code, body)
	}
	<-ch
	logs := r.logs.String()
	_, token, _ := strings.Cut(link, "t=")
	for what, s := range map[string]string{"secret": fmt.Sprintf("%x", r.secret), "login token": token, "csrf token": tok} {
		if strings.Contains(logs, s) {
			t.Errorf("the %s appears in the logs:\n%s", what, logs)
		}
	}
	if !strings.Contains(logs, "web: answered") {
		t.Fatalf("the logs were not captured:\n%s", logs)
	}
}

func TestAnswerCannotNameAnOptionNotShown(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(ctx, question("t"))
	p := r.waitReady(1)[0]
	c := r.login()
	tok := r.csrfOf(c)
	for _, i := range []int{-1, 3, 99} {
		if code, _ := r.post(c, "/api/answer", fmt.Sprintf(`{"seq":%d,"option":%d}`, p.Seq, i), map[string]string{csrfHeader: tok}); code != http.StatusBadRequest {
			t.Errorf("option %d: %d, want 400", i, code)
		}
	}
	if err := r.leader.Answer(p.Seq, "not-offered", "web:test", ""); err == nil {
		t.Fatal("leader.Answer took an option that was not shown")
	}
}
