package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/grants"
	"github.com/permhost/permhost/internal/prompt"
	"github.com/permhost/permhost/policy"
)

// recordedAgent is one agent's recorded shell request for rm -rf build.
type recordedAgent struct {
	name, transcript string
	nth              int    // which session/request_permission of the transcript
	agent, version   string // agentInfo
	once             string // its plain one-time allow
	durable          []string
}

var recordedAgents = []recordedAgent{
	{"gemini", "gemini-allow-always.jsonl", 0, "gemini-cli", "0.61.0", "proceed_once", []string{"proceed_always"}},
	{"qwen", "qwen-allow-always.jsonl", 0, "qwen-code", "0.24.4", "proceed_once", []string{"proceed_always_project", "proceed_always_user"}},
	{"codex", "codexts-allow-always.jsonl", 0, "@agentclientprotocol/codex-acp", "2.6.0", "allow_once", []string{"accept_execpolicy_amendment"}},
}

// recordedParams returns the params of the nth permission request of a
// transcript, as the agent sent them.
func recordedParams(t *testing.T, file string, nth int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(acptest.TranscriptDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			Msg struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Msg.Method == "session/request_permission" {
			if nth == 0 {
				return string(line.Msg.Params)
			}
			nth--
		}
	}
	t.Fatalf("%s has too few permission requests", file)
	return ""
}

// withCommand is params with the tool call's command (title and
// rawInput.command, wherever the agent has them) replaced.
func withCommand(params, from, to string) string {
	return strings.ReplaceAll(params, `"`+from+`"`, `"`+to+`"`)
}

func (a recordedAgent) request(t *testing.T, params, session string) *acp.PermissionRequest {
	t.Helper()
	pr := permissionRequest(t, params)
	pr.Session.Agent = acp.Peer{Name: a.agent, Version: a.version}
	pr.Session.Mode = "default"
	if session != "" {
		pr.Session.ID, pr.SessionID = session, session
	}
	return pr
}

type grantSetup struct {
	*setup
	store string
}

func newGrantEngine(t *testing.T, allowAlways, strategy string, members ...host.Member) *grantSetup {
	t.Helper()
	if strategy == "" {
		strategy = config.StrategySequential
	}
	cfg := &config.Config{Strategy: strategy, OnUndecided: config.UndecidedReject,
		Session: config.Session{Modes: config.ModesPass, AllowAlways: allowAlways, FS: config.FSPass}}
	buf := &logBuffer{}
	dlog := policy.NewDecisionLog(buf, nil)
	store := filepath.Join(t.TempDir(), "permhost", "grants.json")
	e, err := policy.New(context.Background(), policy.Options{Config: cfg, Members: members, Log: dlog, Home: "/home/dev", Grants: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()); dlog.Close() })
	return &grantSetup{setup: &setup{engine: e, log: buf, dlog: dlog}, store: store}
}

// shownTo returns the option ids and names of what the editor was asked.
func shownTo(t *testing.T, params json.RawMessage) (ids, names []string, meta map[string]any) {
	t.Helper()
	var p struct {
		Options []acp.PermissionOption `json:"options"`
		Meta    struct {
			Permhost map[string]any `json:"permhost"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	for _, o := range p.Options {
		ids, names = append(ids, o.OptionID), append(names, o.Name)
	}
	return ids, names, p.Meta.Permhost
}

// TestGrantOfferedStoredApplied: for each agent's recorded rm -rf build,
// the person is shown permhost's grants in place of the agent's durable
// options; choosing the project grant stores it and gives the agent its
// one-time allow; the next identical request (a later session of the
// project) is allowed by the grant without the editor; rm -rf other and
// rm -rf build; curl x|sh are asked.
func TestGrantOfferedStoredApplied(t *testing.T) {
	for _, a := range recordedAgents {
		t.Run(a.name, func(t *testing.T) {
			s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
			params := recordedParams(t, a.transcript, a.nth)
			c := &fakeClient{answer: selects("permhost-grant-project")}
			resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.asked) != 1 {
				t.Fatalf("asked %d times", len(c.asked))
			}
			ids, names, meta := shownTo(t, c.asked[0])
			for _, d := range a.durable {
				if slices.Contains(ids, d) {
					t.Errorf("the agent's durable option %s was shown: %v", d, ids)
				}
			}
			if !slices.Contains(ids, a.once) || !slices.Contains(ids, "permhost-grant-session") || !slices.Contains(ids, "permhost-grant-project") {
				t.Errorf("shown %v, want %s and permhost's grants", ids, a.once)
			}
			if !slices.Contains(names, "Allow `rm -rf build` (exact command) in this project") {
				t.Errorf("names %q", names)
			}
			if removed, _ := meta["removedOptions"].([]any); len(removed) != len(a.durable) {
				t.Errorf("_meta.permhost.removedOptions = %v, want %v", meta["removedOptions"], a.durable)
			}
			if g, _ := meta["grants"].([]any); len(g) != 2 {
				t.Errorf("_meta.permhost.grants = %v", meta["grants"])
			}
			if resp.Line != nil || resultOf(t, resp) != `{"outcome":{"outcome":"selected","optionId":"`+a.once+`"}}` {
				t.Fatalf("the agent got line %s result %s, want its own %s", resp.Line, resp.Result, a.once)
			}
			list, err := grants.Open(s.store).List()
			if err != nil || len(list) != 1 || list[0].Scope != grants.ScopeProject || list[0].Project != "/home/dev/project" {
				t.Fatalf("stored %+v (%v)", list, err)
			}
			st, _ := os.Stat(s.store)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("grants file mode %v", st.Mode().Perm())
			}
			id := list[0].ID

			// The same command in a later session of the project.
			c2 := &fakeClient{}
			resp, err = s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, "later-session"), c2)
			if err != nil {
				t.Fatal(err)
			}
			if len(c2.asked) != 0 || len(c2.notified) != 1 {
				t.Fatalf("the grant did not decide: asked %d, notified %d", len(c2.asked), len(c2.notified))
			}
			if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"`+a.once+`"}}` {
				t.Fatalf("agent got %s", got)
			}
			if !strings.Contains(string(c2.notified[0]), `"decidedBy":"grant:`+id+`"`) {
				t.Errorf("the editor was told %s", c2.notified[0])
			}

			// Wider commands are asked.
			for _, wider := range []string{"rm -rf other", "rm -rf build; curl x|sh"} {
				c3 := &fakeClient{answer: selects(a.once)}
				if _, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, withCommand(params, "rm -rf build", wider), ""), c3); err != nil {
					t.Fatal(err)
				}
				if len(c3.asked) != 1 {
					t.Errorf("%q was not asked", wider)
				}
			}
			// Another project.
			other := a.request(t, params, "")
			other.Session.Cwd = "/home/dev/elsewhere"
			c4 := &fakeClient{answer: selects(a.once)}
			if _, err := s.engine.Handler().RequestPermission(context.Background(), other, c4); err != nil {
				t.Fatal(err)
			}
			if len(c4.asked) != 1 {
				t.Error("the same command in another project was not asked")
			}

			entries := s.entries(t)
			if len(entries) != 5 {
				t.Fatalf("%d log entries", len(entries))
			}
			first, second := entries[0], entries[1]
			g, _ := first["grant"].(map[string]any)
			if first["decidedBy"] != "person" || first["optionId"] != a.once || g["id"] != id || g["option"] != "permhost-grant-project" || g["scope"] != "project" {
				t.Errorf("first entry %v", first)
			}
			if p, _ := first["person"].(map[string]any); p["answer"] != "permhost-grant-project" {
				t.Errorf("person %v", p)
			}
			if second["decidedBy"] != "grant:"+id || second["optionId"] != a.once || second["reason"] != "Allow `rm -rf build` (exact command) in this project" {
				t.Errorf("second entry %v", second)
			}
			for _, e := range entries[2:] {
				if e["decidedBy"] != "person" {
					t.Errorf("wider request decided by %v", e["decidedBy"])
				}
			}
		})
	}
}

// TestGrantLosesToPlugins: a plugin's reject, cancel or ask, and the
// builtin fallback, beat a stored grant; a plugin's allow of the same
// option stands as the plugin's; its choice of another option conflicts
// with the grant and a person decides.
func TestGrantLosesToPlugins(t *testing.T) {
	a := recordedAgents[0]
	params := recordedParams(t, a.transcript, a.nth)
	const cancelled, rejected, allowed = `{"outcome":{"outcome":"cancelled"}}`, `{"outcome":{"outcome":"selected","optionId":"cancel"}}`,
		`{"outcome":{"outcome":"selected","optionId":"proceed_once"}}`
	tests := []struct {
		name      string
		plugin    *plugin
		layer     string
		asked     bool
		decidedBy string
		agentGot  string // the agent's result; the person answers proceed_once when asked
	}{
		{"admin reject", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}}, host.LayerAdmin, false, "p", rejected},
		{"user reject", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "no"}}, host.LayerUser, false, "p", rejected},
		{"admin cancel", &plugin{d: abi.Decision{Outcome: abi.OutcomeCancel, Reason: "stop"}}, host.LayerAdmin, false, "p", cancelled},
		{"user cancel", &plugin{d: abi.Decision{Outcome: abi.OutcomeCancel, Reason: "stop"}}, host.LayerUser, false, "p", cancelled},
		{"user ask", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk, Reason: "look"}}, host.LayerUser, true, "person", allowed},
		{"admin ask", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk, Reason: "look"}}, host.LayerAdmin, true, "person", allowed},
		{"select the reject option", &plugin{d: abi.Decision{Outcome: abi.OutcomeSelect, OptionID: "cancel"}}, host.LayerUser, true, "person", allowed},
		{"closed failure", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "p", Err: os.ErrInvalid}}, host.LayerTeam, true, "person", allowed},
		{"allow once", &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow}}, host.LayerUser, false, "p", allowed},
		{"abstain", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}, host.LayerUser, false, "grant:", allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newGrantEngine(t, config.AllowAlwaysPermhost, "", member("p", tt.plugin, "closed", tt.layer))
			addGrant(t, s.store, a, params)
			c := &fakeClient{answer: selects(a.once)}
			resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
			if err != nil {
				t.Fatal(err)
			}
			if (len(c.asked) == 1) != tt.asked {
				t.Fatalf("asked %d times, want asked=%v", len(c.asked), tt.asked)
			}
			if got := resultOf(t, resp); got != tt.agentGot {
				t.Errorf("the agent got %s, want %s", got, tt.agentGot)
			}
			e := s.entries(t)[0]
			if got, _ := e["decidedBy"].(string); !strings.HasPrefix(got, tt.decidedBy) {
				t.Errorf("decidedBy %q, want %q", got, tt.decidedBy)
			}
			if tt.asked {
				ids, _, _ := shownTo(t, c.asked[0])
				if tt.name == "closed failure" && slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, grants.IDPrefix) }) {
					t.Errorf("grants offered while the fallback governs: %v", ids)
				}
			}
		})
	}
}

// TestGrantWholeCommand: through the engine, a grant of `git diff --quiet
// && git push --force` decides that script only; the same commands joined
// by || or ; or in a loop go to the person.
func TestGrantWholeCommand(t *testing.T) {
	const granted = "git diff --quiet && git push --force"
	for _, a := range recordedAgents {
		t.Run(a.name, func(t *testing.T) {
			params := withCommand(recordedParams(t, a.transcript, a.nth), "rm -rf build", granted)
			s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
			g := addGrant(t, s.store, a, params)
			for _, tt := range []struct {
				script string
				grant  bool
			}{
				{granted, true},
				{"git diff --quiet || git push --force", false},
				{"git diff --quiet; git push --force", false},
				{"while git diff --quiet; do git push --force; done", false},
				{granted, true},
			} {
				c := &fakeClient{answer: selects(a.once)}
				if _, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, withCommand(params, granted, tt.script), ""), c); err != nil {
					t.Fatal(err)
				}
				if asked := len(c.asked) == 1; asked == tt.grant {
					t.Errorf("%q: asked %v, want the grant to decide: %v", tt.script, asked, tt.grant)
				}
			}
			for i, e := range s.entries(t) {
				if want := []string{"grant:" + g.ID, "person", "person", "person", "grant:" + g.ID}[i]; e["decidedBy"] != want {
					t.Errorf("entry %d decided by %v, want %s", i, e["decidedBy"], want)
				}
			}
		})
	}
}

// addGrant stores the project grant offered for params.
func addGrant(t *testing.T, store string, a recordedAgent, params string) grants.Grant {
	t.Helper()
	req, err := policy.BuildRequest(a.request(t, params, ""), "d-test", "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range grants.Offers(req) {
		if o.Grant.Scope == grants.ScopeProject {
			g, err := grants.Open(store).Add(o.Grant)
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	t.Fatal("no project grant offered")
	return grants.Grant{}
}

// TestPluginsSeeNoHandOver: with allow_always permhost, plugins see the
// options without those that hand decisions to the agent, so a plugin's
// "allow always" cannot choose one; with agent they see them, with the
// profile's description of what each grants.
func TestPluginsSeeNoHandOver(t *testing.T) {
	a := recordedAgents[1] // qwen: two durable options
	params := recordedParams(t, a.transcript, a.nth)
	for _, tt := range []struct {
		allow string
		want  []string
	}{
		{config.AllowAlwaysPermhost, []string{"proceed_once", "cancel"}},
		{config.AllowAlwaysOff, []string{"proceed_once", "cancel"}},
		{config.AllowAlwaysAgent, []string{"proceed_always_project", "proceed_always_user", "proceed_once", "cancel"}},
	} {
		t.Run(tt.allow, func(t *testing.T) {
			p := &plugin{d: abi.Decision{Outcome: abi.OutcomeAllow, Scope: abi.ScopeAlways}, seen: make(chan abi.Request, 1)}
			s := newGrantEngine(t, tt.allow, "", member("p", p))
			c := &fakeClient{answer: selects("cancel")}
			resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
			if err != nil {
				t.Fatal(err)
			}
			req := <-p.seen
			var ids []string
			for _, o := range req.Options {
				ids = append(ids, o.OptionID)
				if o.Durable && (o.Grants == nil || o.Grants.Rule != "Bash(rm *)") {
					t.Errorf("durable option %s without the profile's grant: %+v", o.OptionID, o.Grants)
				}
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("the plugin saw %v, want %v", ids, tt.want)
			}
			if tt.allow == config.AllowAlwaysAgent {
				if len(c.asked) != 0 || resultOf(t, resp) != `{"outcome":{"outcome":"selected","optionId":"proceed_always_project"}}` {
					t.Errorf("agent: the plugin's allow always did not reach the agent: %s", resp.Result)
				}
				return
			}
			// No allow_always to choose: the plugin's allow says nothing.
			if len(c.asked) != 1 {
				t.Errorf("asked %d times", len(c.asked))
			}
		})
	}
}

// TestAllowAlwaysAgentAndOff: agent forwards every option and the
// person's answer as it is; off shows only one-time options and refuses
// the agent's durable one.
func TestAllowAlwaysAgentAndOff(t *testing.T) {
	a := recordedAgents[0]
	params := recordedParams(t, a.transcript, a.nth)

	s := newGrantEngine(t, config.AllowAlwaysAgent, "")
	c := &fakeClient{answer: selects("proceed_always")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ := shownTo(t, c.asked[0])
	if !slices.Equal(ids, []string{"proceed_always", "proceed_once", "cancel"}) {
		t.Errorf("agent: shown %v", ids)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"proceed_always"}}` {
		t.Errorf("agent: the person's answer did not reach the agent: %s", got)
	}

	s = newGrantEngine(t, config.AllowAlwaysOff, "")
	c = &fakeClient{answer: selects("proceed_always")}
	resp, err = s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ = shownTo(t, c.asked[0])
	if !slices.Equal(ids, []string{"proceed_once", "cancel"}) {
		t.Errorf("off: shown %v", ids)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"cancel"}}` {
		t.Errorf("off: the agent got %s for a durable answer, want its reject", got)
	}
	if e := s.entries(t)[0]; e["decidedBy"] != "builtin" {
		t.Errorf("off: %v", e)
	}
	if _, err := os.Stat(s.store); !os.IsNotExist(err) {
		t.Errorf("off wrote a grants file: %v", err)
	}
}

// TestGrantOptionRefusedWhenNotShown: an editor that answers permhost's
// grant id when the choice was narrowed to one-time options gets the
// reject, and nothing is stored.
func TestGrantOptionRefusedWhenNotShown(t *testing.T) {
	a := recordedAgents[0]
	params := recordedParams(t, a.transcript, a.nth)
	s := newGrantEngine(t, config.AllowAlwaysPermhost, "", member("adm", &plugin{d: abi.Decision{Outcome: abi.OutcomeAsk}}, "closed", host.LayerAdmin))
	c := &fakeClient{answer: selects("permhost-grant-project")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"cancel"}}` {
		t.Errorf("the agent got %s", got)
	}
	if _, err := os.Stat(s.store); !os.IsNotExist(err) {
		t.Errorf("a grant was stored: %v", err)
	}
}

// TestGrantRace: under the race strategy a stored grant decides and the
// editor's prompt is retracted; a grant chosen in the race is stored.
func TestGrantRace(t *testing.T) {
	a := recordedAgents[0]
	params := recordedParams(t, a.transcript, a.nth)
	s := newGrantEngine(t, config.AllowAlwaysPermhost, config.StrategyRace, member("p", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}))
	c := &fakeClient{answer: func(ctx context.Context, _ json.RawMessage) (acp.Answer, error) {
		<-ctx.Done()
		return acp.Answer{}, ctx.Err()
	}}
	g := addGrant(t, s.store, a, params)
	resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"proceed_once"}}` {
		t.Errorf("the agent got %s", got)
	}
	e := s.entries(t)[0]
	if e["decidedBy"] != "grant:"+g.ID {
		t.Errorf("decidedBy %v", e["decidedBy"])
	}
	if p, _ := e["person"].(map[string]any); p["answer"] != "retracted" || !slices.Contains(p["shown"].([]any), any("permhost-grant-project")) {
		t.Errorf("person %v", p)
	}
}

// TestGrantHeadless: permhost run applies a stored grant and offers
// permhost's grants at the terminal prompt; a leader is shown only the
// agent's one-time options.
func TestGrantHeadless(t *testing.T) {
	a := recordedAgents[0]
	params := recordedParams(t, a.transcript, a.nth)
	s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
	var asked []prompt.Question
	h, err := s.engine.Headless(policy.HeadlessOptions{OnUndecided: config.UndecidedPrompt,
		Ask: func(_ context.Context, q prompt.Question) (string, error) {
			asked = append(asked, q)
			return "permhost-grant-session", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.DecidePermission(context.Background(), a.request(t, params, ""))
	if err != nil || d.OptionID != "proceed_once" || d.DecidedBy != "person" {
		t.Fatalf("first: %+v %v", d, err)
	}
	var ids []string
	for _, o := range asked[0].Options {
		ids = append(ids, o.ID)
	}
	if !slices.Equal(ids, []string{"proceed_once", "cancel", "permhost-grant-session", "permhost-grant-project"}) {
		t.Errorf("the terminal offered %v", ids)
	}
	d, err = h.DecidePermission(context.Background(), a.request(t, params, ""))
	if err != nil || d.OptionID != "proceed_once" || !strings.HasPrefix(d.DecidedBy, "grant:") || len(asked) != 1 {
		t.Fatalf("second: %+v %v, asked %d", d, err, len(asked))
	}
	// The session grant is this session's only.
	d, err = h.DecidePermission(context.Background(), a.request(t, params, "another"))
	if err != nil || len(asked) != 2 {
		t.Fatalf("another session: %+v %v, asked %d", d, err, len(asked))
	}
	var leaderSaw []string
	hl, err := s.engine.Headless(policy.HeadlessOptions{OnUndecided: config.UndecidedReject,
		Leader: func(_ context.Context, _ abi.Request, _ host.Verdict, shown []abi.Option) policy.LeaderAnswer {
			for _, o := range shown {
				leaderSaw = append(leaderSaw, o.OptionID)
			}
			return policy.LeaderAnswer{Answered: true, OptionID: "proceed_once", DecidedBy: "leader"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hl.DecidePermission(context.Background(), a.request(t, withCommand(params, "rm -rf build", "ls"), "")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(leaderSaw, []string{"proceed_once", "cancel"}) {
		t.Errorf("the leader saw %v", leaderSaw)
	}
}

// TestClaudeEditGrant: claude-agent-acp 0.101's Write (whose "Yes, allow
// all edits during this session" switches the session to acceptEdits
// silently) is offered permhost's file grant instead; ExitPlanMode keeps
// its one-time "manually approve edits" and loses exit-plan-auto.
func TestClaudeEditGrant(t *testing.T) {
	claude := recordedAgent{agent: "@agentclientprotocol/claude-agent-acp", version: "0.101.0"}
	s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
	write := recordedParams(t, "claude101-allow-always.jsonl", 0)
	c := &fakeClient{answer: selects("permhost-grant-session")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), claude.request(t, write, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	ids, names, _ := shownTo(t, c.asked[0])
	if !slices.Equal(ids, []string{"allow-once", "reject", "permhost-grant-session", "permhost-grant-project"}) ||
		names[2] != "Allow edits to `hello.txt` for this session" {
		t.Errorf("shown %v %q", ids, names)
	}
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"allow-once"}}` {
		t.Errorf("the agent got %s", got)
	}
	plan := recordedParams(t, "claude101-plan-mode.jsonl", 0)
	c = &fakeClient{answer: selects("exit-plan-default")}
	resp, err = s.engine.Handler().RequestPermission(context.Background(), claude.request(t, plan, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ = shownTo(t, c.asked[0])
	if !slices.Equal(ids, []string{"exit-plan-default", "reject"}) {
		t.Errorf("ExitPlanMode shown %v", ids)
	}
	if got := resultOf(t, resp); !strings.Contains(got, `"exit-plan-default"`) {
		t.Errorf("the agent got %s", got)
	}
}

// TestGrantIDsAvoidTheAgents: an agent that offers permhost's own ids, even
// as durable options the person does not see, keeps them: permhost's are
// renamed, and an answer with the agent's id is not taken for a grant.
func TestGrantIDsAvoidTheAgents(t *testing.T) {
	a := recordedAgents[0]
	params := strings.Replace(recordedParams(t, a.transcript, a.nth), `"optionId":"proceed_always"`, `"optionId":"permhost-grant-project"`, 1)
	s := newGrantEngine(t, config.AllowAlwaysPermhost, "")
	c := &fakeClient{answer: selects("permhost-grant-project")}
	resp, err := s.engine.Handler().RequestPermission(context.Background(), a.request(t, params, ""), c)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ := shownTo(t, c.asked[0])
	if !slices.Equal(ids, []string{"proceed_once", "cancel", "permhost-grant-session", "permhost-grant-project-2"}) {
		t.Fatalf("shown %v", ids)
	}
	// The agent's (hidden) durable option was named: refused, not granted.
	if got := resultOf(t, resp); got != `{"outcome":{"outcome":"selected","optionId":"cancel"}}` {
		t.Errorf("the agent got %s", got)
	}
	if _, err := os.Stat(s.store); !os.IsNotExist(err) {
		t.Errorf("a grant was stored: %v", err)
	}
}
