package worker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// frameReader is readFrame that can be cut short by a read deadline and
// resumed, by another goroutine: the parent's caller reading its own answer
// stops at its deadline, possibly within a frame, and whoever reads next
// goes on from the byte it stopped at. Used by one goroutine at a time.
type frameReader struct {
	r      *bufio.Reader
	maxFor func(byte) int

	h       [headerSize]byte
	hn      int    // header bytes read
	payload []byte // the frame's payload, pn bytes of it read
	pn      int
	skip    int64          // bytes of an oversized frame still to skip
	large   *tooLargeError // the oversized frame being skipped
}

// next reads the next frame as readFrame does. An error wrapping
// os.ErrDeadlineExceeded leaves the stream where it was: call next again.
// Any other error leaves the stream unusable.
func (fr *frameReader) next() (typ byte, id uint64, payload []byte, err error) {
	for fr.hn < headerSize {
		n, err := fr.r.Read(fr.h[fr.hn:])
		fr.hn += n
		if err != nil {
			if err == io.EOF && fr.hn > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, nil, err
		}
		if fr.hn == headerSize {
			n := int64(binary.BigEndian.Uint32(fr.h[0:4]))
			typ := fr.h[4]
			if max := fr.maxFor(typ); n > int64(max) {
				fr.skip = n
				fr.large = &tooLargeError{typ: typ, id: binary.BigEndian.Uint64(fr.h[5:13]), size: int(n), max: max}
			} else {
				fr.payload, fr.pn = make([]byte, n), 0
			}
		}
	}
	typ, id = fr.h[4], binary.BigEndian.Uint64(fr.h[5:13])
	if fr.large != nil {
		for fr.skip > 0 {
			n, err := fr.r.Discard(int(min(fr.skip, 1<<20)))
			fr.skip -= int64(n)
			if err != nil && fr.skip > 0 {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return 0, 0, nil, err
				}
				return 0, 0, nil, fmt.Errorf("%w: skipping an oversized frame: %v", ErrProtocol, err)
			}
		}
		large := fr.large
		fr.hn, fr.large = 0, nil
		return typ, id, nil, large
	}
	for fr.pn < len(fr.payload) {
		n, err := fr.r.Read(fr.payload[fr.pn:])
		fr.pn += n
		if err != nil && fr.pn < len(fr.payload) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, nil, err
		}
	}
	payload = fr.payload
	fr.hn, fr.payload, fr.pn = 0, nil, 0
	return typ, id, payload, nil
}
