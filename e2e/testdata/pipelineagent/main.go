// Command pipelineagent is a scripted fake ACP agent for the decision
// pipeline's end-to-end tests. It plays the agent side of a transcript
// (acptest format) loosely: it sends the transcript's agent->client lines
// byte for byte, in order, and before each one waits for the client->agent
// messages recorded before it, matched by kind, method and id rather than by
// bytes. An answer to one of its session/request_permission requests is
// whatever arrives with that id (from the client or from permhost), so a
// policy may change it.
//
// Every line it reads is appended, verbatim, to the report file as it
// arrives, for the test to check what the agent was told; the agent's own
// lines are the transcript's. After the transcript it keeps reporting until
// stdin closes, then exits 0. A message that does not arrive in time is
// reported on stderr and the exit status is 1.
//
//	pipelineagent -transcript FILE -report FILE [-wait D]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/permhost/permhost/internal/acptest"
)

// message is one line read from the client side.
type message struct {
	id       json.RawMessage
	method   string
	response bool
	used     bool
}

// inbox holds what has arrived and not yet been matched.
type inbox struct {
	mu      sync.Mutex
	msgs    []*message
	changed chan struct{}
	eof     bool
}

func (in *inbox) add(m *message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
}

func (in *inbox) end() {
	in.mu.Lock()
	in.eof = true
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
}

// take waits for the first unused message that match accepts and marks it
// used.
func (in *inbox) take(match func(*message) bool, wait time.Duration) (*message, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		in.mu.Lock()
		for _, m := range in.msgs {
			if !m.used && match(m) {
				m.used = true
				in.mu.Unlock()
				return m, nil
			}
		}
		changed, eof := in.changed, in.eof
		in.mu.Unlock()
		if eof {
			return nil, io.ErrUnexpectedEOF
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, fmt.Errorf("not received within %v", wait)
		}
	}
}

func main() {
	transcript := flag.String("transcript", "", "transcript `file` to play (required)")
	report := flag.String("report", "", "`file` to append every received line to (required)")
	wait := flag.Duration("wait", 20*time.Second, "how long to wait for each expected client message")
	flag.Parse()
	if *transcript == "" || *report == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: pipelineagent -transcript FILE -report FILE [-wait D]")
		os.Exit(2)
	}
	tr, err := acptest.LoadTranscript(*transcript)
	check(err)
	rep, err := os.OpenFile(*report, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	check(err)

	in := &inbox{changed: make(chan struct{})}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if !bytes.HasSuffix(line, []byte("\n")) {
					line = append(line, '\n')
				}
				_, werr := rep.Write(line) // one write per line: the test reads it while we run
				check(werr)
				in.add(parse(line))
			}
			if err != nil {
				in.end()
				return
			}
		}
	}()

	out := bufio.NewWriter(os.Stdout)
	for _, e := range tr.Entries {
		if e.Dir == acptest.AgentToClient {
			out.Write(e.Msg)
			out.WriteByte('\n')
			check(out.Flush())
			continue
		}
		want := parse(e.Msg)
		_, err := in.take(func(m *message) bool {
			return m.response == want.response && m.method == want.method && bytes.Equal(m.id, want.id)
		}, *wait)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pipelineagent %s: seq %d (client->agent %s id %s): %v\n", tr.Name, e.Seq, describe(want), want.id, err)
			os.Exit(1)
		}
	}
	<-readerDone
	check(rep.Close())
}

// parse classifies a JSON-RPC line; ids are compared as compact bytes.
func parse(line []byte) *message {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(line, &m)
	var id bytes.Buffer
	if len(m.ID) > 0 && json.Compact(&id, m.ID) == nil {
		m.ID = id.Bytes()
	}
	return &message{id: m.ID, method: m.Method, response: m.Method == "" && m.ID != nil}
}

func describe(m *message) string {
	switch {
	case m.response:
		return "response"
	case m.id == nil:
		return "notification " + m.method
	}
	return "request " + m.method
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipelineagent:", err)
		os.Exit(1)
	}
}
