package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

func init() {
	commands["replay"] = command{summary: "run recorded ACP traffic through today's policy and show where it differs", run: runReplay}
}

const replayUsage = `usage: permhost replay [--config FILE] [--json] [--fail-on-diff] TRANSCRIPT...

Reads recorded ACP traffic — transcripts of one JSON object per line,
{"seq","ts","dir","msg"} (dir "client->agent" or "agent->client",
msg the ACP message), or plain ACP lines — rebuilds session and
tool-call state as the proxy does, and runs every permission request through
today's policy. Prints a table: the request, today's decision (an option id,
"cancelled", or "ask" when the person would decide), what was actually
answered, and "≠" where today's policy would answer differently by itself.
Then what the configuration's [session] settings would do with the rest: the
mode actions (a session moved to a mode that asks, an editor's or the
agent's switch into one that does not, options removed), the tool calls the
agent ran with no permission request (unasked), and its file requests.
--json prints one object per request, then one {"file","note"} per note.

Exit status: 0; 1 with --fail-on-diff when a decision differs; 2 usage,
configuration or transcript errors.`

func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), replayUsage) }
	configFlag := fs.String("config", "", configUsage)
	asJSON := fs.Bool("json", false, "print one JSON object per request instead of a table")
	failOnDiff := fs.Bool("fail-on-diff", false, "exit 1 when today's policy differs from what was answered")
	cacheDir := fs.String("cache-dir", "", `compile cache directory ("off" for none)`)
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, replayUsage)
		return exitUsage
	}
	cfg, err := loadConfig(ctx, *configFlag)
	if err != nil {
		printError(stderr, "permhost replay", err)
		return exitUsage
	}
	if cfg != nil {
		cfg.LogPath = "" // a replay is not a decision
		cfg.OTLP = config.OTLP{}
	}
	// Warnings reach stderr: a bundle taken from the cache (its registry
	// down) says which revision today's decisions come from.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	engine, err := policy.New(ctx, policy.Options{Config: cfg, Via: "replay", CacheDir: *cacheDir, ReloadEvery: -1, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "permhost replay:", err)
		return exitUsage
	}
	defer engine.Close(context.WithoutCancel(ctx))
	if err := engine.CheckConfig(ctx); err != nil {
		printError(stderr, "permhost replay", err)
		return exitUsage
	}

	enc := json.NewEncoder(jsonOut{stdout})
	enc.SetEscapeHTML(false)
	differs := false
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(stderr, "permhost replay:", err)
			return exitUsage
		}
		lines, err := policy.ReadRecording(f)
		f.Close()
		if err != nil {
			printError(stderr, "permhost replay: "+path, err)
			return exitUsage
		}
		rows, notes, err := engine.Replay(ctx, lines)
		if err != nil {
			printError(stderr, "permhost replay: "+path, err)
			return exitUsage
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "%s: %s\n", path, count(len(rows), "permission request"))
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		if !*asJSON && len(rows) > 0 {
			fmt.Fprintln(tw, "  #\tkind\ttool call\ttoday\tby\tanswered\t")
		}
		for _, r := range rows {
			differs = differs || r.Differs
			if *asJSON {
				enc.Encode(struct {
					File string `json:"file"`
					policy.ReplayRow
				}{path, r})
				continue
			}
			mark := ""
			if r.Differs {
				mark = "≠"
			}
			actual := r.Actual
			if actual == "" {
				actual = "(none)"
			}
			by := r.DecidedBy
			if by == "" {
				by = "-"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, cell(r.Kind), cell(clip(r.Title, 40)), cell(r.Today), cell(by), cell(actual), mark)
		}
		tw.Flush()
		if *asJSON {
			for _, n := range notes {
				enc.Encode(struct {
					File string            `json:"file"`
					Note policy.ReplayNote `json:"note"`
				}{path, n})
			}
			continue
		}
		if len(notes) > 0 {
			fmt.Fprintf(stdout, "  %s:\n", count(len(notes), "governed event"))
			tw = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  #\tevent\tkind\ttool call\twhat\t")
			for _, n := range notes {
				kind, title := n.Kind, clip(n.Title, 40)
				if kind == "" {
					kind = "-"
				}
				if title == "" {
					title = "-"
				}
				fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t\n", n.Index, cell(n.Type), cell(kind), cell(title), cell(n.What))
			}
			tw.Flush()
		}
	}
	if differs && *failOnDiff {
		return exitFail
	}
	return exitOK
}

// cell is how a table cell shows text from a recording: the agent's, a
// plugin's (a tab would break the table too).
func cell(s string) string { return safetext.Terminal(s) }

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
