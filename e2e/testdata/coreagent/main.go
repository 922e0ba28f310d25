// Command coreagent is a scripted fake ACP agent for the end-to-end tests of
// the proxy's core (strict answers, batches, writers, bounds, signals).
//
//	coreagent script SCRIPT RECORD  run SCRIPT, then read stdin to its end; every line read goes to RECORD
//	coreagent deaf PIDFILE          write its pid, never read stdin, never exit on its own
//
// A script has one step a line:
//
//	> LINE      write LINE (and "\n") to stdout
//	< TEXT      read stdin lines until one contains TEXT
//	! N ID      write N KiB of plain session/update lines to stdout, reading nothing
//	            meanwhile: the write blocks until the proxy drains it
//	@ N         write one session/update line of N MiB (an image chunk)
//	# ...       a comment
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	switch os.Args[1] {
	case "script":
		script(os.Args[2], os.Args[3])
	case "deaf":
		check(os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())), 0o600))
		time.Sleep(time.Hour) // not select{}: the runtime would call that a deadlock
	default:
		fmt.Fprintln(os.Stderr, "coreagent: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func script(path, record string) {
	steps, err := os.ReadFile(path)
	check(err)
	rec, err := os.Create(record)
	check(err)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	readLine := func() string {
		line, err := in.ReadString('\n')
		if line != "" {
			_, werr := rec.WriteString(line)
			check(werr)
		}
		if err == io.EOF {
			fmt.Fprintln(os.Stderr, "coreagent: stdin ended in the script")
			os.Exit(1)
		}
		check(err)
		return line
	}
	for _, step := range strings.Split(string(steps), "\n") {
		if len(step) < 2 || step[0] == '#' {
			continue
		}
		op, arg := step[0], step[2:]
		switch op {
		case '>':
			_, err := out.WriteString(arg + "\n")
			check(err)
			check(out.Flush())
		case '<':
			for !strings.Contains(readLine(), arg) {
			}
		case '!':
			var kib int
			var id string
			_, err := fmt.Sscan(arg, &kib, &id)
			check(err)
			pad := strings.Repeat("x", 1000)
			for i := range kib {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s %d %s"}}}}`+"\n", id, i, pad)
			}
			check(out.Flush())
		case '@':
			mib, err := strconv.Atoi(arg)
			check(err)
			fmt.Fprint(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","mimeType":"image/png","data":"`)
			chunk := strings.Repeat("QUJD", 1<<10)
			for range mib << 8 {
				_, err := out.WriteString(chunk)
				check(err)
			}
			fmt.Fprint(out, `"}}}}`+"\n")
			check(out.Flush())
		default:
			fmt.Fprintf(os.Stderr, "coreagent: bad step %q\n", step)
			os.Exit(2)
		}
	}
	_, err = io.Copy(rec, in)
	check(err)
	check(rec.Close())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "coreagent:", err)
		os.Exit(1)
	}
}
