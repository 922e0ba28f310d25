package abi

import (
	"bytes"
	"encoding/json"
)

// The required list fields of the schema encode as [] when nil, never as
// null, so that plugins in typed languages (a Rust Vec, an AssemblyScript
// Array) can decode every request without special cases.

// MarshalJSON encodes r with a nil Options as [].
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request // without the method
	p := plain(r)
	if p.Options == nil {
		p.Options = []Option{}
	}
	return marshalNoEscape(p)
}

// MarshalJSON encodes s with a nil Commands as [].
func (s Shell) MarshalJSON() ([]byte, error) {
	type plain Shell
	p := plain(s)
	if p.Commands == nil {
		p.Commands = []Command{}
	}
	return marshalNoEscape(p)
}

// MarshalJSON encodes c with a nil Argv as [].
func (c Command) MarshalJSON() ([]byte, error) {
	type plain Command
	p := plain(c)
	if p.Argv == nil {
		p.Argv = []string{}
	}
	return marshalNoEscape(p)
}

// marshalNoEscape leaves <, > and & as they are: the caller's encoder
// decides about escaping, and json.Marshal would escape them for it.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
