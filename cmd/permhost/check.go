package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/profile"
	"github.com/permhost/permhost/internal/safetext"
	"github.com/permhost/permhost/policy"
)

func init() {
	commands["check"] = command{summary: "start an agent, read its profile and modes, and say whether a policy can govern it", run: runCheck}
}

const checkUsage = `usage: permhost check [--timeout D] [--no-switch] [--config FILE] [--json] -- AGENT [ARGS...]

Starts AGENT in a new temporary directory, runs initialize and session/new
there, and prints what permhost knows of it: the profile its agentInfo
selects (where each fact is read, what its durable options really grant),
the session's modes and whether the agent asks in each, the mode permhost
would move a new session to and how, and whether a policy can govern it —
see what the agent does before it does it. Unless --no-switch is given it
also makes that switch in the temporary session, to see the agent accept it.
The agent is stopped afterwards; nothing is sent to a model.

With a configuration (--config, or the default file) the plugins load
first: a mistake in the file or in a plugin's own configuration stops the
check before the agent starts, as it stops the proxy. Then one request
("git status" in the session) runs through each plugin, and any that
fails is reported.

Exit status: 0 governable; 1 not, a plugin failed, or the agent failed to
answer; 2 usage, configuration, or an agent that cannot be started.`

// checkReport is what permhost check found.
type checkReport struct {
	Agent   acp.Peer    `json:"agent"`
	Profile string      `json:"profile"`
	Session string      `json:"session"`
	Cwd     string      `json:"cwd"`
	Modes   []checkMode `json:"modes"`
	// ConfigOption is the id of the mode config option; SetMode whether
	// session/set_mode applies.
	ConfigOption string `json:"configOption,omitempty"`
	SetMode      bool   `json:"setMode"`
	Current      string `json:"current,omitempty"`
	Target       string `json:"target,omitempty"`
	Switch       string `json:"switch,omitempty"`
	// Switched says what the agent answered to the switch: "accepted",
	// an error, or "" when none was tried.
	Switched   string `json:"switched,omitempty"`
	Governable bool   `json:"governable"`
	Why        string `json:"why"`
	// Govern is the configuration's [session] modes.
	Govern string `json:"modesSetting"`
	// SettingsDecide and AsksWith are set for an agent that decides by
	// its own settings whatever mode it reports (profile.Settings): what
	// they decide, and the exact setting that makes it ask. Governable
	// then holds only as far as those settings make it ask.
	SettingsDecide string `json:"settingsDecide,omitempty"`
	AsksWith       string `json:"asksWith,omitempty"`
	// Unasked is the configuration's [session] unasked.
	Unasked string `json:"unaskedSetting,omitempty"`
	// Steering is whether the agent advertises _session/steering: then a
	// reject's reason can be told to its model ([session] reasons).
	Steering bool `json:"steering"`
	// Plugins is what each configured plugin answered to one request
	// (probeCommand); PluginsFail is set when any failed.
	Plugins     []checkPlugin `json:"plugins,omitempty"`
	PluginsFail bool          `json:"pluginsFail,omitempty"`
}

// checkPlugin is one plugin's answer to the probe: its outcome, or how it
// failed.
type checkPlugin struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
}

type checkMode struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Asks    bool   `json:"asks"`
	Decides string `json:"decides,omitempty"`
	Current bool   `json:"current,omitempty"`
}

func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), checkUsage+"\n\nflags:")
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", time.Minute, "how long the agent gets to answer initialize and session/new")
	noSwitch := fs.Bool("no-switch", false, "do not try the mode switch in the temporary session")
	configFlag := fs.String("config", "", configUsage)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "permhost check: no agent command given (permhost check [FLAGS] -- AGENT [ARGS...])")
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "permhost check: --timeout must be positive")
		return exitUsage
	}
	cfg, err := loadConfig(ctx, *configFlag)
	if err != nil {
		printError(stderr, "permhost check", err)
		return exitUsage
	}
	session := config.Session{Modes: config.ModesPass}
	var engine *policy.Engine
	if cfg != nil {
		session = cfg.Session
		// The plugins load now, and what they find wrong with their own
		// configuration stops the check as it would stop the proxy.
		engine, _, err = newEngine(ctx, cfg, "check", slog.New(slog.DiscardHandler))
		if err != nil {
			printError(stderr, "permhost check", err)
			return exitUsage
		}
		defer engine.Close(context.WithoutCancel(ctx))
	}

	tmp, err := os.MkdirTemp("", "permhost-check-")
	if err != nil {
		fmt.Fprintln(stderr, "permhost check:", err)
		return exitFail
	}
	defer os.RemoveAll(tmp)
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	// The agent writes its stderr to a file of its own, complete once it
	// has exited, to be shown when it fails.
	agentErr, err := os.CreateTemp("", "permhost-check-stderr-")
	if err != nil {
		fmt.Fprintln(stderr, "permhost check:", err)
		return exitFail
	}
	defer os.Remove(agentErr.Name())
	defer agentErr.Close()
	agent, err := acp.StartAgent(acp.AgentConfig{Argv: argv, Dir: tmp, Stderr: agentErr})
	if err != nil {
		fmt.Fprintln(stderr, "permhost check: cannot start the agent:", err)
		return exitUsage
	}
	defer agent.Close()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			agent.Stdin().Close()
			agent.Stop(2*time.Second, killGrace)
			<-agent.Done()
		})
	}
	defer stop()

	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c := newCheckConn(agent.Stdin(), agent.Stdout())
	rep, err := c.check(cctx, tmp, session, !*noSwitch)
	if err != nil {
		printError(stderr, "permhost check", err) // it may quote the agent
		stop()
		b := make([]byte, 64<<10)
		n, _ := agentErr.ReadAt(b, 0)
		if s := strings.TrimSpace(string(b[:n])); s != "" {
			fmt.Fprintf(stderr, "the agent's stderr:\n%s\n", safetext.TerminalLines(s))
		}
		return exitFail
	}
	if engine != nil {
		rep.Plugins = probePlugins(cctx, engine, rep)
		for _, p := range rep.Plugins {
			if p.Error != "" {
				rep.PluginsFail = true
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(jsonOut{stdout})
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printCheck(stdout, rep)
	}
	if !rep.Governable || rep.PluginsFail {
		return exitFail
	}
	return exitOK
}

// probeCommand is the request the check runs through each plugin: a
// harmless command every policy has an answer for.
const probeCommand = "git status"

// probePlugins runs one request, as the agent's session would send it,
// through each configured plugin and says what each answered or how it
// failed: a plugin that fails every decision is found before an agent
// runs.
func probePlugins(ctx context.Context, e *policy.Engine, rep checkReport) []checkPlugin {
	home, _ := os.UserHomeDir()
	setup := policy.SessionSetup{Agent: rep.Agent, Cwd: rep.Cwd, Mode: rep.Current, Home: home}
	sh := policy.Shorthand{Kind: abi.KindExecute, Command: probeCommand, Cwd: rep.Cwd, Mode: rep.Current, SessionID: "check-session"}
	pr, err := sh.Request()
	var req abi.Request
	if err == nil {
		req, err = setup.Request(ctx, pr.Params, "check-1")
	}
	if err != nil {
		return []checkPlugin{{Name: "(probe)", Error: err.Error()}}
	}
	var out []checkPlugin
	for _, p := range e.Probe(ctx, req) {
		c := checkPlugin{Name: p.Plugin}
		if p.Result.Err != nil {
			c.Error = p.Result.Err.Error()
		} else {
			c.Outcome = string(p.Result.Decision.Outcome)
		}
		out = append(out, c)
	}
	return out
}

// checkConn is the smallest ACP client that can start a session: it sends
// requests, answers whatever the agent asks with an error (a permission
// request with cancelled), and reads what it acts on strictly.
type checkConn struct {
	w      io.Writer
	lines  chan []byte
	readEr chan error
	nextID int
}

func newCheckConn(w io.Writer, r io.Reader) *checkConn {
	c := &checkConn{w: w, lines: make(chan []byte), readEr: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), acp.DefaultMaxLineBytes)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		c.readEr <- err
	}()
	return c
}

// call sends method with params and returns the result, answering the
// agent's own requests meanwhile.
func (c *checkConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := strconv.Itoa(c.nextID)
	p, _ := json.Marshal(params)
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, method, p); err != nil {
		return nil, fmt.Errorf("%s: writing to the agent: %w", method, err)
	}
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
		case err := <-c.readEr:
			return nil, fmt.Errorf("%s: the agent's output ended: %w", method, err)
		case line = <-c.lines:
		}
		ms, err := jsontext.Object(bytes.TrimSpace(line))
		if err != nil {
			continue // not ours to read; a real editor would log it
		}
		m := map[string][]byte{}
		for _, x := range ms {
			m[x.Key] = x.Value
		}
		if meth, ok := m["method"]; ok {
			name, _ := jsontext.String(meth)
			if reqID, ok := m["id"]; ok {
				c.answer(reqID, name)
			}
			continue
		}
		if got, err := jsontext.CanonicalID(m["id"]); err != nil || got != "n"+id {
			continue
		}
		if e, ok := m["error"]; ok {
			return nil, fmt.Errorf("%s: the agent answered with an error: %s", method, bytes.TrimSpace(e))
		}
		res, ok := m["result"]
		if !ok {
			return nil, fmt.Errorf("%s: a response without a result", method)
		}
		return res, nil
	}
}

func (c *checkConn) answer(id []byte, method string) {
	if method == acp.MethodRequestPermission {
		fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`+"\n", id)
		return
	}
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found: permhost check serves nothing"}}`+"\n", id)
}

func (c *checkConn) check(ctx context.Context, cwd string, session config.Session, trySwitch bool) (checkReport, error) {
	rep := checkReport{Cwd: cwd, Govern: session.Modes}
	res, err := c.call(ctx, acp.MethodInitialize, map[string]any{
		"protocolVersion": acp.ProtocolVersion,
		"clientCapabilities": map[string]any{
			"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false,
		},
		"clientInfo": map[string]string{"name": "permhost-check", "version": permhostVersion()},
	})
	if err != nil {
		return rep, err
	}
	init, err := jsontext.Object(res)
	if err != nil {
		return rep, fmt.Errorf("initialize: the result is not one strict JSON object: %w", err)
	}
	rep.Steering = acp.AdvertisesSteering(res)
	for _, m := range init {
		if m.Key == "agentInfo" {
			if f, err := jsontext.Object(m.Value); err == nil {
				for _, x := range f {
					s, _ := jsontext.String(x.Value)
					switch x.Key {
					case "name":
						rep.Agent.Name = s
					case "title":
						rep.Agent.Title = s
					case "version":
						rep.Agent.Version = s
					}
				}
			}
		}
	}
	prof := profile.Recognize(rep.Agent.Name, rep.Agent.Version)
	if prof == profile.Generic && session.DecidingWords != nil {
		prof = prof.WithDeciding(session.DecidingWords)
	}
	rep.Profile = prof.Name
	if prof.Settings != nil {
		rep.SettingsDecide, rep.AsksWith = prof.Settings.Decides, prof.Settings.Asks
	}
	rep.Unasked = session.Unasked

	res, err = c.call(ctx, acp.MethodSessionNew, map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err != nil {
		return rep, err
	}
	if f, err := jsontext.Object(res); err == nil {
		for _, x := range f {
			if x.Key == "sessionId" {
				rep.Session, _ = jsontext.String(x.Value)
			}
		}
	}
	modes, err := profile.ReadSessionModes(res)
	if err != nil {
		return rep, fmt.Errorf("session/new: %w", err)
	}
	rep.ConfigOption, rep.SetMode, rep.Current = modes.ConfigOption, modes.SetMode, modes.Current
	for _, o := range modes.Offered {
		m := checkMode{ID: o.ID, Name: o.Name, Asks: prof.Asks(o.ID, o.Name), Current: o.ID == modes.Current}
		if pm, ok := prof.Mode(o.ID); ok && !m.Asks {
			m.Decides = pm.Decides
		}
		rep.Modes = append(rep.Modes, m)
	}
	plan := prof.Plan(modes)
	rep.Target, rep.Switch, rep.Governable, rep.Why = plan.Target, string(plan.Switch), plan.Governable, plan.Why
	if !trySwitch || plan.Target == "" || !plan.Governable {
		return rep, nil
	}
	var method string
	var params map[string]any
	switch plan.Switch {
	case profile.SwitchConfigOption:
		method, params = acp.MethodSessionSetConfigOption, map[string]any{"sessionId": rep.Session, "configId": modes.ConfigOption, "value": plan.Target}
	default:
		method, params = acp.MethodSessionSetMode, map[string]any{"sessionId": rep.Session, "modeId": plan.Target}
	}
	if _, err := c.call(ctx, method, params); err != nil {
		rep.Switched, rep.Governable = err.Error(), false
		rep.Why += "; but the agent refused the switch"
		return rep, nil
	}
	rep.Switched = "accepted"
	return rep, nil
}

// printCheck shows the report to a person: the agent's names, modes and
// answers go through safetext.
func printCheck(w io.Writer, r checkReport) {
	r = r.shown()
	name := r.Agent.Name
	if name == "" {
		name = "(no agentInfo)"
	}
	fmt.Fprintf(w, "agent: %s", name)
	if r.Agent.Version != "" {
		fmt.Fprintf(w, " %s", r.Agent.Version)
	}
	if r.Agent.Title != "" {
		fmt.Fprintf(w, " (%s)", r.Agent.Title)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "profile:")
	var b strings.Builder
	profile.Describe(&b, profile.ByName(r.Profile))
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
	if r.Steering {
		fmt.Fprintln(w, "reasons: the agent advertises _session/steering: a reject's reason is told to its model ([session] reasons)")
	} else {
		fmt.Fprintln(w, "reasons: the agent does not advertise _session/steering: its model learns only that a call was rejected")
	}
	fmt.Fprintf(w, "session: %s in %s\n", r.Session, r.Cwd)
	if len(r.Modes) == 0 {
		fmt.Fprintln(w, "modes: none offered")
	} else {
		var how []string
		if r.ConfigOption != "" {
			how = append(how, fmt.Sprintf("config option \"%s\"", r.ConfigOption))
		}
		if r.SetMode {
			how = append(how, "session/set_mode")
		}
		fmt.Fprintf(w, "modes (changed by %s):\n", strings.Join(how, ", "))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, m := range r.Modes {
			mark := " "
			if m.Current {
				mark = "*"
			}
			what := "asks"
			if !m.Asks {
				what = "decides by itself"
				if m.Decides != "" {
					what += ": " + m.Decides
				}
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\n", mark, m.ID, m.Name, what)
		}
		tw.Flush()
	}
	switch {
	case len(r.Modes) == 0:
		fmt.Fprintln(w, "permhost would choose: nothing (the session offers no modes)")
	case r.Target == "" && !r.Governable:
		fmt.Fprintln(w, "permhost would choose: none (no offered mode asks)")
	case r.Target == "":
		fmt.Fprintln(w, "permhost would choose: the current mode (nothing to change)")
	case r.Switch == "":
		fmt.Fprintf(w, "permhost would choose: %s, but the session offers no way to change modes\n", r.Target)
	default:
		method := acp.MethodSessionSetMode
		if r.Switch == string(profile.SwitchConfigOption) {
			method = acp.MethodSessionSetConfigOption
		}
		fmt.Fprintf(w, "permhost would choose: %s, by %s", r.Target, method)
		switch r.Switched {
		case "":
		case "accepted":
			fmt.Fprint(w, " (tried: the agent accepted it)")
		default:
			fmt.Fprintf(w, " (tried: %s)", r.Switched)
		}
		fmt.Fprintln(w)
	}
	verdict := "no"
	if r.Governable {
		verdict = "yes"
	}
	switch {
	case r.Governable && r.AsksWith != "":
		// The mode is not the whole story: the agent's own settings decide
		// what it asks about at all.
		fmt.Fprintf(w, "governable: only as the agent's own settings allow — %s; but %s\n", r.Why, r.SettingsDecide)
		fmt.Fprintf(w, "the agent asks before every call only with: %s\n", r.AsksWith)
		unasked := r.Unasked
		if unasked == "" {
			unasked = config.UnaskedWarn
		}
		fmt.Fprintf(w, "a call it runs unasked in a governed session: [session] unasked = %q (%s)\n", unasked, unaskedMeaning(unasked))
	default:
		fmt.Fprintf(w, "governable: %s — %s\n", verdict, r.Why)
	}
	if len(r.Plugins) > 0 {
		fmt.Fprintf(w, "plugins (one request, %q, through each):\n", probeCommand)
		for _, p := range r.Plugins {
			if p.Error != "" {
				fmt.Fprintf(w, "  %s: FAILED: %s\n", safetext.Terminal(p.Name), safetext.Terminal(p.Error))
			} else {
				fmt.Fprintf(w, "  %s: %s\n", safetext.Terminal(p.Name), safetext.Terminal(p.Outcome))
			}
		}
		if r.PluginsFail {
			fmt.Fprintln(w, "a plugin that fails is replaced by its failure_policy on every decision: fix it before relying on the policy")
		}
	}
	if r.Governable && r.Target != "" {
		if r.Govern == config.ModesGovern {
			fmt.Fprintf(w, "with [session] modes = \"govern\" (in effect) permhost moves each new session to %s before the editor sees it\n", r.Target)
		} else {
			fmt.Fprintf(w, "[session] modes is %q here: set modes = \"govern\" (the default once a plugin is configured) for permhost to move each new session to %s\n", r.Govern, r.Target)
		}
	}
}

// shown is the report with every text that came from the agent (or quotes
// it) rendered by safetext.
func (r checkReport) shown() checkReport {
	t := safetext.Terminal
	r.Agent.Name, r.Agent.Title, r.Agent.Version = t(r.Agent.Name), t(r.Agent.Title), t(r.Agent.Version)
	r.Session, r.Cwd, r.ConfigOption, r.Target = t(r.Session), t(r.Cwd), t(r.ConfigOption), t(r.Target)
	r.Switched, r.Why = t(r.Switched), t(r.Why)
	modes := make([]checkMode, len(r.Modes))
	for i, m := range r.Modes {
		m.ID, m.Name, m.Decides = t(m.ID), t(m.Name), t(m.Decides)
		modes[i] = m
	}
	r.Modes = modes
	return r
}

// unaskedMeaning says what a [session] unasked value does.
func unaskedMeaning(v string) string {
	if v == config.UnaskedCancel {
		return "the first one ends the turn and the editor is told why"
	}
	return "logged and warned about; set \"cancel\" to end the turn"
}
