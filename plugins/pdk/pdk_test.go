package pdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
)

const claudeRequest = `{"abi":{"major":1,"minor":0},"decisionId":"d1",
 "session":{"id":"s1","cwd":"/home/dev/project","mode":"default"},
 "toolCall":{"id":"toolu_fake_0001","title":"rm -rf build","kind":"execute","rawInput":{"command":"rm -rf build","description":"Remove build dir"}},
 "options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always","durable":true},
  {"optionId":"allow","name":"Allow","kind":"allow_once","durable":false},
  {"optionId":"reject","name":"Reject","kind":"reject_once","durable":false}]}`

func decideWith(d abi.Decision, err error) func(abi.Request) (abi.Decision, error) {
	return func(abi.Request) (abi.Decision, error) { return d, err }
}

func TestHandle(t *testing.T) {
	tests := []struct {
		name    string
		decide  func(abi.Request) (abi.Decision, error)
		input   string
		want    string // encoded decision, when no error is expected
		wantErr string
	}{
		{name: "reject", decide: decideWith(abi.Decision{Outcome: abi.OutcomeReject, Reason: "no <rm>"}, nil),
			input: claudeRequest, want: `{"outcome":"reject","reason":"no <rm>"}`},
		{name: "text cleaned", decide: decideWith(abi.Decision{Outcome: abi.OutcomeAbstain, Reason: "rm \x1b[2J\nx",
			Explanation: &abi.Explanation{Summary: "Runs \u202Egnp.exe", Risk: "a\tb", RiskLevel: abi.RiskLow}}, nil),
			input: claudeRequest, want: `{"outcome":"abstain","reason":"rm ?[2J x","explanation":{"summary":"Runs ?gnp.exe","risk":"a b","riskLevel":"low"}}`},
		{name: "empty outcome abstains", decide: decideWith(abi.Decision{}, nil),
			input: claudeRequest, want: `{"outcome":"abstain"}`},
		{name: "select offered", decide: decideWith(abi.Decision{Outcome: abi.OutcomeSelect, OptionID: "allow"}, nil),
			input: claudeRequest, want: `{"outcome":"select","optionId":"allow"}`},
		{name: "sees the request", decide: func(r abi.Request) (abi.Decision, error) {
			return abi.Decision{Outcome: abi.OutcomeAsk, Reason: r.Session.Mode + " " + r.ToolCall.Kind}, nil
		}, input: claudeRequest, want: `{"outcome":"ask","reason":"default execute"}`},
		{name: "select not offered", decide: decideWith(abi.Decision{Outcome: abi.OutcomeSelect, OptionID: "approved"}, nil),
			input: claudeRequest, wantErr: "option not offered"},
		{name: "allow with no allow option", decide: decideWith(abi.Decision{Outcome: abi.OutcomeAllow}, nil),
			input: `{"options":[{"optionId":"abort","name":"No","kind":"reject_once"}]}`, wantErr: "option not offered"},
		{name: "unknown outcome", decide: decideWith(abi.Decision{Outcome: "deny"}, nil),
			input: claudeRequest, wantErr: "unknown outcome"},
		{name: "decide error", decide: decideWith(abi.Decision{Outcome: abi.OutcomeAllow}, errors.New("boom")),
			input: claudeRequest, wantErr: "t: boom"},
		{name: "decide panics", decide: func(abi.Request) (abi.Decision, error) { panic("oops") },
			input: claudeRequest, wantErr: "t panicked: oops"},
		{name: "malformed input", decide: decideWith(abi.Decision{}, nil),
			input: `{"options":`, wantErr: "pdk: bad request"},
		{name: "not an object", decide: decideWith(abi.Decision{}, nil),
			input: `[1,2]`, wantErr: "pdk: bad request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Handle(Plugin{Info: abi.Info{Name: "t"}, Decide: tt.decide}, []byte(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q (out %s)", err, tt.wantErr, out)
				}
				if out != nil {
					t.Errorf("out = %s on error, want nil", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("out = %s, want %s", out, tt.want)
			}
		})
	}
}

func TestHandleUnregistered(t *testing.T) {
	if _, err := Handle(Plugin{}, []byte(claudeRequest)); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("err = %v, want ErrNotRegistered", err)
	}
}

func TestDescribeAndVersion(t *testing.T) {
	out, err := Describe(Plugin{Info: abi.Info{Name: "plan-mode", Version: "1.0.0", ConfigKeys: []string{"only_in_mode"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"plan-mode","version":"1.0.0","configKeys":["only_in_mode"]}`; string(out) != want {
		t.Errorf("Describe = %s, want %s", out, want)
	}
	var v abi.Version
	if err := json.Unmarshal(Version(), &v); err != nil {
		t.Fatal(err)
	}
	if v != abi.Current {
		t.Errorf("Version = %v, want %v", v, abi.Current)
	}
}

func TestRegister(t *testing.T) {
	t.Cleanup(func() { registered = nil })
	mustPanic := func(name, want string, p Plugin) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), want) {
				t.Errorf("%s: recovered %v, want a panic containing %q", name, r, want)
			}
		}()
		Register(p)
	}
	registered = nil
	mustPanic("nil decide", "nil Decide", Plugin{Info: abi.Info{Name: "x"}})
	mustPanic("no name", "empty Info.Name", Plugin{Info: abi.Info{Name: " "}, Decide: decideWith(abi.Decision{}, nil)})
	Register(Plugin{Info: abi.Info{Name: "x"}, Decide: decideWith(abi.Decision{}, nil)})
	if registered == nil || registered.Info.Name != "x" {
		t.Fatalf("registered = %+v", registered)
	}
	mustPanic("twice", "twice", Plugin{Info: abi.Info{Name: "y"}, Decide: decideWith(abi.Decision{}, nil)})
}

func TestDecodeConfig(t *testing.T) {
	type cfg struct {
		Paths []string `json:"paths"`
		Mode  string   `json:"only_in_mode"`
	}
	tests := []struct {
		name    string
		config  string
		want    cfg
		wantErr string
	}{
		{name: "absent keeps defaults", config: ``, want: cfg{Paths: []string{".env"}}},
		{name: "null keeps defaults", config: `null`, want: cfg{Paths: []string{".env"}}},
		{name: "set", config: `{"paths":["*.pem"],"only_in_mode":"plan"}`, want: cfg{Paths: []string{"*.pem"}, Mode: "plan"}},
		{name: "misspelt key", config: `{"path":["*.pem"]}`, wantErr: `unknown field "path"`},
		{name: "wrong type", config: `{"paths":"*.pem"}`, wantErr: "pdk: config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cfg{Paths: []string{".env"}}
			err := DecodeConfig(abi.Request{Config: json.RawMessage(tt.config)}, &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Paths, ",") != strings.Join(tt.want.Paths, ",") || got.Mode != tt.want.Mode {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzHandle(f *testing.F) {
	f.Add([]byte(claudeRequest))
	f.Add([]byte(`{"options":null}`))
	f.Add([]byte(`{"toolCall":{"rawInput":[1,{"a":"\u0000"}]}}`))
	p := Plugin{Info: abi.Info{Name: "fuzz"}, Decide: func(r abi.Request) (abi.Decision, error) {
		// Select the first offered option: always valid when one exists.
		if len(r.Options) == 0 {
			return abi.Decision{Outcome: abi.OutcomeAbstain}, nil
		}
		return abi.Decision{Outcome: abi.OutcomeSelect, OptionID: r.Options[0].OptionID}, nil
	}}
	f.Fuzz(func(t *testing.T, input []byte) {
		out, err := Handle(p, input)
		if err != nil {
			if out != nil {
				t.Fatalf("output %q with error %v", out, err)
			}
			return
		}
		var d abi.Decision
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("output %q is not a decision: %v", out, err)
		}
	})
}

func TestWarmRequestDecodes(t *testing.T) {
	var req abi.Request
	dec := json.NewDecoder(strings.NewReader(warmRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("warmRequest no longer matches abi.Request: %v", err)
	}
	if req.Options[0].Changes == nil || len(req.Shell.Commands[0].Redirects) == 0 || len(req.Paths) == 0 {
		t.Errorf("warmRequest should reach every type: %+v", req)
	}
}

func TestCheckConfig(t *testing.T) {
	known := []string{"action", "family", "command"}
	p := Plugin{Info: abi.Info{Name: "t"}, Decide: func(abi.Request) (abi.Decision, error) { return abi.Decision{}, nil },
		CheckConfig: func(raw json.RawMessage) []abi.ConfigProblem {
			var c struct{ Rules []json.RawMessage }
			_ = json.Unmarshal(raw, &c)
			out := UnknownKeys(raw, "", "rules")
			for i, r := range c.Rules {
				out = append(out, UnknownKeys(r, fmt.Sprintf("rules[%d].", i), known...)...)
			}
			return out
		}}
	tests := []struct {
		name, config, want string
	}{
		{"good", `{"rules":[{"action":"reject","family":"shell"}]}`, `{"problems":[]}`},
		{"typo", `{"rules":[{"action":"allow"},{"acton":"reject","zzzzzz":1}]}`,
			`{"problems":[{"key":"rules[1].acton","message":"unknown key","suggestion":"action"},{"key":"rules[1].zzzzzz","message":"unknown key"}]}`},
		{"top", `{"rulez":[]}`, `{"problems":[{"key":"rulez","message":"unknown key","suggestion":"rules"}]}`},
		{"not a table", `{"rules":[3]}`, `{"problems":[{"key":"rules[0]","message":"is not a table"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := CheckConfig(p, []byte(tt.config))
			if err != nil || string(out) != tt.want {
				t.Errorf("CheckConfig = %s, %v; want %s", out, err, tt.want)
			}
		})
	}
	// A plugin without CheckConfig finds nothing; one that panics fails.
	if out, err := CheckConfig(Plugin{Info: abi.Info{Name: "t"}}, []byte(`{"x":1}`)); err != nil || string(out) != `{"problems":[]}` {
		t.Errorf("no CheckConfig: %s, %v", out, err)
	}
	p.CheckConfig = func(json.RawMessage) []abi.ConfigProblem { panic("boom") }
	if _, err := CheckConfig(p, []byte(`{}`)); err == nil {
		t.Error("a panicking CheckConfig did not fail")
	}
}
