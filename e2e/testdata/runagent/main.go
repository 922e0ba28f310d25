// Command runagent is a scripted ACP agent for permhost run's end-to-end
// tests. It answers initialize and session/new, and on session/prompt plays
// one turn chosen by its flags:
//
//	runagent [-stop REASON] [-mode MODE] [-read PATH] [-report FILE]
//
// Modes: "ask" (default: a Bash tool call, a permission request with
// claude-agent-acp's options, the tool's result, the stop reason), "crash"
// (exit 3 mid-turn), "wait-cancel" (ask, then wait for session/cancel and
// stop "cancelled" without waiting for the answer, as claude-agent-acp
// does), "stubborn" (ignore session/cancel), "hostile" (ask, with terminal
// escapes, bidi and zero-width characters in every field a person sees). -read sends fs/read_text_file
// for PATH first and reports the answer as agent text. Every line received
// is appended to the report file.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

var (
	out    = bufio.NewWriter(os.Stdout)
	report *os.File
	lines  = make(chan msg, 100)
)

func send(format string, args ...any) {
	fmt.Fprintf(out, format+"\n", args...)
	out.Flush()
}

func update(sid, u string) {
	send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":%s}}`, sid, u)
}

// next returns the next message, exiting when stdin ends.
func next() msg {
	m, ok := <-lines
	if !ok {
		os.Exit(0)
	}
	return m
}

func main() {
	stop := flag.String("stop", "end_turn", "stop reason")
	mode := flag.String("mode", "ask", "ask, crash, wait-cancel or stubborn")
	read := flag.String("read", "", "path to read through the client first")
	reportPath := flag.String("report", "", "file receiving every line read")
	flag.Parse()
	if *reportPath != "" {
		var err error
		if report, err = os.OpenFile(*reportPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			panic(err)
		}
	}
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				if report != nil {
					report.Write(line)
				}
				var m msg
				if json.Unmarshal(line, &m) == nil {
					lines <- m
				}
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	sid := "run-session"
	for {
		m := next()
		switch m.Method {
		case "initialize":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"runagent","version":"1.0"},"authMethods":[]}}`, m.ID)
		case "session/new":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":%q}}`, m.ID, sid)
		case "session/prompt":
			turn(m.ID, sid, *stop, *mode, *read)
		}
	}
}

// hostile is what the "hostile" mode appends to every field: a terminal
// title (OSC), a screen clear (CSI), a bell, a bidi override, a zero-width
// space, a line separator and a carriage return.
const hostile = "\x1b]2;pwned\x07\x1b[2J\u202e\u200b\u2028\r"

func turn(promptID json.RawMessage, sid, stop, mode, read string) {
	if read != "" {
		send(`{"jsonrpc":"2.0","id":"read-1","method":"fs/read_text_file","params":{"sessionId":%q,"path":%q}}`, sid, read)
		for {
			m := next()
			if string(m.ID) == `"read-1"` {
				var r struct {
					Content string `json:"content"`
				}
				if len(m.Error) > 0 {
					update(sid, fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}`, "read error: "+string(m.Error)+"\n"))
				} else {
					json.Unmarshal(m.Result, &r)
					update(sid, fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}`, "read ok: "+r.Content+"\n"))
				}
				break
			}
		}
	}
	text, title, kind, command := "Cleaning up.\n", "rm -rf build", "execute", "rm -rf build"
	names, kinds := []string{"Always Allow", "Allow", "Reject"}, []string{"allow_always", "allow_once", "reject_once"}
	if mode == "hostile" {
		h := func(field string) string { return field + hostile }
		text, title, kind, command = h("text")+"\n", h("title"), h("kind"), h("command")
		names, kinds = []string{h("name1"), h("name2"), h("name3")}, []string{h("kind1"), h("kind2"), h("kind3")}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	update(sid, fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s}}`, q(text)))
	if mode == "crash" {
		os.Exit(3)
	}
	update(sid, fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":%s,"kind":%s,"status":"pending","rawInput":{"command":%s}}`, q(title), q(kind), q(command)))
	send(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"toolu_1","title":%s,"kind":%s,"rawInput":{"command":%s,"description":"Remove build dir"}},"options":[{"optionId":"allow_always","name":%s,"kind":%s},{"optionId":"allow","name":%s,"kind":%s},{"optionId":"reject","name":%s,"kind":%s}]}}`,
		sid, q(title), q(kind), q(command), q(names[0]), q(kinds[0]), q(names[1]), q(kinds[1]), q(names[2]), q(kinds[2]))
	for {
		m := next()
		switch {
		case m.Method == "session/cancel" && mode != "stubborn":
			// Like claude-agent-acp: stop at once, the answer may come later.
			send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}`, promptID)
			time.Sleep(100 * time.Millisecond) // let the late answer reach the report
			return
		case string(m.ID) == "0" && m.Method == "":
			var r struct {
				Outcome struct {
					Outcome  string `json:"outcome"`
					OptionID string `json:"optionId"`
				} `json:"outcome"`
			}
			json.Unmarshal(m.Result, &r)
			if mode == "wait-cancel" || mode == "stubborn" {
				continue // keep waiting for session/cancel
			}
			status := "failed"
			if r.Outcome.OptionID == "allow" || r.Outcome.OptionID == "allow_always" {
				status = "completed"
			}
			update(sid, fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":%q}`, status))
			update(sid, fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}`, "Answer: "+r.Outcome.Outcome+" "+r.Outcome.OptionID+"\n"))
			send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":%q}}`, promptID, stop)
			return
		}
	}
}
