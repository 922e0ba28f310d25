//go:build unix && !linux

package acp

// groupLive reports whether a process of process group pgid exists;
// without /proc a zombie counts as alive.
func groupLive(pgid int) bool { return groupSignalable(pgid) }
