package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a command's flag set. Its errors go to stderr; its
// Usage must write to fs.Output(), which parseFlags points at stdout for -h
// (help asked for is output, and `permhost run -h | less` must show it) and
// leaves on stderr after a mistake.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args. When it returns false the command returns code at
// once: exitOK after -h (the usage is printed on stdout), exitUsage after a
// bad flag (the flag package said why on stderr, followed by the usage).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	usage := fs.Usage
	if usage == nil {
		usage = func() {
			fmt.Fprintf(fs.Output(), "usage of permhost %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	fs.Usage = func() {} // printed below, on the stream that fits
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		stderr := fs.Output()
		fs.SetOutput(stdout)
		usage()
		fs.SetOutput(stderr)
		return exitOK, false
	default:
		usage()
		return exitUsage, false
	}
}
