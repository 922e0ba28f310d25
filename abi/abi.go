package abi

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The version of the ABI this package describes. A host refuses a plugin of a
// different major version, or of the same major and a newer minor.
//
// Minor 5 adds the permhost:host/env imports (MinorHostEnv); minor 4 the
// ACP v2 fields (MinorACPv2); minor 3 is the question family's.
const (
	Major = 1
	Minor = MinorHostEnv
)

// MinorHostEnv is the minor version that added the permhost:host/env
// imports: input_read and output_write move the input and the output in
// one call each, where the Extism kernel moves eight bytes a call.
const MinorHostEnv = 5

// MinorACPv2 is the minor version that added what an ACP v2 permission
// request carries: Request.Title, Request.Description and Request.Subject,
// and a command subject's command and cwd as the Action.
const MinorACPv2 = 4

// Names of the functions a plugin exports.
const (
	ExportDecide   = "permhost_decide"
	ExportABI      = "permhost_abi"
	ExportDescribe = "permhost_describe"
	// ExportCheckConfig is optional: given the plugin's configuration as
	// input, it returns a [ConfigCheck]. A plugin without it is not asked.
	ExportCheckConfig = "permhost_check_config"
)

// Version is what permhost_abi returns.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

// Current is the version of this package.
var Current = Version{Major: Major, Minor: Minor}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Compatible reports whether a host speaking host can run a plugin built for v:
// same major, and a minor no newer than the host's.
func (v Version) Compatible(host Version) bool {
	return v.Major == host.Major && v.Minor <= host.Minor
}

// Info is what the optional permhost_describe export returns.
type Info struct {
	Name        string   `json:"name"`
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
	ConfigKeys  []string `json:"configKeys,omitempty"`
}

// ConfigCheck is what the optional permhost_check_config export returns:
// every mistake the plugin finds in its configuration, none when it is
// good. The host calls it once at load, with the configuration (the
// [plugin.config] table as a compact JSON object) as input, and reports
// each problem as the configuration file's mistake, with its line, before
// the agent starts.
type ConfigCheck struct {
	Problems []ConfigProblem `json:"problems"`
}

// ConfigProblem is one mistake in a plugin's configuration.
type ConfigProblem struct {
	// Key is the path of the offending key or value inside the
	// configuration, keys joined by "." and array elements as [N] (from
	// 0): "rules[2].acton". Empty means the configuration as a whole.
	Key string `json:"key,omitempty"`
	// Message says what is wrong, in a few words: "unknown key".
	Message string `json:"message"`
	// Suggestion is what was probably meant, when the plugin can tell:
	// "action".
	Suggestion string `json:"suggestion,omitempty"`
}

// Request is the input of permhost_decide: one ACP session/request_permission
// together with what permhost knows about its session and tool call.
type Request struct {
	ABI        Version `json:"abi"`
	DecisionID string  `json:"decisionId"`
	Session    Session `json:"session"`
	// ToolCall is the merged view of the tool call: every earlier tool_call and
	// tool_call_update for its id, then the request's own toolCall on top.
	ToolCall ToolCall `json:"toolCall"`
	// Action is the canonical view of what the tool call does, read from the
	// agent's own request shape by its profile (ABI 1.1): the same action
	// looks the same whichever agent asks. ToolCall stays verbatim beside it.
	Action *Action `json:"action,omitempty"`
	// Options are the options the agent offered, in the agent's order. An
	// answer may only name one of these.
	Options []Option `json:"options"`
	// Title and Description are an ACP v2 request's title and optional
	// description (ABI 1.4); empty for ACP v1, which has neither. They are
	// the agent's words: codex-acp asks "Run command?" and puts the
	// model's justification in the description.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Subject is what an ACP v2 request asks about (ABI 1.4); nil for ACP
	// v1. Its type is "tool_call" (ToolCall is its tool call), "command"
	// (Action holds its command and cwd) or another type an extension
	// defines ("_…"), which only Raw shows.
	Subject *Subject `json:"subject,omitempty"`
	// Shell is present when the tool call carries a shell command: the
	// analysis of Action.Command.
	Shell *Shell `json:"shell,omitempty"`
	// Paths are the files the call touches, from locations, diffs and
	// redirects.
	Paths []Path `json:"paths,omitempty"`
	// Raw is the verbatim params object of the ACP request.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Config is this plugin's configuration ([plugin.config] in the TOML
	// file), as a JSON object; absent when none was given.
	Config json.RawMessage `json:"config,omitempty"`
}

// Subject is the subject of an ACP v2 permission request (ABI 1.4).
type Subject struct {
	// Type is SubjectToolCall, SubjectCommand or an extension's "_…" type.
	Type string `json:"type"`
}

// Subject types of ACP v2 (ABI 1.4).
const (
	SubjectToolCall = "tool_call"
	SubjectCommand  = "command"
)

// Session describes the ACP session the request belongs to.
type Session struct {
	ID string `json:"id"`
	// Cwd is the session's working directory as given in session/new,
	// session/load or session/resume; empty when unknown.
	Cwd string `json:"cwd,omitempty"`
	// Mode is the current mode id (for example "default", "plan",
	// "acceptEdits"); empty when unknown.
	Mode string `json:"mode,omitempty"`
	// Home is the user's home directory, what "~" stands for (ABI 1.1);
	// empty when unknown.
	Home string `json:"home,omitempty"`
	// Agent is the agentInfo of initialize. A 1.1 host always sets it, with
	// the profile it reads the agent's requests with; Name is empty when the
	// agent sent no agentInfo.
	Agent  *Peer `json:"agent,omitempty"`
	Client *Peer `json:"client,omitempty"`
}

// Peer is the agentInfo or clientInfo of initialize.
type Peer struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Profile names the agent profile permhost applied (agent only, ABI
	// 1.1): claude-agent-acp, codex-acp, gemini-cli, qwen-code, or generic
	// for an agent it does not know.
	Profile string `json:"profile,omitempty"`
}

// Action families (ABI 1.1): what a tool call does, whatever the agent
// calls the tool and whichever ACP kind it chose.
const (
	FamilyShell      = "shell"
	FamilyEdit       = "edit"
	FamilyRead       = "read"
	FamilyDelete     = "delete"
	FamilyMove       = "move"
	FamilyFetch      = "fetch"
	FamilySearch     = "search"
	FamilyMCP        = "mcp"
	FamilySwitchMode = "switch_mode"
	FamilyOther      = "other"
	// FamilyQuestion (ABI 1.3) is a permission request that is a question
	// or a consent put to the person (codex's "Implement this plan?",
	// AskUserQuestion's q{n}_* answers), not a tool call: its options are
	// answers. permhost passes it to the person untouched and applies no
	// plugin's verdict to it.
	FamilyQuestion = "question"
)

// Action is the canonical view of a tool call (ABI 1.1): the facts every
// agent puts in a different place, found by the agent's profile.
type Action struct {
	// Family is one of the Family constants; "other" when nothing better is
	// known.
	Family string `json:"family"`
	// Command is the shell command (script) the call runs, from wherever
	// the agent puts it: rawInput.command, the script of an argv such as
	// ["/bin/bash","-lc",SCRIPT], or (Gemini CLI only) the title.
	Command string `json:"command,omitempty"`
	// Cwd is the absolute directory Command runs in: the agent's own when
	// it says (codex-acp's rawInput.cwd, Gemini's content text), else the
	// session's.
	Cwd string `json:"cwd,omitempty"`
	// Paths are the absolute paths of the files the tool itself names (an
	// edit's, a read's; claude-agent-acp also names a command's targets),
	// in the order found, cleaned. Request.Paths holds these with their access
	// and resolved file, and the files the shell analysis finds a command touching.
	Paths []string `json:"paths,omitempty"`
	// URLs are the URLs a fetch names.
	URLs []string `json:"urls,omitempty"`
}

// Tool kinds of ACP.
const (
	KindRead       = "read"
	KindEdit       = "edit"
	KindDelete     = "delete"
	KindMove       = "move"
	KindSearch     = "search"
	KindExecute    = "execute"
	KindThink      = "think"
	KindFetch      = "fetch"
	KindSwitchMode = "switch_mode"
	KindOther      = "other"
)

// ToolCall is the merged state of one ACP tool call.
type ToolCall struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status,omitempty"`
	// RawInput, Content are verbatim from the agent.
	RawInput  json.RawMessage `json:"rawInput,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Locations []Location      `json:"locations,omitempty"`
	// ToolName is the agent's own name for the tool when it tells it in _meta
	// (claude-agent-acp: _meta.claudeCode.toolName, e.g. "Bash", "Write").
	ToolName string `json:"toolName,omitempty"`
	// ParentToolCallID is set for a subagent's call when the agent tells it.
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
}

// Location is an ACP ToolCallLocation. Line is 1-based; 0 means absent.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Permission option kinds of ACP. ACP v2 also allows custom kinds, named
// with a leading "_" (ABI 1.4): such an option is never an allow or a
// reject for Decision.Option, only an option a select may name.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
)

// Option is one offered permission option.
type Option struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	// Durable is false only for a plain one-time allow or reject: an
	// allow_always or reject_always option, any option that describes
	// changes, and every option of a switch_mode request are durable.
	Durable bool `json:"durable"`
	// Changes is the validated snapshot of the durable changes choosing this
	// option would make; nil when the agent described none.
	Changes *ChangeSet `json:"changes,omitempty"`
	// Grants is what choosing a durable option really grants, from the
	// agent's profile (ABI 1.1): its scope, and the rule it records or the
	// mode it switches to. Scope "unknown" means the profile does not know
	// this option: it may grant anything. Absent on one-time options.
	Grants *Grant `json:"grants,omitempty"`
}

// Grant scopes (ABI 1.1).
const (
	// GrantScopeSession lasts until the session ends.
	GrantScopeSession = "session"
	// GrantScopeWorkspace is stored in the workspace (a settings file in
	// the project) and applies to every later session there.
	GrantScopeWorkspace = "workspace"
	// GrantScopeUser is stored for the user and applies everywhere.
	GrantScopeUser = "user"
	// GrantScopeUnknown: the profile does not know what the option grants.
	GrantScopeUnknown = "unknown"
)

// Grant is what a durable option hands to the agent beyond this one call.
type Grant struct {
	Scope string `json:"scope"`
	// Rule is the rule the agent records, in its own notation where it has
	// one ("Bash(rm *)"), else "what: value" ("command root: rm", "prefix:
	// rm -rf build", "files: /p/a.txt"); empty when it records none or it
	// is not known.
	Rule string `json:"rule,omitempty"`
	// Mode is the mode the session switches to.
	Mode string `json:"mode,omitempty"`
}

// ChangeSet is what an option would change beyond this one call.
type ChangeSet struct {
	// Known is false when the agent described changes that failed validation:
	// the whole set was dropped, and the option may change anything.
	Known bool `json:"known"`
	// Source is where the changes came from: "acp-meta" (option
	// _meta.permission.changes) or "claude-sdk" (PermissionUpdate records).
	Source string `json:"source,omitempty"`
	// Invalid says why validation failed when Known is false.
	Invalid string   `json:"invalid,omitempty"`
	Items   []Change `json:"items,omitempty"`
}

// Change is one durable change, normalised from either source.
type Change struct {
	// Type is one of addRules, replaceRules, removeRules, setMode,
	// addDirectories, removeDirectories.
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Behavior is allow, deny or ask (rule changes).
	Behavior string `json:"behavior,omitempty"`
	Rules    []Rule `json:"rules,omitempty"`
	// Mode is the mode a setMode change switches to.
	Mode        string   `json:"mode,omitempty"`
	Directories []string `json:"directories,omitempty"`
	// Destination is where the change is stored: userSettings,
	// projectSettings, localSettings, session or cliArg.
	Destination string `json:"destination,omitempty"`
	// Operation, Lifetime and Targets are set for "acp-meta" changes only,
	// whose Type is addRules, removeRules, replaceRules (policy_rule add,
	// remove, replace), grant, or setMode (permission_mode set).
	// Operation is the agent's operation: add, remove, replace, grant or set.
	Operation string `json:"operation,omitempty"`
	// Lifetime is the acp-meta lifetime scope (turn, session, workspace,
	// user, persistent), followed by ":" and the storage when one is given.
	Lifetime string   `json:"lifetime,omitempty"`
	Targets  []Target `json:"targets,omitempty"`
}

// Target is what an acp-meta change applies to.
type Target struct {
	// Type is tool, command, network or filesystem.
	Type string `json:"type"`
	// ToolName names the tool of a tool target.
	ToolName string `json:"toolName,omitempty"`
	// Matcher is the matcher type: provider_rule, argv_prefix, host, any,
	// directory or exact_path; empty for a whole tool.
	Matcher string `json:"matcher,omitempty"`
	// Provider is the provider of a provider_rule (e.g. "claudeCode").
	Provider string `json:"provider,omitempty"`
	// Value is the provider rule, the host or the path the matcher names.
	Value string `json:"value,omitempty"`
	// Protocol is the protocol of a host matcher, when given.
	Protocol string `json:"protocol,omitempty"`
	// Argv is the prefix of an argv_prefix matcher.
	Argv []string `json:"argv,omitempty"`
	// Access is the filesystem access granted (read, write), when given.
	Access []string `json:"access,omitempty"`
}

// Rule is a Claude-style permission rule: a tool name and optional content
// such as "npm test:*".
type Rule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// Shell is the analysis of a shell command found in the tool call.
type Shell struct {
	// Source is the script text as the agent gave it.
	Source string `json:"source"`
	// Parsed is false when the analysis could not fully understand the
	// script; Reason then says why, and Commands may be incomplete. A plugin
	// must never treat an unparsed script as safe.
	Parsed   bool      `json:"parsed"`
	Reason   string    `json:"reason,omitempty"`
	Commands []Command `json:"commands"`
}

// Command is one simple command of a script, wherever it appears.
type Command struct {
	// Argv is the command after unwrapping wrappers (bash -c, env, timeout,
	// nice, nohup, command, xargs...), with quotes resolved.
	Argv []string `json:"argv"`
	// Wrappers are the wrapper commands peeled off, outermost first.
	Wrappers []string `json:"wrappers,omitempty"`
	// Assignments are NAME=value prefixes, including env's.
	Assignments []Assignment `json:"assignments,omitempty"`
	Redirects   []Redirect   `json:"redirects,omitempty"`
	// Context says where the command sits: "" at top level, or one of
	// "pipeline", "substitution", "process-substitution", "subshell",
	// "function", "background", "wrapped".
	Context string `json:"context,omitempty"`
	// Dynamic is true when a word of Argv depends on run-time values
	// (variables, substitutions, globs); such words appear as written.
	Dynamic bool `json:"dynamic,omitempty"`
	// Pipeline numbers the pipeline the command belongs to, from 1 in
	// script order (ABI 1.1): commands joined by | or |&, directly or
	// inside a subshell, block or substitution of a stage, share it; every
	// other command has a number of its own. 0 when unknown.
	Pipeline int `json:"pipeline,omitempty"`
	// Stage orders the commands of one pipeline, from 1 (ABI 1.1): the
	// output of a command can reach, through pipes, the input of the
	// commands of its pipeline with a higher stage and of no other. So
	// "curl x | sh" is curl stage 1, sh stage 2 of one pipeline, and
	// "curl x; echo hi | bash" puts curl in a pipeline of its own.
	Stage int `json:"stage,omitempty"`
	// Source is where the command is written in Shell.Source, when the
	// analysis can tell (ABI 1.1): the whole statement, redirects included,
	// or the statement of the wrapper that runs it.
	Source *Range `json:"source,omitempty"`
}

// Range is a byte range [Start, End) of a string.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Assignment is NAME=VALUE.
type Assignment struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Redirect is one redirection of a command.
type Redirect struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	// Write is true for redirects that write the target.
	Write bool `json:"write"`
}

// Path access values.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// Path is a file the call touches.
type Path struct {
	// Path is absolute, resolved against the session cwd, and cleaned
	// lexically: "k/../x" reads "x" whatever k is. Match on Resolved (ABI
	// 1.2), which is what the OS opens.
	Path string `json:"path"`
	// Asked is the path as the call names it, made absolute ("~" and the
	// directory joined) but not cleaned (ABI 1.2); absent when it is Path.
	Asked string `json:"asked,omitempty"`
	// Resolved is the file the OS opens for the path (ABI 1.2): Asked
	// with each symlink replaced by its target where met and each ".."
	// applied after it, as the kernel does, when the decision is made.
	// For a file that does not exist yet, its longest existing ancestor is
	// resolved and the rest appended; a dangling symlink is its target. A
	// symlink to a secret resolves to the secret. Absent when the path
	// cannot be resolved (a symlink loop, a component that cannot be
	// examined): treat such a path as unknown, never as safe.
	Resolved  string `json:"resolved,omitempty"`
	Access    string `json:"access"`
	InsideCwd bool   `json:"insideCwd"`
	// Source is where permhost found it: "location", "diff", "rawInput",
	// "redirect" or "argv".
	Source string `json:"source,omitempty"`
}

// Outcome of a decision.
type Outcome string

// Outcomes, strongest first: reject and cancel beat ask, which beats allow
// and select, which beat abstain.
const (
	OutcomeReject  Outcome = "reject"
	OutcomeCancel  Outcome = "cancel"
	OutcomeAsk     Outcome = "ask"
	OutcomeAllow   Outcome = "allow"
	OutcomeSelect  Outcome = "select"
	OutcomeAbstain Outcome = "abstain"
)

// Scope of an allow or reject.
type Scope string

// Scopes. The zero value means once.
const (
	ScopeOnce   Scope = "once"
	ScopeAlways Scope = "always"
)

// Risk levels of an explanation.
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// Decision is the output of permhost_decide.
type Decision struct {
	Outcome Outcome `json:"outcome"`
	// Scope applies to allow and reject; empty means once.
	Scope Scope `json:"scope,omitempty"`
	// OptionID names the option of a select.
	OptionID string `json:"optionId,omitempty"`
	// Reason is logged and shown to the person.
	Reason      string       `json:"reason,omitempty"`
	Explanation *Explanation `json:"explanation,omitempty"`
}

// Explanation is shown with the request when a person decides.
type Explanation struct {
	// Summary says what the call does and why it is needed.
	Summary string `json:"summary,omitempty"`
	// Risk is the risk in a few words.
	Risk      string `json:"risk,omitempty"`
	RiskLevel string `json:"riskLevel,omitempty"`
}

// Errors of [Decision.Validate].
var (
	ErrUnknownOutcome = errors.New("abi: unknown outcome")
	ErrUnknownScope   = errors.New("abi: unknown scope")
	ErrNotOffered     = errors.New("abi: option not offered")
	ErrBadExplanation = errors.New("abi: bad explanation")
)

// Validate checks d against the options of the request it answers: a known
// outcome and scope, a select of an offered option, a known risk level.
// Allow and reject name no option; the host picks the offered one.
func (d Decision) Validate(options []Option) error {
	switch d.Scope {
	case "", ScopeOnce, ScopeAlways:
	default:
		return fmt.Errorf("%w %q", ErrUnknownScope, d.Scope)
	}
	switch d.Outcome {
	case OutcomeReject, OutcomeCancel, OutcomeAsk, OutcomeAbstain:
	case OutcomeAllow:
		if _, ok := d.Option(options); !ok {
			return fmt.Errorf("%w: allow %s with no %s option", ErrNotOffered, d.scope(), allowKind(d.scope()))
		}
	case OutcomeSelect:
		if _, ok := d.Option(options); !ok {
			return fmt.Errorf("%w: select %q", ErrNotOffered, d.OptionID)
		}
	default:
		return fmt.Errorf("%w %q", ErrUnknownOutcome, d.Outcome)
	}
	if e := d.Explanation; e != nil {
		switch e.RiskLevel {
		case "", RiskLow, RiskMedium, RiskHigh:
		default:
			return fmt.Errorf("%w: riskLevel %q", ErrBadExplanation, e.RiskLevel)
		}
	}
	return nil
}

// Option returns the offered option d chooses, and false when it chooses
// none. Allow once picks among the allow_once options, allow always among
// the allow_always ones, never a wider kind; reject always picks a
// reject_always option, else falls back to reject once; reject once picks
// among the reject_once options only, so that a one-time reject never
// becomes a durable one. Among the options of that kind a plain one (not
// durable) wins, a durable one is picked only when every option of the kind
// is durable (as in a switch_mode request), and one whose changes could not
// be validated (Changes.Known false: it may change anything) is never
// picked this way; the agent's order breaks ties. Select takes the option
// with its id, whatever it is. Cancel, ask and abstain choose none; a reject
// that finds no option is answered "cancelled".
func (d Decision) Option(options []Option) (Option, bool) {
	switch d.Outcome {
	case OutcomeAllow:
		return narrowestOfKind(options, allowKind(d.scope()))
	case OutcomeReject:
		if d.scope() == ScopeAlways {
			if o, ok := narrowestOfKind(options, OptionRejectAlways); ok {
				return o, true
			}
		}
		return narrowestOfKind(options, OptionRejectOnce)
	case OutcomeSelect:
		for _, o := range options {
			if o.OptionID == d.OptionID {
				return o, true
			}
		}
	}
	return Option{}, false
}

func (d Decision) scope() Scope {
	if d.Scope == "" {
		return ScopeOnce
	}
	return d.Scope
}

func allowKind(s Scope) string {
	if s == ScopeAlways {
		return OptionAllowAlways
	}
	return OptionAllowOnce
}

// narrowestOfKind returns the first plain option of kind, else the first
// durable one whose effect is known, else none. The host's own chooser
// (internal/answer) follows the same rules; a test holds them equal.
func narrowestOfKind(options []Option, kind string) (Option, bool) {
	durable := -1
	for i, o := range options {
		switch {
		case o.Kind != kind:
		case o.Changes != nil && !o.Changes.Known:
			// May change anything: only a select names it.
		case !o.Durable && o.Changes == nil && (kind == OptionAllowOnce || kind == OptionRejectOnce):
			return o, true
		case durable < 0:
			durable = i
		}
	}
	if durable < 0 {
		return Option{}, false
	}
	return options[durable], true
}
