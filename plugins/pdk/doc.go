// Package pdk turns a Go function into a permhost plugin.
//
// A plugin is a main package built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm .
//
// that registers itself from init and has an empty main (with
// -buildmode=c-shared the runtime runs init functions but never main):
//
//	func init() {
//		pdk.Register(pdk.Plugin{
//			Info:   abi.Info{Name: "plan-mode", Version: "1.0.0"},
//			Decide: decide,
//		})
//	}
//
//	func decide(req abi.Request) (abi.Decision, error) { ... }
//
//	func main() {}
//
// The package belongs to the module github.com/permhost/permhost, with
// [github.com/permhost/permhost/abi]: a plugin's module requires that one
// module (go get github.com/permhost/permhost@VERSION), and builds with
// nothing else from it but github.com/extism/go-pdk.
//
// Importing this package is what makes the module a plugin: built for
// wasip1 it exports permhost_decide, permhost_abi, permhost_describe and
// permhost_check_config (see docs/abi.md) over the Extism host functions
// of github.com/extism/go-pdk.
// Built for any other platform it exports nothing, so that a plugin's decide
// function can be unit-tested with an ordinary go test.
//
// Register reports the ABI version of the abi package it is built with
// (1.1): decide on the request's Action and Shell, which permhost fills the
// same way whichever agent asks; [CommandText] and [Feeds] help with them.
//
// A decide function that returns an error, panics, or returns a decision that
// fails [abi.Decision.Validate] makes the call fail; permhost then applies
// the plugin's failure_policy (by default the conservative builtin
// fallback). Failure never turns into an allow.
package pdk
