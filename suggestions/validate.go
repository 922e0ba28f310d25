package suggestions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
)

// Bounds of a change set. They follow claude-agent-acp's own
// (src/permissions/normalization.ts), one limit for every list.
const (
	MaxChanges = 100
	MaxList    = 100
	MaxString  = 10000
)

var (
	behaviors    = set("allow", "deny", "ask")
	destinations = set("userSettings", "projectSettings", "localSettings", "session", "cliArg")
	modes        = set("default", "acceptEdits", "bypassPermissions", "plan", "dontAsk", "auto")
	scopes       = set("turn", "session", "workspace", "user", "persistent")
	accesses     = set(abi.AccessRead, abi.AccessWrite)
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// checkJSON rejects what encoding/json would silently repair or read
// differently from the agent: invalid UTF-8 (turned into U+FFFD) and a key
// twice in one object, exactly or in another case (encoding/json matches
// keys in any case and keeps the last), either of which lets two readers of
// the same bytes see different changes. It is internal/jsontext's Check,
// the one strict reader permhost has, at any depth.
func checkJSON(raw []byte) error {
	err := jsontext.Check(raw)
	var e *jsontext.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsontext.ErrDuplicateKey) && errors.As(err, &e):
		return fmt.Errorf("duplicate key %q", e.Key)
	case errors.Is(err, jsontext.ErrInvalidUTF8):
		return errors.New("invalid UTF-8")
	}
	return err
}

// object is one JSON object being validated: every key must be consumed by
// a getter, so that an unknown key fails the whole set.
type object struct {
	where string
	m     map[string]json.RawMessage
	used  map[string]bool
}

func newObject(where string, raw json.RawMessage) (*object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s: not an object", where)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return &object{where: where, m: m, used: map[string]bool{}}, nil
}

func (o *object) has(key string) bool {
	v, ok := o.m[key]
	return ok && present(v)
}

// str returns a required, bounded, plain string.
func (o *object) str(key string) (string, error) {
	o.used[key] = true
	raw, ok := o.m[key]
	if !ok || !present(raw) {
		return "", fmt.Errorf("%s: missing %s", o.where, key)
	}
	return plainString(o.where+"."+key, raw)
}

// optStr returns an optional string; "" when absent.
func (o *object) optStr(key string) (string, error) {
	if !o.has(key) {
		o.used[key] = true
		return "", nil
	}
	return o.str(key)
}

// enum returns a required string from allowed.
func (o *object) enum(key string, allowed map[string]bool) (string, error) {
	s, err := o.str(key)
	if err != nil {
		return "", err
	}
	if !allowed[s] {
		return "", fmt.Errorf("%s: unknown %s %q", o.where, key, s)
	}
	return s, nil
}

// list returns a required array of at most MaxList elements, and at least
// one unless allowEmpty.
func (o *object) list(key string, allowEmpty bool) ([]json.RawMessage, error) {
	o.used[key] = true
	raw, ok := o.m[key]
	if !ok || !present(raw) {
		return nil, fmt.Errorf("%s: missing %s", o.where, key)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %s is not an array", o.where, key)
	}
	if len(items) > MaxList {
		return nil, fmt.Errorf("%s: %s has %d entries, more than %d", o.where, key, len(items), MaxList)
	}
	if len(items) == 0 && !allowEmpty {
		return nil, fmt.Errorf("%s: %s is empty", o.where, key)
	}
	return items, nil
}

// strList returns a required list of plain strings.
func (o *object) strList(key string, allowEmpty bool) ([]string, error) {
	items, err := o.list(key, allowEmpty)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, err := plainString(fmt.Sprintf("%s.%s[%d]", o.where, key, i), it)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// done fails on any key no getter asked for.
func (o *object) done() error {
	for k := range o.m {
		if !o.used[k] {
			return fmt.Errorf("%s: unknown key %q", o.where, k)
		}
	}
	return nil
}

// plainString decodes a JSON string that is non-blank, at most MaxString
// characters, and free of characters that could disguise what a person is
// shown: control characters (C0, DEL, C1), line and paragraph separators,
// bidirectional controls, the byte-order mark and the replacement
// character.
func plainString(where string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: not a string", where)
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s: blank", where)
	}
	if n := utf8.RuneCountInString(s); n > MaxString {
		return "", fmt.Errorf("%s: %d characters, more than %d", where, n, MaxString)
	}
	for _, r := range s {
		if unsafeRune(r) {
			return "", fmt.Errorf("%s: control character %U", where, r)
		}
	}
	return s, nil
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0xfeff, r == utf8.RuneError:
		return true
	}
	return false
}

// parseClaudeSDK validates a list of Claude SDK PermissionUpdate records.
// An empty list describes nothing, as in claude-agent-acp.
func parseClaudeSDK(key string, raw json.RawMessage) *abi.ChangeSet {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return invalid(SourceClaudeSDK, "claudeCode."+key+" is not an array")
	}
	if len(items) == 0 {
		return nil
	}
	if len(items) > MaxChanges {
		return invalid(SourceClaudeSDK, fmt.Sprintf("claudeCode.%s has %d updates, more than %d", key, len(items), MaxChanges))
	}
	changes := make([]abi.Change, 0, len(items))
	for i, it := range items {
		c, err := claudeUpdate(fmt.Sprintf("claudeCode.%s[%d]", key, i), it)
		if err != nil {
			return invalid(SourceClaudeSDK, err.Error())
		}
		changes = append(changes, c)
	}
	return &abi.ChangeSet{Known: true, Source: SourceClaudeSDK, Items: changes}
}

func claudeUpdate(where string, raw json.RawMessage) (abi.Change, error) {
	var c abi.Change
	o, err := newObject(where, raw)
	if err != nil {
		return c, err
	}
	if c.Type, err = o.str("type"); err != nil {
		return c, err
	}
	if c.Destination, err = o.enum("destination", destinations); err != nil {
		return c, err
	}
	switch c.Type {
	case "addRules", "replaceRules", "removeRules":
		if c.Behavior, err = o.enum("behavior", behaviors); err != nil {
			return c, err
		}
		items, err := o.list("rules", c.Type == "replaceRules")
		if err != nil {
			return c, err
		}
		c.Rules = make([]abi.Rule, 0, len(items))
		for i, it := range items {
			r, err := claudeRule(fmt.Sprintf("%s.rules[%d]", where, i), it)
			if err != nil {
				return c, err
			}
			c.Rules = append(c.Rules, r)
		}
	case "setMode":
		if c.Mode, err = o.enum("mode", modes); err != nil {
			return c, err
		}
	case "addDirectories", "removeDirectories":
		if c.Directories, err = o.strList("directories", false); err != nil {
			return c, err
		}
	default:
		return c, fmt.Errorf("%s: unknown type %q", where, c.Type)
	}
	return c, o.done()
}

func claudeRule(where string, raw json.RawMessage) (abi.Rule, error) {
	var r abi.Rule
	o, err := newObject(where, raw)
	if err != nil {
		return r, err
	}
	if r.ToolName, err = o.str("toolName"); err != nil {
		return r, err
	}
	if r.RuleContent, err = o.optStr("ruleContent"); err != nil {
		return r, err
	}
	return r, o.done()
}

// parseACPMeta validates option _meta.permission. It returns nil when the
// record lists no changes.
func parseACPMeta(raw json.RawMessage) *abi.ChangeSet {
	o, err := newObject("permission", raw)
	if err != nil {
		return invalid(SourceACPMeta, err.Error())
	}
	o.used["version"] = true
	if v := bytes.TrimSpace(o.m["version"]); string(v) != "1" {
		return invalid(SourceACPMeta, fmt.Sprintf("permission: version %s, want 1", orAbsent(v)))
	}
	if !o.has("changes") {
		// Some codex-acp revisions describe the effect in prose only:
		// nothing a plugin can check, so the change is unknown.
		desc, err := o.str("description")
		if err != nil {
			return invalid(SourceACPMeta, "permission: neither changes nor a valid description")
		}
		o.used["changes"] = true
		if err := o.done(); err != nil {
			return invalid(SourceACPMeta, err.Error())
		}
		return invalid(SourceACPMeta, "changes described in prose only: "+desc)
	}
	if _, err := o.optStr("description"); err != nil {
		return invalid(SourceACPMeta, err.Error())
	}
	o.used["changes"] = true
	var items []json.RawMessage
	if err := json.Unmarshal(o.m["changes"], &items); err != nil {
		return invalid(SourceACPMeta, "permission.changes is not an array")
	}
	if err := o.done(); err != nil {
		return invalid(SourceACPMeta, err.Error())
	}
	if len(items) == 0 {
		return nil
	}
	if len(items) > MaxChanges {
		return invalid(SourceACPMeta, fmt.Sprintf("permission.changes has %d entries, more than %d", len(items), MaxChanges))
	}
	changes := make([]abi.Change, 0, len(items))
	for i, it := range items {
		c, err := acpChange(fmt.Sprintf("permission.changes[%d]", i), it)
		if err != nil {
			return invalid(SourceACPMeta, err.Error())
		}
		changes = append(changes, c)
	}
	return &abi.ChangeSet{Known: true, Source: SourceACPMeta, Items: changes}
}

func orAbsent(v []byte) string {
	if len(v) == 0 {
		return "absent"
	}
	if len(v) > 20 {
		return string(v[:20]) + "..."
	}
	return string(v)
}

// ruleOperations maps a policy_rule operation to the Claude-style type.
var ruleOperations = map[string]string{"add": "addRules", "remove": "removeRules", "replace": "replaceRules"}

func acpChange(where string, raw json.RawMessage) (abi.Change, error) {
	var c abi.Change
	o, err := newObject(where, raw)
	if err != nil {
		return c, err
	}
	kind, err := o.str("type")
	if err != nil {
		return c, err
	}
	if c.Description, err = o.str("description"); err != nil {
		return c, err
	}
	if c.Operation, err = o.str("operation"); err != nil {
		return c, err
	}
	if c.Lifetime, err = lifetime(o); err != nil {
		return c, err
	}
	switch kind {
	case "policy_rule":
		typ, ok := ruleOperations[c.Operation]
		if !ok {
			return c, fmt.Errorf("%s: unknown policy_rule operation %q", where, c.Operation)
		}
		c.Type = typ
		if c.Behavior, err = o.enum("ruleBehavior", behaviors); err != nil {
			return c, err
		}
		if c.Targets, err = targets(o, c.Operation == "replace"); err != nil {
			return c, err
		}
	case "grant":
		if c.Operation != "grant" {
			return c, fmt.Errorf("%s: unknown grant operation %q", where, c.Operation)
		}
		c.Type = "grant"
		if c.Targets, err = targets(o, false); err != nil {
			return c, err
		}
	case "permission_mode":
		if c.Operation != "set" {
			return c, fmt.Errorf("%s: unknown permission_mode operation %q", where, c.Operation)
		}
		c.Type = "setMode"
		if c.Mode, err = o.enum("mode", modes); err != nil {
			return c, err
		}
		if _, err := o.optStr("provider"); err != nil {
			return c, err
		}
	default:
		return c, fmt.Errorf("%s: unknown type %q", where, kind)
	}
	return c, o.done()
}

func lifetime(o *object) (string, error) {
	if !o.has("lifetime") {
		o.used["lifetime"] = true
		return "", nil
	}
	o.used["lifetime"] = true
	l, err := newObject(o.where+".lifetime", o.m["lifetime"])
	if err != nil {
		return "", err
	}
	scope, err := l.enum("scope", scopes)
	if err != nil {
		return "", err
	}
	storage, err := l.optStr("storage")
	if err != nil {
		return "", err
	}
	if err := l.done(); err != nil {
		return "", err
	}
	if storage != "" {
		return scope + ":" + storage, nil
	}
	return scope, nil
}

func targets(o *object, allowEmpty bool) ([]abi.Target, error) {
	items, err := o.list("targets", allowEmpty)
	if err != nil {
		return nil, err
	}
	out := make([]abi.Target, 0, len(items))
	for i, it := range items {
		t, err := target(fmt.Sprintf("%s.targets[%d]", o.where, i), it)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func target(where string, raw json.RawMessage) (abi.Target, error) {
	var t abi.Target
	o, err := newObject(where, raw)
	if err != nil {
		return t, err
	}
	if t.Type, err = o.str("type"); err != nil {
		return t, err
	}
	var m *object
	needMatcher := t.Type != "tool"
	if o.has("matcher") || needMatcher {
		o.used["matcher"] = true
		raw, ok := o.m["matcher"]
		if !ok {
			return t, fmt.Errorf("%s: missing matcher", where)
		}
		if m, err = newObject(where+".matcher", raw); err != nil {
			return t, err
		}
		if t.Matcher, err = m.str("type"); err != nil {
			return t, err
		}
	} else {
		o.used["matcher"] = true
	}
	switch t.Type {
	case "tool":
		if t.ToolName, err = o.str("toolName"); err != nil {
			return t, err
		}
		if m != nil {
			if t.Matcher != "provider_rule" {
				return t, fmt.Errorf("%s: unknown tool matcher %q", where, t.Matcher)
			}
			if t.Provider, err = m.optStr("provider"); err != nil {
				return t, err
			}
			if t.Value, err = m.str("value"); err != nil {
				return t, err
			}
		}
	case "command":
		if t.Matcher != "argv_prefix" {
			return t, fmt.Errorf("%s: unknown command matcher %q", where, t.Matcher)
		}
		if t.Argv, err = m.strList("argv", false); err != nil {
			return t, err
		}
	case "network":
		switch t.Matcher {
		case "any":
		case "host":
			if t.Value, err = m.str("host"); err != nil {
				return t, err
			}
			if t.Protocol, err = m.optStr("protocol"); err != nil {
				return t, err
			}
		default:
			return t, fmt.Errorf("%s: unknown network matcher %q", where, t.Matcher)
		}
	case "filesystem":
		if t.Matcher != "directory" && t.Matcher != "exact_path" {
			return t, fmt.Errorf("%s: unknown filesystem matcher %q", where, t.Matcher)
		}
		if t.Value, err = m.str("path"); err != nil {
			return t, err
		}
		if o.has("access") {
			if t.Access, err = o.strList("access", false); err != nil {
				return t, err
			}
			for _, a := range t.Access {
				if !accesses[a] {
					return t, fmt.Errorf("%s: unknown access %q", where, a)
				}
			}
		} else {
			o.used["access"] = true
		}
	default:
		return t, fmt.Errorf("%s: unknown target type %q", where, t.Type)
	}
	if m != nil {
		if err := m.done(); err != nil {
			return t, err
		}
	}
	return t, o.done()
}
