package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
	"github.com/permhost/permhost/internal/profile"
)

// This file is where a permission decision meets the agent: the editor's
// answer to a permission request is read here, once and strictly
// (readAnswer), and every answer the handler gives the agent is checked,
// encoded and logged here (deliver), so that the decision log records what
// the agent receives, read back from the same bytes. docs/mediation.md
// describes the states a request goes through.

// editorAnswer is the editor's answer to a permission request as read
// once by readAnswer; everything downstream (what the agent receives, the
// decision log, allowances, grants) comes from it.
type editorAnswer struct {
	// askErr is Client.Ask's error: there is no answer.
	askErr error
	// err is set when the answer does not read one way only
	// (answer.ErrMalformed).
	err error
	// rpcErr is set for an error response.
	rpcErr *answer.RPCError
	// reply is the answer otherwise: selected or cancelled, with the
	// peer's _meta objects, each strictly decoded.
	reply answer.Reply
}

// readAnswer is the one place the editor's answer to a permission request
// (one the proxy forwarded, or a prompt of permhost's own) is validated:
// the whole response line goes through answer.DecodeResponse (exact keys at
// every depth, no key twice in any case, only ACP's members, exactly one of
// result and error, a known outcome with a string option id). Nothing else
// reads the editor's bytes: a result member that reads fine on its own
// inside a line that does not is not an answer.
func readAnswer(ans acp.Answer, askErr error) editorAnswer {
	switch {
	case askErr != nil:
		return editorAnswer{askErr: askErr}
	case ans.Line == nil && ans.Error != nil:
		// The proxy's own error for a request whose answer could be
		// another's (acp: a reused id): no line of the editor's.
		return editorAnswer{rpcErr: &answer.RPCError{Code: int64(ans.Error.Code), Message: ans.Error.Message}}
	case ans.Line == nil:
		return editorAnswer{err: fmt.Errorf("%w: no response line", answer.ErrMalformed)}
	}
	r, err := answer.DecodeResponse(bytes.TrimSpace(ans.Line))
	if err != nil {
		return editorAnswer{err: err}
	}
	return editorAnswer{reply: r.Reply, rpcErr: r.Error}
}

// selected returns the option the answer selects, if it reads as a
// selection.
func (a editorAnswer) selected() (string, bool) {
	if a.askErr != nil || a.err != nil || a.rpcErr != nil || !a.reply.Selects() {
		return "", false
	}
	return a.reply.OptionID, true
}

// deliver is the last step of every decision the proxy's handler makes on
// a permission request (the plugins', a grant's, the person's, the
// fallback's): d.result is held against the options the agent offered with
// answer.Checked, the check the proxy applies again before relaying it;
// what fails becomes cancelled. The answer is then handed to the proxy
// (send is acp.Client.Deliver), which settles the request and reserves
// its line's place in one step and gives back the line the agent gets
// before the agent can read it: the decision log entry's outcome and
// option are read back from those bytes, and only an answer the agent
// receives as an allow records an allowance for the call's own file and
// terminal requests. A request the proxy answered cancelled first (a
// session/cancel, the agent's $/cancel_request, its id reused), before
// deliver or while it runs, is logged cancelled: that is the line the
// proxy gives back. send is nil for permhost run's handler, whose
// ClientConn sends the answer deliver returns.
//
// The steering request that tells the model why (reasons.go), if any, is
// made from the entry as read back from those bytes: personText is what
// a person typed with a reject.
func (e *Engine) deliver(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, berr error, d *decision, start time.Time, personText string, send func(acp.Response, func([]byte)) error) ([]byte, *acp.OwnRequest) {
	out := e.settle(ctx, pr, req, d)
	then := e.steer(pr, &d.entry, personText)
	record := func() {
		e.governed(pr, req, berr, &d.entry)
		d.entry.LatencyUs = e.now().Sub(start).Microseconds()
		e.record(d.entry)
	}
	if send == nil {
		record()
		return out, then
	}
	want, _ := answer.Checked(out, pr.Offered)
	_ = send(acp.Response{Result: out, FollowUp: then}, func(line []byte) {
		got, why := sentReply(line)
		if got.Outcome != want.Outcome || got.OptionID != want.OptionID {
			if d.entry.DecidedBy != ByCancel {
				d.entry.Reason = "cancelled before the answer (" + d.entry.DecidedBy + ") reached the agent"
			}
			if why != "" {
				d.entry.Reason += ": " + why
			}
			d.entry.DecidedBy, then = ByCancel, nil
			out = got.Result()
			d.result = out
			d.readBack(got, req)
		}
		record()
	})
	return out, then
}

// sentReply reads the line the proxy says the agent got (acp's own
// encoding; nil when none): no line, or one that is not a permission
// answer, is logged as cancelled, with why.
func sentReply(line []byte) (answer.Reply, string) {
	if line == nil {
		return answer.Cancelled(), "the agent got no answer"
	}
	r, err := answer.DecodeResponse(bytes.TrimSpace(line))
	switch {
	case err != nil:
		return answer.Cancelled(), "internal error: the answer sent does not read back: " + err.Error()
	case r.Error != nil:
		return answer.Cancelled(), "the agent got an error: " + r.Error.Message
	}
	return r.Reply, ""
}

// settle is deliver without the log: it returns the agent's answer for d
// and sets d's entry from it (governed file and terminal requests, whose
// log entry says what became of the request, use it alone).
func (e *Engine) settle(ctx context.Context, pr *acp.PermissionRequest, req abi.Request, d *decision) []byte {
	result := d.result
	if ctx.Err() != nil {
		if d.entry.DecidedBy != "" && d.entry.DecidedBy != ByCancel {
			d.entry.Reason = "cancelled before the answer (" + d.entry.DecidedBy + ") reached the agent"
		}
		d.entry.DecidedBy = ByCancel
		result = answer.Cancelled().Result()
	}
	r, err := answer.Checked(result, pr.Offered)
	if err != nil {
		e.log.Error("internal error: an answer for the agent does not check; the agent gets cancelled", "decisionId", req.DecisionID, "err", err)
		d.entry.DecidedBy, d.entry.Reason = ByBuiltin, "internal error: "+err.Error()
		r = answer.Cancelled()
	}
	out := r.Result()
	sent, err := answer.Checked(out, pr.Offered)
	if err != nil { // permhost's own encoding always reads back
		sent = answer.Cancelled()
		out = sent.Result()
	}
	d.result = out
	d.readBack(sent, req)
	return out
}

// readBack sets d's entry's outcome and option from sent, the answer as
// the agent reads it.
func (d *decision) readBack(sent answer.Reply, req abi.Request) {
	d.entry.Outcome, d.entry.OptionID, d.entry.OptionKind = sent.Outcome, sent.OptionID, ""
	for _, o := range req.Options {
		if sent.Selects() && o.OptionID == sent.OptionID {
			d.entry.OptionKind = o.Kind
		}
	}
}

// deliverApproval is deliver for an approval (elicitation/create): the
// decision log entry's outcome and option are read back from result, the
// bytes the agent gets — the action, and the persist choice of an accept
// (accept when the form has none, once when it is left out; decline for a
// decline).
func (e *Engine) deliverApproval(req abi.Request, a approval, entry LogEntry, result json.RawMessage, start time.Time) acp.Reply {
	f, err := jsontext.Fields(result, "action", "content")
	action, _ := jsontext.String(f["action"])
	option := ""
	switch {
	case err != nil:
		action = "" // never: permhost encoded result
	case action == elicitDecline:
		option = elicitDecline
	case action == "accept" && a.persist == nil:
		option = elicitAccept
	case action == "accept":
		if c, err := jsontext.Lookup(f["content"], "persist"); err == nil {
			option, _ = jsontext.String(c["persist"])
		}
		if option == "" {
			option = "once" // left out, the agent takes it as once (codex-acp)
		}
	}
	entry.Outcome, entry.OptionID, entry.OptionKind = action, option, ""
	for _, o := range req.Options {
		if option != "" && o.OptionID == option {
			entry.OptionKind = o.Kind
		}
	}
	entry.LatencyUs = e.now().Sub(start).Microseconds()
	e.writeLog(entry)
	e.log.Info("approval decided", "decisionId", entry.DecisionID, "action", action, "option", option, "decidedBy", entry.DecidedBy)
	return acp.Reply{Result: result}
}

// fsDelivery is deliver for a governed file or terminal request: the
// decision is logged as forwarded or refused, and then carried out — the
// request forwarded to the editor (whose response the proxy relays once it
// answers this request's id), or the agent refused with an error naming
// who refused.
type fsDelivery struct {
	e      *Engine
	ctx    context.Context
	r      *acp.AgentRequest
	c      acp.Client
	call   fsCall
	params json.RawMessage // what is forwarded: the file decided on
	start  time.Time
}

func (f fsDelivery) forward(entry LogEntry) (acp.Reply, error) {
	entry.Outcome = "forwarded"
	entry.LatencyUs = f.e.now().Sub(f.start).Microseconds()
	f.e.writeLog(entry)
	a, err := f.c.Ask(f.ctx, f.params)
	if err != nil {
		return acp.Reply{}, err
	}
	return acp.Reply{Line: a.Line}, nil
}

func (f fsDelivery) refuse(entry LogEntry) (acp.Reply, error) {
	entry.Outcome = "refused"
	entry.LatencyUs = f.e.now().Sub(f.start).Microseconds()
	f.e.writeLog(entry)
	who := entry.DecidedBy
	msg := fmt.Sprintf("%s %s refused by %s", f.r.Method, f.call.what(), who)
	if entry.Reason != "" {
		msg += ": " + entry.Reason
	}
	f.e.log.Info("refused the agent's "+f.r.Method, "decisionId", entry.DecisionID, "what", f.call.what(), "decidedBy", who, "reason", entry.Reason)
	return acp.Reply{Error: refusal(msg + " ([session] fs = \"govern\")")}, nil
}

// The mode actions of [session] modes = "govern" end here too: what the
// peer gets (the session's start result showing the mode it is in, the
// update that tells the editor where the agent was switched back to, the
// error a refused switch or session is answered with) is encoded first,
// and the decision log entry's outcome, mode and refusal are read back
// from those bytes.

// deliverModeRefusal logs a mode action that refuses (the editor's
// switch into a deciding mode, a session permhost cannot govern, one the
// agent switched out of governance) from the error the editor gets, and
// returns that error.
func (g *governor) deliverModeRefusal(entry LogEntry, refuse *acp.RPCError) *acp.RPCError {
	line := answer.EncodeError([]byte(`0`), answer.RPCError{Code: int64(refuse.Code), Message: refuse.Message})
	r, err := answer.DecodeResponse(line)
	if err != nil || r.Error == nil {
		// permhost's own encoding always reads back; fail closed anyway.
		r.Error = &answer.RPCError{Code: acp.CodePolicyRefused, Message: "permhost: internal error encoding a refusal"}
	}
	sent := &acp.RPCError{Code: int(r.Error.Code), Message: r.Error.Message}
	entry.Outcome = "refused"
	if entry.Mode.Action == ModeReverse {
		entry.Outcome = "failed" // the session is refused from now on
	}
	entry.Mode.Refusal = sent.Message
	g.note(entry, ReplayNote{})
	return sent
}

// deliverSwitch logs the switch of a session started in a deciding mode
// from result, the session's start result the editor gets, and returns
// it: the mode logged as switched to is the one the editor is shown.
func (g *governor) deliverSwitch(entry LogEntry, result json.RawMessage) json.RawMessage {
	m, err := profile.ReadSessionModes(result)
	if err != nil {
		m.Current = "" // never: permhost rewrote a result it read
	}
	entry.Outcome, entry.Mode.To = "switched", m.Current
	g.note(entry, ReplayNote{})
	return result
}

// deliverReverse logs the agent's switch back to an asking mode and then
// tells the editor, which saw the agent's own update, where the session
// is now, in each form the session uses: the mode logged as switched back
// to is the one the updates name.
func (g *governor) deliverReverse(entry LogEntry, c acp.Caller, sid, target string, setMode bool, options json.RawMessage) {
	var updates []json.RawMessage
	if setMode || options == nil {
		updates = append(updates, joinObject([]member{{"sessionId", marshal(sid)},
			{"update", joinObject([]member{{"sessionUpdate", json.RawMessage(`"current_mode_update"`)}, {"currentModeId", marshal(target)}})}}))
	}
	if options != nil {
		updates = append(updates, joinObject([]member{{"sessionId", marshal(sid)},
			{"update", joinObject([]member{{"sessionUpdate", json.RawMessage(`"config_option_update"`)}, {"configOptions", options}})}}))
	}
	entry.Outcome, entry.Mode.To = "reversed", ""
	for _, u := range updates {
		f, err := jsontext.Lookup(u, "update")
		if err != nil {
			continue
		}
		if k, err := jsontext.Lookup(f["update"], "currentModeId", "configOptions"); err == nil {
			if id, err := jsontext.String(k["currentModeId"]); err == nil && id != "" {
				entry.Mode.To = id
			} else if m, err := profile.ReadSessionModes(marshalConfigOptions(k["configOptions"])); err == nil && m.Current != "" {
				entry.Mode.To = m.Current
			}
		}
		if entry.Mode.To != "" {
			break
		}
	}
	g.note(entry, ReplayNote{})
	for _, u := range updates {
		_ = c.Notify(acp.MethodSessionUpdate, u)
	}
}
