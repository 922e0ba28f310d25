package sandbox

import (
	"fmt"
	"unicode/utf8"
)

// malformed is the panic value the binary reader uses; Instrument recovers it
// into an error wrapping ErrInstrument. Any other panic is a bug and is not
// recovered.
type malformed struct{ msg string }

func fail(format string, args ...any) {
	panic(malformed{fmt.Sprintf(format, args...)})
}

// reader decodes the WebAssembly binary format.
type reader struct {
	b   []byte
	off int
}

func (r *reader) eof() bool { return r.off >= len(r.b) }

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		fail("unexpected end at offset %d", r.off)
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)-r.off) {
		fail("length %d past the end at offset %d", n, r.off)
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	var shift uint
	for {
		c := r.byte()
		if shift >= bits || (shift+7 > bits && uint64(c&0x7f)>>(bits-shift) != 0) {
			fail("LEB128 overflows %d bits at offset %d", bits, r.off)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
		shift += 7
	}
}

// sleb skips a signed LEB128 of at most bits bits; the value is not needed.
func (r *reader) sleb(bits uint) {
	for n := uint(0); ; n += 7 {
		if n >= bits {
			fail("signed LEB128 overflows %d bits at offset %d", bits, r.off)
		}
		if r.byte()&0x80 == 0 {
			return
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// count reads a vector length, refusing lengths that cannot fit in the rest
// of the input (each element takes at least one byte) so that a hostile count
// cannot make us loop or allocate.
func (r *reader) count() uint32 {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)-r.off) {
		fail("vector of %d elements cannot fit in %d bytes", n, len(r.b)-r.off)
	}
	return n
}

func (r *reader) name() string {
	s := r.bytes(r.u32())
	if !utf8.Valid(s) {
		fail("name is not UTF-8 at offset %d", r.off)
	}
	return string(s)
}

// valtype skips a value type, including (ref null? ht).
func (r *reader) valtype() {
	switch r.byte() {
	case 0x63, 0x64:
		r.sleb(33)
	}
}

// blocktype skips a block type: empty, a value type, or a type index.
func (r *reader) blocktype() {
	if r.off < len(r.b) && (r.b[r.off] == 0x63 || r.b[r.off] == 0x64) {
		r.off++
	}
	r.sleb(33)
}

// limits skips table or memory limits, including the shared and 64-bit
// forms, and reports whether they are 64-bit.
func (r *reader) limits() (is64 bool) {
	is64, _, _, _ = r.limitsOf()
	return is64
}

// limitValues reads table or memory limits: the minimum, and the maximum
// when there is one.
func (r *reader) limitValues() (min, max uint64, hasMax bool) {
	_, min, max, hasMax = r.limitsOf()
	return min, max, hasMax
}

func (r *reader) limitsOf() (is64 bool, min, max uint64, hasMax bool) {
	flags := r.byte()
	if flags > 7 {
		fail("bad limits flags 0x%x", flags)
	}
	bits := uint(32)
	if flags&4 != 0 {
		bits = 64
	}
	min = r.uleb(bits)
	if flags&1 != 0 {
		max, hasMax = r.uleb(bits), true
	}
	return bits == 64, min, max, hasMax
}

// memarg skips alignment (with the multi-memory index flag) and offset.
func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.uleb(64)
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

// appendSection appends a section with its id and size.
func appendSection(b []byte, id byte, content []byte) []byte {
	b = append(b, id)
	b = appendU32(b, uint32(len(content)))
	return append(b, content...)
}
