// Command fakeagent plays the agent side of a recorded ACP transcript on
// stdin/stdout: it writes the transcript's agent->client lines in order, each
// only after every client->agent line before it has arrived byte for byte,
// then waits for stdin to close. Any difference is reported on stderr and
// the exit status is 1.
//
// Tests build and run it through acptest.FakeAgent.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/permhost/permhost/internal/acptest"
)

func main() {
	transcript := flag.String("transcript", "", "transcript `file` to play (required)")
	lineTimeout := flag.Duration("line-timeout", acptest.DefaultLineTimeout, "how long to wait for each expected client line")
	flag.Parse()
	if *transcript == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: fakeagent -transcript FILE [-line-timeout D]")
		os.Exit(2)
	}
	tr, err := acptest.LoadTranscript(*transcript)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := acptest.Player{Side: acptest.Agent, LineTimeout: *lineTimeout}
	if err := p.Play(ctx, tr, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent %s: %v\n", tr.Name, err)
		stop()
		os.Exit(1)
	}
}
