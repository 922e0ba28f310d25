// Package e2e holds end-to-end tests that drive the real permhost binary over
// real pipes, with fake and real ACP agents.
//
// TestMain builds the binary under test; PERMHOST_E2E_BIN names another
// instead, e.g. one built from the commit before a fix, to see the fix's
// test fail without it:
//
//	git worktree add /tmp/old COMMIT && (cd /tmp/old && go build -o /tmp/permhost-old ./cmd/permhost)
//	PERMHOST_E2E_BIN=/tmp/permhost-old go test -run TestMediation ./e2e
package e2e
