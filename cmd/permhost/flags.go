package main

import (
	"errors"
	"flag"
	"io"
)

// newFlagSet returns a command's flag set; its errors and usage go to
// stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args. When it returns false the command returns code at
// once: exitOK after -h (the usage is printed), exitUsage after a bad flag
// (the flag package said why).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	default:
		return exitUsage, false
	}
}
