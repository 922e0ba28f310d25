package acp

import (
	"bytes"
	"encoding/json"

	"github.com/permhost/permhost/internal/jsontext"
)

// This file is the _session/steering extension: how permhost tells an
// agent's model why a call was refused. ACP has no field for a reject's
// reason; claude-agent-acp (0.79 on) and codex-acp (1.12 on) serve this
// request instead (codex-acp src/AcpExtensions.ts SessionSteerRequest,
// claude-agent-acp STEER_METHOD): the prompt is injected into the running
// turn as the user's words, and the agent answers {outcome: "injected" |
// "startedNewTurn" | "promptRequired" | "failed"}. Both advertise it in
// their initialize result as _meta.steering.supported = true, in ACP v1
// and v2 alike.

// MethodSessionSteering is the steering request's method.
const MethodSessionSteering = "_session/steering"

// SteeringParams returns the params of a _session/steering request that
// tells session sessionID's model text. They ask, with
// _meta.steering.idleBehavior "promptRequired" (claude-agent-acp #919),
// that an agent whose turn already ended start no turn of its own: a turn
// no editor prompt owns would run with nobody to cancel or follow it.
func SteeringParams(sessionID, text string) json.RawMessage {
	b, _ := marshalNoEscape(map[string]any{
		"sessionId": sessionID,
		"prompt":    []map[string]string{{"type": "text", "text": text}},
		"_meta":     map[string]any{"steering": map[string]string{"idleBehavior": "promptRequired"}},
	})
	return b
}

// AdvertisesSteering reports whether an initialize result says the agent
// serves _session/steering: _meta.steering.supported is exactly true, read
// with exact keys (anything that does not read one way only is no).
func AdvertisesSteering(result []byte) bool {
	v := []byte(result)
	for _, k := range []string{"_meta", "steering", "supported"} {
		f, err := jsontext.Lookup(v, k)
		if err != nil {
			return false
		}
		if v = f[k]; v == nil {
			return false
		}
	}
	return string(bytes.TrimSpace(v)) == "true"
}

// OwnRequest is a request of permhost's own to send the agent; see
// Response.FollowUp.
type OwnRequest struct {
	Method string
	Params json.RawMessage
}
