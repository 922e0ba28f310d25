// Command team-rules is a permhost plugin: a team's allow, reject and ask
// rules over tool kinds, command prefixes, path globs and URL domains, taken
// from the plugin's [plugin.config]. See README.md for the rule language.
//
// Build with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o team-rules.wasm .
package main

import (
	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/plugins/pdk"
)

func init() {
	pdk.Register(pdk.Plugin{
		Info: abi.Info{
			Name:        "team-rules",
			Version:     "1.0.0",
			Description: "Configured allow, reject and ask rules over tool kind, command prefixes, path globs and URL domains.",
			ConfigKeys:  []string{"rules"},
		},
		Decide:      decide,
		CheckConfig: checkConfig,
	})
}

// -buildmode=c-shared runs init but never main.
func main() {}
