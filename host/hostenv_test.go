package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/permhost/permhost/abi"
)

// TestHostEnv: a plugin that moves its input and output only through
// permhost:host/env (testdata/host_env.wat) gets the request's bytes where
// it asked, and its answer is the bytes it wrote; misuse fails the call with
// the kind the kernel's own functions give, never an answer.
func TestHostEnv(t *testing.T) {
	p := load(t, "host_env", Options{PoolSize: 1})
	if p.ABI() != (abi.Version{Major: 1, Minor: abi.MinorHostEnv}) {
		t.Fatalf("abi %v", p.ABI())
	}
	req := request("host-env-1")
	wire, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The plugin answers with the request's last 8 bytes: input_read put
	// the whole request where the plugin looked.
	if want := string(wire[len(wire)-8:]); d.Outcome != abi.OutcomeAllow || d.Reason != want {
		t.Errorf("decision %+v, want allow with reason %q", d, want)
	}

	for _, tt := range []struct {
		marker  string
		kind    Kind
		message string
	}{
		{"PASTEND!", KindTrap, "input_read: "},
		{"OUTSIDE!", KindTrap, "output_write: 16 bytes at address 65530 lie outside linear memory"},
		{"HUGE!", KindOutputTooLarge, "output of 2097152 bytes exceeds the limit"},
		{"EMPTY!", KindBadOutput, ""},
	} {
		t.Run(tt.marker, func(t *testing.T) {
			_, err := p.Decide(context.Background(), request(tt.marker))
			e := requireKind(t, err, tt.kind)
			if !strings.Contains(e.Error(), tt.message) {
				t.Errorf("error %q, want it to say %q", e.Error(), tt.message)
			}
		})
	}
	// The instance each failure discarded was replaced: the plugin answers.
	if d, err := p.Decide(context.Background(), req); err != nil || d.Reason != string(wire[len(wire)-8:]) {
		t.Errorf("after the failures: %+v, %v", d, err)
	}
}
