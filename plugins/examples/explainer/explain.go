package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

// A finding is one reason for concern. The explanation reports the first
// finding of the highest level.
type finding struct {
	level int
	risk  string // under 15 words
}

const (
	low = iota
	medium
	high
)

var levelNames = [...]string{abi.RiskLow, abi.RiskMedium, abi.RiskHigh}

func explain(req abi.Request) abi.Explanation {
	f := assess(req)
	return abi.Explanation{
		Summary:   summary(req),
		Risk:      f.risk,
		RiskLevel: levelNames[f.level],
	}
}

// assess returns the most serious finding of the call.
func assess(req abi.Request) finding {
	var found []finding
	note := func(level int, risk string) { found = append(found, finding{level, risk}) }

	cwd := req.Session.Cwd
	for _, p := range req.Paths {
		switch {
		case p.Access == abi.AccessWrite && !p.InsideCwd:
			note(high, "Writes outside the project directory.")
		case p.Access == abi.AccessWrite:
			note(medium, "Changes files inside the project; review the diff.")
		case !p.InsideCwd:
			note(medium, "Reads files outside the project directory.")
		}
	}
	cmd := pdk.CommandText(req)
	switch fam := family(req); {
	case cmd != "" || fam == abi.FamilyShell:
		assessCommand(req, cmd, note)
	case fam == abi.FamilyEdit || fam == abi.FamilyDelete || fam == abi.FamilyMove:
		verb := map[string]string{abi.FamilyEdit: "Changes", abi.FamilyDelete: "Deletes", abi.FamilyMove: "Moves"}[fam]
		files := targets(req)
		switch {
		case len(files) == 0:
			note(medium, verb+" files; which ones the agent did not say.")
		case anyOutside(files, cwd):
			note(high, verb+" files outside the project directory.")
		case fam == abi.FamilyDelete:
			note(medium, "Deletes files inside the project; this may not be undoable.")
		default:
			note(medium, verb+" files inside the project; review the diff.")
		}
	case fam == abi.FamilyFetch:
		note(high, "Fetches from the network; content may be untrusted or leak data.")
	case fam == abi.FamilySwitchMode:
		note(medium, "Leaves plan mode; the agent may then change files.")
	case fam == abi.FamilyRead || fam == abi.FamilySearch || req.ToolCall.Kind == abi.KindThink:
		if anyOutside(targets(req), cwd) {
			note(medium, "Reads files outside the project directory.")
		}
		note(low, "Only reads; changes nothing.")
	case fam == abi.FamilyMCP:
		note(medium, "Calls an external MCP tool; its effects depend on that server.")
	default:
		note(medium, "Unknown kind of tool; its effects cannot be predicted.")
	}
	best := finding{level: low, risk: "Only reads; changes nothing."}
	for i, f := range found {
		if i == 0 || f.level > best.level {
			best = f
		}
	}
	return best
}

// command is one simple command: its argv and what the analysis knows.
type command struct {
	argv      []string
	wrappers  []string
	redirects []abi.Redirect
	dynamic   bool
}

func commandsOf(req abi.Request, script string) (cmds []command, parsed bool) {
	if s := req.Shell; s != nil {
		for _, c := range s.Commands {
			cmds = append(cmds, command{argv: c.Argv, wrappers: c.Wrappers, redirects: c.Redirects, dynamic: c.Dynamic})
		}
		return cmds, s.Parsed
	}
	// No analysis: split on the usual separators. Crude, so never "parsed".
	r := strings.NewReplacer("&&", "\n", "||", "\n", ";", "\n", "|", "\n", "&", "\n", "$(", "\n", "`", "\n")
	for _, part := range strings.Split(r.Replace(script), "\n") {
		if f := strings.Fields(part); len(f) > 0 {
			cmds = append(cmds, command{argv: f})
		}
	}
	return cmds, false
}

var (
	interpreters = set("sh", "bash", "zsh", "dash", "fish", "python", "python3", "node", "perl", "ruby")
	network      = set("curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp")
	privileged   = set("sudo", "su", "doas", "pkexec")
	destroyers   = set("dd", "mkfs", "shred", "wipefs", "fdisk")
	readOnly     = set("ls", "cat", "head", "tail", "less", "grep", "rg", "wc", "pwd", "echo", "printf",
		"which", "stat", "file", "tree", "diff", "du", "df", "date", "whoami", "env", "true", "false", "test", "[", "sort", "uniq", "cut", "tr", "jq")
	readOnlyGit = set("status", "diff", "log", "show", "branch", "blame", "rev-parse", "ls-files", "remote", "fetch")
	installers  = set("npm", "pnpm", "yarn", "pip", "pip3", "cargo", "gem", "apt", "apt-get", "brew")
)

func assessCommand(req abi.Request, script string, note func(int, string)) {
	cmds, parsed := commandsOf(req, script)
	if req.Shell != nil && !parsed {
		note(high, "The command could not be fully analysed; it may do anything.")
	}
	if len(cmds) == 0 {
		note(medium, "Runs a command whose effects cannot be seen.")
		return
	}
	// A download piped into an interpreter is the worst case; say so first.
	downloads, runsCode := false, false
	for _, c := range cmds {
		if len(c.argv) > 0 {
			downloads = downloads || network[base(c.argv[0])]
			runsCode = runsCode || interpreters[base(c.argv[0])]
		}
	}
	if downloads && runsCode {
		note(high, "Downloads code from the network and runs it.")
	}
	for _, c := range cmds {
		for _, w := range c.wrappers {
			if privileged[base(w)] {
				note(high, "Runs with administrator privileges.")
			}
		}
		for _, r := range c.redirects {
			if !r.Write || r.Target == "/dev/null" {
				continue
			}
			if outside(resolve(r.Target, req.Session.Cwd), req.Session.Cwd) {
				note(high, "Writes a file outside the project directory.")
			} else {
				note(medium, "Writes a file inside the project.")
			}
		}
		if c.dynamic {
			note(medium, "Parts of the command are only known when it runs.")
		}
		if len(c.argv) == 0 {
			continue
		}
		name, args := base(c.argv[0]), c.argv[1:]
		switch {
		case privileged[name]:
			note(high, "Runs with administrator privileges.")
		case name == "rm":
			if hasFlag(args, "r", "R", "recursive") {
				note(high, "Recursively deletes files; this cannot be undone.")
			} else {
				note(medium, "Deletes files; this cannot be undone.")
			}
			for _, a := range args {
				if !strings.HasPrefix(a, "-") && outside(resolve(a, req.Session.Cwd), req.Session.Cwd) {
					note(high, "Deletes files outside the project directory.")
				}
			}
		case network[name]:
			note(high, "Uses the network; data may leave or enter the machine.")
		case interpreters[name]:
			note(medium, "Runs a script whose contents are not shown here.")
		case destroyers[name]:
			note(high, "Can destroy disks or data irreversibly.")
		case (name == "chmod" || name == "chown") && hasFlag(args, "R", "recursive"):
			note(high, "Changes permissions or ownership of a whole tree.")
		case name == "git" && len(args) > 0:
			switch {
			case args[0] == "push":
				note(high, "Publishes commits to a remote repository.")
			case args[0] == "reset" && hasFlag(args, "hard"), args[0] == "clean", args[0] == "checkout" && contains(args, "--"):
				note(high, "Discards uncommitted work irreversibly.")
			case readOnlyGit[args[0]]:
				note(low, "Only reads the repository; changes nothing.")
			default:
				note(medium, "Changes the git repository.")
			}
		case name == "find":
			if contains(args, "-delete") || contains(args, "-exec") || contains(args, "-execdir") {
				note(high, "Deletes or runs commands on every file found.")
			} else {
				note(low, "Only reads; changes nothing.")
			}
		case installers[name] && len(args) > 0 && (args[0] == "install" || args[0] == "add" || args[0] == "i"):
			note(medium, "Installs packages, which may run their own install scripts.")
		case name == "go" && len(args) > 0 && (args[0] == "get" || args[0] == "install"):
			note(medium, "Installs packages from the network.")
		case readOnly[name]:
			note(low, "Only reads; changes nothing.")
		default:
			note(medium, "Runs a program that may change files in the project.")
		}
	}
}

// summary says what the call does and, when the agent told, why.
func summary(req abi.Request) string {
	tc := req.ToolCall
	var what string
	switch cmd := pdk.CommandText(req); {
	case cmd != "":
		what = fmt.Sprintf("Runs `%s`", clip(oneLine(cmd), 120))
		if dir := first(actionCwd(req), req.Session.Cwd); dir != "" {
			what += " in " + clip(dir, 200)
		}
	case family(req) == abi.FamilySwitchMode:
		what = "Asks to leave plan mode"
		if plan := pdk.InputString(req, "plan"); plan != "" {
			what += " and carry out the plan: " + clip(oneLine(plan), 160)
		}
	case family(req) == abi.FamilyFetch:
		what = "Fetches " + clip(first(strings.Join(actionURLs(req), ", "), tc.Title, "a resource from the network"), 200)
	default:
		files := targets(req)
		fam := family(req)
		verb := map[string]string{
			abi.FamilyRead: "Reads", abi.FamilyEdit: "Edits", abi.FamilyDelete: "Deletes",
			abi.FamilyMove: "Moves", abi.FamilySearch: "Searches",
		}[fam]
		if fam == abi.FamilyEdit && creates(req) {
			verb = "Creates"
		}
		switch {
		case verb != "" && len(files) > 0:
			what = verb + " " + clip(strings.Join(files, ", "), 300)
		case tc.Title != "":
			what = "Uses " + first(tc.ToolName, "a tool") + ": " + clip(oneLine(tc.Title), 120)
		default:
			what = "Uses " + first(tc.ToolName, "a tool of kind "+first(tc.Kind, "unknown"))
		}
	}
	if why := reason(req); why != "" && !strings.Contains(what, why) {
		return what + ". Why: " + sentence(clip(oneLine(why), 200))
	}
	return sentence(what)
}

// family is the action's; a request without an action (built by hand; a
// 1.1 host always sends one) takes it from the ACP kind.
func family(req abi.Request) string {
	if req.Action != nil {
		return req.Action.Family
	}
	if req.ToolCall.Kind == abi.KindExecute {
		return abi.FamilyShell
	}
	return req.ToolCall.Kind
}

func actionCwd(req abi.Request) string {
	if req.Action != nil {
		return req.Action.Cwd
	}
	return ""
}

func actionURLs(req abi.Request) []string {
	if req.Action != nil {
		return req.Action.URLs
	}
	return nil
}

// reason is the agent's own account of why it wants the call, from the
// rawInput keys agents use for it (claude-agent-acp and Qwen Code
// description, codex-acp reason). It only explains; nothing is decided on
// it.
func reason(req abi.Request) string {
	for _, k := range []string{"description", "reason", "justification"} {
		if s := pdk.InputString(req, k); s != "" {
			return s
		}
	}
	return ""
}

// targets are the files the call names, absolute where possible: those
// permhost found, and those the action names (a request without an action,
// built by hand, has its locations).
func targets(req abi.Request) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range req.Paths {
		add(p.Path)
	}
	if req.Action != nil {
		for _, p := range req.Action.Paths {
			add(p)
		}
	} else {
		for _, l := range req.ToolCall.Locations {
			add(resolve(l.Path, req.Session.Cwd))
		}
	}
	return out
}

// creates reports whether an edit makes a new file: an ACP diff with no
// oldText (claude-agent-acp's Write) or marked _meta.kind "add" (Gemini
// CLI's, codex-acp's).
func creates(req abi.Request) bool {
	var content []struct {
		Type    string           `json:"type"`
		OldText *json.RawMessage `json:"oldText"`
		Meta    struct {
			Kind string `json:"kind"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.ToolCall.Content, &content) == nil {
		for _, c := range content {
			if c.Type == "diff" && (c.OldText == nil || string(*c.OldText) == "null" || c.Meta.Kind == "add") {
				return true
			}
		}
	}
	return false
}

func anyOutside(files []string, cwd string) bool {
	for _, f := range files {
		if outside(f, cwd) {
			return true
		}
	}
	return false
}

// outside reports whether p lies outside cwd. An unknown cwd or a path that
// is not absolute counts as outside: the explainer errs towards caution.
func outside(p, cwd string) bool {
	if cwd == "" || !strings.HasPrefix(p, "/") {
		return true
	}
	cwd = strings.TrimSuffix(cwd, "/")
	return p != cwd && !strings.HasPrefix(p, cwd+"/")
}

func resolve(p, cwd string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	case strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$"):
		return p
	case cwd != "":
		return path.Join(cwd, p)
	}
	return p
}

func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, n := range names {
			if len(n) == 1 && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a[1:], n) {
				return true
			}
			if len(n) > 1 && a == "--"+n {
				return true
			}
		}
	}
	return false
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

func base(name string) string { return strings.TrimPrefix(path.Base(name), "\\") }

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts agent text to about n bytes, cleaned for display.
func clip(s string, n int) string { return pdk.Clean(s, n) }

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "…") {
		return s
	}
	return s + "."
}
