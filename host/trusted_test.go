package host

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/sandbox"
)

// goroutineID is the id runtime.Stack prints for the calling goroutine.
func goroutineID() int {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	return id
}

// TestTrustedRunsOnTheCallersGoroutine: a trusted module's call runs on
// the goroutine that called Decide, an untrusted one's on another; a
// trusted guest that spins still stops at its deadline, and its instance
// is replaced.
func TestTrustedRunsOnTheCallersGoroutine(t *testing.T) {
	ran := make(chan int, 1)
	hook := func(inst *instance) {
		if bytes.Contains(inst.input, []byte("where")) {
			select {
			case ran <- goroutineID():
			default:
			}
		}
	}
	testHookInput.Store(&hook)
	t.Cleanup(func() { testHookInput.Store(nil) })
	for _, trusted := range []bool{false, true} {
		p := load(t, "echo", Options{PoolSize: 1, Trusted: trusted, Limits: sandbox.Limits{Timeout: 50 * time.Millisecond}})
		d, err := p.Decide(context.Background(), request("where"))
		require.NoError(t, err)
		require.Equal(t, abi.OutcomeAllow, d.Outcome)
		if on := <-ran == goroutineID(); on != trusted {
			t.Errorf("trusted %v: ran on the caller's goroutine: %v", trusted, on)
		}
		_, err = p.Decide(context.Background(), request("SPIN!"))
		requireKind(t, err, KindTimeout)
		d, err = p.Decide(context.Background(), request("where"))
		require.NoError(t, err, "after the timeout")
		require.Equal(t, abi.OutcomeAllow, d.Outcome)
		<-ran
	}
}
