//go:build !linux

package prompt

import (
	"context"
	"errors"
	"os"
)

// IsTerminal reports whether f is a terminal; the prompt supports Linux
// terminals only, so elsewhere it reports false and run falls back.
func IsTerminal(f *os.File) bool { return false }

func cbreak(*os.File) (func(), error) { return nil, ErrNotTerminal }
func discardTypeahead(*os.File)       {}
func readKeys(context.Context, *os.File, []byte) (int, error) {
	return 0, errors.New("prompt: unsupported platform")
}
