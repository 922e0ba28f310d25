package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebApproverRejectWithReason: `permhost proxy --leader` in front of
// likeagent, `permhost leader --web` without a terminal, and a real
// chromium logged in to the page. The agent asks; the editor is asked and
// does not answer; the page shows the request; a click on reject with a
// typed reason answers the agent with the reject, retracts the editor's
// prompt ($/cancel_request), tells the model the reason (_session/steering)
// and logs the browser as who decided.
// webLeader starts `permhost leader --web` without a terminal and returns
// its socket and one-time login link; it skips the test where no chromium
// can be found.
func webLeader(t *testing.T) (socket, link, chromium string) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no chromium found (apt-get install chromium): the browser test cannot run")
	}
	socket = leaderSocket(t)
	dir := t.TempDir()
	lctx, stopLeader := context.WithCancel(context.Background())
	leaderCmd := exec.CommandContext(lctx, permhostBin, "leader", "--socket", socket, "--web", "127.0.0.1:0", "--web-secret", filepath.Join(dir, "web-secret"))
	leaderCmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	stderr, err := leaderCmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leaderCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopLeader(); leaderCmd.Wait() })
	links := make(chan string, 1)
	var leaderErr strings.Builder
	var lmu sync.Mutex
	go func() {
		linkRe := regexp.MustCompile(`login link .*: (http://127\.0\.0\.1:\d+/login\?t=\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lmu.Lock()
			leaderErr.WriteString(sc.Text() + "\n")
			lmu.Unlock()
			if m := linkRe.FindStringSubmatch(sc.Text()); m != nil {
				links <- m[1]
			}
		}
	}()
	select {
	case link = <-links:
	case <-time.After(30 * time.Second):
		lmu.Lock()
		t.Fatalf("the leader printed no login link:\n%s", leaderErr.String())
	}

	return socket, link, chromium
}

// webPage logs a fresh chromium in with link; it returns the browser's
// context and the name the page answers as.
func webPage(t *testing.T, chromium, link string) (context.Context, string) {
	t.Helper()
	// The browser.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(css(`#conn[data-state="live"]`))); err != nil {
		t.Fatal(err)
	}
	me, err := chromedp.Run(ctx, chromedp.Text(css(`#me b`)))
	if err != nil {
		t.Fatal(err)
	}

	return ctx, me
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func TestWebApproverRejectWithReason(t *testing.T) {
	socket, link, chromium := webLeader(t)
	r := startLikeWith(t, likeOpts{agent: "codex", session: "reasons = \"steer\"\nmodes = \"govern\"", proxyArgs: []string{"--leader", socket},
		agentArgs: []string{"-steering-events"}})
	editorAsked := make(chan struct{}, 1)
	secondAsked := make(chan []byte, 1)
	r.mu.Lock()
	asks := 0
	r.answerMsg = func(m *wireMsg) []byte {
		if asks++; asks == 1 {
			editorAsked <- struct{}{}
			return nil // the person at the editor does not answer the rm
		}
		// The next step the editor's person allows, once the page shows
		// it (below).
		secondAsked <- append([]byte(nil), m.ID...)
		return nil
	}
	r.mu.Unlock()

	ctx, me := webPage(t, chromium, link)

	turn := make(chan struct{})
	go func() {
		defer close(turn)
		r.mu.Lock()
		r.answer = func([]optionShown) string { return "" }
		r.mu.Unlock()
		r.call("session/prompt", `{"sessionId":`+quote(r.session)+`,"prompt":[{"type":"text","text":"run: rm -rf build\nwrite: notes.txt"}]}`)
	}()
	select {
	case <-editorAsked:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor was not asked")
	}
	const reason = "use make clean instead"
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(css(`#req-1 button.reject`)),
		chromedp.SendKeys(css(`#req-1 input.said`), reason),
		chromedp.Click(css(`#req-1 button.reject`)),
		chromedp.WaitVisible(css(`#resolved li[data-seq="1"]`)),
	); err != nil {
		t.Fatal(err)
	}
	// The editor answers the next request first: the page says so.
	var id2 []byte
	select {
	case id2 = <-secondAsked:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor was not asked the second step")
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#req-2`))); err != nil {
		t.Fatal(err)
	}
	r.client.send(editorAnswer(id2, "allow_once"))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#resolved li[data-seq="2"]`))); err != nil {
		t.Fatal(err)
	}
	if line, _ := chromedp.Run(ctx, chromedp.Text(css(`#resolved li[data-seq="2"]`))); !strings.Contains(line, "answered by the editor at ") {
		t.Errorf("after the editor's answer the page says %q", line)
	}
	select {
	case <-turn:
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end after the page's answer")
	}
	ev := r.lastEvents(3)
	if ev[0].Step != "run: rm -rf build" || ev[0].Ran || ev[0].Answer != "cancel" {
		t.Errorf("the rm step: %+v, want rejected (cancel is codex's reject_once)", ev[0])
	}
	want := "steering: The user rejected this tool call and said: " + reason + " (tool call: rm -rf build)"
	if ev[1].Step != want || ev[1].Answer != "injected" {
		t.Errorf("after the reject the agent got %+v, want %q injected", ev[1], want)
	}
	if r.client.index(func(m *wireMsg) bool { return m.Method == "$/cancel_request" }) < 0 {
		t.Errorf("the editor's prompt was not withdrawn ($/cancel_request)")
	}
	e := r.entries("of the page's reject", func(m map[string]any) bool { return m["decidedBy"] == "person" })[0]
	if p, _ := e["person"].(map[string]any); !strings.HasPrefix(fmt.Sprint(p["who"]), me+" at leader pid") {
		t.Errorf("the entry's person: %v, want who %s at the leader", e["person"], me)
	}
	if line, _ := chromedp.Run(ctx, chromedp.Text(css(`#resolved li[data-seq="1"]`))); !strings.Contains(line, "answered by "+me) {
		t.Errorf("the page says %q", line)
	}
	r.finish()
}

// TestWebApproverCountdownEndsInBuiltin: with person_timeout, nobody at
// the editor or the page answers; the page counts down, and at the
// deadline the builtin rejects, which the agent gets and the page says.
func TestWebApproverCountdownEndsInBuiltin(t *testing.T) {
	socket, link, chromium := webLeader(t)
	r := startLikeWith(t, likeOpts{agent: "codex", top: `person_timeout = "4s"`, session: `modes = "govern"`,
		proxyArgs: []string{"--leader", socket}})
	r.mu.Lock()
	r.answerMsg = func(m *wireMsg) []byte { return nil } // nobody at the editor answers
	r.mu.Unlock()
	ctx, _ := webPage(t, chromium, link)
	turn := make(chan struct{})
	go func() {
		defer close(turn)
		r.call("session/prompt", `{"sessionId":`+quote(r.session)+`,"prompt":[{"type":"text","text":"run: rm -rf build"}]}`)
	}()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#req-1 .countdown`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#req-1 .countdown").textContent.includes("s left")`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-turn:
	case <-time.After(time.Minute):
		t.Fatal("the turn did not end after the deadline")
	}
	if ev := r.lastEvents(1)[0]; ev.Step != "run: rm -rf build" || ev.Ran || ev.Answer != "cancel" {
		t.Errorf("the rm step: %+v, want the builtin's reject", ev)
	}
	e := r.entries("of the deadline", func(m map[string]any) bool { return m["decidedBy"] == "builtin" })[0]
	if p, _ := e["person"].(map[string]any); p["answer"] != "timeout" {
		t.Errorf("the entry: %v, want the person's answer timeout", e)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#resolved li[data-seq="1"]`))); err != nil {
		t.Fatal(err)
	}
	if line, _ := chromedp.Run(ctx, chromedp.Text(css(`#resolved li[data-seq="1"]`))); !strings.Contains(line, "decided by the worker's builtin policy") {
		t.Errorf("after the deadline the page says %q", line)
	}
	r.finish()
}
