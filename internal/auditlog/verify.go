package auditlog

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/permhost/permhost/internal/edkey"
)

// Kinds of Problem.
const (
	Modified  = "modified"  // a line's bytes changed
	Removed   = "removed"   // lines missing from the chain
	Inserted  = "inserted"  // a line that is not part of the chain
	Reordered = "reordered" // a line out of its place
	Missing   = "missing"   // a whole file of the chain not given
	Forged    = "forged"    // a seal whose signature does not verify
	Untrusted = "untrusted" // a seal signed by a key not trusted
	Truncated = "truncated" // the chain ends unsigned: a crash or a cut
)

// File is one file of a log, in any order.
type File struct {
	Name string
	Data []byte
}

// Problem is the first thing found wrong.
type Problem struct {
	Kind string
	File string
	Line int    // 1-based line in File
	Seq  uint64 // the seq of the line named, 0 when unknown
	Msg  string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%s: %s:%d: %s", p.Kind, p.File, p.Line, p.Msg)
}

// Report is what Verify found.
type Report struct {
	Lines, Seals int
	FirstSeq     uint64 // > 1 when earlier files were not given
	LastSeq      uint64
	// Problem is nil when every line is in the chain and the last line
	// is a seal that verifies with a trusted key (or, without trusted
	// keys, with the key it names).
	Problem *Problem
}

// at is a line of the log where it was read.
type at struct {
	line
	file    string
	n       int
	err     error // the line is not a log line
	partial bool  // the last bytes of the last file, with no newline
}

func (a at) name() string {
	if a.decisionID != "" {
		return fmt.Sprintf("entry seq %d (decisionId %s)", a.seq, a.decisionID)
	}
	if a.seal != nil {
		return fmt.Sprintf("seal seq %d", a.seq)
	}
	return fmt.Sprintf("line seq %d", a.seq)
}

// Verify checks the files of a log, ordering them by the seq of their first
// line, against the trusted public keys; with none, each seal is checked
// against the key it names (which shows the log is intact, not who
// wrote it).
func Verify(files []File, trusted []ed25519.PublicKey) Report {
	var r Report
	type parsed struct {
		name  string
		lines []at
	}
	var all []parsed
	for _, f := range files {
		p := parsed{name: f.Name}
		data := f.Data
		for n := 1; len(data) > 0; n++ {
			i := bytes.IndexByte(data, '\n')
			var b []byte
			partial := i < 0
			if partial {
				b, data = data, nil
			} else {
				b, data = data[:i], data[i+1:]
			}
			l, err := parseLine(b)
			p.lines = append(p.lines, at{line: l, file: f.Name, n: n, err: err, partial: partial})
		}
		all = append(all, p)
	}
	// Order files by their first line's seq; a file whose first line is
	// not a log line keeps its place relative to the others.
	slices.SortStableFunc(all, func(a, b parsed) int {
		sa, sb := uint64(0), uint64(0)
		if len(a.lines) > 0 && a.lines[0].err == nil {
			sa = a.lines[0].seq
		}
		if len(b.lines) > 0 && b.lines[0].err == nil {
			sb = b.lines[0].seq
		}
		if sa == 0 || sb == 0 {
			return 0
		}
		return cmp.Compare(sa, sb)
	})
	var seq []at
	for _, p := range all {
		seq = append(seq, p.lines...)
	}
	// Only the very last line may be partial: it is the tail a crash cut.
	for i := range seq {
		seq[i].partial = seq[i].partial && i == len(seq)-1
	}
	fail := func(kind string, a at, format string, args ...any) Report {
		r.Problem = &Problem{Kind: kind, File: a.file, Line: a.n, Seq: a.seq, Msg: fmt.Sprintf(format, args...)}
		return r
	}
	var last *at
	var lastSeal *at
	seen := map[uint64]bool{}
	for i := range seq {
		cur := seq[i]
		if cur.partial {
			break
		}
		var next *at
		if i+1 < len(seq) && seq[i+1].err == nil && !seq[i+1].partial {
			next = &seq[i+1]
		}
		if cur.err != nil {
			if last != nil && next != nil && next.seq == last.seq+1 && next.prev == last.hash {
				return fail(Inserted, cur, "this line is not part of the chain (%v)", cur.err)
			}
			return fail(Modified, cur, "%v", cur.err)
		}
		if last == nil {
			r.FirstSeq = cur.seq
			if cur.seq == 1 && cur.prev != [sha256.Size]byte{} {
				return fail(Modified, cur, "the chain's first line must have prev %x", [sha256.Size]byte{})
			}
		} else if p := link(*last, cur, seq[i+1:], seen); p != "" {
			kind, msg := p, ""
			switch p {
			case Modified:
				if cur.seal != nil && !sealOK(cur, trusted) {
					return fail(Forged, cur, "the seal's signature does not verify")
				}
				return fail(Modified, *last, "%s was modified: its sha256 is not the prev of the next line", last.name())
			case Inserted:
				msg = fmt.Sprintf("%s is not part of the chain", cur.name())
			case insertedLast:
				return fail(Inserted, *last, "%s is not part of the chain", last.name())
			case Reordered:
				msg = fmt.Sprintf("%s is out of order: seq %d was expected", cur.name(), last.seq+1)
			case Removed:
				msg = fmt.Sprintf("lines seq %d to %d are missing before %s", last.seq+1, cur.seq-1, cur.name())
				if cur.file != last.file && cur.n == 1 {
					kind = Missing
					msg = fmt.Sprintf("lines seq %d to %d are missing between %s and %s: a rotated file was not given or was removed", last.seq+1, cur.seq-1, last.file, cur.file)
				}
			}
			return fail(kind, cur, "%s", msg)
		}
		if cur.seal != nil {
			if len(trusted) > 0 && !trustedKey(cur.seal.Key, trusted) {
				return fail(Untrusted, cur, "the seal is signed by %s, not a trusted key", cur.seal.Key)
			}
			if !sealOK(cur, trusted) {
				return fail(Forged, cur, "the seal's signature does not verify")
			}
			r.Seals++
			lastSeal = &seq[i]
		}
		r.Lines++
		r.LastSeq = cur.seq
		seen[cur.seq] = true
		last = &seq[i]
	}
	if len(seq) == 0 {
		r.Problem = &Problem{Kind: Truncated, Msg: "the log is empty"}
		return r
	}
	tail := seq[len(seq)-1]
	if tail.partial || last == nil || last.seal == nil {
		unsigned := r.Lines
		where := "no seal"
		if lastSeal != nil {
			unsigned = int(last.seq - lastSeal.seq)
			where = fmt.Sprintf("the last seal (%s:%d)", lastSeal.file, lastSeal.n)
		}
		msg := fmt.Sprintf("the log ends with %d lines after %s, not signed: a crash while writing, or lines cut off", unsigned, where)
		if tail.partial {
			msg += fmt.Sprintf("; line %d is incomplete", tail.n)
		}
		return fail(Truncated, tail, "%s", msg)
	}
	return r
}

// insertedLast is link's Inserted for the line before cur.
const insertedLast = "inserted-last"

// link says how cur fails to follow last, "" when it does; rest are the
// lines after cur and seen the seqs of the lines accepted before it.
func link(last, cur at, rest []at, seen map[uint64]bool) string {
	want := last.seq + 1
	if cur.seq == want && cur.prev == last.hash {
		return ""
	}
	var next *at
	if len(rest) > 0 && rest[0].err == nil && !rest[0].partial {
		next = &rest[0]
	}
	if next != nil && next.seq == want && next.prev == last.hash {
		// The chain goes on past cur: cur was put in, or moved here
		// from later in the chain (a later line links to it).
		if cur.seq > want && linkedLater(rest[1:], cur.hash) {
			return Reordered
		}
		return Inserted
	}
	switch {
	case cur.seq == want:
		return Modified // last's bytes are not those cur links to
	case cur.seq == last.seq && cur.prev == last.prev && next != nil && next.prev == cur.hash:
		// Two lines claim one place and the chain goes on from cur:
		// last was the one put in.
		return insertedLast
	case cur.seq < want && seen[cur.seq]:
		return Inserted // a copy of a line already in the chain
	case cur.seq < want:
		return Reordered // it belongs earlier
	case later(rest, want):
		return Reordered
	default:
		return Removed
	}
}

// linkedLater reports whether a line of rest links to hash.
func linkedLater(rest []at, hash [sha256.Size]byte) bool {
	for _, a := range rest {
		if a.err == nil && a.prev == hash {
			return true
		}
	}
	return false
}

// later reports whether a line of rest has seq.
func later(rest []at, seq uint64) bool {
	for _, a := range rest {
		if a.err == nil && a.seq == seq {
			return true
		}
	}
	return false
}

func trustedKey(text string, trusted []ed25519.PublicKey) bool {
	k, err := edkey.ParsePublic(text)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(trusted, func(t ed25519.PublicKey) bool { return k.Equal(t) })
}

// sealOK checks a's signature with the key it names, which must be trusted
// when trusted keys are given.
func sealOK(a at, trusted []ed25519.PublicKey) bool {
	k, err := edkey.ParsePublic(a.seal.Key)
	if err != nil || (len(trusted) > 0 && !trustedKey(a.seal.Key, trusted)) {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(a.seal.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(k, sealMessage(a.seq, a.prev, a.seal.Time), sig)
}
