package leader

import (
	"context"
	"os"
	"testing"
)

// BenchmarkAsk measures one worker round trip (dial, peer-credential
// checks both ways, ask, queued, answer) with a leader whose plugins
// decide at once.
func BenchmarkAsk(b *testing.B) {
	decide := func(context.Context, Question) Verdict {
		return Verdict{Decided: true, OptionID: "allow", DecidedBy: "bench"}
	}
	s, err := Listen(context.Background(), Options{Socket: benchSocket(b), Prompter: PrompterFunc(
		func(context.Context, Prompt) (string, error) { return "", nil }), Decide: decide})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, _ := NewClient(s.Socket())
	q := question("bench")
	b.ReportAllocs()
	for b.Loop() {
		if a, err := c.Ask(context.Background(), q); err != nil || a.OptionID != "allow" {
			b.Fatal(a, err)
		}
	}
}

func benchSocket(b *testing.B) string {
	dir, err := os.MkdirTemp("", "ldrb") // 0700, unlike testing's TempDir
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir + "/l.sock"
}
