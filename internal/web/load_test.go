package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoad: 50 agents with 20 requests each pending at once through one
// leader, two pages open (server-sent event clients, as the browser's
// EventSource), both pages answering every request. Every request is
// answered exactly once and nothing is lost; how long a page takes to show
// a request and to show how it ended is measured and reported, not
// asserted (make load-web; PERMHOST_LOAD=1).
func TestLoad(t *testing.T) {
	if os.Getenv("PERMHOST_LOAD") == "" {
		t.Skip("the load test runs with PERMHOST_LOAD=1 (make load-web)")
	}
	const agents, each = 50, 20
	const total = agents * each
	r := newRig(t, nil)
	// Two people answering a thousand requests in seconds is not what
	// the state-change bound is for.
	r.web.changes = newBucket(1e6, 1e6)

	type page struct {
		c     *http.Client
		csrf  string
		mu    sync.Mutex
		added map[uint64]time.Time
		ended map[uint64]time.Time
		seen  chan uint64 // seqs as they are added
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pages := make([]*page, 2)
	for i := range pages {
		c := r.login()
		p := &page{c: c, csrf: r.csrfOf(c), added: map[uint64]time.Time{}, ended: map[uint64]time.Time{}, seen: make(chan uint64, total)}
		pages[i] = p
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.web.URL()+"/events", nil)
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("events: %v %v", err, resp)
		}
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var ev, data string
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					ev = line[7:]
				case strings.HasPrefix(line, "data: "):
					data += line[6:]
				case line == "":
					now := time.Now()
					var seq uint64
					switch ev {
					case "add":
						fmt.Sscanf(data[strings.Index(data, `data-seq="`)+10:], "%d", &seq)
						p.mu.Lock()
						p.added[seq] = now
						p.mu.Unlock()
						p.seen <- seq
					case "resolved":
						fmt.Sscanf(data[strings.Index(data, `data-seq="`)+10:], "%d", &seq)
						p.mu.Lock()
						p.ended[seq] = now
						p.mu.Unlock()
					}
					ev, data = "", ""
				}
			}
		}()
	}

	// The agents ask; each remembers when.
	sent := make([]time.Time, 0, total)
	var askMu sync.Mutex
	answers := make(chan asked, total)
	start := time.Now()
	for a := range agents {
		for i := range each {
			go func() {
				q := question(fmt.Sprintf("agent %d call %d", a, i))
				askMu.Lock()
				sent = append(sent, time.Now())
				askMu.Unlock()
				got, err := r.client.Ask(ctx, q)
				answers <- asked{got, err}
			}()
		}
	}

	// Both pages answer every request they are shown, at once.
	var answeredAt sync.Map // seq → time the winning POST returned
	var wins, losses, other int
	var wmu sync.Mutex
	var wg sync.WaitGroup
	for pi, p := range pages {
		wg.Go(func() {
			for range total {
				var seq uint64
				select {
				case seq = <-p.seen:
				case <-time.After(60 * time.Second):
					t.Errorf("page %d: no new request within a minute", pi)
					return
				}
				body := fmt.Sprintf(`{"seq":%d,"option":%d,"said":"page %d"}`, seq, 2*pi, pi)
				req, _ := http.NewRequest(http.MethodPost, r.web.URL()+"/api/answer", strings.NewReader(body))
				req.Header.Set(csrfHeader, p.csrf)
				resp, err := p.c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				wmu.Lock()
				switch resp.StatusCode {
				case http.StatusOK:
					wins++
					answeredAt.Store(seq, time.Now())
				case http.StatusConflict:
					losses++
				default:
					other++
				}
				wmu.Unlock()
			}
		})
	}
	got := map[string]int{}
	for range total {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("an agent got %v", a.err)
			}
			got[a.a.AnsweredBy]++
		case <-time.After(2 * time.Minute):
			t.Fatalf("answers missing after two minutes")
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	if wins != total || losses != total || other != 0 {
		t.Fatalf("%d answers taken, %d refused as already answered, %d otherwise; want %d, %d, 0", wins, losses, other, total, total)
	}

	// Wait for both pages to show every request's end.
	for deadline := time.Now().Add(time.Minute); ; {
		done := true
		for _, p := range pages {
			p.mu.Lock()
			done = done && len(p.ended) == total && len(p.added) == total
			p.mu.Unlock()
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pages did not show every request's end within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var shown, ended []time.Duration
	for _, p := range pages {
		for seq, at := range p.ended {
			if v, ok := answeredAt.Load(seq); ok {
				ended = append(ended, max(0, at.Sub(v.(time.Time))))
			}
		}
	}
	// A request's time to show: from its ask to its card on the page,
	// matched by arrival order.
	slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
	for _, p := range pages {
		seqs := make([]uint64, 0, len(p.added))
		for seq := range p.added {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		for i, seq := range seqs {
			shown = append(shown, max(0, p.added[seq].Sub(sent[i])))
		}
	}
	pct := func(d []time.Duration, q float64) time.Duration {
		slices.Sort(d)
		return d[min(len(d)-1, int(float64(len(d))*q))]
	}
	t.Logf("%d agents × %d requests, 2 pages: all %d answered exactly once (%v by page 0, %v by page 1) in %v",
		agents, each, total, got["web:"+pageName(r, pages[0].c)], got["web:"+pageName(r, pages[1].c)], elapsed.Round(time.Millisecond))
	t.Logf("ask → card on the page: p50 %v p99 %v max %v", pct(shown, .5), pct(shown, .99), pct(shown, 1))
	t.Logf("answer taken → 'answered by' on both pages: p50 %v p99 %v max %v", pct(ended, .5), pct(ended, .99), pct(ended, 1))
	if path := os.Getenv("PERMHOST_LOAD_REPORT"); path != "" {
		// make bench includes this section in BENCHMARKS.md.
		load, _ := os.ReadFile("/proc/loadavg")
		ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" }
		var b strings.Builder
		b.WriteString("## The leader's web approver under load (`make load-web`)\n\n")
		fmt.Fprintf(&b, "`TestLoad` (internal/web): one `permhost leader` server on a Unix socket with the web approver on loopback; %d agents × %d requests pending at once (%d `leader.Client.Ask`, each on its own connection); two pages open (server-sent event clients in Go, as the browser's EventSource), both answering every request they are shown, at once. Measured %s, load average %s at the end; figures are reported, not asserted. The time to a card is from the moment the agent's request was sent (matched by arrival order), so it includes dialling the leader and queueing.\n\n",
			agents, each, total, time.Now().UTC().Format("2006-01-02 15:04 UTC"), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
		b.WriteString("| what | figure |\n| --- | --- |\n")
		fmt.Fprintf(&b, "| requests answered, each exactly once | %d of %d |\n", total, total)
		fmt.Fprintf(&b, "| split between the two pages | %v / %v |\n", got["web:"+pageName(r, pages[0].c)], got["web:"+pageName(r, pages[1].c)])
		fmt.Fprintf(&b, "| all asked, shown, answered and acknowledged | %v |\n", elapsed.Round(time.Millisecond))
		fmt.Fprintf(&b, "| ask → its card on both pages (p50 / p99 / max) | %s / %s / %s |\n", ms(pct(shown, .5)), ms(pct(shown, .99)), ms(pct(shown, 1)))
		fmt.Fprintf(&b, "| answer taken → \"answered by … at …\" on both pages (p50 / p99 / max) | %s / %s / %s |\n", ms(pct(ended, .5)), ms(pct(ended, .99)), ms(pct(ended, 1)))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if n := strconv.Itoa(len(r.leader.Queued())); n != "0" {
		t.Fatalf("%s requests left queued", n)
	}
}

// pageName is the session name the page shows.
func pageName(r *rig, c *http.Client) string {
	resp, err := c.Get(r.web.URL() + "/")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "you answer as <b>web:"); ok {
			name, _, _ := strings.Cut(rest, "<")
			return name
		}
	}
	return "?"
}
