// Command rawpipe is the baseline that permhost proxy's passthrough is
// measured against: it starts a program and copies bytes between its own
// stdin/stdout and the program's, nothing else — the same process topology
// as `permhost proxy -- AGENT` without looking at the messages.
//
//	rawpipe PROGRAM [ARGS...]
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rawpipe PROGRAM [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	check(err)
	out, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
	}()
	io.Copy(os.Stdout, out)
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "rawpipe:", err)
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawpipe:", err)
		os.Exit(1)
	}
}
