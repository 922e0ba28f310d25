package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/safetext"
)

func init() {
	commands["grants"] = command{summary: "list and remove permhost's own grants (allow_always = \"permhost\")", run: runGrants}
}

const grantsUsage = `usage: permhost grants list [--project DIR] [--json]
       permhost grants revoke ID...
       permhost grants clear [--project DIR]

Grants are what a person chose among permhost's own "always" options
([session] allow_always = "permhost"): one exact command, or edits under one
directory or to a few files, for one session or for one project (a session's
working directory). A later request that matches one exactly is allowed
unless a plugin rejects or asks. They are kept in
$XDG_STATE_HOME/permhost/grants.json (~/.local/state without XDG_STATE_HOME).

  list    shows them (those of DIR with --project)
  revoke  removes the grants with these ids
  clear   removes every grant, or those of DIR with --project

A running permhost sees a change at its next request.

Exit status: 0; 1 when a grant is not found or the file cannot be used;
2 usage.`

func runGrants(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, grantsUsage)
		return exitUsage
	}
	sub, rest := args[0], args[1:]
	fs := newFlagSet("grants "+sub, stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), grantsUsage) }
	var project *string
	var asJSON *bool
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, grantsUsage)
		return exitOK
	case "list":
		project = fs.String("project", "", "only the grants of this project directory")
		asJSON = fs.Bool("json", false, "print the grants as one JSON array")
	case "clear":
		project = fs.String("project", "", "only the grants of this project directory")
	case "revoke":
	default:
		fmt.Fprintf(stderr, "permhost grants: unknown command %q\n%s\n", sub, grantsUsage)
		return exitUsage
	}
	if code, ok := parseFlags(fs, rest, stdout); !ok {
		return code
	}
	dir := ""
	if project != nil && *project != "" {
		abs, err := filepath.Abs(*project)
		if err != nil {
			fmt.Fprintf(stderr, "permhost grants %s: --project: %v\n", sub, err)
			return exitUsage
		}
		dir = abs
	}
	switch {
	case sub == "revoke" && fs.NArg() == 0:
		fmt.Fprintln(stderr, "permhost grants revoke: name the grants to revoke (permhost grants revoke ID...)")
		return exitUsage
	case sub != "revoke" && fs.NArg() > 0:
		fmt.Fprintf(stderr, "permhost grants %s: unexpected argument %q\n", sub, fs.Arg(0))
		return exitUsage
	}
	path, err := grants.DefaultPath()
	if err != nil {
		fmt.Fprintf(stderr, "permhost grants: %v\n", err)
		return exitFail
	}
	store := grants.Open(path)
	switch sub {
	case "list":
		list, err := store.List()
		if err != nil {
			printError(stderr, "permhost grants list", err)
			return exitFail
		}
		var shown []grants.Grant
		for _, g := range list {
			if dir == "" || g.Project == dir {
				shown = append(shown, g)
			}
		}
		if *asJSON {
			if shown == nil {
				shown = []grants.Grant{}
			}
			enc := json.NewEncoder(jsonOut{stdout})
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(shown); err != nil {
				fmt.Fprintf(stderr, "permhost grants list: %v\n", err)
				return exitFail
			}
			return exitOK
		}
		printGrants(stdout, shown)
		if len(shown) == 0 {
			fmt.Fprintf(stdout, "no grants (%s)\n", path)
		}
		return exitOK
	case "revoke":
		code := exitOK
		for _, id := range fs.Args() {
			g, err := store.Revoke(id)
			switch {
			case errors.Is(err, grants.ErrNotFound):
				fmt.Fprintf(stderr, "permhost grants revoke: no grant %s (permhost grants list shows them)\n", id)
				code = exitFail
			case err != nil:
				printError(stderr, "permhost grants revoke", err)
				return exitFail
			default:
				fmt.Fprintf(stdout, "revoked %s\n", safetext.Terminal(g.String()))
			}
		}
		return code
	default: // clear
		gone, err := store.Clear(dir)
		if err != nil {
			printError(stderr, "permhost grants clear", err)
			return exitFail
		}
		for _, g := range gone {
			fmt.Fprintf(stdout, "revoked %s\n", safetext.Terminal(g.String()))
		}
		fmt.Fprintf(stdout, "%s removed\n", count(len(gone), "grant"))
		return exitOK
	}
}

// printGrants writes one row per grant.
func printGrants(w io.Writer, list []grants.Grant) {
	if len(list) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tPROJECT\tGRANT\tCREATED")
	for _, g := range list {
		scope := g.Scope
		if g.Scope == grants.ScopeSession {
			scope += " " + g.Session
		}
		// The name quotes the agent's command or paths.
		t := safetext.Terminal
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t(g.ID), t(scope), t(g.Project), t(g.Name), g.Created.Format("2006-01-02 15:04:05Z"))
	}
	tw.Flush()
}
