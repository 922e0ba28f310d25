//go:build !linux

package acp

// lineBuf is the storage of one long line: a heap buffer that doubles, up
// to a bound.
type lineBuf struct {
	b []byte
}

// grow makes room for need bytes, keeping b's, with a capacity of at most
// limit. It doubles: append's gentler growth copies a huge line many times.
func (lb *lineBuf) grow(need, limit int) {
	lb.b = append(make([]byte, 0, min(2*need, limit)), lb.b...)
}

// release lets the storage go.
func (lb *lineBuf) release() { lb.b = nil }
