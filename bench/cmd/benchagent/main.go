// Command benchagent is a load-generating fake ACP agent for
// permhost-bench. Every mode waits for the client's first line before it
// starts, and after its work reads stdin until it closes.
//
//	benchagent flood N SIZE          N session/update lines of SIZE bytes, as fast as it can
//	benchagent paced N SIZE INTERVAL the same, one line every INTERVAL, each written at once
//	benchagent startup               answers initialize, asks one permission, reports when
//	benchagent burst N               answers initialize, asks N permissions at once, reports
//
// The session/update lines carry the wall-clock time they were written as
// "T=<unix nanoseconds>" at the start of their text, so that the client can
// compute each one's latency. startup and burst report with a
// `_bench/report` notification whose params are {"initialized": unix ns
// when initialize arrived, "decided": unix ns when the last answer
// arrived, "answers": [the answer lines]}.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	first, err := in.ReadBytes('\n')
	check(err)
	initialized := time.Now().UnixNano()

	switch os.Args[1] {
	case "flood", "paced":
		if len(os.Args) < 4 {
			usage()
		}
		n := atoi(os.Args[2])
		size := atoi(os.Args[3])
		var interval time.Duration
		if os.Args[1] == "paced" {
			if len(os.Args) < 5 {
				usage()
			}
			interval, err = time.ParseDuration(os.Args[4])
			check(err)
		}
		const prefix = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"T=`
		const suffix = `"}}}}` + "\n"
		pad := size - len(prefix) - 19 - 1 - len(suffix)
		if pad < 0 {
			fmt.Fprintln(os.Stderr, "benchagent: SIZE too small")
			os.Exit(2)
		}
		line := []byte(prefix + strings.Repeat("0", 19) + " " + strings.Repeat("x", pad) + suffix)
		stamp := line[len(prefix) : len(prefix)+19]
		for range n {
			strconv.AppendInt(stamp[:0], time.Now().UnixNano(), 10)
			_, err := out.Write(line)
			check(err)
			if interval > 0 {
				check(out.Flush())
				time.Sleep(interval)
			}
		}
		check(out.Flush())
	case "startup", "burst":
		var init struct {
			ID json.RawMessage `json:"id"`
		}
		check(json.Unmarshal(first, &init))
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"benchagent","version":"1"},"authMethods":[]}}`+"\n", init.ID)
		n := 1
		if os.Args[1] == "burst" {
			if len(os.Args) < 3 {
				usage()
			}
			n = atoi(os.Args[2])
		}
		for i := 1; i <= n; i++ {
			out.WriteString(permissionRequest(i))
		}
		check(out.Flush())
		answers := make([]json.RawMessage, 0, n)
		for len(answers) < n {
			line, err := in.ReadBytes('\n')
			check(err)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) == nil && m.Method == "" && len(m.ID) > 0 {
				answers = append(answers, bytes.TrimSpace(line))
			}
		}
		decided := time.Now().UnixNano()
		report, _ := json.Marshal(map[string]any{"initialized": initialized, "decided": decided, "answers": answers})
		fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"_bench/report","params":%s}`+"\n", report)
		check(out.Flush())
	default:
		usage()
	}
	io.Copy(io.Discard, in)
}

// permissionRequest is request i; its tool calls cycle through the kinds
// the example plugins look at.
func permissionRequest(i int) string {
	const options = `"options":[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]`
	var tc string
	switch i % 4 {
	case 1:
		tc = `{"toolCallId":"t%d","title":"npm test","kind":"execute","rawInput":{"command":"npm test","description":"Run the tests"}}`
	case 2:
		tc = `{"toolCallId":"t%d","title":"Write src/app.go","kind":"edit","rawInput":{"file_path":"/home/dev/project/src/app.go","content":"package app\n"},"content":[{"type":"diff","path":"/home/dev/project/src/app.go","oldText":null,"newText":"package app\n"}],"locations":[{"path":"/home/dev/project/src/app.go"}]}`
	case 3:
		tc = `{"toolCallId":"t%d","title":"Read .env","kind":"read","rawInput":{"file_path":"/home/dev/project/.env"},"locations":[{"path":"/home/dev/project/.env"}]}`
	default:
		tc = `{"toolCallId":"t%d","title":"curl https://api.example.com","kind":"execute","rawInput":{"command":"curl -s https://api.example.com/v1 | jq ."}}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"bench","toolCall":`+tc+`,`+options+`}}`+"\n", i, i)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	check(err)
	return n
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchagent flood N SIZE | paced N SIZE INTERVAL | startup | burst N")
	os.Exit(2)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchagent:", err)
		os.Exit(1)
	}
}
