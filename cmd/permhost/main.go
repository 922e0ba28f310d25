// Command permhost decides coding agents' ACP permission requests with
// sandboxed WebAssembly plugins. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/permhost/permhost/docs"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/worker"
)

// Exit statuses shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// command is one subcommand. run receives the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// hidden commands are permhost's own helpers, left out of the usage.
	hidden bool
	// ownsInterrupt commands decide what SIGINT means: main's context ends
	// on SIGTERM only, and SIGINT is caught (never ignored, which the
	// processes they start would inherit) for the command to handle.
	ownsInterrupt bool
}

// commands is filled by each subcommand's file.
var commands = map[string]command{}

func main() {
	worker.Enable() // this binary serves `permhost plugin-worker` (worker.go)
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && commands[os.Args[1]].ownsInterrupt {
		sigs = sigs[1:]
		signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		// `permhost help CMD` is `permhost CMD -h`.
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		if c, ok := commands[args[1]]; ok {
			return c.run(ctx, []string{"-h"}, stdin, stdout, stderr)
		}
		if doc, ok := helpTopics[args[1]]; ok {
			fmt.Fprint(stdout, renderDoc(doc.text, doc.file))
			return exitOK
		}
		fmt.Fprintf(stderr, "permhost help: unknown command %q%s\n", args[1], didYouMean(args[1]))
		usage(stderr)
		return exitUsage
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "permhost: unknown command %q%s\n", args[0], didYouMean(args[0]))
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdin, stdout, stderr)
}

// helpTopics are the references `permhost help TOPIC` prints, carried in
// the binary (package docs) for a user without the repository; file is
// each one's place in the repository, which the links of the documents
// the binary carries name (renderDoc).
var helpTopics = map[string]struct{ summary, text, file string }{
	"config":       {"the configuration file, permhost.toml", docs.Config, "docs/config.md"},
	"test-file":    {"the test files of permhost test", docs.TestFile, "docs/testing.md"},
	"abi":          {"the plugin ABI: what a plugin exports, reads and answers", docs.ABI, "docs/abi.md"},
	"audit-log":    {"the signed decision log's format, for verifiers", docs.AuditLog, "docs/audit-log.md"},
	"web-approver": {"the leader's web page: login, answers, trust model", docs.WebApprover, "docs/web-approver.md"},
	"bundles":      {"policy bundles in OCI registries: push, pull, cache, refresh", docs.Bundles, "docs/bundles.md"},
	"agents":       {"the agents permhost reads, and how it governs each", docs.Agents, "docs/agents.md"},
}

// didYouMean names the command nearest name, " (did you mean "check"?)",
// when one is near enough to be a typo; else "" (the usage that follows
// lists them all).
func didYouMean(name string) string {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	for n := range helpTopics {
		names = append(names, n)
	}
	if s := config.DidYouMean(name, names, ""); strings.HasPrefix(s, " (did you mean") {
		return s
	}
	return ""
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: permhost COMMAND [FLAGS] [ARGS]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'permhost COMMAND -h' (or 'permhost help COMMAND') for a command's flags.")
	fmt.Fprintln(w, "\nreferences (permhost help TOPIC):")
	topics := make([]string, 0, len(helpTopics))
	for n := range helpTopics {
		topics = append(topics, n)
	}
	sort.Strings(topics)
	for _, n := range topics {
		fmt.Fprintf(w, "  %-9s %s\n", n, helpTopics[n].summary)
	}
}

// count writes n and the noun, plural unless n is 1: "1 tool call",
// "2 tool calls", "0 permission decisions".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
