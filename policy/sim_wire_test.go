package policy_test

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"sync"
)

// This file is the simulation's transport: each peer's writes cut at
// seeded byte boundaries (a message split over writes, messages merged in
// one, the tail of one held back until the next), and its reader, which
// hands each received message (each element of a batch) on.

// simWire is one peer's output to the proxy.
type simWire struct {
	mu   sync.Mutex
	w    *io.PipeWriter
	rng  *rand.Rand
	held []byte // bytes not written yet
	dead bool
	sent [][]byte // every message, in the order of the byte stream
}

func newSimWire(w *io.PipeWriter, seed uint64) *simWire {
	return &simWire{w: w, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// send queues the line build returns (a message or a batch, without its
// newline; nil sends nothing) and writes the queue in seeded pieces. With
// mayHold, the tail may stay queued until the next send or flush. build
// runs with the wire's order kept (the lock held), so what it records
// for the checks is in the order of the byte stream.
func (s *simWire) send(build func() []byte, mayHold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	line := build()
	if line == nil {
		return
	}
	s.sent = append(s.sent, line)
	s.held = append(append(s.held, line...), '\n')
	keep := 0
	if mayHold && s.rng.IntN(4) == 0 {
		keep = s.rng.IntN(len(s.held))
	}
	s.writeLocked(len(s.held) - keep)
}

// flush writes whatever is held.
func (s *simWire) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead {
		s.writeLocked(len(s.held))
	}
}

// writeLocked writes the first n held bytes in seeded pieces.
func (s *simWire) writeLocked(n int) {
	out := s.held[:n]
	for len(out) > 0 {
		k := len(out)
		if s.rng.IntN(3) > 0 {
			k = 1 + s.rng.IntN(len(out))
		}
		if _, err := s.w.Write(out[:k]); err != nil {
			s.dead = true
			return
		}
		out = out[k:]
	}
	s.held = append(s.held[:0], s.held[n:]...)
}

// die writes partial bytes of line (no newline) and closes the output.
func (s *simWire) die(line []byte, partial int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead {
		s.writeLocked(len(s.held))
		if partial > 0 && !s.dead {
			_, _ = s.w.Write(line[:partial])
		}
	}
	s.dead = true
	s.w.Close()
}

// close ends the output after what is held.
func (s *simWire) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead {
		s.writeLocked(len(s.held))
	}
	s.dead = true
	s.w.Close()
}

// elements are a line's messages: a batch's elements, or the line.
func elements(line []byte) [][]byte {
	line = trimLine(line)
	if len(line) > 0 && line[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(line, &elems) == nil {
			out := make([][]byte, len(elems))
			for i, e := range elems {
				out[i] = []byte(e)
			}
			return out
		}
	}
	return [][]byte{line}
}

func trimLine(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// readLines calls f with each line read from r until it ends.
func readLines(r io.Reader, f func(line []byte)) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			f(line)
		}
		if err != nil {
			return
		}
	}
}
