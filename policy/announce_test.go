package policy_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/acptest"
	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/policy"
)

// At info level the proxy's diagnostics carry one line per decision,
// naming what was answered, who decided and why.
func TestEachDecisionIsAnnouncedAtInfo(t *testing.T) {
	tests := []struct {
		name   string
		plugin *plugin
		client *fakeClient
		want   []string
	}{
		{"a plugin rejects", &plugin{d: abi.Decision{Outcome: abi.OutcomeReject, Reason: "rm -rf is not allowed"}}, &fakeClient{},
			[]string{`msg="permission decided"`, `tool="rm -rf build"`, "kind=execute", "outcome=selected", "option=reject", "optionKind=reject_once", "decidedBy=no-rm", `reason="rm -rf is not allowed"`, "latency="}},
		{"the person allows", &plugin{d: abi.Decision{Outcome: abi.OutcomeAbstain}}, &fakeClient{answer: selects("allow")},
			[]string{`msg="permission decided"`, "outcome=selected", "option=allow", "decidedBy=person"}},
		{"a failure falls back", &plugin{err: &host.Error{Kind: host.KindTrap, Plugin: "no-rm", Err: errors.New("unreachable")}}, &fakeClient{answer: selects("reject")},
			[]string{`msg="permission decided"`, "option=reject", "decidedBy=person", "fallback="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs acptest.SyncBuffer
			dlog := policy.NewDecisionLog(&logBuffer{}, nil)
			defer dlog.Close()
			e, err := policy.New(context.Background(), policy.Options{
				Config:  &config.Config{Strategy: config.StrategySequential, OnUndecided: config.UndecidedReject},
				Members: []host.Member{member("no-rm", tt.plugin)}, Log: dlog, Home: "/home/dev",
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(context.Background())
			if _, err := e.Handler().RequestPermission(context.Background(), permissionRequest(t, claudeBash), tt.client); err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(l, `msg="permission decided"`) {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") {
				t.Fatalf("want one info line per decision, got:\n%s", logs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("line %q lacks %q", lines[0], w)
				}
			}
		})
	}
}
