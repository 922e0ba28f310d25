// Package e2e holds end-to-end tests that drive the real permhost binary over
// real pipes, with fake and real ACP agents.
package e2e
