//go:build !unix

package host

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator: a Go slice, grown like wazero's own (see memory_unix.go
// for why unix systems map the memory instead).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(
	func(capacity, _ uint64) experimental.LinearMemory {
		return &sliceMemory{buf: make([]byte, 0, capacity)}
	})
