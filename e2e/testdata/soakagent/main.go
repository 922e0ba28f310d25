// Command soakagent is the fake ACP agent of the endurance test
// (e2e/soak_test.go). It writes LINES numbered lines to the editor — agent
// message chunks of varied sizes, fs/read_text_file requests and
// session/request_permission requests whose tool-call title carries
// "chaos:X" for the chaos plugin — while it reads the editor's lines, and
// checks what it reads: `_soak/tick` notifications numbered 0, 1, 2...,
// exactly one answer per request. When every answer and as many ticks as it
// sent chunks have arrived it sends a `_soak/report` notification:
//
//	{"ticks":N,"fsAnswers":N,"cancels":N,"answers":{"<request id>":"<optionId>|cancelled"},"errors":[...]}
//
// Then it reads until stdin closes and exits 0, or with -crash waits for a
// session/prompt request and exits 3 without answering it.
//
//	soakagent -lines N -permissions P -seed S [-crash]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
)

// markers are the chaos plugin's cases, with their weights.
var markers = []struct {
	m      byte
	weight int
}{{'a', 30}, {'r', 15}, {'x', 20}, {'c', 5}, {'b', 12}, {'t', 12}, {'l', 6}}

func main() {
	lines := flag.Int("lines", 1000, "lines to write")
	perms := flag.Int("permissions", 10, "permission requests among them")
	seed := flag.Uint64("seed", 1, "random seed")
	crash := flag.Bool("crash", false, "after the report, exit 3 on the next session/prompt")
	flag.Parse()

	rng := rand.New(rand.NewPCG(*seed, 0))
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	in := bufio.NewReaderSize(os.Stdin, 1<<16)

	var mu sync.Mutex
	st := &state{answers: map[string]string{}, asked: map[string]bool{}, fsAsked: map[string]bool{}, changed: make(chan struct{}, 1)}

	readerDone := make(chan struct{})
	prompt := make(chan struct{}, 1)
	go func() {
		defer close(readerDone)
		for {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 {
				mu.Lock()
				if st.read(line) {
					select {
					case prompt <- struct{}{}:
					default:
					}
				}
				mu.Unlock()
				select {
				case st.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()

	every := max(1, *lines/max(1, *perms))
	chunks, fsReqs, permsSent := 0, 0, 0
	var last [2]byte
	pad := strings.Repeat("lorem ipsum ", 400)
	for i := 0; i < *lines; i++ {
		switch {
		case i%every == every/2 && permsSent < *perms:
			m := pick(rng)
			// At most one failure in any three requests in a row: the
			// chain quarantines a plugin after three consecutive failures,
			// which would turn the rest of the run into fallbacks.
			for failing(m) && (failing(last[0]) || failing(last[1])) {
				m = pick(rng)
			}
			last[0], last[1] = last[1], m
			id := "p" + strconv.Itoa(permsSent)
			session := "s"
			if m == 'c' {
				session = "cancel-" + id // its own session, so the cancel touches it alone
			}
			mu.Lock()
			st.asked[id] = true
			mu.Unlock()
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%q,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"tc-%s","title":"step %d chaos:%c","kind":"execute","rawInput":{"command":"make step-%d"}},"options":[{"optionId":"aa","name":"Always Allow","kind":"allow_always"},{"optionId":"ok","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"Reject","kind":"reject_once"},{"optionId":"never","name":"Never","kind":"reject_always"}]}}`+"\n",
				id, session, id, i, m, i)
			permsSent++
		case i%50 == 7:
			id := "f" + strconv.Itoa(fsReqs)
			mu.Lock()
			st.fsAsked[id] = true
			mu.Unlock()
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%q,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/work/f%d","seq":%d}}`+"\n", id, i, i)
			fsReqs++
		default:
			n := rng.IntN(len(pad))
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","seq":%d,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`+"\n", i, pad[:n])
			chunks++
		}
		if i%64 == 0 {
			check(out.Flush())
		}
	}
	check(out.Flush())

	// Wait for every answer and tick.
	for {
		mu.Lock()
		done := st.ticks == chunks && len(st.answers) == permsSent && st.fsAnswers == fsReqs
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-st.changed:
		case <-readerDone:
			fmt.Fprintln(os.Stderr, "soakagent: stdin closed before every answer arrived")
			os.Exit(1)
		}
	}
	mu.Lock()
	report, _ := json.Marshal(map[string]any{"ticks": st.ticks, "fsAnswers": st.fsAnswers, "cancels": st.cancels, "answers": st.answers, "errors": st.errors})
	mu.Unlock()
	fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"_soak/report","params":%s}`+"\n", report)
	check(out.Flush())
	if *crash {
		select {
		case <-prompt:
		case <-readerDone:
		}
		os.Exit(3)
	}
	<-readerDone
	io.Copy(io.Discard, in)
}

// failing reports whether the chaos plugin fails on marker m.
func failing(m byte) bool { return m == 'b' || m == 't' || m == 'l' }

func pick(rng *rand.Rand) byte {
	total := 0
	for _, m := range markers {
		total += m.weight
	}
	n := rng.IntN(total)
	for _, m := range markers {
		if n < m.weight {
			return m.m
		}
		n -= m.weight
	}
	return 'x'
}

type state struct {
	ticks, fsAnswers, cancels int
	answers                   map[string]string
	asked, fsAsked            map[string]bool
	errors                    []string
	changed                   chan struct{}
}

func (s *state) fail(format string, args ...any) {
	if len(s.errors) < 50 {
		s.errors = append(s.errors, fmt.Sprintf(format, args...))
	}
}

// read checks one line from the editor; it reports whether it was a
// session/prompt request.
func (s *state) read(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Seq int `json:"seq"`
		} `json:"params"`
		Result struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		s.fail("unparsable line from the editor: %v: %.200s", err, line)
		return false
	}
	switch {
	case m.Method == "_soak/tick":
		if m.Params.Seq != s.ticks {
			s.fail("tick %d arrived when %d was due (lost or reordered)", m.Params.Seq, s.ticks)
		}
		s.ticks++
	case m.Method == "session/cancel":
		s.cancels++
	case m.Method == "session/prompt":
		return true
	case m.Method != "":
		s.fail("unexpected method %s", m.Method)
	default:
		var id string
		if json.Unmarshal(m.ID, &id) != nil {
			s.fail("response with a non-string id %s", m.ID)
			return false
		}
		switch {
		case s.fsAsked[id]:
			delete(s.fsAsked, id)
			s.fsAnswers++
		case s.asked[id]:
			delete(s.asked, id)
			answer := m.Result.Outcome.OptionID
			if m.Result.Outcome.Outcome == "cancelled" {
				answer = "cancelled"
			}
			if len(m.Error) > 0 {
				answer = "error " + string(m.Error)
			}
			s.answers[id] = answer
		default:
			s.fail("answer to %s, which is not pending (duplicate or unknown)", id)
		}
	}
	return false
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "soakagent:", err)
		os.Exit(1)
	}
}
