//go:build linux

package worker

import (
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/permhost/permhost/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPollReader: a pollReader reads what is on the pipe, or comes while it
// polls, even past the file's read deadline (a read that parks would fail
// at once); once its polling ends, the file's own read reports the
// deadline and the end as it would.
func TestPollReader(t *testing.T) {
	past := time.Unix(1, 0)
	for _, tc := range []struct {
		name       string
		pollFor    time.Duration
		write      func(w *os.File) // before the read starts, or while it polls
		delay      time.Duration    // before write, in another goroutine; 0: before the read
		noDeadline bool
		want       string
		wantErr    error
	}{
		{name: "on the pipe", pollFor: time.Second, write: writeString("abc"), want: "abc"},
		{name: "comes while polling", pollFor: 10 * time.Second, write: writeString("late"), delay: 20 * time.Millisecond, want: "late"},
		{name: "nothing comes", pollFor: time.Millisecond, write: func(*os.File) {}, wantErr: os.ErrDeadlineExceeded},
		{name: "the end", pollFor: time.Second, write: func(w *os.File) { w.Close() }, noDeadline: true, wantErr: io.EOF},
		// Not polling, the same read fails at the deadline.
		{name: "parks at once", pollFor: 0, write: writeString("abc"), wantErr: os.ErrDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer r.Close()
			defer w.Close()
			if !tc.noDeadline {
				require.NoError(t, r.SetReadDeadline(past))
			}
			if tc.delay == 0 {
				tc.write(w)
			} else {
				go func() { time.Sleep(tc.delay); tc.write(w) }()
			}
			buf := make([]byte, 16)
			n, err := newPollReader(r, tc.pollFor).Read(buf)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				assert.Zero(t, n)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(buf[:n]))
		})
	}
}

func writeString(s string) func(*os.File) {
	return func(w *os.File) { _, _ = w.WriteString(s) }
}

// TestPollForOption: what Options.PollFor becomes, for the parent's reader
// and, in the load frame, for the child's.
func TestPollForOption(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: never polls")
	}
	for _, tc := range []struct {
		given, want time.Duration
	}{
		{0, DefaultPollFor},
		{-1, 0},
		{50 * time.Microsecond, 50 * time.Microsecond},
		{maxPollFor, maxPollFor},
	} {
		p, err := newPlugin(Options{Plugin: host.Options{Path: fixture(t, "good")}, Executable: "/bin/true", PollFor: tc.given})
		require.NoError(t, err)
		assert.Equal(t, tc.want, p.pollFor, "PollFor %v", tc.given)
		assert.Equal(t, tc.want, p.loadMsg.PollFor, "PollFor %v in the load frame", tc.given)
	}
}
