package acp

import (
	"encoding/json"
	"testing"
)

func TestAdvertisesSteering(t *testing.T) {
	for _, tt := range []struct {
		result string
		want   bool
	}{
		{`{"protocolVersion":1,"_meta":{"steering":{"supported":true}}}`, true},
		{`{"protocolVersion":1}`, false},
		{`{"_meta":{"steering":{"supported":false}}}`, false},
		{`{"_meta":{"steering":{"supported":"true"}}}`, false},
		{`{"_meta":{"steering":{"Supported":true}}}`, false},
		{`{"_meta":{"steering":{"supported":true,"supported":false}}}`, false},
		{`{"_meta":{"steering":true}}`, false},
		{`{"agentCapabilities":{"_meta":{"steering":{"supported":true}}}}`, false},
	} {
		if got := AdvertisesSteering([]byte(tt.result)); got != tt.want {
			t.Errorf("AdvertisesSteering(%s) = %v, want %v", tt.result, got, tt.want)
		}
	}
}

func TestSteeringParams(t *testing.T) {
	got := string(SteeringParams("s1", `say "<no>" & stop`))
	want := `{"_meta":{"steering":{"idleBehavior":"promptRequired"}},"prompt":[{"text":"say \"<no>\" & stop","type":"text"}],"sessionId":"s1"}`
	if got != want || !json.Valid([]byte(got)) {
		t.Errorf("SteeringParams = %s\nwant %s", got, want)
	}
}
