//go:build unix

package host

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with an anonymous
// mapping of the memory's maximum size (the plugin's memory limit, or less
// when the module declares less), reserved at instantiation and committed by
// the kernel page by page as the guest touches it. memory.grow then never
// copies: wazero's default allocator appends to a Go slice, and growing one
// page at a time to the 32 MiB cap took 90-220 ms of copying (up to 2.8 s
// under load) that no deadline check sees. Reserving the cap as a Go slice
// instead (wazero's WithMemoryCapacityFromMax) would put 32 MiB per instance
// on the Go heap, zeroed on every reuse: measured 5-13 ms per instance made
// instead of 0.05-0.25 ms, and it refuses modules that declare a larger
// maximum than the limit instead of capping them.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(allocateMapped)

func allocateMapped(capacity, maximum uint64) experimental.LinearMemory {
	if maximum > 0 && maximum <= 1<<32 {
		b, err := syscall.Mmap(-1, 0, int(maximum), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err == nil {
			return &mappedMemory{buf: b}
		}
	}
	// No mapping (none needed, or the system refused one): a Go slice,
	// grown like wazero's own.
	return &sliceMemory{buf: make([]byte, 0, capacity)}
}

// mappedMemory is a linear memory in its own mapping; it never moves.
type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

// Free unmaps the memory. wazero calls it when the module is closed, which
// permhost does only when no guest runs on it.
func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
