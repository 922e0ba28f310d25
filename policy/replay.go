package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/acp"
	"github.com/permhost/permhost/host"
)

// ReplayLine is one recorded ACP message and who sent it.
type ReplayLine struct {
	FromAgent bool
	Msg       []byte
}

// ReadRecording reads recorded ACP traffic: the transcript format of
// shared/transcripts ({"seq","ts","dir","msg"} per line) or plain ACP lines,
// whose direction is inferred from the message (methods each side sends,
// responses matched to the other side's pending requests).
func ReadRecording(r io.Reader) ([]ReplayLine, error) {
	br := bufio.NewReader(r)
	var out []ReplayLine
	pending := map[string]bool{} // "agent:<id>" / "client:<id>" requests awaiting a response
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			rl, perr := recordedLine(line, pending)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			out = append(out, rl)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

type envelope struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

type rpcShape struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// agentMethods are the methods an agent sends (ACP v1 and unstable).
var agentMethods = map[string]bool{
	"session/request_permission": true, "session/update": true, "fs/read_text_file": true, "fs/write_text_file": true,
	"terminal/create": true, "terminal/output": true, "terminal/release": true, "terminal/wait_for_exit": true,
	"terminal/kill": true, "elicitation/create": true, "elicitation/complete": true,
}

func recordedLine(line []byte, pending map[string]bool) (ReplayLine, error) {
	var env envelope
	if json.Unmarshal(line, &env) == nil && env.Dir != "" && len(env.Msg) > 0 {
		switch env.Dir {
		case "agent->client":
			return ReplayLine{FromAgent: true, Msg: env.Msg}, nil
		case "client->agent":
			return ReplayLine{Msg: env.Msg}, nil
		}
		return ReplayLine{}, fmt.Errorf("unknown dir %q", env.Dir)
	}
	var m rpcShape
	if err := json.Unmarshal(line, &m); err != nil {
		return ReplayLine{}, fmt.Errorf("neither a transcript line nor a JSON-RPC message: %v", err)
	}
	id := string(m.ID)
	switch {
	case m.Method != "":
		fromAgent := agentMethods[m.Method]
		if m.ID != nil {
			if fromAgent {
				pending["agent:"+id] = true
			} else {
				pending["client:"+id] = true
			}
		}
		return ReplayLine{FromAgent: fromAgent, Msg: line}, nil
	case m.Result != nil || m.Error != nil:
		// A response comes from the side that did not send the request.
		// When both sides have one pending with this id, a permission
		// outcome is the client's.
		agentPending, clientPending := pending["agent:"+id], pending["client:"+id]
		fromAgent := clientPending && (!agentPending || !bytes.Contains(m.Result, []byte(`"outcome"`)))
		if fromAgent {
			delete(pending, "client:"+id)
		} else {
			delete(pending, "agent:"+id)
		}
		return ReplayLine{FromAgent: fromAgent, Msg: line}, nil
	}
	return ReplayLine{}, errors.New("not a JSON-RPC request, notification or response")
}

// ReplayRow is one permission request of a recording, decided again.
type ReplayRow struct {
	Index      int    `json:"index"` // 1-based position among the recording's messages
	Session    string `json:"session"`
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	// Today is what today's policy does: an option id, "cancelled", or
	// "ask" when it would put the request to the person.
	Today     string `json:"today"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Actual is what the recording answered: an option id, "cancelled",
	// "error" or "" when it holds no answer.
	Actual string `json:"actual"`
	// Differs is set when today's policy would answer by itself and not
	// as the recording did.
	Differs bool `json:"differs"`
}

// Replay rebuilds session and tool-call state from a recording, exactly as
// the proxy would, and runs every permission request through today's chain.
func (e *Engine) Replay(ctx context.Context, lines []ReplayLine) ([]ReplayRow, error) {
	type seen struct {
		pr    *acp.PermissionRequest
		index int
	}
	reqs := make(chan seen, len(lines)+1)
	var index atomic.Int64 // the message being fed
	handler := acp.HandlerFunc(func(ctx context.Context, pr *acp.PermissionRequest, c acp.Client) (acp.Response, error) {
		reqs <- seen{pr, int(index.Load())}
		a, err := c.Ask(ctx, nil)
		if err != nil {
			return acp.Response{}, err
		}
		return acp.Response{Line: a.Line}, nil
	})
	proxy, err := acp.NewProxy(acp.Options{Handler: handler, MaxLineBytes: 1 << 30})
	if err != nil {
		return nil, err
	}
	clientInR, clientInW := io.Pipe()
	clientOutR, clientOutW := io.Pipe()
	agentInR, agentInW := io.Pipe()
	agentOutR, agentOutW := io.Pipe()
	toClient, toAgent := lineChan(clientOutR), lineChan(agentInR)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- proxy.Run(runCtx, clientInR, clientOutW, agentInW, agentOutR) }()

	// Feed one message at a time and wait for it to come out on the other
	// side, so that state follows the recorded order across directions.
	for i, l := range lines {
		index.Store(int64(i + 1))
		w, out := clientInW, toAgent
		if l.FromAgent {
			w, out = agentOutW, toClient
		}
		if _, err := w.Write(append(bytes.Clone(l.Msg), '\n')); err != nil {
			return nil, err
		}
		select {
		case <-out:
		case <-time.After(3 * time.Second):
			// Not every message is relayed (a request the proxy answered
			// itself); go on.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	clientInW.Close()
	agentOutW.Close()
	<-done
	close(reqs)

	var rows []ReplayRow
	actualFor := recordedAnswers(lines)
	for s := range reqs {
		req, err := BuildRequest(s.pr, newDecisionID(), e.home)
		row := ReplayRow{Index: s.index, Session: s.pr.SessionID, ToolCallID: s.pr.ToolCallID}
		row.Title, row.Kind = req.ToolCall.Title, req.ToolCall.Kind
		row.Actual = actualFor(s.index, string(s.pr.ID))
		if err != nil {
			row.Today, row.Reason = "ask", "fallback: "+err.Error()
		} else {
			v := e.Run(ctx, req)
			row.Today, row.DecidedBy, row.Reason = todayOf(v), v.DecidedBy, v.Reason
			if v.Fallback != "" && row.Reason == "" {
				row.Reason = "fallback: " + v.Fallback
			}
		}
		row.Differs = row.Today != "ask" && row.Actual != "" && row.Today != row.Actual
		rows = append(rows, row)
	}
	return rows, nil
}

func todayOf(v host.Verdict) string {
	switch {
	case v.Outcome == abi.OutcomeCancel:
		return "cancelled"
	case v.Decided():
		return v.OptionID
	}
	return "ask"
}

func answerOf(m rpcShape) string {
	if m.Error != nil {
		return "error"
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(m.Result, &r)
	if r.Outcome.Outcome == "selected" {
		return r.Outcome.OptionID
	}
	return r.Outcome.Outcome
}

// recordedAnswers returns a function giving, for the permission request at
// index with id, the client's response that followed it.
func recordedAnswers(lines []ReplayLine) func(index int, id string) string {
	return func(index int, id string) string {
		for _, l := range lines[index:] {
			if l.FromAgent {
				continue
			}
			var m rpcShape
			if json.Unmarshal(l.Msg, &m) == nil && m.Method == "" && string(m.ID) == id {
				return answerOf(m)
			}
		}
		return ""
	}
}

// lineChan delivers the lines read from r.
func lineChan(r io.Reader) <-chan []byte {
	ch := make(chan []byte, 1024)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				ch <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
