package main

import (
	"path"
	"regexp"
	"strings"

	"github.com/permhost/permhost/docs"
	"github.com/permhost/permhost/internal/stdplugins"
)

// docCommand returns the command that prints the repository file at
// repoPath from the binary alone, when the binary carries it: a reference
// of helpTopics, or a standard plugin's README (or its directory).
func docCommand(repoPath string) (string, bool) {
	for topic, d := range helpTopics {
		if d.file == repoPath {
			return "permhost help " + topic, true
		}
	}
	if rest, ok := strings.CutPrefix(repoPath, "plugins/examples/"); ok {
		name := strings.TrimSuffix(rest, "/README.md")
		if _, has := docs.Plugin(name); has && !strings.Contains(name, "/") {
			if _, err := stdplugins.SHA256(name); err == nil {
				return "permhost plugins " + name, true
			}
		}
	}
	return "", false
}

var (
	mdLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	// mdDocPath is a repository path the binary may carry, named in prose.
	mdDocPath = regexp.MustCompile(`\b(?:docs/[a-z-]+\.md|plugins/examples/[a-z-]+/README\.md)\b`)
)

// renderDoc renders the Markdown document doc, the repository file at
// file, for a terminal: fenced code indented without its fences, HTML
// comments (the tests' markers) dropped, and links and mentions of
// repository files the binary carries (in code too: a comment's) turned
// into the commands that print them, for a user who has only the binary.
// Other links keep their text (a web address follows it); headings, lists
// and tables read as they are.
func renderDoc(doc, file string) string {
	var b strings.Builder
	inCode := false
	for line := range strings.Lines(doc) {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inCode = !inCode
		case inCode && trimmed == "":
			b.WriteString("\n")
		case inCode:
			// Code keeps its links; a comment naming a document the
			// binary carries names its command.
			b.WriteString("    " + renderMentions(line))
		case strings.HasPrefix(trimmed, "<!--") && strings.HasSuffix(trimmed, "-->"):
		default:
			b.WriteString(renderProse(line, file))
		}
	}
	return b.String()
}

// renderProse renders one line outside code blocks.
func renderProse(line, file string) string {
	line = mdLink.ReplaceAllStringFunc(line, func(m string) string {
		sub := mdLink.FindStringSubmatch(m)
		text, target := sub[1], sub[2]
		if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://") {
			if text == target {
				return text
			}
			return text + " (" + target + ")"
		}
		target, _, _ = strings.Cut(target, "#")
		if target == "" {
			return text // a section of this document
		}
		resolved := path.Clean(path.Join(path.Dir(file), target))
		cmd, ok := docCommand(resolved)
		if !ok {
			return text
		}
		if bare := strings.Trim(text, "`"); strings.Contains(bare, "/") || strings.HasSuffix(bare, ".md") || bare == path.Base(resolved) {
			return "`" + cmd + "`" // the text was the path itself
		}
		return text + " (`" + cmd + "`)"
	})
	return renderMentions(line)
}

// renderMentions turns the repository paths of documents the binary
// carries, named in line, into the commands that print them.
func renderMentions(line string) string {
	return mdDocPath.ReplaceAllStringFunc(line, func(p string) string {
		if cmd, ok := docCommand(p); ok {
			return cmd
		}
		return p
	})
}
