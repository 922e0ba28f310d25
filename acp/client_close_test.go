package acp

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/permhost/permhost/internal/acptest"
)

// Close closes the agent's output under the read loop; the read that fails
// then is the connection ending as asked, not an error to report. (permhost
// run closes the connection once the turn has ended, sometimes before the
// read loop has seen the agent's end of output: it logged "ERROR reading
// from the agent failed ... file already closed".)
func TestClientCloseWhileReadingLogsNoError(t *testing.T) {
	outR, outW, err := os.Pipe() // the agent's stdout, as StartAgent makes it
	if err != nil {
		t.Fatal(err)
	}
	defer outW.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	var logs acptest.SyncBuffer
	c, err := NewClientConn(inW, outR, ClientOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A line read proves the read loop runs; it then blocks in the next read.
	if _, err := outW.WriteString(`{"jsonrpc":"2.0","method":"x/unknown"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-c.Done()
	if !errors.Is(c.Err(), ErrConnClosed) {
		t.Errorf("Err() = %v, want ErrConnClosed", c.Err())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("closing the connection logged an error:\n%s", logs.String())
	}
}
