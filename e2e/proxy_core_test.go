package e2e

import (
	"strings"
	"testing"
)

// TestProxyStrictEditorAnswers: through the real binary, an editor's answer
// is read strictly and the agent gets only what permhost re-encodes from it
// (issue 15, points 1 and 10): case-folded and duplicate keys are refused
// (cancelled), ids match by value and the agent gets its own id bytes, a
// second answer and an answer to an id permhost did not forward are
// dropped, a selection after session/cancel becomes cancelled, and an agent
// line that may be a permission request but cannot be read one way only
// (nested past encoding/json's depth, an escaped or unreadable method, a
// broken line, two ids) is answered cancelled and never reaches the editor.
func TestProxyStrictEditorAnswers(t *testing.T) {
	deep := strings.Replace(corePerm("8"), `"kind":"execute"`, `"kind":"execute","rawInput":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001), 1)
	escaped := strings.Replace(corePerm("9"), `"session/request_permission"`, `"session\u002frequest\u005fpermission"`, 1)
	unreadable := strings.Replace(corePerm("10"), `"session/request_permission"`, `"session/request_permission\udc00"`, 1)
	broken := corePerm("11")[:120]
	twoIDs := strings.Replace(corePerm("12"), `"id":12,`, `"id":12,"ID":13,`, 1)
	r := startCore(t, []string{"--log-level", "debug"},
		"> "+corePerm("1"), `< "id":1,`,
		"> "+corePerm("2"), `< "id":2,`,
		"> "+corePerm("55"), `< "id":55,`,
		"> "+corePerm(`"a"`), `< "id":"a"`,
		"> "+corePerm("6"), `< "id":6,`,
		"> "+corePerm("7"), `< "id":7,`,
		"> "+deep, `< "id":8,`,
		"> "+escaped, `< "id":9,`,
		"> "+unreadable, `< "id":10,`,
		"> "+broken, `< "id":11,`,
		"> "+twoIDs, `< "id":13,`,
		`> {"jsonrpc":"2.0","method":"_done"}`)

	var requests []string
	for {
		l := r.next("the next request")
		if strings.Contains(l, `"_done"`) {
			break
		}
		requests = append(requests, l)
		switch {
		case strings.Contains(l, `"id":1,`):
			// encoding/json would read "allow"; the agent, "allow_always".
			r.send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":2,`):
			r.send(`{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"allow","Outcome":"cancelled"}}}`)
		case strings.Contains(l, `"id":55,`):
			r.send(`{"jsonrpc":"2.0","id":55.0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
			r.send(`{"jsonrpc":"2.0","id":5.5e1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`)
		case strings.Contains(l, `"id":"a"`):
			// An answer to a request the agent has not sent yet, read
			// before that request exists.
			r.send(`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`)
			r.send(`{"jsonrpc":"2.0","id":"\u0061","result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`)
		case strings.Contains(l, `"id":6,`):
			r.send(`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"},"_meta":{ "by" : "editor" }}}`)
		case strings.Contains(l, `"id":7,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
		case strings.Contains(l, `"id":9,`):
			r.send(`{"jsonrpc":"2.0","id":9,"result":{"outcome":{"outcome":"selected","optionId":"reject","OptionId":"allow_always"}}}`)
		default:
			t.Fatalf("the editor got %q", l)
		}
	}
	expectLines(t, "what the editor was asked", requests,
		corePerm("1")+"\n", corePerm("2")+"\n", corePerm("55")+"\n", corePerm(`"a"`)+"\n", corePerm("6")+"\n", corePerm("7")+"\n", escaped+"\n")
	got, exit := r.finish()
	expectLines(t, "what the agent received", got,
		coreCancelled("1"),
		coreCancelled("2"),
		coreSelected("55", "allow"),
		coreSelected(`"a"`, "reject"),
		`{"jsonrpc":"2.0","id":6,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"by":"editor"}}}`+"\n",
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`+"\n",
		coreCancelled("7"),
		coreCancelled("8"),
		coreCancelled("9"),
		coreCancelled("10"),
		coreCancelled("11"),
		coreCancelled("12"),
		coreCancelled("13"))
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	for _, want := range []string{"dropped a second answer", "did not forward", "failing closed"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
}

// TestProxyStrictAnswersAfterFallback: a failing plugin makes the closed
// fallback show the person the one-time options only; an editor answer
// that smuggles a durable option past that check (a key spelled twice in
// two cases) is refused, so the agent gets its reject option; after
// session/cancel a selection — smuggled or plain — reaches the agent as
// cancelled.
func TestProxyStrictAnswersAfterFallback(t *testing.T) {
	cfg, log := writeConfig(t, "sequential", pluginSpec{name: "trap", path: wasmFixture("unreachable"), timeout: "5s", policy: "closed"})
	r := startCore(t, []string{"--config", cfg},
		"> "+corePerm("1"), `< "id":1,`,
		"> "+corePerm("2"), `< "id":2,`,
		"> "+corePerm("3"), `< "id":3,`,
		"> "+corePerm("4"), `< "id":4,`,
		`> {"jsonrpc":"2.0","method":"_done"}`)
	for {
		l := r.next("the next request")
		if strings.Contains(l, `"_done"`) {
			break
		}
		if !strings.Contains(l, "session/request_permission") {
			continue // the tool_call_update permhost sends about a decision
		}
		if strings.Contains(l, `"optionId":"allow_always"`) || !strings.Contains(l, `"removedOptions":["allow_always"]`) {
			t.Fatalf("the fallback did not narrow the options: %s", l)
		}
		switch {
		case strings.Contains(l, `"id":1,`):
			r.send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":2,`):
			r.send(`{"jsonrpc":"2.0","id":2,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","Outcome":"cancelled"}}}`)
		case strings.Contains(l, `"id":3,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow_always","OptionId":"allow"}}}`)
		case strings.Contains(l, `"id":4,`):
			r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			r.send(`{"jsonrpc":"2.0","id":4,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
		default:
			t.Fatalf("the editor got %q", l)
		}
	}
	got, exit := r.finish()
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n"
	expectLines(t, "what the agent received", got,
		coreSelected("1", "reject"),
		coreSelected("2", "reject"),
		cancel, coreCancelled("3"),
		cancel, coreCancelled("4"))
	if exit != 0 {
		t.Fatalf("exit %d", exit)
	}
	entries := (&pipelineRun{t: t, log: log}).decisions(4)
	refused := 0
	for _, e := range entries {
		if e.Person != nil && e.Person.Refused {
			refused++
		}
	}
	if len(entries) != 4 || refused != 3 {
		t.Fatalf("decision log: %d entries, %d refused answers; want 4 and 3 (the smuggled ones)", len(entries), refused)
	}
}
