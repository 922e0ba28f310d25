package acptest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// journal records every line crossing either wire, in crossing order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

// relay copies lines from src to dst, journaling each before passing it on,
// so the journal order is an order the receiver could have observed.
func (j *journal) relay(src io.Reader, dst *io.PipeWriter) {
	br := bufio.NewReader(src)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			j.mu.Lock()
			j.lines = append(j.lines, string(b))
			j.mu.Unlock()
			if _, werr := dst.Write(b); werr != nil {
				return
			}
		}
		if err != nil {
			dst.CloseWithError(err)
			return
		}
	}
}

// playBoth plays client and agent against each other in process and returns
// both results and the journal.
func playBoth(t *testing.T, clientTr, agentTr *Transcript, timeout time.Duration) (j *journal, clientErr, agentErr error) {
	t.Helper()
	j = &journal{}
	c2aR, c2aW := io.Pipe()   // client writes
	c2aR2, c2aW2 := io.Pipe() // agent reads
	a2cR, a2cW := io.Pipe()
	a2cR2, a2cW2 := io.Pipe()
	go j.relay(c2aR, c2aW2)
	go j.relay(a2cR, a2cW2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &Player{Side: Client, LineTimeout: timeout, CloseAfterScript: true}
	agent := &Player{Side: Agent, LineTimeout: timeout}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		agentErr = agent.Play(ctx, agentTr, c2aR2, a2cW)
		a2cW.Close() // the agent exits: its stdout closes
		c2aR2.Close()
	}()
	clientErr = client.Play(ctx, clientTr, a2cR2, c2aW)
	c2aW.Close()
	a2cR2.Close()
	wg.Wait()
	return j, clientErr, agentErr
}

// checkCausality verifies that in the journal every line was sent only
// after all lines of the other direction that precede it in tr.
func checkCausality(t *testing.T, tr *Transcript, lines []string) {
	t.Helper()
	pos := map[string][]int{} // line -> journal positions (lines may repeat)
	for i, l := range lines {
		pos[l] = append(pos[l], i)
	}
	used := map[string]int{}
	at := make([]int, len(tr.Entries))
	for i, e := range tr.Entries {
		l := string(line(e.Msg))
		n := used[l]
		if n >= len(pos[l]) {
			t.Fatalf("seq %d never crossed the wire", e.Seq)
		}
		at[i] = pos[l][n]
		used[l] = n + 1
	}
	for i, e := range tr.Entries {
		for k := 0; k < i; k++ {
			if tr.Entries[k].Dir != e.Dir && at[k] > at[i] {
				t.Errorf("seq %d (%s) crossed before seq %d (%s) that it depends on", e.Seq, e.Dir, tr.Entries[k].Seq, tr.Entries[k].Dir)
			}
		}
	}
}

func TestPlayersReplaySharedTranscripts(t *testing.T) {
	for _, path := range TranscriptFiles(t) {
		tr, err := LoadTranscript(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tr.Name, func(t *testing.T) {
			t.Parallel()
			j, clientErr, agentErr := playBoth(t, tr, tr, 5*time.Second)
			if clientErr != nil || agentErr != nil {
				t.Fatalf("client: %v\nagent: %v", clientErr, agentErr)
			}
			if len(j.lines) != len(tr.Entries) {
				t.Fatalf("%d lines crossed, transcript has %d", len(j.lines), len(tr.Entries))
			}
			checkCausality(t, tr, j.lines)
		})
	}
}

func script(lines ...string) *Transcript {
	tr := &Transcript{Name: "script"}
	for _, l := range lines {
		dir, msg, _ := strings.Cut(l, " ")
		tr.Append(Direction(dir), msg)
	}
	return tr
}

func TestPlayerReportsDifferences(t *testing.T) {
	base := script(
		`client->agent {"jsonrpc":"2.0","id":0,"method":"initialize"}`,
		`agent->client {"jsonrpc":"2.0","id":0,"result":{"n":12345678901234567890}}`,
		`client->agent {"jsonrpc":"2.0","method":"session/cancel"}`,
	)
	tests := []struct {
		name              string
		clientTr, agentTr *Transcript
		check             func(t *testing.T, clientErr, agentErr error)
	}{{
		name:     "agent sends other bytes",
		clientTr: base,
		agentTr: script(
			`client->agent {"jsonrpc":"2.0","id":0,"method":"initialize"}`,
			`agent->client {"jsonrpc":"2.0","id":0,"result":{"n":12345678901234567000}}`,
			`client->agent {"jsonrpc":"2.0","method":"session/cancel"}`,
		),
		check: func(t *testing.T, clientErr, agentErr error) {
			var m *MismatchError
			if !errors.As(clientErr, &m) {
				t.Fatalf("client error = %v, want a MismatchError", clientErr)
			}
			if m.Seq != 2 || m.Dir != AgentToClient {
				t.Errorf("mismatch at seq %d %s, want seq 2 agent->client", m.Seq, m.Dir)
			}
			if !strings.Contains(m.Error(), "first difference at byte 55") {
				t.Errorf("message lacks the offset: %v", m)
			}
		},
	}, {
		name:     "client sends other bytes",
		clientTr: script(`client->agent {"jsonrpc":"2.0", "id":0,"method":"initialize"}`, base.Entries[1].dir(), base.Entries[2].dir()),
		agentTr:  base,
		check: func(t *testing.T, clientErr, agentErr error) {
			var m *MismatchError
			if !errors.As(agentErr, &m) || m.Seq != 1 || m.Dir != ClientToAgent {
				t.Fatalf("agent error = %v, want a MismatchError at seq 1", agentErr)
			}
		},
	}, {
		name:     "agent sends an extra line",
		clientTr: base,
		agentTr:  script(base.Entries[0].dir(), base.Entries[1].dir(), base.Entries[2].dir(), `agent->client {"extra":true}`),
		check: func(t *testing.T, clientErr, agentErr error) {
			var m *MismatchError
			if !errors.As(clientErr, &m) || m.Want != nil || string(m.Got) != "{\"extra\":true}\n" {
				t.Fatalf("client error = %v, want an unexpected-line MismatchError", clientErr)
			}
			if !strings.Contains(m.Error(), "after the end of the transcript") {
				t.Errorf("message: %v", m)
			}
		},
	}, {
		name:     "agent never answers",
		clientTr: base,
		agentTr:  script(base.Entries[0].dir(), base.Entries[2].dir()),
		check: func(t *testing.T, clientErr, agentErr error) {
			var te *TimeoutError
			if !errors.As(clientErr, &te) || te.Seq != 2 {
				t.Fatalf("client error = %v, want a TimeoutError for seq 2", clientErr)
			}
			// The agent is left waiting for the cancel (its seq 2): it times
			// out too, or sees the client hang up first.
			var agentTimeout *TimeoutError
			if !errors.Is(agentErr, ErrUnexpectedEOF) && !errors.As(agentErr, &agentTimeout) {
				t.Errorf("agent error = %v, want ErrUnexpectedEOF or a TimeoutError", agentErr)
			}
			if agentErr == nil || !strings.Contains(agentErr.Error(), "seq 2 (client->agent)") {
				t.Errorf("agent error does not name the awaited line: %v", agentErr)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, clientErr, agentErr := playBoth(t, tt.clientTr, tt.agentTr, 300*time.Millisecond)
			tt.check(t, clientErr, agentErr)
		})
	}
}

// dir renders e back in the script notation.
func (e Entry) dir() string { return string(e.Dir) + " " + string(e.Msg) }

func TestPlayerUnterminatedLineIsAMismatch(t *testing.T) {
	tr := script(`agent->client {"a":1}`)
	p := &Player{Side: Client, LineTimeout: time.Second}
	err := p.Play(context.Background(), tr, strings.NewReader(`{"a":1}`), io.Discard)
	var m *MismatchError
	if !errors.As(err, &m) || !bytes.Equal(m.Got, []byte(`{"a":1}`)) {
		t.Fatalf("error = %v, want a MismatchError for the missing newline", err)
	}
}

func TestPlayerRejectsZeroSide(t *testing.T) {
	err := (&Player{}).Play(context.Background(), script(), strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "neither Client nor Agent") {
		t.Fatalf("error = %v", err)
	}
}
