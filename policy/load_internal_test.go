package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/stdplugins"
)

// TestPluginOptionsTrustOnlyEmbeddedModules: only a standard plugin whose
// bytes are the embedded ones runs on the caller's goroutine
// (host.Options.Trusted); a file or a bundle's module, under any name, runs
// on its instance's goroutine.
func TestPluginOptionsTrustOnlyEmbeddedModules(t *testing.T) {
	embedded, err := stdplugins.Module("team-rules")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{}
	for _, tc := range []struct {
		name    string
		pc      config.Plugin
		trusted bool
	}{
		{"std: embedded", config.Plugin{Name: "team-rules", Std: "team-rules"}, true},
		{"a file", config.Plugin{Name: "team-rules", Path: "team-rules.wasm"}, false},
		{"a bundle's module named as a standard one", config.Plugin{Name: "team-rules", Std: "team-rules", Wasm: []byte("\x00asm\x01\x00\x00\x00")}, false},
		{"an unknown standard name", config.Plugin{Name: "x", Std: "no-such-plugin", Path: "x.wasm"}, false},
	} {
		o := e.pluginOptions(tc.pc)
		assert.Equal(t, tc.trusted, o.Trusted, tc.name)
		if tc.trusted {
			assert.Equal(t, embedded, o.Wasm, tc.name)
		}
	}
}
