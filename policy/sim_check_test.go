package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/config"
)

// This file is the invariants checked after each run ((b) and (e) are
// checked as the messages arrive, in sim_run_test.go).

// simViolation is one broken invariant. Behaviour names what the script
// did that it happened with (an id reused, an answer with an extra key,
// the race strategy...), which the test's log counts violations by.
type simViolation struct {
	Invariant string `json:"invariant"`
	Behaviour string `json:"behaviour,omitempty"`
	Req       int    `json:"req,omitempty"`
	What      string `json:"what"`
	id        string // (e): the agent id the editor got twice
}

func (v simViolation) String() string {
	return fmt.Sprintf("(%s) [%s] %s", v.Invariant, v.Behaviour, v.What)
}

// simEntry is what the checks read of a decision-log line.
type simEntry struct {
	ToolCall struct {
		ID string `json:"id"`
	} `json:"toolCall"`
	Outcome   string          `json:"outcome"`
	OptionID  string          `json:"optionId"`
	DecidedBy string          `json:"decidedBy"`
	Request   string          `json:"request"`
	Mode      json.RawMessage `json:"mode"`
	Unasked   bool            `json:"unasked"`
}

// check runs the invariants checked after the run.
func (r *simRun) check() []simViolation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.violations)
	if len(r.stuck) > 0 {
		// Once stuck, every later wait gives up at once: the first is
		// what the run stuck on, and the answers the agent lacks are
		// not counted again.
		out = append(out, simViolation{Invariant: "d", Behaviour: r.behaviourAll(), What: "stuck waiting for " + r.stuck[0]})
	}
	died := r.agentDead || r.editorDead || len(r.stuck) > 0
	entries := map[string][]simEntry{}
	for _, line := range bytes.Split(r.log.Bytes(), []byte("\n")) {
		var e simEntry
		// Mode actions have no tool call; a permission decision's entry
		// may have a mode (the options it removed).
		if len(line) == 0 || json.Unmarshal(line, &e) != nil || e.ToolCall.ID == "" || e.Request != "" || e.Unasked {
			continue
		}
		entries[e.ToolCall.ID] = append(entries[e.ToolCall.ID], e)
	}
	// (d): answers go to an id's requests in the order they were sent.
	byID := map[string][]*simAgentReq{}
	var ids []string
	for _, q := range r.aReqs {
		if len(byID[q.id]) == 0 {
			ids = append(ids, q.id)
		}
		byID[q.id] = append(byID[q.id], q)
	}
	for i, v := range out {
		if v.Invariant == "e" {
			out[i].Behaviour = r.behaviourOf(byID[v.id]...)
		}
	}
	for id := range r.aAnswers {
		if len(byID[id]) == 0 {
			out = append(out, simViolation{Invariant: "d", Behaviour: r.behaviourAll(), What: fmt.Sprintf("the agent got an answer to id %s, which none of its requests has", id)})
		}
	}
	for _, id := range ids {
		r.reattributeRefusal(byID[id], entries)
		qs, as := byID[id], r.aAnswers[id]
		if len(as) > len(qs) || (!died && len(as) < len(qs)) {
			out = append(out, simViolation{Invariant: "d", Behaviour: r.behaviourOf(qs...),
				What: fmt.Sprintf("the agent sent %d requests with id %s and got %d answers", len(qs), id, len(as))})
		}
		for _, q := range qs {
			if q.ans == nil || q.method != acp.MethodRequestPermission {
				continue
			}
			out = append(out, r.checkAnswer(q, q.ans, entries[q.tc], r.behaviourOf(q))...)
		}
	}
	out = append(out, r.checkStream("f", "editor→agent", r.editorW.sent, r.aGot, func(m simMsg, _ []byte) bool {
		return m.Method != "" && !(m.Method == acp.MethodSessionSetMode && r.s.Config.Modes == config.ModesGovern)
	}, died)...)
	reused := map[string]bool{}
	for _, q := range r.aReqs {
		if q.reuse != "" {
			reused[q.id] = true
		}
	}
	out = append(out, r.checkStream("f", "agent→editor", r.agentW.sent, r.eGot, func(m simMsg, e []byte) bool {
		switch {
		case m.Method == acp.MethodRequestPermission:
			return false
		case m.Method != "" && m.hasID():
			// A request under a reused id may be refused as in use
			// (issue #19 item 3): its answer is checked by (d).
			return r.s.Config.FS != config.FSGovern && !reused[idKeyOf(m.ID)]
		case m.Method != "":
			return true
		case bytes.HasPrefix(m.ID, []byte(`"permhost-`)):
			return false // an answer to permhost's own request
		case r.s.Config.Modes == config.ModesGovern && bytes.Contains(e, []byte(`"availableModes"`)):
			return false // session/new's result, which the governor may change
		}
		return true
	}, died)...)
	return out
}

// reattributeRefusal corrects which of qs (the requests under one id, in
// the order sent) permhost's refusal of the id in use answered. The refusal
// answers the request that collided, at once; assignLocked gives it to the
// newest request sent, but with two sent back to back under the id (a
// request permhost forwards, then a permission request) the refusal may
// be the older one's, and the permission request, read once the id was
// free, went on to a decider: neither the agent nor the run can tell them
// apart by the answers alone. The refused request is the one that reached
// no one: a permission request refused has no decision and was never
// shown, a request refused was never forwarded to the editor. The two
// answers are swapped then.
func (r *simRun) reattributeRefusal(qs []*simAgentReq, entries map[string][]simEntry) {
	refused := func(q *simAgentReq) bool {
		return q.ans != nil && bytes.Contains(parseMsg(q.ans).Error, []byte(inUseMessage))
	}
	for i, q := range qs {
		if !refused(q) || q.method != acp.MethodRequestPermission || (len(entries[q.tc]) == 0 && r.eShown[q.tc] == nil) {
			continue
		}
		for _, o := range slices.Backward(qs[:i]) {
			if o.method == acp.MethodRequestPermission || o.ans == nil || refused(o) ||
				slices.ContainsFunc(r.eGot, func(e []byte) bool { return bytes.Equal(e, o.sent) }) {
				continue
			}
			q.ans, o.ans = o.ans, q.ans
			break
		}
	}
}

// checkAnswer is (a) and (c) for the agent's answer to permission request
// q.
func (r *simRun) checkAnswer(q *simAgentReq, ans []byte, entries []simEntry, behaviour string) []simViolation {
	var out []simViolation
	bad := func(inv, format string, args ...any) {
		out = append(out, simViolation{Invariant: inv, Req: q.n, Behaviour: behaviour, What: fmt.Sprintf("request %d (id %s, %s): ", q.n, q.id, q.tc) + fmt.Sprintf(format, args...)})
	}
	var a struct {
		Result *struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(ans, &a); err != nil {
		bad("a", "the answer does not decode: %s", ans)
		return out
	}
	outcome, option := "error", ""
	if a.Result != nil {
		outcome, option = a.Result.Outcome.Outcome, a.Result.Outcome.OptionID
	}
	if outcome == "selected" && !slices.Contains(q.options, option) {
		bad("a", "the agent got option %q, which it did not offer (%v)", option, q.options)
	}
	if bytes.Contains(a.Error, []byte(inUseMessage)) {
		// Refused for its id, which the editor had outstanding (issue #19
		// item 3): the request reached no decider, so the log, which
		// records decisions, must have none for it.
		if len(entries) > 0 {
			bad("c", "refused as an id in use, but the decision log has %d entries", len(entries))
		}
		return out
	}
	switch len(entries) {
	case 0:
		bad("c", "the agent got %s but the decision log has no entry", ans)
		return out
	case 1:
	default:
		bad("c", "the decision log has %d entries", len(entries))
	}
	e := entries[0]
	if e.Outcome != outcome || e.OptionID != option {
		bad("c", "the log says %s %q, the agent got %s", e.Outcome, e.OptionID, ans)
	}
	if e.DecidedBy == "person" && outcome == "selected" {
		as := r.eAnswers[q.tc]
		sh := r.eShown[q.tc]
		switch {
		case len(as) == 0 || sh == nil:
			bad("a", "the log says the person chose %q, but the editor never answered it", option)
		case as[0].outcome == "selected" && strings.HasPrefix(as[0].optionID, "permhost-grant"):
			// permhost's own grant, shown in place of the agent's
			// durable option: the agent gets a one-time option.
		case as[0].outcome != "selected" || as[0].optionID != option:
			bad("a", "the agent got %q as the person's choice; the editor answered %+v", option, as[0])
		case !slices.Contains(sh.shown, option):
			bad("a", "the person's choice %q was not shown (%v)", option, sh.shown)
		}
	}
	return out
}

// checkStream is (f) for one direction: every message sent that keep
// selects arrives byte for byte, and in order within its lane (a prefix of
// them when a peer died). A lane is the session a message names, or none:
// the editor's requests for a session that is being governed wait until it
// is governed while other sessions' traffic goes on (issue #19 item 2), so
// order is kept per session, not across sessions. What arrived that was
// not sent so (permhost's own messages, permission traffic) is left out of
// the comparison.
func (r *simRun) checkStream(inv, dir string, sent [][]byte, got [][]byte, keep func(simMsg, []byte) bool, died bool) []simViolation {
	want := map[string][][]byte{}
	var lanes []string
	set := map[string]bool{}
	batched := map[string]bool{} // sent in a batch
	for _, line := range sent {
		es := elements(line)
		for _, e := range es {
			m := parseMsg(e)
			if keep(m, e) {
				l := laneOf(m)
				if _, ok := want[l]; !ok {
					lanes = append(lanes, l)
				}
				want[l] = append(want[l], e)
				set[string(e)] = true
				batched[string(e)] = len(es) > 1 || trimLine(line)[0] == '['
			}
		}
	}
	behaviour := func(e []byte) string {
		if batched[string(e)] {
			return "batch"
		}
		return r.behaviourAll()
	}
	have := map[string][][]byte{}
	for _, e := range got {
		if set[string(e)] {
			l := laneOf(parseMsg(e))
			have[l] = append(have[l], e)
		}
	}
	refused := r.refusedLanes()
	for _, l := range lanes {
		w, h := want[l], have[l]
		if refused[l] {
			// A refused session's requests are answered with the policy
			// error and nothing for it reaches the agent from then on:
			// what did arrive keeps its order.
			if !subsequence(h, w) {
				return []simViolation{{Invariant: inv, Behaviour: r.behaviourAll(), What: fmt.Sprintf("%s: lane %q (refused) arrived out of order: %s", dir, l, bytes.Join(h, []byte(" ")))}}
			}
			continue
		}
		for i := range min(len(w), len(h)) {
			if !bytes.Equal(w[i], h[i]) {
				return []simViolation{{Invariant: inv, Behaviour: behaviour(w[i]), What: fmt.Sprintf("%s: message %d of lane %q arrived as %s, want %s", dir, i, l, h[i], w[i])}}
			}
		}
		switch {
		case len(h) > len(w):
			return []simViolation{{Invariant: inv, Behaviour: behaviour(h[len(w)]), What: fmt.Sprintf("%s: %s arrived more than once", dir, h[len(w)])}}
		case len(h) < len(w) && !died:
			return []simViolation{{Invariant: inv, Behaviour: behaviour(w[len(h)]), What: fmt.Sprintf("%s: %d of %d messages of lane %q arrived; the first missing is %s", dir, len(h), len(w), l, w[len(h)])}}
		}
	}
	return nil
}

// refusedLanes are the sessions the policy refused: logged ungovernable,
// or CodePolicyRefused in answer to a request naming the session.
func (r *simRun) refusedLanes() map[string]bool {
	lane := map[string]string{} // the editor's request id → its session
	for _, line := range r.editorW.sent {
		for _, e := range elements(line) {
			if m := parseMsg(e); m.Method != "" && m.hasID() {
				lane[idKeyOf(m.ID)] = laneOf(m)
			}
		}
	}
	out := map[string]bool{}
	// A session start the governor could not govern: the editor's
	// session/new names no session, the log does.
	for _, line := range bytes.Split(r.log.Bytes(), []byte("\n")) {
		var e struct {
			Session string `json:"session"`
			Mode    struct {
				Action string `json:"action"`
			} `json:"mode"`
		}
		if json.Unmarshal(line, &e) == nil && e.Mode.Action == "ungovernable" && e.Session != "" {
			out[e.Session] = true
		}
	}
	for _, e := range r.eGot {
		m := parseMsg(e)
		var rpcErr struct {
			Code int `json:"code"`
		}
		if m.Method != "" || len(m.Error) == 0 || json.Unmarshal(m.Error, &rpcErr) != nil || rpcErr.Code != acp.CodePolicyRefused {
			continue
		}
		if l := lane[idKeyOf(m.ID)]; l != "" {
			out[l] = true
		}
	}
	return out
}

// subsequence reports whether h is w with some elements left out.
func subsequence(h, w [][]byte) bool {
	i := 0
	for _, e := range w {
		if i < len(h) && bytes.Equal(h[i], e) {
			i++
		}
	}
	return i == len(h)
}

// laneOf is the session m names in its params, or "".
func laneOf(m simMsg) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.SessionID
}

// behaviourOf names what the script did with requests qs that may explain
// a violation, most specific first.
func (r *simRun) behaviourOf(qs ...*simAgentReq) string {
	for _, q := range qs {
		switch {
		case q.reuse != "" && q.live:
			return "id-reuse-" + q.reuse
		case q.reusedBy != "":
			return "id-reuse-" + q.reusedBy
		}
	}
	// session/cancel before the editor's answer (or, for a request the
	// plugins decided, at all) turns the answer into cancelled.
	for _, q := range qs {
		as := r.eAnswers[q.tc]
		if (len(as) > 0 && as[0].cancels > 0) || (len(as) == 0 && r.cancels[q.session] > 0) {
			return "session-cancelled"
		}
	}
	for _, q := range qs {
		if as := r.eAnswers[q.tc]; len(as) > 0 && as[0].how != howValid {
			return "answer-" + as[0].how
		}
	}
	if r.s.Config.Strategy == config.StrategyRace {
		return "race"
	}
	return ""
}

// behaviourAll is behaviourOf every request of the run.
func (r *simRun) behaviourAll() string { return r.behaviourOf(r.aReqs...) }

// transcript logs what each peer sent and got, and the decision log, for
// a replay.
func (r *simRun) transcript(t *testing.T) {
	var b strings.Builder
	for _, part := range []struct {
		name  string
		lines [][]byte
	}{{"agent sent", r.agentW.sent}, {"agent got", r.aGot}, {"editor sent", r.editorW.sent}, {"editor got", r.eGot}} {
		fmt.Fprintf(&b, "%s:\n", part.name)
		for _, l := range part.lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "decision log:\n%s", r.log.Bytes())
	t.Log(b.String())
}
