package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
	"github.com/permhost/permhost/internal/answer"
	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the approvals an agent sends as elicitation/create
// (codex-acp's MCP tool-call approvals, recognised by the agent's
// profile): they go through the plugins as a permission request whose
// options are the elicitation's choices, and the agent is answered with
// the action chosen. An undecided one goes to the editor as the agent sent
// it (its choices narrowed as a permission request's would be), and the
// editor's answer is read strictly and re-encoded.

// The choices of an approval without a persist field.
const (
	elicitAccept  = "accept"
	elicitDecline = "decline"
)

// isApproval reports whether an elicitation is an approval of a tool call.
func (g *governor) isApproval(r *acp.AgentRequest) bool {
	prof := g.e.agentProfile(r.Session.Agent)
	if prof.Elicitation == nil {
		return false
	}
	if r.Suspicious == "" {
		meta, _ := member1(r.Params, "_meta")
		return prof.IsApprovalElicitation(meta)
	}
	// Read as encoding/json would: if any reading makes it an approval, it
	// is taken (and refused below, since it reads two ways).
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(r.Params, &p)
	v, _ := p.Meta[prof.Elicitation.Key].(string)
	return v == prof.Elicitation.Value || jsontext.Mentions(r.Params, prof.Elicitation.Value)
}

// approval is an elicitation permhost reads as an approval.
type approval struct {
	message string
	schema  json.RawMessage
	meta    json.RawMessage
	persist []choice // the persist field's choices; nil when it has none
	others  []string // the schema's other fields: only a person fills them
	options []acp.PermissionOption
}

type choice struct{ value, title string }

func readApproval(r *acp.AgentRequest) (approval, error) {
	var a approval
	if r.Suspicious != "" {
		return a, fmt.Errorf("it cannot be read one way only (%s)", r.Suspicious)
	}
	f, err := jsontext.Lookup(r.Params, "message", "requestedSchema", "_meta", "mode")
	if err != nil {
		return a, err
	}
	a.message, _ = jsontext.String(f["message"])
	a.schema, a.meta = f["requestedSchema"], f["_meta"]
	if mode, _ := jsontext.String(f["mode"]); mode != "" && mode != "form" {
		return a, fmt.Errorf("mode %q", mode)
	}
	if a.schema != nil && !jsontext.IsNull(a.schema) {
		s, err := jsontext.Lookup(a.schema, "properties")
		if err != nil {
			return a, fmt.Errorf("requestedSchema: %w", err)
		}
		if props := s["properties"]; props != nil {
			ms, err := jsontext.Object(props)
			if err != nil {
				return a, fmt.Errorf("requestedSchema.properties: %w", err)
			}
			for _, m := range ms {
				if m.Key != "persist" {
					a.others = append(a.others, m.Key)
					continue
				}
				if a.persist, err = persistChoices(m.Value); err != nil {
					return a, err
				}
			}
		}
	}
	if a.persist == nil {
		a.options = append(a.options, acp.PermissionOption{OptionID: elicitAccept, Name: "Allow", Kind: abi.OptionAllowOnce})
	}
	for _, c := range a.persist {
		kind := abi.OptionAllowAlways
		if c.value == "once" {
			kind = abi.OptionAllowOnce
		}
		a.options = append(a.options, acp.PermissionOption{OptionID: c.value, Name: c.title, Kind: kind})
	}
	if !slices.ContainsFunc(a.options, func(o acp.PermissionOption) bool { return o.OptionID == elicitDecline }) {
		a.options = append(a.options, acp.PermissionOption{OptionID: elicitDecline, Name: "Decline", Kind: abi.OptionRejectOnce})
	}
	return a, nil
}

// persistChoices reads the persist field's oneOf (or enum).
func persistChoices(prop []byte) ([]choice, error) {
	f, err := jsontext.Lookup(prop, "oneOf", "enum")
	if err != nil {
		return nil, fmt.Errorf("persist: %w", err)
	}
	var out []choice
	if one := f["oneOf"]; one != nil {
		elems, err := jsontext.Elements(one)
		if err != nil {
			return nil, fmt.Errorf("persist.oneOf: %w", err)
		}
		for _, e := range elems {
			c, err := jsontext.Lookup(e, "const", "title")
			if err != nil {
				return nil, fmt.Errorf("persist.oneOf: %w", err)
			}
			v, err := jsontext.String(c["const"])
			if err != nil || v == "" {
				return nil, fmt.Errorf("persist.oneOf: a choice without a string const")
			}
			t, _ := jsontext.String(c["title"])
			if t == "" {
				t = v
			}
			out = append(out, choice{v, t})
		}
	} else if enum := f["enum"]; enum != nil {
		elems, err := jsontext.Elements(enum)
		if err != nil {
			return nil, fmt.Errorf("persist.enum: %w", err)
		}
		for _, e := range elems {
			v, err := jsontext.String(e)
			if err != nil || v == "" {
				return nil, fmt.Errorf("persist.enum: a choice that is not a string")
			}
			out = append(out, choice{v, v})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("persist: no choices")
	}
	return out, nil
}

// approvalRequest is the permission request an approval stands for: its
// tool call as the agent described it (merged over the session's
// updates), with the message as title when it has none, and the
// elicitation's choices as options.
func approvalRequest(r *acp.AgentRequest, a approval, decisionID string) *acp.PermissionRequest {
	var tc []member
	if r.ToolCall != nil {
		tc, _ = splitObject(r.ToolCall)
	}
	id := r.ToolCallID
	if id == "" {
		id = "permhost-" + decisionID
	}
	setIfAbsent := func(k string, v json.RawMessage) {
		if old, ok := getMember(tc, k); !ok || jsontext.IsNull(old) {
			tc = setMember(tc, k, v)
		}
	}
	tc = setMember(tc, "toolCallId", marshal(id))
	setIfAbsent("title", marshal(a.message))
	setIfAbsent("kind", marshal(abi.KindOther))
	tc = setMember(tc, "status", marshal("pending"))
	if params, ok := member1(a.meta, "tool_params"); ok && params[0] == '{' {
		setIfAbsent("rawInput", params)
	}
	toolCall := joinObject(tc)
	params := joinObject([]member{{"sessionId", marshal(r.SessionID)}, {"toolCall", toolCall}, {"options", marshal(a.options)}})
	pr := &acp.PermissionRequest{ID: r.ID, Params: params, SessionID: r.SessionID, ToolCallID: id, ToolCall: toolCall,
		Options: a.options, Session: r.Session}
	inVersion(pr, a.message) // policy/request_v2.go
	return pr
}

// elicitation decides an approval.
func (g *governor) elicitation(ctx context.Context, r *acp.AgentRequest, c acp.Client) (acp.Reply, error) {
	e := g.e
	start := e.now()
	a, err := readApproval(r)
	if err != nil {
		e.log.Warn("cancelling an approval elicitation permhost cannot read", "err", err)
		return acp.Reply{Result: json.RawMessage(`{"action":"cancel"}`)}, nil
	}
	id := newDecisionID()
	pr := approvalRequest(r, a, id)
	req, berr := BuildRequest(pr, id, e.home)
	entry := entryFor(req, e.via, e.cfg.Strategy, start)
	entry.Request = r.Method
	done := func(entry LogEntry, action, option string) (acp.Reply, error) {
		return e.deliverApproval(req, a, entry, approvalResult(action, option, a), start), nil
	}
	// v is what narrows the choices a person sees: a request permhost
	// cannot build is the fallback's, as a permission request's is.
	v := host.Verdict{Outcome: abi.OutcomeAsk}
	if berr != nil {
		v.Fallback = "request not understood: " + berr.Error()
		entry.Fallback = v.Fallback
	} else {
		v = e.decide(ctx, req)
		if ctx.Err() != nil {
			return acp.Reply{}, ctx.Err()
		}
		entry.recordVerdict(v)
		switch {
		case v.Outcome == abi.OutcomeCancel:
			return done(entry, "cancel", "")
		case v.Outcome == abi.OutcomeReject:
			return done(entry, "decline", v.OptionID)
		case v.Decided() && v.OptionID == elicitDecline:
			return done(entry, "decline", v.OptionID)
		case v.Decided() && len(a.others) == 0:
			return done(entry, "accept", v.OptionID)
		case v.Decided():
			entry.Reason = "allowed, but the form has fields only a person can fill: " + joinWords(a.others)
		}
	}
	// The editor decides, among the choices a person may see: narrowed as
	// every person's are (personChoices), so that a failed fail-closed
	// plugin or an admin's ask never offers the agent's persist choices
	// that hand later calls to it, and the answer is checked against them.
	shown := e.personChoices(req, v)
	params, err := narrowedElicitation(r.Params, a, shown)
	if err != nil {
		return done(entry, "cancel", "")
	}
	ans, err := c.Ask(ctx, params)
	if err != nil {
		return acp.Reply{}, err
	}
	entry.DecidedBy = ByPerson
	entry.Person = &LogPerson{Shown: idsOfACP(shown)}
	// The whole line is read strictly, as a permission answer is
	// (readAnswer): a result that reads fine inside a line that does not
	// is no answer.
	_, result, rpcErr, err := answer.DecodeEnvelope(bytes.TrimSpace(ans.Line))
	if err == nil && rpcErr != nil {
		entry.Person.Answer = "error"
		return done(entry, "cancel", "")
	}
	action, option, content, ok := readApprovalAnswer(result, a, shown)
	ok = ok && err == nil
	if !ok {
		entry.Person.Answer, entry.Person.Refused = "unreadable", true
		entry.Reason = "the editor's answer did not read as one of the choices offered"
		return done(entry, "cancel", "")
	}
	entry.Person.Answer = action
	if option != "" {
		entry.Person.Answer = option
	}
	return e.deliverApproval(req, a, entry, content, start), nil
}

func idsOfACP(opts []abi.Option) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		out = append(out, o.OptionID)
	}
	return out
}

// approvalResult encodes the agent's answer for a choice.
func approvalResult(action, option string, a approval) json.RawMessage {
	if action != "accept" {
		return marshal(map[string]string{"action": action})
	}
	content := map[string]string{}
	if a.persist != nil {
		content["persist"] = option
	}
	return marshal(map[string]any{"action": "accept", "content": content})
}

// narrowedElicitation is the elicitation for the editor: as the agent sent
// it, or with the persist choices a person may not see removed.
func narrowedElicitation(params json.RawMessage, a approval, shown []abi.Option) (json.RawMessage, error) {
	var keep []choice
	for _, c := range a.persist {
		if slices.ContainsFunc(shown, func(o abi.Option) bool { return o.OptionID == c.value }) {
			keep = append(keep, c)
		}
	}
	if len(keep) == len(a.persist) {
		return nil, nil
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("no persist choice left")
	}
	ms, err := splitObject(params)
	if err != nil {
		return nil, err
	}
	schema, _ := getMember(ms, "requestedSchema")
	sm, err := splitObject(schema)
	if err != nil {
		return nil, err
	}
	props, _ := getMember(sm, "properties")
	pm, err := splitObject(props)
	if err != nil {
		return nil, err
	}
	persist, _ := getMember(pm, "persist")
	per, err := splitObject(persist)
	if err != nil {
		return nil, err
	}
	var one []map[string]string
	for _, c := range keep {
		one = append(one, map[string]string{"const": c.value, "title": c.title})
	}
	per = slices.DeleteFunc(per, func(m member) bool { return m.key == "enum" })
	per = setMember(per, "oneOf", marshal(one))
	if d, ok := getMember(per, "default"); ok {
		if v, _ := jsontext.String(d); !slices.ContainsFunc(keep, func(c choice) bool { return c.value == v }) {
			per = setMember(per, "default", marshal(keep[0].value))
		}
	}
	pm = setMember(pm, "persist", joinObject(per))
	sm = setMember(sm, "properties", joinObject(pm))
	return joinObject(setMember(ms, "requestedSchema", joinObject(sm))), nil
}

// readApprovalAnswer reads the editor's answer to an approval strictly
// and re-encodes it: accept (with a persist choice that was shown, and the
// form's other fields), decline or cancel. ok is false for anything else.
func readApprovalAnswer(result json.RawMessage, a approval, shown []abi.Option) (action, option string, out json.RawMessage, ok bool) {
	f, err := jsontext.Fields(result, "action", "content", "_meta")
	if err != nil {
		return "", "", nil, false
	}
	action, err = jsontext.String(f["action"])
	if err != nil {
		return "", "", nil, false
	}
	switch action {
	case "decline", "cancel":
		return action, "", marshal(map[string]string{"action": action}), true
	case "accept":
	default:
		return "", "", nil, false
	}
	var content []member
	if raw := f["content"]; raw != nil && !jsontext.IsNull(raw) {
		ms, err := jsontext.Object(raw)
		if err != nil {
			return "", "", nil, false
		}
		for _, m := range ms {
			switch {
			case m.Key == "persist" && a.persist != nil:
				v, err := jsontext.String(m.Value)
				if err != nil || !slices.ContainsFunc(shown, func(o abi.Option) bool { return o.OptionID == v }) {
					return "", "", nil, false
				}
				option = v
				content = append(content, member{"persist", marshal(v)})
			case slices.Contains(a.others, m.Key):
				content = append(content, member{m.Key, jsontext.AppendCompact(nil, m.Value)})
			default:
				return "", "", nil, false // a field the form did not ask for
			}
		}
	}
	if a.persist != nil && option == "" {
		// Left out, the agent takes it as once (codex-acp); only when once
		// was offered.
		if !slices.ContainsFunc(shown, func(o abi.Option) bool { return o.OptionID == "once" }) {
			return "", "", nil, false
		}
		option = "once"
	}
	if a.persist == nil {
		option = elicitAccept
	}
	return "accept", option, joinObject([]member{{"action", marshal("accept")}, {"content", joinObject(content)}}), true
}
