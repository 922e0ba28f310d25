package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/docs"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/internal/stdplugins"
	"github.com/permhost/permhost/sandbox"
)

func init() {
	commands["plugins"] = command{summary: "list the standard plugins inside permhost (path = \"std:NAME\")", run: runPlugins}
}

const pluginsUsage = `usage: permhost plugins [--json] [--cache-dir DIR] [NAME...]

Lists the standard plugins built into this permhost, or the NAMEs given: a
configuration uses one as path = "std:NAME" (permhost init writes a starter
that does). For each: what it does and its version, as the plugin itself
describes them (permhost_describe, run in the sandbox or remembered by the
compile cache), the [plugin.config] keys it declares, and the sha256 of its
module, which sha256 = "..." pins. A NAME given also prints the plugin's
full documentation: what it decides and why, and its configuration (for
team-rules, the rule syntax), with examples. The toolchains that built the
plugins, reproducibly, are named last.

Exit status: 0; 1 when a plugin cannot describe itself; 2 usage, or a NAME
that is no standard plugin.`

// pluginEntry is one standard plugin as `permhost plugins --json` prints it.
type pluginEntry struct {
	Name        string   `json:"name"`
	Path        string   `json:"path"` // what a configuration writes: std:NAME
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
	ConfigKeys  []string `json:"configKeys"`
	SHA256      string   `json:"sha256"`
	Bytes       int      `json:"bytes"`
	Error       string   `json:"error,omitempty"`
}

func runPlugins(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("plugins", stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), pluginsUsage)
		fmt.Fprintln(fs.Output(), "\nflags:")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print a JSON array instead of text")
	cacheDir := fs.String("cache-dir", "", `compile cache directory ("off" for none)`)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	names := fs.Args()
	withDocs := len(names) > 0
	if !withDocs {
		names = stdplugins.Names()
	}
	for i, n := range names {
		n = strings.TrimPrefix(n, stdplugins.Prefix)
		if _, err := stdplugins.SHA256(n); err != nil {
			fmt.Fprintln(stderr, "permhost plugins:", err)
			return exitUsage
		}
		names[i] = n
	}
	entries := describeStd(ctx, names, *cacheDir)
	code := exitOK
	for _, e := range entries {
		if e.Error != "" {
			code = exitFail
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, entries); err != nil {
			fmt.Fprintln(stderr, "permhost plugins:", err)
			return exitFail
		}
		return code
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		// The version, description and keys are the plugin's words (or
		// the compile cache's memory of them).
		head := e.Path
		if e.Version != "" {
			head += " (version " + safetext.Terminal(e.Version) + ")"
		}
		fmt.Fprintln(stdout, head)
		if e.Error != "" {
			fmt.Fprintf(stdout, "  cannot describe itself: %s\n", safetext.Terminal(e.Error))
		} else if e.Description != "" {
			fmt.Fprintf(stdout, "  %s\n", safetext.Terminal(e.Description))
		}
		keys := "none declared"
		if len(e.ConfigKeys) > 0 {
			keys = safetext.Terminal(strings.Join(e.ConfigKeys, ", "))
		}
		fmt.Fprintf(stdout, "  config keys: %s\n", keys)
		fmt.Fprintf(stdout, "  sha256 %s, %s\n", e.SHA256, byteSize(e.Bytes))
		if doc, ok := docs.Plugin(e.Name); ok && withDocs {
			fmt.Fprintf(stdout, "\n%s", renderDoc(doc, "plugins/examples/"+e.Name+"/README.md"))
		}
	}
	fmt.Fprintf(stdout, "\nBuilt with %s.\n",
		strings.ReplaceAll(strings.TrimSpace(stdplugins.Toolchain), "\n", ", "))
	if !withDocs {
		fmt.Fprintln(stdout, "'permhost plugins NAME' prints a plugin's documentation: its configuration, with examples.")
	}
	return code
}

// describeStd describes each standard plugin: from the compile cache's
// remembered description when it has one, else by loading it (in
// parallel: a cold Go plugin compiles for seconds).
func describeStd(ctx context.Context, names []string, cacheDir string) []pluginEntry {
	entries := make([]pluginEntry, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wasm, _ := stdplugins.Module(name)
		sum, _ := stdplugins.SHA256(name)
		entries[i] = pluginEntry{Name: name, Path: stdplugins.Prefix + name, SHA256: sum, Bytes: len(wasm)}
		if info, ok := host.CachedInfo(cacheDir, sum); ok {
			entries[i].describe(info)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := host.Load(ctx, host.Options{Name: name, Wasm: wasm, CacheDir: cacheDir, PoolSize: 1,
				Limits: sandbox.Limits{Timeout: 5 * time.Second}})
			if err != nil {
				entries[i].Error = err.Error()
				return
			}
			entries[i].describe(p.Info())
			_ = p.Close(context.WithoutCancel(ctx))
		}()
	}
	wg.Wait()
	return entries
}

func (e *pluginEntry) describe(info abi.Info) {
	e.Version, e.Description, e.ConfigKeys = info.Version, info.Description, info.ConfigKeys
	if e.ConfigKeys == nil {
		e.ConfigKeys = []string{}
	}
}

// byteSize writes n bytes for people: "10 KiB", "3.7 MiB".
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", (n+1<<9)>>10)
	}
	return count(n, "byte")
}
