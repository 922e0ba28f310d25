// Command workeragent is a fake ACP agent for the process-isolation tests:
// it asks permission for one tool call after another and reports what it
// was answered.
//
//	workeragent REPORT TITLE...   for each TITLE, a tool_call and its
//	                              session/request_permission (options allow
//	                              and reject); the next one only after the
//	                              answer. A TITLE "until-reject:T" repeats T
//	                              until the answer is reject (at most 900
//	                              times, 100 ms apart: past the chain's
//	                              30 s quarantine of a plugin that failed
//	                              three times in a row). Each answer's
//	                              optionId, or "cancelled", is appended to
//	                              REPORT as "TITLE ANSWER".
//	workeragent hold TITLE        one request, then wait for EOF without
//	                              reading its answer
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	r := bufio.NewReader(os.Stdin)
	id := 0
	ask := func(title string) {
		id++
		t, _ := json.Marshal(title)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t%d","title":%s,"kind":"execute","status":"pending","rawInput":{"command":"ls"}}}}`+"\n", id, t)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t%d"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`+"\n", id, id)
		check(w.Flush())
	}
	if os.Args[1] == "hold" {
		ask(os.Args[2])
		io.Copy(io.Discard, r)
		return
	}
	answer := func() string {
		for {
			line, err := r.ReadString('\n')
			check(err)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result *struct {
					Outcome struct {
						Outcome  string `json:"outcome"`
						OptionID string `json:"optionId"`
					} `json:"outcome"`
				} `json:"result"`
			}
			if json.Unmarshal([]byte(line), &m) != nil || string(m.ID) != fmt.Sprint(id) || m.Result == nil {
				continue
			}
			if m.Result.Outcome.Outcome == "cancelled" {
				return "cancelled"
			}
			return m.Result.Outcome.OptionID
		}
	}
	report, err := os.Create(os.Args[1])
	check(err)
	for _, title := range os.Args[2:] {
		if t, ok := strings.CutPrefix(title, "until-reject:"); ok {
			for i := 0; ; i++ {
				ask(t)
				a := answer()
				if a == "reject" || i == 900 {
					fmt.Fprintf(report, "%s %s after %d\n", title, a, i+1)
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		ask(title)
		fmt.Fprintf(report, "%s %s\n", title, answer())
	}
	check(report.Close())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "workeragent:", err)
		os.Exit(1)
	}
}
