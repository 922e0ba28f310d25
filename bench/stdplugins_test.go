package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/sandbox"
)

// The standard plugins side by side with their Go reference
// implementations (plugins/examples, built to build/plugins/go): the same
// behaviour, checked by plugins/examples' differential test.

// teamRules20 is a 20-rule team-rules configuration, the size issue #20
// sets its goal for; request1K's `npm test` is allowed by rule 14, after
// every reject and ask rule was tried.
const teamRules20 = `{"rules":[
 {"action":"reject","command":[["rm","-rf"],["rm","-fr"],["sudo"],["git","push","--force"]],"reason":"destructive or privileged"},
 {"action":"reject","command":[["curl"],["wget"]],"piped_into":[["sh"],["bash"],["python3"]]},
 {"action":"reject","paths":["~/.ssh/**","~/.aws/**","/etc/**"],"access":"write"},
 {"action":"reject","command":[["dd"],["mkfs"],["shred"]]},
 {"action":"reject","command":[["chmod","-R"],["chown","-R"]]},
 {"action":"reject","kind":"delete","paths":["/**"]},
 {"action":"ask","family":"fetch","domains":["*"]},
 {"action":"ask","command":[["npm","publish"],["cargo","publish"]]},
 {"action":"ask","command":[["git","push"]]},
 {"action":"ask","paths":["**/.env","**/*.pem"]},
 {"action":"ask","tool":["mcp__github__create_issue"]},
 {"action":"ask","command":[["docker","run"],["kubectl"]]},
 {"action":"allow","family":"read","paths":["src/**","docs/**","*.md"]},
 {"action":"allow","family":"shell","command":[["npm","test"],["npm","run","lint"],["go","test"],["go","vet"]]},
 {"action":"allow","family":"shell","command":[["git","status"],["git","diff"],["git","log"]]},
 {"action":"allow","family":"shell","command":[["ls"],["cat"],["grep"],["rg"]]},
 {"action":"allow","family":"edit","paths":["src/**","test/**"]},
 {"action":"allow","family":"search","paths":["/home/dev/project/**"]},
 {"action":"allow","family":"fetch","domains":["*.github.com","docs.rs"]},
 {"action":"allow","family":"shell","command":[["make","test"],["make","build"]],"reason":"the build"}]}`

// BenchmarkTeamRules20 is one warm team-rules decision with a 20-rule set
// (allow `npm test`): std is the standard plugin (Rust) as the proxy runs
// it (a trusted module, on the caller's goroutine: host.Options.Trusted),
// std-handoff the same module on its instance's goroutine (as any other
// plugin runs), go its Go reference (untrusted), and constant the constant
// plugin on the same request, untrusted and trusted: the floors a plugin
// cannot go under (the host and wazero's call), measured in the same run.
func BenchmarkTeamRules20(b *testing.B) {
	req := request1K(b)
	for _, c := range []struct {
		name    string
		trusted bool
	}{{"constant", false}, {"constant-trusted", true}} {
		b.Run(c.name, func(b *testing.B) {
			p := loadWith(b, fixture(b, "good"), "", 1, c.trusted)
			ctx := context.Background()
			for b.Loop() {
				if _, err := p.Decide(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, c := range []struct {
		name, module string
		trusted      bool
	}{{"std", "team-rules", true}, {"std-handoff", "team-rules", false}, {"go", filepath.Join("go", "team-rules"), false}} {
		b.Run(c.name, func(b *testing.B) {
			p := loadWith(b, examplePlugin(b, c.module), teamRules20, 1, c.trusted)
			ctx := context.Background()
			d, err := p.Decide(ctx, req)
			if err != nil || d.Outcome != abi.OutcomeAllow {
				b.Fatalf("%+v, %v; want allow", d, err)
			}
			for b.Loop() {
				if _, err := p.Decide(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadStd is loading one plugin with an empty compile cache: read,
// instrument, compile (wazero's optimizing compiler), instantiate and
// handshake, what a fresh install pays once per module; std/NAME is the
// standard plugin, go/NAME its Go reference. It reports the module's size
// and the compile cache it leaves.
func BenchmarkLoadStd(b *testing.B) {
	for _, name := range []string{"team-rules", "plan-mode", "protect-secrets", "explainer"} {
		for _, kind := range []string{"std", "go"} {
			module := name
			if kind == "go" {
				module = filepath.Join("go", name)
			}
			b.Run(kind+"/"+name, func(b *testing.B) {
				path := examplePlugin(b, module)
				st, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				var cacheBytes int64
				for b.Loop() {
					cache := b.TempDir()
					p, err := host.Load(context.Background(), host.Options{Path: path, CacheDir: cache, PoolSize: 1,
						Limits: sandbox.Limits{Timeout: deadline, CompileTimeout: 5 * time.Minute, InitTimeout: time.Minute}})
					if err != nil {
						b.Fatal(err)
					}
					p.Close(context.Background())
					cacheBytes = dirBytes(b, cache)
				}
				b.ReportMetric(float64(st.Size())/1e3, "module-kB")
				b.ReportMetric(float64(cacheBytes)/1e6, "cache-MB")
			})
		}
	}
}

// dirBytes is the size of the files under dir.
func dirBytes(tb testing.TB, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
