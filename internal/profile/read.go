package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
)

// ErrToolCall is wrapped by the errors of [Profile.Read]: a tool call that is
// not one strict JSON object.
var ErrToolCall = errors.New("profile: tool call")

// Facts are what a profile reads from a tool call.
type Facts struct {
	// ToolName is the agent's own name for the tool; empty when it does not
	// tell.
	ToolName string
	// Action is the canonical view for the plugins.
	Action abi.Action
	// Command is the command as the agent gave it, a JSON string (a script)
	// or an array of strings (an argv); nil when the call has none.
	Command json.RawMessage
	// Dir is the absolute directory the agent says the command runs in;
	// empty when it does not say (the session's cwd applies).
	Dir string
	// Paths are Action.Paths with where each was found: "location", "diff"
	// or "rawInput".
	Paths []FoundPath
}

// FoundPath is a path and where it was found. Path is clean; Asked is the
// path as the call names it, absolute but not cleaned, when it differs
// (its ".." are for the resolver to apply after the symlinks before them).
type FoundPath struct {
	Path, Asked, Source string
}

// call is a tool call split into its members, exactly as keyed.
type call struct {
	members map[string][]byte
	input   map[string][]byte   // rawInput, when an object
	content []map[string][]byte // the content items, split once
	split   bool
	id      string
	title   string
	kind    string
}

// Read applies p to a merged tool call (the JSON object of ACP's
// ToolCallUpdate, earlier updates merged in) of a session whose working
// directory is cwd and whose user's home is home (either "" when unknown).
// It reads members by their exact keys and fails, with ErrToolCall, on a
// tool call that is not one strict JSON object (a duplicate key in any case
// at any depth among them), since other parsers could read it differently.
func (p *Profile) Read(toolCall json.RawMessage, cwd, home string) (Facts, error) {
	var f Facts
	c, err := split(toolCall)
	if err != nil {
		return f, err
	}
	if path.IsAbs(cwd) {
		cwd = path.Clean(cwd)
	} else {
		cwd = ""
	}
	if path.IsAbs(home) {
		home = path.Clean(home)
	} else {
		home = ""
	}
	for _, s := range p.ToolName {
		if v := c.strings(s); len(v) > 0 && v[0] != "" {
			f.ToolName = v[0]
			break
		}
	}
	f.Action.Family = p.family(f.ToolName, c.kind)
	fields := p.fields(f.Action.Family)

	for _, s := range fields.Command {
		if raw := c.command(s); raw != nil {
			f.Command = raw
			f.Action.Command = script(raw)
			break
		}
	}
	if f.Command != nil {
		for _, s := range fields.Cwd {
			if v := c.strings(s); len(v) > 0 {
				if d := resolve(v[0], cwd, home); d != "" {
					f.Dir = path.Clean(d)
					break
				}
			}
		}
		f.Action.Cwd = f.Dir
		if f.Action.Cwd == "" {
			f.Action.Cwd = cwd
		}
	}
	for _, s := range fields.Paths {
		for _, v := range c.strings(s) {
			asked := resolve(v, cwd, home)
			if asked == "" {
				continue
			}
			q := path.Clean(asked)
			if asked == q {
				asked = ""
			}
			if slices.ContainsFunc(f.Paths, func(x FoundPath) bool { return x.Path == q && x.Asked == asked }) {
				continue
			}
			f.Paths = append(f.Paths, FoundPath{Path: q, Asked: asked, Source: s.pathSource()})
			f.Action.Paths = append(f.Action.Paths, q)
		}
	}
	for _, s := range fields.URLs {
		for _, u := range c.strings(s) {
			if u != "" && !slices.Contains(f.Action.URLs, u) {
				f.Action.URLs = append(f.Action.URLs, u)
			}
		}
	}
	return f, nil
}

// family returns the family of a call: the profile's for the tool name,
// unless that would make a call the agent says writes or runs into a
// reader; else the ACP kind's.
func (p *Profile) family(toolName, kind string) string {
	byKind := familyOfKind(kind)
	if toolName == "" {
		return byKind
	}
	fam, ok := p.Tools[toolName]
	if !ok {
		for k, v := range p.Tools {
			if prefix, wild := strings.CutSuffix(k, "*"); wild && strings.HasPrefix(toolName, prefix) {
				fam, ok = v, true
				break
			}
		}
	}
	if !ok {
		return byKind
	}
	if (fam == abi.FamilyRead || fam == abi.FamilySearch) && byKind != fam && byKind != abi.FamilyOther {
		return byKind
	}
	return fam
}

// familyOfKind maps an ACP ToolKind to a family.
func familyOfKind(kind string) string {
	switch kind {
	case abi.KindExecute:
		return abi.FamilyShell
	case abi.KindEdit, abi.KindRead, abi.KindDelete, abi.KindMove, abi.KindFetch, abi.KindSearch, abi.KindSwitchMode:
		return kind
	}
	return abi.FamilyOther
}

// fields returns the sources for family, the family's own lists over the
// defaults.
func (p *Profile) fields(family string) Fields {
	f := p.Fields[""]
	if own, ok := p.Fields[family]; ok {
		if own.Command != nil {
			f.Command = own.Command
		}
		if own.Cwd != nil {
			f.Cwd = own.Cwd
		}
		if own.Paths != nil {
			f.Paths = own.Paths
		}
		if own.URLs != nil {
			f.URLs = own.URLs
		}
	}
	return f
}

func split(toolCall json.RawMessage) (*call, error) {
	if len(toolCall) == 0 || jsontext.IsNull(toolCall) {
		return &call{members: map[string][]byte{}}, nil
	}
	members, err := jsontext.Object(toolCall)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolCall, err)
	}
	c := &call{members: map[string][]byte{}}
	for _, m := range members {
		c.members[m.Key] = m.Value
	}
	c.id, _ = jsontext.String(c.members["toolCallId"])
	c.title, _ = jsontext.String(c.members["title"])
	c.kind, _ = jsontext.String(c.members["kind"])
	if in, err := jsontext.Object(c.members["rawInput"]); err == nil {
		c.input = map[string][]byte{}
		for _, m := range in {
			c.input[m.Key] = m.Value
		}
	}
	return c, nil
}

// object returns the members of a JSON object by exact key, or nil: b is
// read strictly (no duplicate key in any case at any depth: text the agent
// wrote could be read two ways).
func object(b []byte) map[string][]byte {
	ms, err := jsontext.Object(b)
	if err != nil {
		return nil
	}
	out := make(map[string][]byte, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Value
	}
	return out
}

// array returns the elements of a JSON array, or nil. Every value it is
// given comes from a tool call split checked whole.
func array(b []byte) []json.RawMessage {
	var out []json.RawMessage
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// stringsOf returns b as a string, or the strings of an array.
func stringsOf(b []byte) []string {
	if s, err := jsontext.String(b); err == nil {
		return []string{s}
	}
	var out []string
	for _, e := range array(b) {
		if s, err := jsontext.String(e); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// items returns the content items, split on first use: a Write's content
// can be megabytes, read by several sources.
func (c *call) items() []map[string][]byte {
	if !c.split {
		c.split = true
		for _, item := range array(c.members["content"]) {
			c.content = append(c.content, object(item))
		}
	}
	return c.content
}

// strings returns the string values source s finds in c.
func (c *call) strings(s Source) []string {
	switch s.From {
	case FromRawInput:
		return stringsOf(c.input[s.Key])
	case FromTitle:
		if c.title != "" {
			return []string{c.title}
		}
	case FromTitleURLs:
		return urlsIn(c.title)
	case FromContentText:
		var out []string
		for _, it := range c.items() {
			if t, _ := jsontext.String(it["type"]); t != "content" {
				continue
			}
			block := object(it["content"])
			if t, _ := jsontext.String(block["type"]); t != "text" {
				continue
			}
			text, _ := jsontext.String(block["text"])
			_, rest, ok := strings.Cut(text, s.Prefix)
			switch {
			case !ok:
			case s.ToEnd:
				if v, ok := strings.CutSuffix(rest, s.Suffix); ok {
					out = append(out, v)
				}
			default:
				if v, _, ok := strings.Cut(rest, s.Suffix); ok {
					out = append(out, v)
				}
			}
		}
		return out
	case FromRawInputJSON:
		return stringsOf(c.inputJSON()[s.Key])
	case FromTitleBefore:
		if name, _, ok := strings.Cut(c.title, s.Key); ok && name != "" {
			return []string{name}
		}
	case FromContentJSON:
		var out []string
		for _, obj := range c.contentJSON() {
			out = append(out, stringsOf(obj[s.Key])...)
		}
		return out
	case FromLocations:
		var out []string
		for _, l := range array(c.members["locations"]) {
			if p, err := jsontext.String(object(l)["path"]); err == nil {
				out = append(out, p)
			}
		}
		return out
	case FromDiffs:
		var out []string
		for _, it := range c.items() {
			if t, _ := jsontext.String(it["type"]); t == "diff" {
				if p, err := jsontext.String(it["path"]); err == nil {
					out = append(out, p)
				}
			}
		}
		return out
	case FromChanges:
		ms, err := jsontext.Object(c.input[s.Key])
		if err != nil {
			return nil
		}
		var out []string
		for _, m := range ms { // in the agent's order
			out = append(out, m.Key)
			if mp, err := jsontext.String(object(m.Value)["move_path"]); err == nil {
				out = append(out, mp)
			}
		}
		return out
	case FromMeta:
		v := c.members["_meta"]
		for _, k := range strings.Split(s.Key, ".") {
			v = object(v)[k]
		}
		if str, err := jsontext.String(v); err == nil {
			return []string{str}
		}
	case FromField:
		if str, err := jsontext.String(c.members[s.Key]); err == nil {
			return []string{str}
		}
	case FromIDPrefix:
		if n := idToolName(c.id, s.Key); n != "" {
			return []string{n}
		}
	}
	return nil
}

// command returns the command source s finds: a JSON string that is not
// empty, or a non-empty array of strings.
func (c *call) command(s Source) json.RawMessage {
	switch s.From {
	case FromRawInputJSON:
		return commandValue(c.inputJSON()[s.Key])
	case FromContentJSON:
		for _, obj := range c.contentJSON() {
			if v := commandValue(obj[s.Key]); v != nil {
				return v
			}
		}
	case FromContentText:
		for _, v := range c.strings(s) {
			if strings.TrimSpace(v) != "" {
				return json.RawMessage(jsontext.Quote(v))
			}
		}
	case FromRawInput:
		return commandValue(c.input[s.Key])
	case FromTitle:
		if strings.TrimSpace(c.title) != "" {
			return json.RawMessage(jsontext.Quote(c.title))
		}
	}
	return nil
}

// commandValue reads a command from a member's value: a JSON string that
// is not empty, or a non-empty array of strings.
func commandValue(b []byte) json.RawMessage {
	if str, err := jsontext.String(b); err == nil {
		if strings.TrimSpace(str) == "" {
			return nil
		}
		return json.RawMessage(jsontext.Quote(str))
	}
	var argv []string
	if json.Unmarshal(b, &argv) == nil && len(argv) > 0 {
		out, _ := json.Marshal(argv)
		return out
	}
	if len(b) > 0 && !jsontext.IsNull(b) {
		// Something else: still a command, which the analysis will
		// report it cannot read.
		return json.RawMessage(b)
	}
	return nil
}

// inputJSON returns the members of the JSON object a rawInput string
// holds, read strictly (nil when it holds none).
func (c *call) inputJSON() map[string][]byte {
	s, err := jsontext.String(c.members["rawInput"])
	if err != nil {
		return nil
	}
	return object([]byte(s))
}

// contentJSON returns the JSON objects the text content blocks hold, each
// read strictly; a block that holds anything else is skipped.
func (c *call) contentJSON() []map[string][]byte {
	var out []map[string][]byte
	for _, it := range c.items() {
		if t, _ := jsontext.String(it["type"]); t != "content" {
			continue
		}
		block := object(it["content"])
		if t, _ := jsontext.String(block["type"]); t != "text" {
			continue
		}
		text, _ := jsontext.String(block["text"])
		if obj := object([]byte(text)); obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// idToolName returns the tool name a Gemini-style id starts with:
// NAME + sep + NAME + "_" + ..., NAME possibly holding sep itself; else the
// part before the first sep.
func idToolName(id, sep string) string {
	if sep == "" {
		return ""
	}
	for i := 0; ; {
		k := strings.Index(id[i:], sep)
		if k < 0 {
			break
		}
		k += i
		if name := id[:k]; name != "" && strings.HasPrefix(id[k+len(sep):], name+"_") {
			return name
		}
		i = k + 1
	}
	name, _, ok := strings.Cut(id, sep)
	if !ok {
		return ""
	}
	return name
}

// script returns the script a command runs: the string, the script of an
// argv that hands one to a shell with -c (["/bin/bash","-lc",S]), or the
// argv quoted for a shell.
func script(raw json.RawMessage) string {
	if s, err := jsontext.String(raw); err == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil {
		return string(raw)
	}
	if len(argv) >= 3 && isShell(argv[0]) && strings.HasPrefix(argv[1], "-") && !strings.HasPrefix(argv[1], "--") && strings.HasSuffix(argv[1], "c") {
		return argv[2]
	}
	q := make([]string, len(argv))
	for i, w := range argv {
		if s, err := syntax.Quote(w, syntax.LangBash); err == nil {
			q[i] = s
		} else {
			q[i] = w
		}
	}
	return strings.Join(q, " ")
}

func isShell(p string) bool {
	switch path.Base(p) {
	case "sh", "bash", "dash", "zsh", "ksh", "ash":
		return true
	}
	return false
}

// resolve makes p absolute against cwd, "~" against home, without
// cleaning it; "" when it cannot.
func resolve(p, cwd, home string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" {
			return ""
		}
		p = home + p[1:]
	}
	switch {
	case path.IsAbs(p):
		return p
	case cwd != "":
		return strings.TrimSuffix(cwd, "/") + "/" + p
	}
	return ""
}

// urlsIn finds scheme://... runs in free text.
func urlsIn(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return out
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'<>`()[]{}|;,", rune(s[end])) {
			end++
		}
		if start < i && end > i+3 {
			out = append(out, strings.TrimRight(s[start:end], ".:!?"))
		}
		s = s[end:]
	}
}

func isSchemeByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.'
}
