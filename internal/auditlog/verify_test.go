package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/edkey"
)

// writeLog writes n entries to a log at dir/log.jsonl with key, sealing
// after every third, rotating at maxSize, and returns the files in the
// order written (oldest first).
func writeLog(t testing.TB, dir string, key ed25519.PrivateKey, n int, maxSize int64) []File {
	t.Helper()
	path := filepath.Join(dir, "log.jsonl")
	w, err := Open(path, key, maxSize)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := w.Append(fmt.Appendf(nil, `{"decisionId":"d-%d","outcome":"selected"}`, i)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := w.Seal(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return readFiles(t, path)
}

// readFiles reads path.1, path.2, … then path.
func readFiles(t testing.TB, path string) []File {
	t.Helper()
	var out []File
	high, _ := lastRotation(path)
	for i := 1; i <= high; i++ {
		out = append(out, readFile(t, rotatedName(path, i)))
	}
	return append(out, readFile(t, path))
}

func readFile(t testing.TB, name string) File {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return File{Name: filepath.Base(name), Data: b}
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// lines splits a file into its lines, each with its newline.
func lines(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }

func join(ls [][]byte) []byte { return bytes.Join(ls, nil) }

func TestVerifyTampering(t *testing.T) {
	key, other := newKey(t), newKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// 7 entries, sealed after 3 and 6 and at Close:
	// 1 d-1, 2 d-2, 3 d-3, 4 seal, 5 d-4, 6 d-5, 7 d-6, 8 seal, 9 d-7, 10 seal.
	tests := []struct {
		name    string
		trusted []ed25519.PublicKey
		rotate  int64
		edit    func(fs []File) []File
		kind    string // "" = intact
		line    int
		seq     uint64
		msg     string
	}{
		{name: "intact", edit: func(fs []File) []File { return fs }},
		{name: "intact, no trusted key", trusted: []ed25519.PublicKey{}, edit: func(fs []File) []File { return fs }},
		{name: "modified field", edit: func(fs []File) []File {
			fs[0].Data = bytes.Replace(fs[0].Data, []byte(`"d-2","outcome":"selected"`), []byte(`"d-2","outcome":"cancelled"`), 1)
			return fs
		}, kind: Modified, line: 2, seq: 2, msg: "entry seq 2 (decisionId d-2) was modified"},
		{name: "modified entry before a seal", edit: func(fs []File) []File {
			fs[0].Data = bytes.Replace(fs[0].Data, []byte(`"d-3"`), []byte(`"d-9"`), 1)
			return fs
		}, kind: Modified, line: 3, seq: 3, msg: "entry seq 3 (decisionId d-9) was modified"},
		{name: "removed entry", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			fs[0].Data = join(append(l[:1:1], l[2:]...))
			return fs
		}, kind: Removed, line: 2, seq: 3, msg: "lines seq 2 to 2 are missing before entry seq 3"},
		{name: "inserted copy of an entry", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			fs[0].Data = join(append(l[:5:5], append([][]byte{l[1]}, l[5:]...)...))
			return fs
		}, kind: Inserted, line: 6, seq: 2, msg: "entry seq 2 (decisionId d-2) is not part of the chain"},
		{name: "inserted entry linked to the chain", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			fake := fmt.Appendf(nil, `{"seq":3,"prev":"%x","decisionId":"d-fake"}`+"\n", sha(l[1]))
			fs[0].Data = join(append(l[:2:2], append([][]byte{fake}, l[2:]...)...))
			return fs
		}, kind: Inserted, line: 3, seq: 3, msg: "entry seq 3 (decisionId d-fake) is not part of the chain"},
		{name: "reordered entries", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			l[4], l[5] = l[5], l[4]
			fs[0].Data = join(l)
			return fs
		}, kind: Reordered, line: 5, seq: 6, msg: "entry seq 6 (decisionId d-5) is out of order: seq 5 was expected"},
		{name: "entry moved earlier", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			moved := l[6]
			l = append(l[:6:6], l[7:]...)
			fs[0].Data = join(append(l[:1:1], append([][]byte{moved}, l[1:]...)...))
			return fs
		}, kind: Reordered, line: 2, seq: 7, msg: "entry seq 7 (decisionId d-6) is out of order: seq 2 was expected"},
		{name: "truncated mid-line", edit: func(fs []File) []File {
			fs[0].Data = fs[0].Data[:bytes.Index(fs[0].Data, []byte(`"d-7"`))]
			return fs
		}, kind: Truncated, line: 9, msg: "the log ends with 0 lines after the last seal (log.jsonl:8), not signed: a crash while writing, or lines cut off; line 9 is incomplete"},
		{name: "truncated after an entry", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			fs[0].Data = join(l[:9])
			return fs
		}, kind: Truncated, line: 9, seq: 9, msg: "the log ends with 1 lines after the last seal (log.jsonl:8)"},
		{name: "wrong key", trusted: []ed25519.PublicKey{other.Public().(ed25519.PublicKey)}, edit: func(fs []File) []File { return fs },
			kind: Untrusted, line: 4, seq: 4, msg: "the seal is signed by ed25519:"},
		{name: "forged seal signature", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			l[7] = forge(t, l[7], other, pub)
			fs[0].Data = join(l)
			return fs
		}, kind: Forged, line: 8, seq: 8, msg: "the seal's signature does not verify"},
		{name: "seal's prev edited", edit: func(fs []File) []File {
			l := lines(fs[0].Data)
			i := len(`{"seq":4,"prev":"`)
			l[3][i] ^= 1 // a hex digit to another ('0'..'9' stay digits, 'a'..'f' letters)
			fs[0].Data = join(l)
			return fs
		}, kind: Forged, line: 4, seq: 4, msg: "does not verify"},
		{name: "rotated files, intact", rotate: 400, edit: func(fs []File) []File {
			if len(fs) < 3 {
				t.Fatalf("%d files, want 3 or more", len(fs))
			}
			// Given in any order.
			fs[0], fs[len(fs)-1] = fs[len(fs)-1], fs[0]
			return fs
		}},
		{name: "rotated files given out of order, the newest cut", rotate: 400, edit: func(fs []File) []File {
			last := &fs[len(fs)-1]
			last.Data = last.Data[:len(last.Data)-10]
			fs[0], fs[len(fs)-1] = fs[len(fs)-1], fs[0]
			return fs
		}, kind: Truncated, msg: "is incomplete"},
		{name: "rotated files, one missing", rotate: 400, edit: func(fs []File) []File {
			return append(fs[:1:1], fs[2:]...)
		}, kind: Missing, line: 1, msg: "are missing between log.jsonl.1 and log.jsonl."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := writeLog(t, t.TempDir(), key, 7, tt.rotate)
			trusted := []ed25519.PublicKey{pub}
			if tt.trusted != nil {
				trusted = tt.trusted
			}
			r := Verify(tt.edit(fs), trusted)
			if tt.kind == "" {
				if r.Problem != nil {
					t.Fatalf("Verify: %v", r.Problem)
				}
				if r.Lines-r.Seals != 7 || r.Seals < 3 || r.FirstSeq != 1 || r.LastSeq != uint64(r.Lines) {
					t.Errorf("report %+v, want 7 entries and their seals, seq 1 on", r)
				}
				return
			}
			p := r.Problem
			if p == nil {
				t.Fatalf("Verify found nothing wrong, want %s", tt.kind)
			}
			if p.Kind != tt.kind || (tt.line != 0 && p.Line != tt.line) || (tt.seq != 0 && p.Seq != tt.seq) || !strings.Contains(p.Msg, tt.msg) {
				t.Errorf("Verify: %v (seq %d)\nwant %s at line %d, seq %d, %q", p, p.Seq, tt.kind, tt.line, tt.seq, tt.msg)
			}
		})
	}
}

// sha is the hash of a line given with its newline.
func sha(l []byte) [32]byte {
	x, _ := parseLine(bytes.TrimSuffix(l, []byte("\n")))
	return x.hash
}

// forge signs the seal line l again with key, keeping the key it names.
func forge(t *testing.T, l []byte, key ed25519.PrivateKey, claimed ed25519.PublicKey) []byte {
	x, err := parseLine(bytes.TrimSuffix(l, []byte("\n")))
	if err != nil || x.seal == nil {
		t.Fatalf("line %s is not a seal: %v", l, err)
	}
	sig := ed25519.Sign(key, sealMessage(x.seq, x.prev, x.seal.Time))
	return fmt.Appendf(nil, `{"seq":%d,"prev":"%x","seal":{"time":%q,"key":%q,"sig":%q}}`+"\n", x.seq, x.prev, x.seal.Time, edkey.FormatPublic(claimed), base64.StdEncoding.EncodeToString(sig))
}
