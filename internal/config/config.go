package config

import (
	"cmp"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/internal/edkey"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/internal/units"
	"github.com/permhost/permhost/sandbox"
)

// ErrInvalid is wrapped by every [*Error].
var ErrInvalid = errors.New("config: invalid")

// Error is a mistake in a configuration file.
type Error struct {
	File string // the file as given
	Line int    // 1-based; 0 when unknown
	Key  string // e.g. "plugin[1].timeout"; empty for syntax errors
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	var parts []string
	for _, p := range []string{loc, e.Key, e.Msg} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ": ")
}

func (e *Error) Unwrap() error { return ErrInvalid }

// MaxErrors bounds the mistakes an [ErrorList] prints; the rest are counted.
const MaxErrors = 20

// ErrorList is every mistake found in a configuration, in the order of the
// file. Load and Parse return one (never empty) when a file has mistakes,
// so that all of them can be fixed at once.
type ErrorList []*Error

// Error prints one mistake per line, the first MaxErrors of them, then how
// many more there are.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == MaxErrors {
			fmt.Fprintf(&b, "\n%s: and %d more mistakes", e.File, len(l)-MaxErrors)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap gives each mistake to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Errors returns list sorted by file and line (mistakes of one line kept in
// the order found) as an error, or nil when it is empty.
func Errors(list []*Error) error {
	if len(list) == 0 {
		return nil
	}
	l := slices.Clone(list)
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return ErrorList(l)
}

// Bounds of [log] max_size: a file holds at least a few entries.
const (
	minLogSize = 64 << 10
	maxLogSize = 1 << 40
)

// Strategies of the chain (DESIGN §4).
const (
	StrategySequential = "sequential"
	StrategyRace       = "race"
)

// Headless policies for undecided requests in `permhost run`.
const (
	UndecidedReject = "reject"
	UndecidedCancel = "cancel"
	UndecidedPrompt = "prompt"
)

// Failure policies of a plugin.
const (
	FailureClosed  = "closed"
	FailureAbstain = "abstain"
	FailureMonitor = "monitor"
)

// Isolations of a plugin: where it runs.
const (
	// IsolationInProcess runs the plugin inside permhost, behind the
	// sandbox alone: the default for the plugins of the user's own
	// configuration.
	IsolationInProcess = "in-process"
	// IsolationProcess runs the plugin in a permhost child process of its
	// own (internal/worker), so that even a fault the Go runtime cannot
	// recover from is that plugin's failure: the default for bundles.
	IsolationProcess = "process"
)

// DefaultLoadWait is load_wait when absent: long enough for several
// standard Go plugins to compile on a loaded 2-core machine (~3 s of CPU
// each), short enough that an agent is not left waiting for ever on a
// plugin whose compile never ends.
const DefaultLoadWait = time.Minute

// Layers, run in this order.
const (
	LayerAdmin = "admin"
	LayerTeam  = "team"
	LayerUser  = "user"
)

// Layers lists the layers in the order the chain runs them.
var Layers = []string{LayerAdmin, LayerTeam, LayerUser}

// Config is a validated permhost.toml.
type Config struct {
	// File is the absolute path of the file read; empty for an embedded one.
	File          string
	Strategy      string
	PersonTimeout time.Duration // 0 = wait for the person without limit
	// LoadWait is how long after a plugin's load began a decision waits for
	// it while it is still loading (compiling); then it counts as failed
	// for that decision. Plugins that are ready do not wait for it. 0 means
	// DefaultLoadWait.
	LoadWait    time.Duration
	OnUndecided string
	// OnQuestion is what `permhost run` does with a permission request that
	// is a question or a consent (abi.FamilyQuestion), which no plugin
	// decides: cancel (the default), reject or prompt.
	OnQuestion string
	// LogPath is the decision log, absolute; empty = off.
	LogPath string
	// LogKey signs the decision log (docs/audit-log.md): [log] key, a
	// private key file as `permhost log keygen` writes it, read when the
	// configuration is; nil = a plain log.
	LogKey ed25519.PrivateKey
	// LogMaxSize rotates the decision log at about this many bytes; 0 =
	// never.
	LogMaxSize int64
	// OTLP is [log.otlp]: decisions exported to an OpenTelemetry
	// collector; Endpoint "" = off.
	OTLP    OTLP
	Plugins []Plugin
	Bundles []Bundle
	// Session is the [session] table, defaults applied.
	Session Session
	// Approve is the [approve] table: the leader's web approver.
	Approve Approve
}

// Approve is the [approve] table.
type Approve struct {
	// Webhook is an https URL told (ntfy-compatible POST) of every request
	// that starts waiting on the leader's web page; "" for none.
	Webhook string
	// WebhookDetails adds the agent and project to the notice, which
	// otherwise says the tool call's title only.
	WebhookDetails bool
}

// Plugin is one [[plugin]] entry.
type Plugin struct {
	Name string
	// Path is the module file, absolute; or "std:NAME" as written for a
	// standard plugin (then Std is NAME).
	Path string
	// Std names the standard plugin (internal/stdplugins) the entry uses;
	// empty for a file. Use [Plugin.Module] and [Plugin.Digest] rather
	// than Path to reach the module.
	Std           string
	SHA256        string // lower-case hex; empty = not pinned
	Timeout       time.Duration
	Memory        uint64
	FailurePolicy string
	Layer         string
	// Isolation is IsolationInProcess or IsolationProcess. A bundle's
	// plugins take their bundle's ([[bundle]] isolation in the user's
	// configuration), never their own.
	Isolation string
	// Config is [plugin.config] as a JSON object; nil when absent.
	Config json.RawMessage
	// Limits are the other limits of the plugin: compile_timeout,
	// init_timeout and the load-time limits of [plugin.limits] (see
	// PluginLimitKeys). Zero fields take the sandbox's defaults; Timeout
	// and MemoryBytes are left zero, Timeout and Memory above hold them.
	Limits sandbox.Limits
	// File, Key ("plugin[1]") and Line say where the entry is written, and
	// ConfigLines where each top-level key of Config is, for mistakes found
	// later (CheckConfigKeys), and ConfigKeyLines where each key at any
	// depth is, as the plugin names it ("rules[2].acton"), for the
	// mistakes the plugin finds ([PluginProblem]).
	File           string
	Key            string
	Line           int
	ConfigLines    map[string]int
	ConfigKeyLines map[string]int
	// Wasm, when set, is the module as read once and checked against its
	// pin (a bundle's plugins, internal/bundle): [Plugin.Module] and
	// [Plugin.Digest] use it, never the file again, so that what was
	// verified is what is compiled.
	Wasm []byte
}

// Bundle is one [[bundle]] entry: a directory with bundle.toml, or a
// bundle in an OCI registry (path = "oci://REGISTRY/REPO:TAG").
type Bundle struct {
	Path        string   // absolute; "" for an OCI bundle
	TrustedKeys []string // ed25519 public keys, as given
	// OCI is the registry reference, without its "oci://" scheme, of a
	// bundle pulled from a registry; "" for a directory.
	OCI string
	// Refresh is how often an OCI bundle's tag is checked for a new
	// revision (DefaultBundleRefresh when not given).
	Refresh time.Duration
	// PlainHTTP talks to the registry without TLS: allowed only for a
	// loopback registry (a test or a local mirror).
	PlainHTTP bool
	// Isolation is where the bundle's plugins run; default
	// IsolationProcess: a bundle is someone else's code.
	Isolation string
	Line      int
}

// Defaults for plugin limits when a plugin does not say.
const (
	DefaultTimeout = 100 * time.Millisecond
	DefaultMemory  = 32 << 20
	maxTimeout     = time.Minute
	maxMemory      = 4 << 30
	minMemory      = 64 << 10
	maxLoadTimeout = 10 * time.Minute // sandbox.Limits.Validate's bound
	maxLimit       = 1 << 30          // likewise, for counts and sizes
)

// PluginLimitKey is one key of a plugin's [plugin.limits] table: the
// sandbox's load-time limit it sets.
type PluginLimitKey struct {
	Key   string
	Limit string // the field of sandbox.Limits
	Size  bool   // a size ("16MiB"), else a count
	field func(*sandbox.Limits) *int
}

// PluginLimitKeys are the keys of [plugin.limits], in the order docs/abi.md
// lists them.
var PluginLimitKeys = []PluginLimitKey{
	{"module_bytes", "MaxModuleBytes", true, func(l *sandbox.Limits) *int { return &l.MaxModuleBytes }},
	{"functions", "MaxFunctions", false, func(l *sandbox.Limits) *int { return &l.MaxFunctions }},
	{"types", "MaxTypes", false, func(l *sandbox.Limits) *int { return &l.MaxTypes }},
	{"globals", "MaxGlobals", false, func(l *sandbox.Limits) *int { return &l.MaxGlobals }},
	{"imports", "MaxImports", false, func(l *sandbox.Limits) *int { return &l.MaxImports }},
	{"exports", "MaxExports", false, func(l *sandbox.Limits) *int { return &l.MaxExports }},
	{"tables", "MaxTables", false, func(l *sandbox.Limits) *int { return &l.MaxTables }},
	{"table_entries", "MaxTableEntries", false, func(l *sandbox.Limits) *int { return &l.MaxTableEntries }},
	{"element_segments", "MaxElementSegments", false, func(l *sandbox.Limits) *int { return &l.MaxElementSegments }},
	{"element_entries", "MaxElementEntries", false, func(l *sandbox.Limits) *int { return &l.MaxElementEntries }},
	{"data_segments", "MaxDataSegments", false, func(l *sandbox.Limits) *int { return &l.MaxDataSegments }},
	{"data_bytes", "MaxDataBytes", true, func(l *sandbox.Limits) *int { return &l.MaxDataBytes }},
	{"locals", "MaxLocals", false, func(l *sandbox.Limits) *int { return &l.MaxLocals }},
	{"function_bytes", "MaxFunctionBytes", true, func(l *sandbox.Limits) *int { return &l.MaxFunctionBytes }},
	{"br_table_targets", "MaxBrTableTargets", false, func(l *sandbox.Limits) *int { return &l.MaxBrTableTargets }},
	{"block_depth", "MaxBlockDepth", false, func(l *sandbox.Limits) *int { return &l.MaxBlockDepth }},
	{"custom_bytes", "MaxCustomBytes", true, func(l *sandbox.Limits) *int { return &l.MaxCustomBytes }},
}

// Load reads and validates the file at path. A file with mistakes gives an
// [ErrorList] of every one, and, when the file is TOML at all, the Config
// as far as it could be read (as go/parser gives a partial tree), so that a
// caller can look for more mistakes, such as plugin configuration keys the
// plugin does not know ([CheckConfigKeys]), before reporting them all.
// Never run a Config that came with an error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: "cannot read: " + unwrapPathError(err)}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: err.Error()}}
	}
	return parse(data, path, filepath.Dir(abs), abs)
}

// Parse validates data as if read from file name, like [Load]; relative
// paths resolve against dir.
func Parse(data []byte, name, dir string) (*Config, error) {
	return parse(data, name, dir, "")
}

func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checker accumulates the mistakes of one file.
type checker struct {
	file  string
	dir   string
	lines map[string]int
	errs  []*Error
	// bad holds the keys found wrong: one mistake per key, so that a value
	// of the wrong type is not also reported as, say, a bad duration.
	bad map[string]bool
	// err is the first mistake, nil while there is none.
	err *Error
	// fsys, when set, holds the files under dir that the file's paths
	// name (a bundle read into memory, ParseBundleFS), instead of the disk.
	fsys fs.FS
}

// stat is os.Stat, or fs.Stat in c.fsys.
func (c *checker) stat(p string) (fs.FileInfo, error) {
	if c.fsys == nil {
		return os.Stat(p)
	}
	rel, err := c.rel(p)
	if err != nil {
		return nil, err
	}
	return fs.Stat(c.fsys, rel)
}

// open is os.Open, or c.fsys.Open.
func (c *checker) open(p string) (fs.File, error) {
	if c.fsys == nil {
		return os.Open(p)
	}
	rel, err := c.rel(p)
	if err != nil {
		return nil, err
	}
	return c.fsys.Open(rel)
}

// rel is p as a name in c.fsys.
func (c *checker) rel(p string) (string, error) {
	rel, err := filepath.Rel(c.dir, p)
	if err != nil || !fs.ValidPath(filepath.ToSlash(rel)) {
		return "", &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return filepath.ToSlash(rel), nil
}

func (c *checker) fail(key, format string, args ...any) {
	if c.bad[key] {
		return
	}
	if c.bad == nil {
		c.bad = map[string]bool{}
	}
	c.bad[key] = true
	e := &Error{File: c.file, Line: c.line(key), Key: key, Msg: fmt.Sprintf(format, args...)}
	c.errs = append(c.errs, e)
	if c.err == nil {
		c.err = e
	}
}

// failed reports whether a mistake was found in key.
func (c *checker) failed(key string) bool { return c.bad[key] }

// line finds key's line, falling back to its nearest defined parent.
func (c *checker) line(key string) int {
	for k := key; k != ""; {
		if n, ok := c.lines[k]; ok {
			return n
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

func parse(data []byte, name, dir, abs string) (*Config, error) {
	doc, err := decodeTOML(data, name)
	if err != nil {
		return nil, err
	}
	c := &checker{file: name, dir: dir, lines: keyLines(data)}
	cfg := &Config{File: abs, Strategy: StrategySequential, OnUndecided: UndecidedReject, OnQuestion: UndecidedCancel}
	c.table("", doc, map[string]func(string, any){
		"strategy": func(k string, v any) {
			cfg.Strategy = c.enum(k, v, StrategySequential, StrategyRace)
		},
		"person_timeout": func(k string, v any) { cfg.PersonTimeout = c.duration(k, v, 0, 24*time.Hour) },
		"load_wait":      func(k string, v any) { cfg.LoadWait = c.duration(k, v, time.Millisecond, 10*time.Minute) },
		"headless": func(k string, v any) {
			c.table(k, c.asTable(k, v), map[string]func(string, any){
				"on_undecided": func(k string, v any) {
					cfg.OnUndecided = c.enum(k, v, UndecidedReject, UndecidedCancel, UndecidedPrompt)
				},
				"on_question": func(k string, v any) {
					cfg.OnQuestion = c.enum(k, v, UndecidedCancel, UndecidedReject, UndecidedPrompt)
				},
			})
		},
		"log": func(k string, v any) {
			c.table(k, c.asTable(k, v), map[string]func(string, any){
				"path": func(k string, v any) {
					if p := c.str(k, v); p != "" {
						cfg.LogPath = c.abs(p)
					}
				},
				"key": func(k string, v any) {
					if p := c.str(k, v); p != "" {
						key, err := edkey.ReadPrivate(c.abs(p))
						if err != nil {
							c.fail(k, "%v", err)
						}
						cfg.LogKey = key
					} else if !c.failed(k) {
						c.fail(k, "must not be empty")
					}
				},
				"max_size": func(k string, v any) { cfg.LogMaxSize = int64(c.size(k, v, minLogSize, maxLogSize)) },
				"otlp":     func(k string, v any) { cfg.OTLP = c.otlp(k, v) },
			})
			if (cfg.LogKey != nil || cfg.LogMaxSize > 0) && cfg.LogPath == "" && !c.failed(k+".path") {
				c.fail(k, "key and max_size need path (the decision log)")
			}
		},
		"plugin": func(k string, v any) {
			for i, t := range c.tables(k, v) {
				cfg.Plugins = append(cfg.Plugins, c.plugin(fmt.Sprintf("%s[%d]", k, i), t))
			}
		},
		"bundle": func(k string, v any) {
			for i, t := range c.tables(k, v) {
				cfg.Bundles = append(cfg.Bundles, c.bundle(fmt.Sprintf("%s[%d]", k, i), t))
			}
		},
		"session": func(k string, v any) { c.session(k, v, &cfg.Session) },
		"approve": func(k string, v any) {
			c.table(k, c.asTable(k, v), map[string]func(string, any){
				"webhook": func(k string, v any) {
					u := c.str(k, v)
					if u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://127.0.0.1") && !strings.HasPrefix(u, "http://localhost") {
						c.fail(k, "want an https:// URL (or http on loopback), got %q", u)
					}
					cfg.Approve.Webhook = u
				},
				"webhook_details": func(k string, v any) {
					b, ok := v.(bool)
					if !ok {
						c.fail(k, "want true or false")
					}
					cfg.Approve.WebhookDetails = b
				},
			})
		},
	})
	sessionDefaults(&cfg.Session, len(cfg.Plugins)+len(cfg.Bundles) > 0)
	seen := map[string]string{}
	for i, p := range cfg.Plugins {
		key := fmt.Sprintf("plugin[%d].name", i)
		if prev, dup := seen[p.Name]; dup && p.Name != "" {
			c.fail(key, "plugin name %q is already used by %s", p.Name, prev)
		}
		seen[p.Name] = fmt.Sprintf("plugin[%d]", i)
	}
	return cfg, Errors(c.errs)
}

// decodeTOML decodes data; a syntax error is the file's only mistake that
// can be found, since nothing after it can be read.
func decodeTOML(data []byte, name string) (map[string]any, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, ErrorList{{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: "TOML syntax: " + pe.Message}}
		}
		return nil, ErrorList{{File: name, Msg: "TOML syntax: " + err.Error()}}
	}
	return doc, nil
}

// table walks t's keys in file order, calling the handler of each known key
// and failing on each unknown one.
func (c *checker) table(prefix string, t map[string]any, known map[string]func(string, any)) {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	full := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	sort.Slice(keys, func(i, j int) bool {
		li, lj := c.line(full(keys[i])), c.line(full(keys[j]))
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		h, ok := known[k]
		if !ok {
			c.fail(full(k), "unknown key%s", suggest(k, known))
			continue
		}
		h(full(k), t[k])
	}
}

// suggest names the known key nearest a misspelt one.
func suggest(k string, known map[string]func(string, any)) string {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	return suggestName(k, names, "known keys")
}

// DidYouMean is suggestName for other files that report mistakes the way a
// configuration does: ` (did you mean "x"?)`, or every name, as what.
func DidYouMean(k string, names []string, what string) string { return suggestName(k, names, what) }

// suggestName names the one of names nearest k, or lists them all (as
// what) when none is near.
func suggestName(k string, names []string, what string) string {
	best, bestD := "", 3
	for _, cand := range names {
		if d := distance(k, cand); d < bestD || (d == bestD && cand < best) {
			best, bestD = cand, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	sorted := slices.Clone(names)
	sort.Strings(sorted)
	return " (" + what + ": " + strings.Join(sorted, ", ") + ")"
}

// distance is the Levenshtein distance, for suggestions.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []map[string]any, []any:
		return "an array"
	case time.Time:
		return "a date-time"
	}
	return fmt.Sprintf("%T", v)
}

func (c *checker) str(k string, v any) string {
	s, ok := v.(string)
	if !ok {
		c.fail(k, "want a string, got %s", typeName(v))
	}
	return s
}

func (c *checker) asTable(k string, v any) map[string]any {
	t, ok := v.(map[string]any)
	if !ok {
		c.fail(k, "want a table, got %s", typeName(v))
	}
	return t
}

func (c *checker) tables(k string, v any) []map[string]any {
	switch t := v.(type) {
	case []map[string]any:
		return t
	case map[string]any:
		c.fail(k, "want an array of tables ([[%s]]), got a single table ([%s])", k, k)
	default:
		c.fail(k, "want an array of tables ([[%s]]), got %s", k, typeName(v))
	}
	return nil
}

func (c *checker) enum(k string, v any, allowed ...string) string {
	s := c.str(k, v)
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	c.fail(k, "%q is not one of %s", s, strings.Join(allowed, ", ")) // once per key: not after a type mistake
	return ""
}

func (c *checker) duration(k string, v any, lo, hi time.Duration) time.Duration {
	s := c.str(k, v)
	if c.failed(k) {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.fail(k, "%q is not a duration (write e.g. \"100ms\", \"2s\")", s)
		return 0
	}
	if d < lo || d > hi {
		c.fail(k, "%s is out of range [%s, %s]", d, lo, hi)
	}
	return d
}

func (c *checker) size(k string, v any, lo, hi uint64) uint64 {
	s := c.str(k, v)
	if c.failed(k) {
		return 0
	}
	n, err := units.ParseSize(s)
	if err != nil {
		c.fail(k, "%q is not a size (write e.g. \"32MiB\", \"512KiB\"): %v", s, err)
		return 0
	}
	if n < lo || n > hi {
		c.fail(k, "%s is out of range [%s, %s]", s, units.FormatSize(lo), units.FormatSize(hi))
	}
	return n
}

func (c *checker) count(k string, v any, lo, hi int64) int {
	n, ok := v.(int64)
	if !ok {
		c.fail(k, "want an integer, got %s", typeName(v))
		return 0
	}
	if n < lo || n > hi {
		c.fail(k, "%d is out of range [%d, %d]", n, lo, hi)
		return 0
	}
	return int(n)
}

func (c *checker) abs(p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.dir, p)
	}
	return filepath.Clean(p)
}

func (c *checker) existingFile(k, p string) {
	st, err := c.stat(p)
	switch {
	case err != nil:
		c.fail(k, "%s: %s", p, unwrapPathError(err))
	case st.IsDir() && !strings.HasPrefix(k, "bundle"):
		c.fail(k, "%s is a directory, want a .wasm file", p)
	case !st.IsDir() && strings.HasPrefix(k, "bundle"):
		c.fail(k, "%s is a file, want a bundle directory", p)
	}
}

// pluginFile is existingFile for a plugin's module, which must also be
// WebAssembly.
func (c *checker) pluginFile(k, p string) {
	if c.existingFile(k, p); c.failed(k) {
		return
	}
	if err := c.wasmMagic(p); err != nil {
		c.fail(k, "%s %v", p, err)
	}
}

// wasmMagic fails when the file at p does not start as a WebAssembly
// module does ("\x00asm"): a wrong path (the plugin's source, a text
// file) is then the configuration's mistake, found before the agent
// starts, rather than a plugin that fails to load at the first decision.
func (c *checker) wasmMagic(p string) error {
	f, err := c.open(p)
	if err != nil {
		return errors.New(unwrapPathError(err))
	}
	defer f.Close()
	var head [4]byte
	if n, _ := io.ReadFull(f, head[:]); n < 4 || string(head[:]) != "\x00asm" {
		return errors.New("is not a WebAssembly module (a .wasm file starts with \"\\0asm\"); build the plugin and name its .wasm")
	}
	return nil
}

func (c *checker) plugin(k string, t map[string]any) Plugin {
	p := Plugin{Timeout: DefaultTimeout, Memory: DefaultMemory, FailurePolicy: FailureClosed, Layer: LayerUser,
		Isolation: IsolationInProcess, File: c.file, Key: k, Line: c.line(k)}
	c.table(k, t, map[string]func(string, any){
		"name": func(k string, v any) {
			p.Name = c.str(k, v)
			if !c.failed(k) && strings.TrimSpace(p.Name) == "" {
				c.fail(k, "must not be empty")
			}
		},
		"path": func(k string, v any) {
			s := c.str(k, v)
			name, std := stdplugins.Name(s)
			switch {
			case c.failed(k):
			case std:
				p.Path = s
				if _, err := stdplugins.SHA256(name); err != nil {
					c.fail(k, "%q is not a standard plugin%s", s, suggestName(name, stdplugins.Names(), "standard plugins"))
					return
				}
				p.Std = name
			case s != "":
				p.Path = c.abs(s)
				c.pluginFile(k, p.Path)
			default:
				c.fail(k, "must not be empty")
			}
		},
		"sha256": func(k string, v any) {
			s := strings.ToLower(c.str(k, v))
			if s == "" {
				return
			}
			if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
				c.fail(k, "%q is not a sha256 (64 hex digits)", s)
			}
			p.SHA256 = s
		},
		"timeout":         func(k string, v any) { p.Timeout = c.duration(k, v, time.Millisecond, maxTimeout) },
		"compile_timeout": func(k string, v any) { p.Limits.CompileTimeout = c.duration(k, v, time.Millisecond, maxLoadTimeout) },
		"init_timeout":    func(k string, v any) { p.Limits.InitTimeout = c.duration(k, v, time.Millisecond, maxLoadTimeout) },
		"limits": func(k string, v any) {
			t := c.asTable(k, v)
			if c.err != nil {
				return
			}
			keys := map[string]func(string, any){}
			for _, lk := range PluginLimitKeys {
				keys[lk.Key] = func(k string, v any) {
					if lk.Size {
						*lk.field(&p.Limits) = int(c.size(k, v, 1, maxLimit))
					} else {
						*lk.field(&p.Limits) = c.count(k, v, 1, maxLimit)
					}
				}
			}
			c.table(k, t, keys)
		},
		"memory":         func(k string, v any) { p.Memory = c.size(k, v, minMemory, maxMemory) },
		"failure_policy": func(k string, v any) { p.FailurePolicy = c.enum(k, v, FailureClosed, FailureAbstain, FailureMonitor) },
		"layer":          func(k string, v any) { p.Layer = c.enum(k, v, Layers...) },
		"isolation":      func(k string, v any) { p.Isolation = c.enum(k, v, IsolationInProcess, IsolationProcess) },
		"config": func(k string, v any) {
			t := c.asTable(k, v)
			if c.failed(k) {
				return
			}
			b, err := json.Marshal(t)
			if err != nil {
				c.fail(k, "cannot hand to the plugin as JSON: %v", err)
				return
			}
			p.Config = b
			p.ConfigLines = make(map[string]int, len(t))
			for key := range t {
				p.ConfigLines[key] = c.line(k + "." + key)
			}
			p.ConfigKeyLines = map[string]int{}
			for key, n := range c.lines {
				if rel, ok := strings.CutPrefix(key, k+"."); ok {
					p.ConfigKeyLines[rel] = n
				}
			}
		},
	})
	if _, given := t["path"]; !given {
		c.fail(k, "missing key \"path\" (the plugin's .wasm file, or std:NAME for a standard plugin)")
	}
	if p.Std != "" && p.SHA256 != "" && !c.failed(k+".sha256") {
		// The module is inside this binary: a pin that does not match is
		// known now, and is the file's mistake.
		if sum, _ := stdplugins.SHA256(p.Std); sum != p.SHA256 {
			c.fail(k+".sha256", "%s is sha256 %s in this permhost, pinned %s (a permhost release may change its standard plugins: `permhost plugins` lists their sha256)", p.Path, sum, p.SHA256)
		}
	}
	switch {
	case p.Name != "":
	case p.Std != "":
		p.Name = p.Std
	case p.Path != "":
		p.Name = strings.TrimSuffix(filepath.Base(p.Path), ".wasm")
	}
	return p
}

// Module returns the plugin's module as host.Options takes it: the bytes
// already read and verified (wasm, Plugin.Wasm itself), the bytes of a
// standard plugin (wasm, a copy), or the file (path).
func (p Plugin) Module() (path string, wasm []byte) {
	if p.Wasm != nil {
		return "", p.Wasm
	}
	if p.Std != "" {
		if b, err := stdplugins.Module(p.Std); err == nil {
			return "", b
		}
	}
	return p.Path, nil
}

// Digest returns the hex sha256 of the plugin's module.
func (p Plugin) Digest() (string, error) {
	if p.Wasm != nil {
		return digest.Bytes(p.Wasm), nil
	}
	if p.Std != "" {
		return stdplugins.SHA256(p.Std)
	}
	return digest.File(p.Path)
}

func (c *checker) bundle(k string, t map[string]any) Bundle {
	b := Bundle{Isolation: IsolationProcess, Line: c.line(k), Refresh: DefaultBundleRefresh}
	c.table(k, t, map[string]func(string, any){
		"path": func(k string, v any) {
			if s := c.str(k, v); strings.HasPrefix(s, OCIScheme) {
				b.OCI = strings.TrimPrefix(s, OCIScheme)
				if err := CheckOCIReference(b.OCI); err != nil {
					c.fail(k, "%q: %v", s, err)
				}
			} else if s != "" {
				b.Path = c.abs(s)
				c.existingFile(k, b.Path)
			} else {
				c.fail(k, "must not be empty") // once per key: not after a type mistake
			}
		},
		"isolation": func(k string, v any) { b.Isolation = c.enum(k, v, IsolationInProcess, IsolationProcess) },
		"trusted_keys": func(k string, v any) {
			list, ok := v.([]any)
			if !ok {
				c.fail(k, "want an array of strings, got %s", typeName(v))
				return
			}
			for i, e := range list {
				b.TrustedKeys = append(b.TrustedKeys, c.str(fmt.Sprintf("%s[%d]", k, i), e))
			}
		},
		"refresh":    func(k string, v any) { b.Refresh = c.duration(k, v, minBundleRefresh, maxBundleRefresh) },
		"plain_http": func(k string, v any) { b.PlainHTTP = c.boolean(k, v) },
	})
	if _, given := t["path"]; !given {
		c.fail(k, "missing key \"path\" (the bundle directory, or oci://REGISTRY/REPO:TAG)")
	}
	if b.OCI == "" {
		for _, key := range []string{"refresh", "plain_http"} {
			if _, given := t[key]; given && !c.failed(k+".path") {
				c.fail(k+"."+key, "only for a bundle in an OCI registry (path = \"oci://REGISTRY/REPO:TAG\")")
			}
		}
	} else if b.PlainHTTP && !c.failed(k+".path") && !LoopbackRegistry(b.OCI) {
		c.fail(k+".plain_http", "plain HTTP is allowed only for a loopback registry (localhost, 127.0.0.1, [::1]): anyone on the path could serve another bundle's bytes and see the pulls")
	}
	return b
}

// SandboxLimits returns every limit of the plugin as the host takes them:
// Limits with Timeout and Memory filled in.
func (p Plugin) SandboxLimits() sandbox.Limits {
	l := p.Limits
	l.Timeout, l.MemoryBytes = p.Timeout, p.Memory
	return l
}
