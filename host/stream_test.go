package host

import (
	"reflect"
	"testing"

	"github.com/permhost/permhost/sandbox"
)

// What a plugin writes to stdout and stderr becomes one log entry per
// line, however its C library splits the writes: wasi-libc's fflush writes
// the buffered line and an empty second iovec, which wazero hands over as
// an empty write and which must not become an empty entry.
func TestStreamWritesJoinIntoLines(t *testing.T) {
	inst := &instance{plugin: &Plugin{limits: sandbox.DefaultLimits()}, collectLogs: true}
	stdout, stderr := streamWriter{inst, "stdout"}, streamWriter{inst, "stderr"}
	for _, w := range []struct {
		to   streamWriter
		data string
	}{
		{stdout, "request of "}, {stdout, "275 bytes"}, {stdout, "\n"}, {stdout, ""},
		{stderr, "warning\n"}, {stderr, ""},
		{stdout, "no newline at the end"},
	} {
		w.to.Write([]byte(w.data))
	}
	inst.sealLogs()
	want := []Log{{"stdout", "request of 275 bytes"}, {"stderr", "warning"}, {"stdout", "no newline at the end"}}
	if !reflect.DeepEqual(inst.logs, want) {
		t.Errorf("logs = %q\nwant %q", inst.logs, want)
	}
}
