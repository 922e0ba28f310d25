package main

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

const name = "team-rules"

// decide applies the configured rules: the first matching reject rule, else
// the first matching ask rule, else an allow when allow rules cover the
// whole call, else abstain. A bad config is an error, which permhost treats
// as a plugin failure (never as an allow).
func decide(req abi.Request) (abi.Decision, error) {
	cfg, err := cachedConfig(req.Config)
	if err != nil {
		return abi.Decision{}, err
	}
	c := newCall(req)
	for _, action := range []abi.Outcome{abi.OutcomeReject, abi.OutcomeAsk} {
		for _, r := range cfg.rules {
			if r.action != action {
				continue
			}
			if what, ok := c.matchesAny(r); ok {
				return abi.Decision{Outcome: action, Reason: reason(r.action, []rule{r}, what)}, nil
			}
		}
	}
	used, blocker := c.allowedBy(cfg.rules)
	if len(used) > 0 {
		d := abi.Decision{Outcome: abi.OutcomeAllow, Reason: reason(abi.OutcomeAllow, used, "")}
		if _, ok := d.Option(req.Options); !ok {
			return abstain(reason(abi.OutcomeAllow, used, "would allow, but no allow_once option was offered")), nil
		}
		return d, nil
	}
	if blocker != "" {
		return abstain(name + ": no rule decides: " + blocker), nil
	}
	return abstain(name + ": no rule matches"), nil
}

// quoted shows text from the agent in a reason: Go-quoted, so that no
// control character or terminal escape reaches the person's screen, and cut
// to a readable length.
func quoted(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}

func abstain(why string) abi.Decision {
	return abi.Decision{Outcome: abi.OutcomeAbstain, Reason: why}
}

// reason names the deciding rules by index and action, e.g.
// `team-rules: rules[1] (reject): command "rm -rf build"; no deletes`.
func reason(action abi.Outcome, rules []rule, what string) string {
	var b strings.Builder
	b.WriteString(name + ": ")
	for i, r := range rules {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "rules[%d]", r.index)
	}
	fmt.Fprintf(&b, " (%s)", action)
	if what != "" {
		b.WriteString(": " + what)
	}
	for _, r := range rules {
		if r.note != "" {
			b.WriteString("; " + r.note)
		}
	}
	return b.String()
}

// call is what the rules are matched against, gathered once per request.
type call struct {
	req    abi.Request
	kind   string // the agent's ACP kind
	family string // what the call does, whatever the agent calls it
	home   string // session.home, "" when unknown
	paths  []touched
	// urls is filled on first use: finding them decodes rawInput, and most
	// configs have no domains rule.
	urls      []foundURL
	urlsFound bool
}

func (c *call) mentionedURLs() []foundURL {
	if !c.urlsFound {
		c.urls, c.urlsFound = urlsOf(c.req), true
	}
	return c.urls
}

func newCall(req abi.Request) *call {
	kind := req.ToolCall.Kind
	if kind == "" {
		kind = abi.KindOther // ACP's default
	}
	home := ""
	if path.IsAbs(req.Session.Home) {
		home = path.Clean(req.Session.Home)
	}
	family := familyOf(req)
	return &call{req: req, kind: kind, family: family, home: home, paths: touchedPaths(req, family, home)}
}

// familyOf is the action's family; a request without one (built by hand:
// a 1.1 host always sends it) takes it from the ACP kind.
func familyOf(req abi.Request) string {
	if req.Action != nil && families[req.Action.Family] {
		return req.Action.Family
	}
	switch k := req.ToolCall.Kind; k {
	case abi.KindExecute:
		return abi.FamilyShell
	case abi.KindEdit, abi.KindRead, abi.KindDelete, abi.KindMove, abi.KindFetch, abi.KindSearch, abi.KindSwitchMode:
		return k
	}
	return abi.FamilyOther
}

// matchesAny is the test of reject and ask rules: every condition the rule
// states holds for at least one part of the call. It returns what matched.
func (c *call) matchesAny(r rule) (string, bool) {
	var what []string
	if len(r.families) > 0 {
		if !slices.Contains(r.families, c.family) {
			return "", false
		}
		what = append(what, "family "+c.family)
	}
	if len(r.kinds) > 0 {
		if !slices.Contains(r.kinds, c.kind) {
			return "", false
		}
		what = append(what, "kind "+c.kind)
	}
	if len(r.tools) > 0 {
		if !slices.Contains(r.tools, c.req.ToolCall.ToolName) {
			return "", false
		}
		what = append(what, "tool "+c.req.ToolCall.ToolName)
	}
	switch {
	case len(r.into) > 0:
		from, into, ok := c.pipedInto(r.commands, r.into)
		if !ok {
			return "", false
		}
		what = append(what, "command "+quoted(strings.Join(from, " "))+" piped into "+quoted(strings.Join(into, " ")))
	case len(r.commands) > 0:
		argv, ok := c.commandMentioning(r.commands)
		if !ok {
			return "", false
		}
		what = append(what, "command "+quoted(strings.Join(argv, " ")))
	}
	if len(r.paths) > 0 {
		p, ok := c.pathMatching(r, false)
		if !ok {
			return "", false
		}
		what = append(what, "path "+quoted(p))
	}
	if len(r.domains) > 0 {
		u, ok := c.urlMatching(r.domains)
		if !ok {
			return "", false
		}
		what = append(what, "url "+quoted(u))
	}
	return strings.Join(what, ", "), true
}

// commandMentioning returns a command of the call that one of prefixes
// mentions: a parsed command, a wrapper peeled off one, or, for a script
// that did not parse or that permhost found no analysis for, a rough split
// of the action's command.
func (c *call) commandMentioning(prefixes [][]string) ([]string, bool) {
	sh := c.req.Shell
	var candidates [][]string
	if sh != nil {
		for _, cmd := range sh.Commands {
			candidates = append(candidates, words(cmd)...)
		}
	}
	if sh == nil || !sh.Parsed {
		candidates = append(candidates, roughCommands(pdk.CommandText(c.req))...)
	}
	for _, argv := range candidates {
		if mentionsAny(argv, prefixes) {
			return argv, true
		}
	}
	return nil, false
}

// words are the argv and the peeled wrappers of cmd, each a candidate for
// the reject and ask rules' mentions.
func words(cmd abi.Command) [][]string {
	out := [][]string{cmd.Argv}
	for _, w := range cmd.Wrappers {
		out = append(out, strings.Fields(w))
	}
	return out
}

func mentionsAny(argv []string, prefixes [][]string) bool {
	for _, p := range prefixes {
		if mentions(argv, p) {
			return true
		}
	}
	return false
}

// pipedInto finds a command that from mentions whose output reaches,
// through pipes, a command that into mentions: "curl x | sh", not
// "curl x; echo hi | sh". The shell analysis says which commands feed which
// (pipeline and stage). Only the commands' own words count, not the
// wrappers peeled off them: every command of a "bash -lc" script has bash
// among its wrappers. For a script the analysis did not fully parse, or
// commands it did not place in pipelines, any mention of both counts, so
// that a reject or ask still matches.
func (c *call) pipedInto(from, into [][]string) ([]string, []string, bool) {
	sh := c.req.Shell
	placed := sh != nil && sh.Parsed
	if sh != nil {
		for _, cmd := range sh.Commands {
			placed = placed && cmd.Pipeline > 0 && cmd.Stage > 0
		}
	}
	if placed {
		for _, a := range sh.Commands {
			if !mentionsAny(a.Argv, from) {
				continue
			}
			for _, b := range sh.Commands {
				if pdk.Feeds(a, b) && mentionsAny(b.Argv, into) {
					return a.Argv, b.Argv, true
				}
			}
		}
		return nil, nil, false
	}
	var candidates [][]string
	if sh != nil {
		for _, cmd := range sh.Commands {
			candidates = append(candidates, words(cmd)...)
		}
	}
	candidates = append(candidates, roughCommands(pdk.CommandText(c.req))...)
	var a, b []string
	for _, argv := range candidates {
		if a == nil && mentionsAny(argv, from) {
			a = argv
		} else if b == nil && mentionsAny(argv, into) {
			b = argv
		}
	}
	return a, b, a != nil && b != nil
}

func (c *call) globs(r rule) []string {
	var out []string
	for _, g := range r.paths {
		out = append(out, expandGlob(g, c.home, c.req.Session.Cwd, r.action == abi.OutcomeAllow)...)
	}
	return out
}

func (c *call) pathMatching(r rule, allow bool) (string, bool) {
	globs := c.globs(r)
	for _, t := range c.paths {
		if pathMatches(t, globs, r.access, allow) {
			return t.path, true
		}
	}
	return "", false
}

func (c *call) urlMatching(domains []string) (string, bool) {
	for _, u := range c.mentionedURLs() {
		for _, d := range domains {
			if u.host != "" && domainMatches(d, u.host) || u.host == "" && mentionsDomain(d, u.raw) {
				return u.raw, true
			}
		}
	}
	return "", false
}

// applies is the first half of the allow test: the rule's family, kind
// and tool hold, every path the call touches is a known path matching its globs
// (and, for a call without a shell script, there is at least one), and
// every URL the call mentions has a host
// matching its domains (and there is at least one).
func (c *call) applies(r rule) bool {
	if len(r.families) > 0 && !slices.Contains(r.families, c.family) {
		return false
	}
	if len(r.kinds) > 0 && !slices.Contains(r.kinds, c.kind) {
		return false
	}
	if len(r.tools) > 0 && !slices.Contains(r.tools, c.req.ToolCall.ToolName) {
		return false
	}
	if len(r.paths) > 0 {
		// A file edit with no known file cannot be vouched for; a script
		// that touches no file is normal (its commands are checked apart).
		if len(c.paths) == 0 && c.req.Shell == nil {
			return false
		}
		globs := c.globs(r)
		for _, t := range c.paths {
			if !pathMatches(t, globs, r.access, true) {
				return false
			}
		}
	}
	if len(r.domains) > 0 {
		urls := c.mentionedURLs()
		if len(urls) == 0 {
			return false
		}
		for _, u := range urls {
			if u.host == "" || !slices.ContainsFunc(r.domains, func(d string) bool { return domainMatches(d, u.host) }) {
				return false
			}
		}
	}
	return true
}

// allowedBy returns the allow rules that together cover the call, or none and
// what stopped them (empty when no allow rule came close).
//
// A call with a shell command is allowed only when the script parsed, every
// one of its commands is plain (no NAME= assignment, nothing dynamic, no
// wrapper but benign ones) and starts with the command prefix of some
// applying allow rule, and every file it writes through a redirect is
// covered by an applying allow rule with paths. A call without one is
// allowed by an applying allow rule that states no command, except a shell
// call, which permhost could not analyse and so is never allowed.
func (c *call) allowedBy(rules []rule) ([]rule, string) {
	var applying []rule
	for _, r := range rules {
		if r.action == abi.OutcomeAllow && c.applies(r) {
			applying = append(applying, r)
		}
	}
	if len(applying) == 0 {
		return nil, ""
	}
	sh := c.req.Shell
	if sh == nil {
		if c.family == abi.FamilyShell || c.kind == abi.KindExecute {
			return nil, "a shell call without a command permhost could analyse"
		}
		for _, r := range applying {
			if len(r.commands) == 0 {
				return []rule{r}, ""
			}
		}
		return nil, ""
	}
	if !sh.Parsed {
		return nil, "the script was not fully parsed (" + sh.Reason + ")"
	}
	if len(sh.Commands) == 0 {
		return nil, "the script has no command"
	}
	var used []rule
	use := func(r rule) {
		if !slices.ContainsFunc(used, func(u rule) bool { return u.index == r.index }) {
			used = append(used, r)
		}
	}
	for _, cmd := range sh.Commands {
		if b := allowBlocker(cmd); b != "" {
			return nil, b
		}
		i := slices.IndexFunc(applying, func(r rule) bool {
			return slices.ContainsFunc(r.commands, func(p []string) bool { return hasPrefix(cmd.Argv, p) })
		})
		if i < 0 {
			return nil, c.uncovered(cmd, rules)
		}
		use(applying[i])
		for _, rd := range cmd.Redirects {
			if !rd.Write || ignoredRedirect(rd) {
				continue
			}
			j := slices.IndexFunc(applying, func(r rule) bool { return len(r.paths) > 0 })
			if j < 0 {
				return nil, fmt.Sprintf("%s writes %s, which no allow rule's paths cover", quoted(strings.Join(cmd.Argv, " ")), quoted(rd.Target))
			}
			use(applying[j])
		}
	}
	slices.SortFunc(used, func(a, b rule) int { return a.index - b.index })
	return used, ""
}

// uncovered says why no applying allow rule covers cmd.
func (c *call) uncovered(cmd abi.Command, rules []rule) string {
	for _, r := range rules {
		if r.action == abi.OutcomeAllow && slices.ContainsFunc(r.commands, func(p []string) bool { return hasPrefix(cmd.Argv, p) }) {
			return fmt.Sprintf("%s: rules[%d] (allow) does not apply to this call (its kind, tool, paths or domains)", quoted(strings.Join(cmd.Argv, " ")), r.index)
		}
	}
	return fmt.Sprintf("%s matches no allow rule", quoted(strings.Join(cmd.Argv, " ")))
}
