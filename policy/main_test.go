package policy_test

import (
	"context"
	"os"
	"testing"

	"github.com/permhost/permhost/internal/worker"
)

// TestMain lets this test binary serve as the child of process-isolated
// plugins (a bundle's, by default), as permhost's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Command {
		os.Exit(worker.Serve(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	worker.Enable()
	os.Exit(m.Run())
}
