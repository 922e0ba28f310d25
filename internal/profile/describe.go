package profile

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Describe writes p as a person reads it: the agents it is for, where it
// finds each fact, its modes, and what its durable options grant.
func Describe(w io.Writer, p *Profile) {
	fmt.Fprintf(w, "%s: %s\n", p.Name, p.Title)
	for _, m := range p.Agents {
		v := ">= " + m.Min
		if m.Min == "" {
			v = "any version"
		}
		if m.Max != "" {
			v += ", < " + m.Max
		}
		fmt.Fprintf(w, "  agent %s %s\n", m.Name, v)
	}
	if len(p.ToolName) > 0 {
		fmt.Fprintf(w, "  tool name: %s\n", list(p.ToolName, ", then "))
	}
	if len(p.Tools) > 0 {
		byFamily := map[string][]string{}
		for tool, fam := range p.Tools {
			byFamily[fam] = append(byFamily[fam], tool)
		}
		fams := make([]string, 0, len(byFamily))
		for f := range byFamily {
			fams = append(fams, f)
		}
		slices.Sort(fams)
		for _, f := range fams {
			slices.Sort(byFamily[f])
			fmt.Fprintf(w, "  tools %s: %s\n", f, strings.Join(byFamily[f], ", "))
		}
	}
	fams := make([]string, 0, len(p.Fields))
	for f := range p.Fields {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	for _, f := range fams {
		fs := p.Fields[f]
		name := f
		if name == "" {
			name = "any family"
		}
		for _, part := range []struct {
			what, sep string
			src       []Source
		}{{"command", ", then ", fs.Command}, {"cwd", ", then ", fs.Cwd}, {"paths", ", ", fs.Paths}, {"urls", ", ", fs.URLs}} {
			if part.src != nil {
				fmt.Fprintf(w, "  %s %s: %s\n", name, part.what, list(part.src, part.sep))
			}
		}
	}
	for _, m := range p.Modes {
		if m.Asks {
			fmt.Fprintf(w, "  mode %s: asks\n", m.ID)
		} else {
			fmt.Fprintf(w, "  mode %s: decides %s\n", m.ID, m.Decides)
		}
	}
	if len(p.Deciding) > 0 {
		fmt.Fprintf(w, "  other modes decide when their id or name contains: %s\n", strings.Join(p.Deciding, ", "))
	}
	if p.AskingMode != "" {
		fmt.Fprintf(w, "  asking mode: %s\n", p.AskingMode)
	}
	sw := make([]string, len(p.ModeSwitch))
	for i, s := range p.ModeSwitch {
		sw[i] = string(s)
	}
	fmt.Fprintf(w, "  switch modes by: %s\n", strings.Join(sw, ", then "))
	for _, g := range p.Grants {
		what := g.Scope
		if g.Rule != "" {
			what += ", rule " + g.Rule
		}
		if g.Mode != "" {
			what += ", mode " + g.Mode
		}
		on := ""
		if len(g.Families) > 0 {
			on = " (" + strings.Join(g.Families, ", ") + ")"
		}
		fmt.Fprintf(w, "  option %s%s grants %s", g.OptionID, on, what)
		if g.Where != "" {
			fmt.Fprintf(w, ": %s", g.Where)
		}
		fmt.Fprintln(w)
	}
	if p.Elicitation != nil {
		fmt.Fprintf(w, "  approvals by elicitation/create when _meta.%s = %q\n", p.Elicitation.Key, p.Elicitation.Value)
	}
	for _, q := range p.Questions {
		var how []string
		if q.Kind != "" {
			how = append(how, "kind "+q.Kind)
		}
		if len(q.OptionIDs) > 0 {
			how = append(how, "options "+strings.Join(q.OptionIDs, ", "))
		}
		if q.ToolCallIDPrefix != "" {
			how = append(how, "toolCallId "+q.ToolCallIDPrefix+"…")
		}
		if q.OptionPrefix != "" {
			how = append(how, "every option id "+q.OptionPrefix+"…")
		}
		fmt.Fprintf(w, "  question: %s (%s): passed to the person untouched\n", q.What, strings.Join(how, "; "))
	}
	fmt.Fprintln(w, "  questions of any agent: no kind that acts and options that are answers (q{n}_…, or not allow/reject kinds)")
	if p.Settings != nil {
		fmt.Fprintf(w, "  asks only as its own settings say: %s; it asks with %s\n", p.Settings.Decides, p.Settings.Asks)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func list(ss []Source, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return strings.Join(out, sep)
}
