package profile

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// sessionStart returns the agentInfo profile and the session/new result of
// a recorded transcript.
func sessionStart(t *testing.T, name string) (*Profile, json.RawMessage) {
	t.Helper()
	tr, err := acptest.LoadTranscript(filepath.Join(acptest.TranscriptDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	p := Generic
	newID := ""
	for _, e := range tr.Entries {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(e.Msg, &m); err != nil {
			t.Fatal(err)
		}
		var info struct {
			AgentInfo *struct{ Name, Version string } `json:"agentInfo"`
		}
		if json.Unmarshal(m.Result, &info) == nil && info.AgentInfo != nil {
			p = Recognize(info.AgentInfo.Name, info.AgentInfo.Version)
		}
		if m.Method == "session/new" {
			newID = string(m.ID)
		}
		if m.Method == "" && newID != "" && string(m.ID) == newID && m.Result != nil {
			return p, m.Result
		}
	}
	t.Fatalf("%s has no session/new result", name)
	return nil, nil
}

// TestPlanRecorded reads each recorded session start (each agent was run in
// a mode that asks) and the same result with the agent's real default
// mode as current: the plan moves it to the profile's asking mode by the
// way the agent offers.
func TestPlanRecorded(t *testing.T) {
	tests := []struct {
		transcript, profile string
		offered             int
		option              string // the mode config option's id
		setMode             bool
		recorded            string // the recorded current mode
		start               string // the agent's own default start mode ("" none)
		target              string
		sw                  Switch
	}{
		{"claude101-allow.jsonl", "claude-agent-acp", 4, "mode", true, "default", "auto", "default", SwitchConfigOption},
		{"codexts-allow.jsonl", "codex-acp", 4, "mode", true, "read-only", "agent", "read-only", SwitchConfigOption},
		{"qwen-allow.jsonl", "qwen-code", 5, "mode", true, "default", "auto", "default", SwitchConfigOption},
		{"gemini-allow.jsonl", "gemini-cli", 4, "", true, "default", "yolo", "default", SwitchSetMode},
		{"sdk-example-allow.jsonl", "generic", 0, "", false, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.transcript, func(t *testing.T) {
			p, result := sessionStart(t, tt.transcript)
			if p.Name != tt.profile {
				t.Fatalf("profile %s, want %s", p.Name, tt.profile)
			}
			m, err := ReadSessionModes(result)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Offered) != tt.offered || m.ConfigOption != tt.option || m.SetMode != tt.setMode || m.Current != tt.recorded {
				t.Fatalf("modes = %+v", m)
			}
			plan := p.Plan(m)
			if !plan.CurrentAsks || !plan.Governable || plan.Target != "" {
				t.Errorf("recorded start: plan %+v, want it to stay", plan)
			}
			if tt.start == "" {
				return
			}
			m.Current = tt.start
			plan = p.Plan(m)
			if plan.CurrentAsks || !plan.Governable || plan.Target != tt.target || plan.Switch != tt.sw {
				t.Errorf("start %s: plan %+v, want %s by %s", tt.start, plan, tt.target, tt.sw)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	deciding := SessionModes{Current: "yolo", Offered: []Offered{{ID: "yolo"}, {ID: "full-auto"}}, SetMode: true}
	if plan := Generic.Plan(deciding); plan.Governable || plan.Target != "" || !strings.Contains(plan.Why, "no offered mode asks") {
		t.Errorf("only deciding modes: %+v", plan)
	}
	noWay := SessionModes{Current: "auto", Offered: []Offered{{ID: "auto"}, {ID: "default"}}}
	if plan := Generic.Plan(noWay); plan.Governable || plan.Target != "default" {
		t.Errorf("no way to switch: %+v", plan)
	}
	// A mode named "Accept everything" decides, whatever its id.
	named := SessionModes{Current: "m2", Offered: []Offered{{ID: "m1", Name: "Careful"}, {ID: "m2", Name: "Accept everything"}}, SetMode: true}
	if plan := Generic.Plan(named); !plan.Governable || plan.Target != "m1" || plan.Switch != SwitchSetMode {
		t.Errorf("by name: %+v", plan)
	}
	// A mode the profile knows decides is governed whatever
	// availableModes says: nothing offered still moves to AskingMode.
	for _, m := range []SessionModes{{Current: "bypassPermissions", SetMode: true}, {Current: "auto", ConfigOption: "mode"}} {
		if plan := claude.Plan(m); !plan.Governable || plan.CurrentAsks || plan.Target != "default" {
			t.Errorf("%+v offering nothing: %+v", m, plan)
		}
	}
	if plan := Generic.Plan(SessionModes{Current: "yolo", SetMode: true}); plan.Governable || plan.CurrentAsks {
		t.Errorf("a deciding mode, nothing offered and no asking mode known: %+v", plan)
	}
	// The configured words apply to agents without a profile.
	if plan := Generic.WithDeciding([]string{"careful"}).Plan(SessionModes{Current: "m1", Offered: named.Offered, SetMode: true}); !plan.Governable || plan.Target != "m2" {
		t.Errorf("configured words: %+v", plan)
	}
}

func TestReadSessionModes(t *testing.T) {
	tests := []struct {
		name, result string
		want         SessionModes
		err          bool
	}{
		{"grouped config values", `{"sessionId":"s","configOptions":[{"id":"m","category":"mode","type":"select","currentValue":"b","options":[{"group":"g","name":"G","options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]}]}]}`,
			SessionModes{Current: "b", Offered: []Offered{{"a", "A"}, {"b", "B"}}, ConfigOption: "m"}, false},
		{"config option over modes", `{"modes":{"currentModeId":"x","availableModes":[{"id":"x","name":"X"}]},"configOptions":[{"id":"mode","category":"mode","currentValue":"y","options":[{"value":"y","name":"Y"}]}]}`,
			SessionModes{Current: "y", Offered: []Offered{{"y", "Y"}}, ConfigOption: "mode", SetMode: true}, false},
		{"other categories ignored", `{"configOptions":[{"id":"model","category":"model","currentValue":"a","options":[{"value":"a"}]}]}`, SessionModes{}, false},
		{"modes of the wrong shape", `{"modes":"auto"}`, SessionModes{}, false},
		{"a current mode with nothing offered", `{"modes":{"currentModeId":"bypassPermissions","availableModes":[]}}`,
			SessionModes{Current: "bypassPermissions", SetMode: true}, false},
		{"a mode option with no values", `{"configOptions":[{"id":"mode","category":"mode","currentValue":"auto","options":[]}]}`,
			SessionModes{Current: "auto", ConfigOption: "mode"}, false},
		{"a current mode that is not a string", `{"modes":{"currentModeId":["auto"],"availableModes":[{"id":"default"}]}}`, SessionModes{}, true},
		{"a mode value that is not a string", `{"configOptions":[{"id":"mode","category":"mode","currentValue":7,"options":[{"value":"default"}]}]}`, SessionModes{}, true},
		{"a duplicate key", `{"modes":{"currentModeId":"a","currentModeID":"b","availableModes":[{"id":"a"}]}}`, SessionModes{}, true},
		{"not an object", `[1]`, SessionModes{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSessionModes([]byte(tt.result))
			if tt.err {
				if !errors.Is(err, ErrSession) {
					t.Fatalf("err = %v, want ErrSession", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Current != tt.want.Current || got.ConfigOption != tt.want.ConfigOption || got.SetMode != tt.want.SetMode || len(got.Offered) != len(tt.want.Offered) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got.Offered {
				if got.Offered[i] != tt.want.Offered[i] {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

func FuzzReadSessionModes(f *testing.F) {
	f.Add([]byte(`{"modes":{"currentModeId":"auto","availableModes":[{"id":"auto"},{"id":"default"}]}}`))
	f.Add([]byte(`{"configOptions":[{"id":"m","category":"mode","currentValue":"b","options":[{"group":"g","options":[{"value":"b"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadSessionModes(data)
		if err != nil {
			return
		}
		plan := claude.Plan(m)
		if plan.Target != "" && !plan.Governable && plan.Switch != "" {
			t.Fatalf("a switch without governing: %+v", plan)
		}
		if plan.Target != "" && !claude.Asks(plan.Target, "") {
			t.Fatalf("target %q does not ask", plan.Target)
		}
	})
}
