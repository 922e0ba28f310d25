package acptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Direction is the direction a transcript line travelled.
type Direction string

// The two directions of an ACP connection, spelled as in the transcript files.
const (
	ClientToAgent Direction = "client->agent"
	AgentToClient Direction = "agent->client"
)

// Entry is one line of a transcript: one JSON-RPC message.
type Entry struct {
	Seq int       `json:"seq"`
	TS  string    `json:"ts,omitempty"`
	Dir Direction `json:"dir"`
	// Msg holds the message's bytes exactly as they appear in the file; a
	// player sends them unchanged, followed by a newline.
	Msg json.RawMessage `json:"msg"`
}

// Transcript is a recorded ACP conversation in the order the client saw it.
type Transcript struct {
	Name    string // base name of the file without extension, for test names
	Entries []Entry
}

// errTranscript prefixes every transcript parse error.
var errTranscript = errors.New("acptest: bad transcript")

// LoadTranscript reads the transcript file at path.
func LoadTranscript(path string) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := ReadTranscript(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return tr, nil
}

// ReadTranscript parses the transcript format of testdata/transcripts: one JSON
// object {seq, ts, dir, msg} per line, seq counting from 1. Blank lines are
// skipped. Errors name the line.
func ReadTranscript(r io.Reader) (*Transcript, error) {
	br := bufio.NewReader(r)
	tr := &Transcript{}
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, err
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			e, perr := parseEntry(trimmed)
			if perr != nil {
				return nil, fmt.Errorf("%w: line %d: %v", errTranscript, lineNo, perr)
			}
			if want := len(tr.Entries) + 1; e.Seq != want {
				return nil, fmt.Errorf("%w: line %d: seq %d, want %d", errTranscript, lineNo, e.Seq, want)
			}
			tr.Entries = append(tr.Entries, e)
		}
		if err == io.EOF {
			return tr, nil
		}
	}
}

func parseEntry(line []byte) (Entry, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Entry{}, err
	}
	if dec.More() {
		return Entry{}, errors.New("trailing data after the object")
	}
	if e.Dir != ClientToAgent && e.Dir != AgentToClient {
		return Entry{}, fmt.Errorf("dir %q is neither %q nor %q", e.Dir, ClientToAgent, AgentToClient)
	}
	if err := checkMsg(e.Msg); err != nil {
		return Entry{}, err
	}
	// Decode aliases the line's buffer; keep a copy of our own.
	e.Msg = bytes.Clone(e.Msg)
	return e, nil
}

// checkMsg reports whether msg can be sent as one ACP line.
func checkMsg(msg []byte) error {
	if len(msg) == 0 || string(msg) == "null" {
		return errors.New("msg missing")
	}
	if bytes.ContainsAny(msg, "\r\n") {
		return errors.New("msg contains a raw line break")
	}
	if !json.Valid(msg) {
		return errors.New("msg is not valid JSON")
	}
	return nil
}

// Encode writes tr in the transcript file format, each message's bytes
// unchanged. It renumbers nothing: seq must already count from 1.
func (tr *Transcript) Encode(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, e := range tr.Entries {
		if e.Seq != i+1 {
			return fmt.Errorf("%w: entry %d has seq %d", errTranscript, i+1, e.Seq)
		}
		if e.Dir != ClientToAgent && e.Dir != AgentToClient {
			return fmt.Errorf("%w: seq %d: dir %q", errTranscript, e.Seq, e.Dir)
		}
		if err := checkMsg(e.Msg); err != nil {
			return fmt.Errorf("%w: seq %d: %v", errTranscript, e.Seq, err)
		}
		ts, _ := json.Marshal(e.TS)
		fmt.Fprintf(bw, `{"seq":%d,"ts":%s,"dir":"%s","msg":`, e.Seq, ts, e.Dir)
		bw.Write(e.Msg)
		bw.WriteString("}\n")
	}
	return bw.Flush()
}

// Append adds a message in direction dir with the next seq. msg is kept as
// given; it must be one line of valid JSON.
func (tr *Transcript) Append(dir Direction, msg string) {
	tr.Entries = append(tr.Entries, Entry{Seq: len(tr.Entries) + 1, Dir: dir, Msg: json.RawMessage(msg)})
}

// Count returns how many entries travel in direction dir.
func (tr *Transcript) Count(dir Direction) int {
	n := 0
	for _, e := range tr.Entries {
		if e.Dir == dir {
			n++
		}
	}
	return n
}
