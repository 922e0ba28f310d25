//go:build !wasip1

package pdk

// Log writes msg to the decision log at info level. Outside a wasip1 build
// there is no host, and Log does nothing.
func Log(msg string) {}
