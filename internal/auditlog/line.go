package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrLine is wrapped by every error about a line that is not a log line.
var ErrLine = errors.New("auditlog: not a log line")

// sealHeader starts the message a seal signs.
const sealHeader = "permhost-log-seal v1\n"

// line is what the chain reads of one log line.
type line struct {
	seq        uint64
	prev       [sha256.Size]byte
	hash       [sha256.Size]byte // of the line's bytes
	decisionID string
	seal       *seal
}

// seal is a seal line's "seal" object.
type seal struct {
	Time string `json:"time"`
	Key  string `json:"key"`
	Sig  string `json:"sig"`
}

// sealMessage is what the seal at seq with prev signs.
func sealMessage(seq uint64, prev [sha256.Size]byte, time string) []byte {
	return fmt.Appendf(nil, "%sseq %d\nprev %x\ntime %s\n", sealHeader, seq, prev, time)
}

// parseLine reads a line (without its newline): a JSON object that starts
// with exactly {"seq":SEQ,"prev":"PREV" (SEQ a positive integer in plain
// digits, PREV 64 lower-case hex digits), read from those bytes so that
// every verifier reads the same numbers whatever its JSON library does
// with duplicate keys. A seal line has a "seal" object with string members
// time, key and sig. The rest of an entry is not read.
func parseLine(b []byte) (line, error) {
	l := line{hash: sha256.Sum256(b)}
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq":`))
	if !ok {
		return l, fmt.Errorf("%w: does not start with `{\"seq\":` (a signed log line)", ErrLine)
	}
	n := 0
	for n < len(rest) && n < 20 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil || seq == 0 || rest[0] == '0' {
		return l, fmt.Errorf("%w: seq is not a positive integer", ErrLine)
	}
	rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"prev":"`))
	if !ok || len(rest) < 2*sha256.Size+2 || (rest[2*sha256.Size+1] != ',' && rest[2*sha256.Size+1] != '}') || rest[2*sha256.Size] != '"' {
		return l, fmt.Errorf("%w: seq is not followed by \"prev\":\"HEX\"", ErrLine)
	}
	h := rest[:2*sha256.Size]
	if _, err := hex.Decode(l.prev[:], h); err != nil || bytes.ContainsAny(h, "ABCDEF") {
		return l, fmt.Errorf("%w: prev is not 64 lower-case hex digits", ErrLine)
	}
	var body struct {
		DecisionID string `json:"decisionId"`
		Seal       *seal  `json:"seal"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return l, fmt.Errorf("%w: %v", ErrLine, err)
	}
	l.seq, l.decisionID, l.seal = seq, body.DecisionID, body.Seal
	if l.seal != nil && (l.seal.Time == "" || l.seal.Key == "" || l.seal.Sig == "") {
		return l, fmt.Errorf("%w: a seal needs time, key and sig", ErrLine)
	}
	return l, nil
}
