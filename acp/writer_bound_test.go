package acp

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gatedWriter is a peer that takes nothing until its gate opens, then
// counts what it takes.
type gatedWriter struct {
	gate chan struct{}
	n    atomic.Int64
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	g.n.Add(int64(len(p)))
	return len(p), nil
}

// TestWriterBackpressure: a peer that does not read stops the direction's
// reader once 16 MiB wait for it (one line may be in the blocked write),
// and lets it go on once it reads. synctest.Wait returns once every
// goroutine is blocked: the forwarding one in the writer's wait.
func TestWriterBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mib = 1 << 20
		dst := &gatedWriter{gate: make(chan struct{})}
		w := newWriter(dst, nil)
		line := append(bytes.Repeat([]byte("x"), mib-1), '\n')
		var forwarded atomic.Int64
		go func() {
			for range 40 {
				if w.forward(line, nil) != nil {
					return
				}
				forwarded.Add(1)
			}
		}()
		synctest.Wait()
		bound := int64(maxQueuedBytes / mib)
		if n := forwarded.Load(); n < bound || n > bound+1 {
			t.Errorf("%d MiB taken from a peer that reads nothing; the bound is %d MiB", n, bound)
		}
		close(dst.gate)
		synctest.Wait()
		if n := forwarded.Load(); n != 40 {
			t.Fatalf("%d MiB forwarded once the peer reads, want 40", n)
		}
		w.closeAfter(false)
		<-w.done
		if got := dst.n.Load(); got != 40*mib {
			t.Errorf("the peer got %d bytes, want %d", got, 40*mib)
		}
	})
}

// TestWriterBoundReleasesSlot: lines that fill the bound behind a waiting
// slot release it at once (no wait for its timer): what fills the slot
// may come only after lines the reader would stop reading. The slot's
// answer, when it comes, is written on its own.
func TestWriterBoundReleasesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, pw := io.Pipe()
		w := newWriter(pw, nil)
		got := make(chan int64)
		go func() { n, _ := io.Copy(io.Discard, r); got <- n }()
		s := w.newSlotWait(time.Hour)
		w.place(s, nil)
		start := time.Now()
		line := append(bytes.Repeat([]byte("x"), 1<<20-1), '\n')
		for range 20 {
			if err := w.forward(line, nil); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the lines behind the slot waited %v for its timer", d)
		}
		s.fill([]byte("answer"))
		w.closeAfter(true)
		<-w.done
		if n := <-got; n != int64(20<<20+len("answer\n")) {
			t.Errorf("the peer got %d bytes", n)
		}
	})
}

// TestWriterCloseKeepsAccepted: a message queued while the writer makes its
// final flush was accepted (nil error) and is written before dst closes.
func TestWriterCloseKeepsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dst := &gatedWriter{gate: make(chan struct{})}
		w := newWriter(dst, nil)
		if err := w.messageInOrder([]byte("first")); err != nil {
			t.Fatal(err)
		}
		w.closeAfter(false)
		synctest.Wait() // the writer is in its final flush, blocked on the peer
		if err := w.messageInOrder([]byte("second")); err != nil {
			t.Fatalf("refused during the flush: %v", err) // fine too, but then it is not dropped
		}
		close(dst.gate)
		<-w.done
		if n := dst.n.Load(); n != int64(len("first\nsecond\n")) {
			t.Errorf("the peer got %d bytes: an accepted message was dropped", n)
		}
	})
}
