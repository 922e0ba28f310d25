package policy

import (
	"encoding/json"

	"github.com/permhost/permhost/internal/profile"
)

// configOptionParams are the params of permhost's own
// session/set_config_option moving session sid's mode option to target:
// ACP v2's shape, {sessionId, configId, type:"id", value}, when the agent
// names its options as v2 does (configId), else v1's.
func configOptionParams(sid string, m profile.SessionModes, target string) json.RawMessage {
	if m.ConfigIDType {
		return marshal(struct {
			SessionID string `json:"sessionId"`
			ConfigID  string `json:"configId"`
			Type      string `json:"type"`
			Value     string `json:"value"`
		}{sid, m.ConfigOption, "id", target})
	}
	return marshal(map[string]string{"sessionId": sid, "configId": m.ConfigOption, "value": target})
}
