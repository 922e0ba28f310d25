//go:build linux

package host

import "syscall"

// mapNoReserve: the mapping is a reservation; pages are committed as they
// are touched, so the limit need not be backed by swap up front.
const mapNoReserve = syscall.MAP_NORESERVE
