package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// These tests drive a real browser (Debian's chromium; CHROMIUM names
// another) over the DevTools protocol. .ci/run installs chromium; where
// none can be found they skip, saying so.

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium found (apt-get install chromium, or set CHROMIUM): the browser tests cannot run")
	return ""
}

// One chromium serves every test of the package (it is slow to start on
// a loaded machine); each page gets a browser context of its own, so its
// own cookies, as a second browser would.
var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	os.Exit(code)
}

// browser is a fresh browser context (its own cookies) in the shared
// chromium.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "phweb-chromium")
		if err != nil {
			shared.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1000, 900),
		)
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelB := chromedp.NewContext(actx)
		shared.ctx = bctx
		shared.cancel = func() { cancelB(); cancelA(); os.RemoveAll(dir) }
		// The first call starts the browser, without a timeout (one
		// would stop it).
		shared.err = chromedp.Do(bctx)
	})
	if shared.err != nil {
		t.Fatalf("starting chromium: %v", shared.err)
	}
	ctx, cancel := chromedp.NewContext(shared.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a browser context: %v", err)
	}
	ctx, cancel2 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel2)
	return ctx
}

// recv waits for the worker's answer, for a while.
func recv(t *testing.T, ch <-chan asked) asked {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(60 * time.Second):
		t.Fatal("the worker got no answer within a minute")
		return asked{}
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// do runs steps in the browser; a failure ends the test.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text is the visible text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// open logs the browser in and waits for the live stream.
func (r *rig) open(ctx context.Context) string {
	r.t.Helper()
	do(r.t, ctx, chromedp.Navigate(r.web.LoginURL()), chromedp.WaitVisible(css(`#conn[data-state="live"]`)))
	return text(r.t, ctx, `#me b`)
}

// screenshot saves the viewport under the test's artifact directory, or
// under $PERMHOST_SCREENSHOTS when set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("PERMHOST_SCREENSHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func TestBrowserRejectWithReason(t *testing.T) {
	r := newRig(t, nil)
	ctx := browser(t)
	me := r.open(ctx)
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := question("Run rm -rf build")
	q.Request.ToolCall.Title = "Run rm -rf build <b>bold</b>\x1b[31m"
	got := r.ask(wctx, q)
	r.waitReady(1) // #1 is the one answered
	r.ask(wctx, question("Edit main.go"))

	do(t, ctx, chromedp.WaitVisible(css(`#req-1 button.reject`)), chromedp.WaitVisible(css(`#req-2`)))
	title, risk, opts := text(t, ctx, `#req-1 .title`), text(t, ctx, `#req-1 .risk`), text(t, ctx, `#req-1 .options`)
	// The peer's markup is text, its escape shown escaped.
	if title != `Run rm -rf build <b>bold</b>\x1b[31m` {
		t.Errorf("title shown as %q", title)
	}
	if !strings.Contains(risk, "high") || !strings.Contains(opts, "Always allow") || !strings.Contains(opts, "scope project: Bash(rm *)") {
		t.Errorf("risk %q, options %q: want the explainer's risk and each option with its scope", risk, opts)
	}
	screenshot(t, ctx, "pending.png")

	const reason = "use make clean instead"
	do(t, ctx, chromedp.SendKeys(css(`#req-1 input.said`), reason), chromedp.Click(css(`#req-1 button.reject`)))
	a := recv(t, got)
	if a.err != nil {
		t.Fatalf("the worker got %v", a.err)
	}
	if a.a.OptionID != "reject" || a.a.DecidedBy != "person" || a.a.Said != reason || a.a.AnsweredBy != me {
		t.Fatalf("the worker got %+v, want reject by %s saying %q", a.a, me, reason)
	}
	do(t, ctx, chromedp.WaitNotPresent(css(`#req-1`)), chromedp.WaitVisible(css(`#resolved li[data-seq="1"]`)))
	if line := text(t, ctx, `#resolved li[data-seq="1"]`); !strings.Contains(line, "answered by "+me) || !strings.Contains(line, reason) {
		t.Fatalf("the answered line says %q", line)
	}
}

func TestBrowserTwoPagesFirstAnswerWins(t *testing.T) {
	r := newRig(t, nil)
	b1, b2 := browser(t), browser(t)
	me1, me2 := r.open(b1), r.open(b2)
	if me1 == me2 {
		t.Fatalf("two browsers share the name %s", me1)
	}
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := r.ask(wctx, question("Run tests"))
	for _, b := range []context.Context{b1, b2} {
		do(t, b, chromedp.WaitVisible(css(`#req-1 button.allow`)))
	}
	// Both click at once: one allows, the other rejects. The page that
	// loses may find its button already gone (the first answer removed the
	// request from it between finding the button and clicking it): its
	// click fails, and the answer must then be the other page's.
	var errAllow, errReject error
	var clicks sync.WaitGroup
	clicks.Go(func() { errAllow = chromedp.Do(b1, chromedp.Click(css(`#req-1 button.allow`))) })
	clicks.Go(func() { errReject = chromedp.Do(b2, chromedp.Click(css(`#req-1 button.reject`))) })
	clicks.Wait()
	for _, err := range []error{errAllow, errReject} {
		if err != nil && !buttonGone(err) {
			t.Fatal(err)
		}
	}
	if errAllow != nil && errReject != nil {
		t.Fatalf("neither click landed: %v; %v", errAllow, errReject)
	}
	a := recv(t, got)
	if a.err != nil {
		t.Fatal(a.err)
	}
	winner := map[string]string{"allow": me1, "reject": me2}[a.a.OptionID]
	if winner == "" || a.a.AnsweredBy != winner {
		t.Fatalf("the worker got %+v: want the option of the page that answered", a.a)
	}
	if (errAllow != nil && winner == me1) || (errReject != nil && winner == me2) {
		t.Fatalf("the worker got %+v from the page whose click failed (%v, %v)", a.a, errAllow, errReject)
	}
	for _, b := range []context.Context{b1, b2} {
		do(t, b, chromedp.WaitVisible(css(`#resolved li[data-seq="1"]`)))
		if by := text(t, b, `#resolved li[data-seq="1"] .by`); by != winner {
			t.Errorf("a page says answered by %q, want %q", by, winner)
		}
	}
	if n := len(r.leader.Queued()); n != 0 {
		t.Fatalf("%d requests still queued", n)
	}
}

func TestBrowserCountdownEndsInBuiltin(t *testing.T) {
	r := newRig(t, nil)
	ctx := browser(t)
	r.open(ctx)
	// The worker waits 3 s, then withdraws and its builtin decides.
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got := r.ask(wctx, question("Slow one"))
	do(t, ctx, chromedp.WaitVisible(css(`#req-1 .countdown`)))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#req-1 .countdown").textContent.includes("s left")`)); err != nil {
		t.Fatal(err)
	}
	first := text(t, ctx, `#req-1 .countdown`)
	if a := recv(t, got); a.err == nil {
		t.Fatalf("the worker got an answer %+v; want its own fallback at the deadline", a.a)
	}
	do(t, ctx, chromedp.WaitVisible(css(`#resolved li[data-seq="1"]`)))
	if line := text(t, ctx, `#resolved li[data-seq="1"]`); !strings.Contains(line, "decided by the worker's builtin policy") {
		t.Fatalf("after the deadline the page says %q; the countdown said %q", line, first)
	}
}

func TestBrowserCrossSitePageRefused(t *testing.T) {
	r := newRig(t, nil)
	ctx := browser(t)
	r.open(ctx)
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ask(wctx, question("Target"))
	r.waitReady(1)
	// Another site's page, opened in the logged-in browser, posts an
	// answer to the leader.
	evil := newEvilSite(t, r.web.URL()+"/api/answer", `{"seq":1,"option":0}`)
	do(t, ctx, chromedp.Navigate(evil), chromedp.WaitVisible(css(`#done`)))
	status := text(t, ctx, `#done`)
	if len(r.waitReady(1)) != 1 {
		t.Fatal("a cross-site page answered the request")
	}
	t.Logf("the other site's request ended with: %s", status)
}

// buttonGone is a click that failed because the page removed its button
// between finding and clicking it (Chrome's words for a node taken out of
// the document).
func buttonGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") || strings.Contains(msg, "Node is detached from document")
}
