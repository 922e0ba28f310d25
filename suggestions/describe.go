package suggestions

import (
	"strconv"
	"strings"

	"github.com/permhost/permhost/abi"
)

// Describe returns a label for a person choosing an option with these
// changes. It names every rule, target, mode, directory, behavior and
// destination of the set, truncating nothing, so that the label never
// describes less than the option does; an unknown set is labelled as
// able to change anything.
func Describe(cs abi.ChangeSet) string {
	if !cs.Known {
		why := cs.Invalid
		if why == "" {
			why = "no reason given"
		}
		return "Unverified durable change: the agent's description could not be validated (" + why + "), so choosing this may change any permission"
	}
	if len(cs.Items) == 0 {
		return "No durable change"
	}
	parts := make([]string, 0, len(cs.Items))
	for _, c := range cs.Items {
		parts = append(parts, describeChange(c))
	}
	return strings.Join(parts, "; ")
}

func describeChange(c abi.Change) string {
	var b strings.Builder
	switch c.Type {
	case "addRules":
		b.WriteString("add " + c.Behavior + " rules for ")
		b.WriteString(subjects(c))
	case "removeRules":
		b.WriteString("remove " + c.Behavior + " rules for ")
		b.WriteString(subjects(c))
	case "replaceRules":
		if len(c.Rules) == 0 && len(c.Targets) == 0 {
			b.WriteString("remove all " + c.Behavior + " rules")
		} else {
			b.WriteString("replace all " + c.Behavior + " rules with rules for ")
			b.WriteString(subjects(c))
		}
	case "grant":
		b.WriteString("grant ")
		b.WriteString(subjects(c))
	case "setMode":
		b.WriteString("switch the permission mode to " + c.Mode)
	case "addDirectories":
		b.WriteString("add working directories " + quoteAll(c.Directories))
	case "removeDirectories":
		b.WriteString("remove working directories " + quoteAll(c.Directories))
	default:
		// Snapshots only hold known types; a hand-made one still gets a
		// label that hides nothing.
		b.WriteString("unknown change " + strconv.Quote(c.Type))
	}
	if c.Destination != "" {
		b.WriteString(" (stored in " + c.Destination + ")")
	}
	if c.Lifetime != "" {
		b.WriteString(" (lasting: " + c.Lifetime + ")")
	}
	if c.Description != "" {
		b.WriteString(" — agent: " + strconv.Quote(c.Description))
	}
	return b.String()
}

func subjects(c abi.Change) string {
	var s []string
	for _, r := range c.Rules {
		if r.RuleContent == "" {
			s = append(s, "every "+r.ToolName+" call")
		} else {
			s = append(s, r.ToolName+"("+r.RuleContent+")")
		}
	}
	for _, t := range c.Targets {
		s = append(s, describeTarget(t))
	}
	return strings.Join(s, ", ")
}

func describeTarget(t abi.Target) string {
	switch t.Type {
	case "tool":
		if t.Matcher == "" {
			return "every " + t.ToolName + " call"
		}
		p := ""
		if t.Provider != "" {
			p = " (" + t.Provider + " rule)"
		}
		return t.ToolName + "(" + t.Value + ")" + p
	case "command":
		return "commands starting with " + quoteAll(t.Argv)
	case "network":
		if t.Matcher == "any" {
			return "network access to any host"
		}
		s := "network access to host " + strconv.Quote(t.Value)
		if t.Protocol != "" {
			s += " over " + t.Protocol
		}
		return s
	case "filesystem":
		access := "read and write"
		if len(t.Access) > 0 {
			access = strings.Join(t.Access, " and ")
		}
		where := "the path "
		if t.Matcher == "directory" {
			where = "everything under "
		}
		return access + " access to " + where + strconv.Quote(t.Value)
	}
	return "unknown target " + strconv.Quote(t.Type)
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return "[" + strings.Join(q, " ") + "]"
}
