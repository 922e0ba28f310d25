package main

import (
	"context"
	"io"
	"os"

	"github.com/permhost/permhost/internal/worker"
)

// The plugin worker is the child side of `isolation = "process"`: permhost
// re-executes itself with this hidden command for each such plugin, and
// talks to it over its stdin and stdout (internal/worker). It is not meant
// to be run by hand.
func init() {
	commands[worker.Command] = command{summary: "serve one plugin to its parent permhost (internal)", run: runWorker, hidden: true}
}

func runWorker(ctx context.Context, _ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The wire protocol needs the real descriptors, unbuffered: frames are
	// written whole.
	if stdin != os.Stdin || stdout != os.Stdout {
		io.WriteString(stderr, "permhost plugin-worker: must be run on its own stdio by a parent permhost\n")
		return exitUsage
	}
	return worker.Serve(ctx, stdin, stdout, stderr)
}
