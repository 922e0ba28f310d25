package acp

import "golang.org/x/sys/unix"

// lineBuf is the storage of one long line. On Linux a line past mapFrom
// bytes lives in an anonymous mapping of its own that grows with mremap(2):
// the kernel moves the pages instead of copying them, so the line costs its
// own size once, never the sum of the buffers it outgrew, and releasing it
// gives the memory back to the system at once.
type lineBuf struct {
	b      []byte // the line so far (len) within its storage (cap)
	mapped []byte // the whole mapping b lives in; nil for heap storage
}

// mapFrom is the size from which a line is given a mapping of its own.
const mapFrom = 1 << 20

// grow makes room for need bytes, keeping b's, with a capacity of at most
// limit (rounded up to a page).
func (lb *lineBuf) grow(need, limit int) {
	size := min(2*need, limit)
	if lb.mapped == nil && size < mapFrom {
		lb.b = append(make([]byte, 0, size), lb.b...)
		return
	}
	size = (size + pageSize - 1) &^ (pageSize - 1)
	var m []byte
	var err error
	if lb.mapped == nil {
		m, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err == nil {
			copy(m, lb.b)
		}
	} else {
		m, err = unix.Mremap(lb.mapped, size, unix.MREMAP_MAYMOVE)
	}
	if err != nil { // out of mappings: the heap does it, copying
		lb.b = append(make([]byte, 0, size), lb.b...)
		lb.free()
		return
	}
	lb.b, lb.mapped = m[:len(lb.b):size], m
}

var pageSize = unix.Getpagesize()

// release gives the storage back; b must no longer be used.
func (lb *lineBuf) release() {
	lb.free()
	lb.b = nil
}

func (lb *lineBuf) free() {
	if lb.mapped != nil {
		_ = unix.Munmap(lb.mapped)
		lb.mapped = nil
	}
}
