// Command proxyagent is a fake ACP agent for the proxy's end-to-end tests.
//
//	proxyagent transparent RECORD EMIT  copy stdin to RECORD until EOF, then write EMIT to stdout
//	proxyagent crash                    read one line, send a session/update, exit 3
//	proxyagent linger PIDFILE [stubborn] start a child in the group, write "pid childpid", never exit on EOF
//	proxyagent ordering N               send N (tool_call, request) pairs, every other request a permission request; check their answers
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	switch os.Args[1] {
	case "transparent":
		rec, err := os.Create(os.Args[2])
		check(err)
		_, err = io.Copy(rec, os.Stdin)
		check(err)
		check(rec.Close())
		emit, err := os.ReadFile(os.Args[3])
		check(err)
		_, err = os.Stdout.Write(emit)
		check(err)
	case "crash":
		bufio.NewReader(os.Stdin).ReadString('\n')
		fmt.Println(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working"}}}}`)
		os.Exit(3)
	case "linger":
		if len(os.Args) > 3 && os.Args[3] == "stubborn" {
			signal.Ignore(syscall.SIGTERM)
		}
		child := exec.Command("sleep", "300")
		check(child.Start())
		check(os.WriteFile(os.Args[2], []byte(fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid)), 0o600))
		io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour) // not select{}: the runtime would call that a deadlock
	case "ordering":
		n, err := strconv.Atoi(os.Args[2])
		check(err)
		w := bufio.NewWriter(os.Stdout)
		go func() {
			for i := range n {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"step %d","status":"pending"}}}`+"\n", i, i)
				if i%2 == 1 { // a request the proxy does not intercept
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":"r%d","method":"fs/read_text_file","params":{"sessionId":"s","path":"/f%d"}}`+"\n", i, i)
					continue
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t%d"},"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}}`+"\n", i, i)
			}
			check(w.Flush())
		}()
		r := bufio.NewReader(os.Stdin)
		seen := map[string]bool{}
		for len(seen) < (n+1)/2 {
			line, err := r.ReadString('\n')
			check(err)
			seen[line] = true
		}
		for i := 0; i < n; i += 2 {
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"ok"}}}`+"\n", i)
			if !seen[want] {
				fmt.Fprintf(os.Stderr, "proxyagent: answer %d missing\n", i)
				os.Exit(1)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "proxyagent: unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxyagent:", err)
		os.Exit(1)
	}
}
