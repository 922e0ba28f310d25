package abi

import _ "embed"

// JSON Schemas (draft 2020-12) of the plugin's input and output, for
// authors in other languages and for validating test fixtures. A test keeps
// them in step with the Go types. Treat the slices as read-only.
var (
	//go:embed request.schema.json
	RequestSchema []byte

	//go:embed decision.schema.json
	DecisionSchema []byte
)
