package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
)

// A first load still running when the notice's timer fires, of a module
// not in the compile cache, is announced once on the notice writer,
// however many plugins are compiling; the timer is the engine's clock, so
// the test fires it. A load that ended before the timer fired says
// nothing, and neither does a slow load of a module in the cache (not a
// compile: isCached).
func TestSlowFirstLoadIsAnnouncedOnce(t *testing.T) {
	good, err := filepath.Abs("../testdata/wasm/good.wasm")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.wasm")
	if b, err := os.ReadFile(good); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(other, append(b, 0, 0), 0o600); err != nil { // another sha256
		t.Fatal(err)
	}
	cached := t.TempDir()
	p, err := host.Load(context.Background(), host.Options{Path: good, CacheDir: cached})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(context.Background())

	e, err := newEngine(Options{CacheDir: cached})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	in, out := spec("a", "user", "closed"), spec("b", "user", "closed")
	in.Path, out.Path = good, other
	if !e.isCached(in) || e.isCached(out) {
		t.Fatalf("isCached: %v for the module loaded with the cache, %v for another", e.isCached(in), e.isCached(out))
	}

	blocks := func(release chan struct{}) func(ctx context.Context, _ int) (loaded, error) {
		return func(ctx context.Context, _ int) (loaded, error) {
			select {
			case <-release:
				return &fakePlugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	for _, tc := range []struct {
		name      string
		cacheDir  string
		endsFirst bool // the load ends before the timer fires
		want      []string
	}{
		{name: "compiling", cacheDir: t.TempDir(), want: []string{`compiling plugin "a"`, "first run", "load_wait (1h0m0s)", "failure policy (closed)", "kept in "}},
		{name: "cache off", cacheDir: "off", want: []string{`compiling plugin "a"`, "compile cache off"}},
		{name: "loaded in time", cacheDir: t.TempDir(), endsFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			l := newLoader()
			l.load["a"], l.load["b"] = blocks(release), blocks(release)
			a, b := spec("a", "user", "closed"), spec("b", "user", "closed")
			a.Path, b.Path = good, other
			cfg := plugins(a, b)
			cfg.LoadWait = time.Hour
			notice := &acptest.SyncBuffer{}
			timers := make(chan chan time.Time, 2)
			e, err := newEngine(Options{Config: cfg, Log: NewDecisionLog(discard{}, nil), Notice: notice, CacheDir: tc.cacheDir})
			if err != nil {
				t.Fatal(err)
			}
			e.loader = l.loadPlugin
			e.after = func(d time.Duration) <-chan time.Time {
				if d != slowLoadNotice {
					t.Errorf("timer of %v", d)
				}
				c := make(chan time.Time, 1)
				timers <- c
				return c
			}
			e.start(context.Background(), -1)
			fire := []chan time.Time{wait(t, "a timer", timers), wait(t, "a timer", timers)}
			if tc.endsFirst {
				close(release)
				<-e.Ready()
			}
			for _, c := range fire {
				c <- time.Now()
			}
			if len(tc.want) > 0 {
				waitUntil(t, "the notice", func() bool { return notice.String() != "" })
			}
			if !tc.endsFirst {
				close(release)
			}
			e.Close(context.Background()) // waits for the notice's goroutines
			got := notice.String()
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("notice %q, want none", got)
				}
				return
			}
			if strings.Count(got, "\n") != 1 {
				t.Fatalf("notice %q: want one line, once", got)
			}
			got = strings.ReplaceAll(got, `"b"`, `"a"`) // either plugin may be the one named
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("notice %q lacks %q", got, w)
				}
			}
			if dir, ok := host.CacheDir(tc.cacheDir); ok && !strings.Contains(got, dir) {
				t.Errorf("notice %q does not say where the cache is (%s)", got, dir)
			}
		})
	}
}
