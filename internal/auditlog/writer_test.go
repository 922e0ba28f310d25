package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrashThenReopen: a crash mid-write leaves a log Verify calls a
// truncated tail; the next Open drops the half line and continues the
// chain, and the log verifies again.
func TestCrashThenReopen(t *testing.T) {
	key := newKey(t)
	trusted := []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	writeLog(t, dir, key, 4, 0)
	// The crash: two entries written, the second half way, no seal.
	w, err := Open(path, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte(`{"decisionId":"d-5"}`)); err != nil {
		t.Fatal(err)
	}
	w.buf.Reset()
	fmt.Fprintf(&w.buf, `{"seq":%d,"prev":"%x","decisionId":"d-6"}`, w.seq+1, w.prev)
	half := w.buf.Bytes()[:w.buf.Len()/2]
	if _, err := w.f.Write(half); err != nil {
		t.Fatal(err)
	}
	w.f.Close()
	r := Verify(readFiles(t, path), trusted)
	if r.Problem == nil || r.Problem.Kind != Truncated || !strings.Contains(r.Problem.Msg, "1 lines after the last seal") || !strings.HasSuffix(r.Problem.Msg, "is incomplete") {
		t.Fatalf("after the crash: %v, want a truncated tail of one entry and a half line", r.Problem)
	}

	w, err = Open(path, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Recovered != int64(len(half)) {
		t.Errorf("Recovered = %d, want %d", w.Recovered, len(half))
	}
	if err := w.Append([]byte(`{"decisionId":"d-7"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r = Verify(readFiles(t, path), trusted)
	if r.Problem != nil {
		t.Fatalf("after the restart: %v", r.Problem)
	}
	b, _ := os.ReadFile(path)
	if bytes.Contains(b, []byte("d-6")) || !bytes.Contains(b, []byte(`"decisionId":"d-7"`)) {
		t.Errorf("log after the restart:\n%s", b)
	}
}

// TestRotationKeepsTheChain: each rotated file's first line links to the
// previous file's last, also when permhost restarts between rotations.
func TestRotationKeepsTheChain(t *testing.T) {
	key := newKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	writeLog(t, dir, key, 5, 1000)
	writeLog(t, dir, key, 5, 1000)
	fs := readFiles(t, path)
	if len(fs) < 3 {
		t.Fatalf("%d files, want rotation", len(fs))
	}
	for i := 1; i < len(fs); i++ {
		prev, cur := lines(fs[i-1].Data), fs[i].Data
		last, _ := parseLine(bytes.TrimSuffix(prev[len(prev)-2], []byte("\n")))
		first, err := parseLine(cur[:bytes.IndexByte(cur, '\n')])
		if err != nil || first.prev != last.hash || first.seq != last.seq+1 {
			t.Errorf("%s's first line does not link to %s's last", fs[i].Name, fs[i-1].Name)
		}
		if len(fs[i-1].Data) > 1000 {
			t.Errorf("%s is %d bytes, over max_size", fs[i-1].Name, len(fs[i-1].Data))
		}
	}
	if r := Verify(fs, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}); r.Problem != nil || r.Lines-r.Seals != 10 {
		t.Errorf("Verify: %+v", r)
	}
}

// TestPlainRotation: without a key lines are written as given and the
// file is rotated all the same.
func TestPlainRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 20 {
		obj := fmt.Appendf(nil, `{"decisionId":"d-%d","pad":"%0100d"}`, i, 0)
		if err := w.Append(obj); err != nil {
			t.Fatal(err)
		}
		want = append(append(want, obj...), '\n')
	}
	w.Close()
	var got []byte
	fs := readFiles(t, path)
	for _, f := range fs {
		if len(f.Data) > 1000 {
			t.Errorf("%s is %d bytes", f.Name, len(f.Data))
		}
		got = append(got, f.Data...)
	}
	if len(fs) < 3 || !bytes.Equal(got, want) {
		t.Errorf("%d files holding:\n%s\nwant:\n%s", len(fs), got, want)
	}
}

func TestOpenRefusesAPlainLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	os.WriteFile(path, []byte(`{"decisionId":"d-1"}`+"\n"), 0o600)
	if _, err := Open(path, newKey(t), 0); err == nil || !strings.Contains(err.Error(), ErrNotChained.Error()) {
		t.Errorf("Open of a plain log: %v, want ErrNotChained", err)
	}
}

func FuzzVerify(f *testing.F) {
	key := newKey(f)
	fs := writeLog(f, f.TempDir(), key, 4, 0)
	f.Add(fs[0].Data)
	f.Add([]byte(`{"seq":1,"prev":"` + strings.Repeat("0", 64) + `","seal":{"time":"t","key":"k","sig":"s"}}` + "\n"))
	f.Add([]byte("{\"seq\":01,\"prev\":\"\"}\n{"))
	trusted := []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := Verify([]File{{Name: "a", Data: data}}, trusted)
		// The fuzzer cannot sign: what verifies is lines of the log
		// written with key, in their order.
		if r.Problem == nil && !bytes.Contains(fs[0].Data, data) {
			t.Errorf("%q verified: %+v", data, r)
		}
	})
}

// BenchmarkAppend: what the log's goroutine spends per line of a 600-byte
// entry: plain, chained with a seal after every line (a quiet proxy: each
// decision is its own burst), and chained with a seal every 256 lines (a
// busy one).
func BenchmarkAppend(b *testing.B) {
	obj := fmt.Appendf(nil, `{"decisionId":"d-1","outcome":"selected","pad":"%0560d"}`, 0)
	for _, bc := range []struct {
		name      string
		key       bool
		sealEvery int
	}{{"plain", false, 0}, {"signed, seal per line", true, 1}, {"signed, seal per 256 lines", true, sealEvery}} {
		b.Run(bc.name, func(b *testing.B) {
			var key ed25519.PrivateKey
			if bc.key {
				key = newKey(b)
			}
			w, err := Open(filepath.Join(b.TempDir(), "log.jsonl"), key, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.SetBytes(int64(len(obj)))
			for b.Loop() {
				if err := w.Append(obj); err != nil {
					b.Fatal(err)
				}
				if bc.sealEvery == 1 {
					if err := w.Seal(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
