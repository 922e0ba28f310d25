package worker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripted returns its steps in order: bytes, or an error once.
type scripted struct{ steps []any }

func (s *scripted) Read(p []byte) (int, error) {
	if len(s.steps) == 0 {
		return 0, io.EOF
	}
	switch v := s.steps[0].(type) {
	case error:
		s.steps = s.steps[1:]
		return 0, v
	case []byte:
		n := copy(p, v)
		if n == len(v) {
			s.steps = s.steps[1:]
		} else {
			s.steps[0] = v[n:]
		}
		return n, nil
	}
	panic("bad step")
}

// TestFrameReaderResumes: a read cut by the deadline anywhere in a frame
// (its header, its payload, an oversized frame being skipped) reads
// nothing, and the next read goes on from there: the caller that gives up
// at its deadline leaves the stream whole for the next reader.
func TestFrameReaderResumes(t *testing.T) {
	cut := os.ErrDeadlineExceeded
	a := appendFrame(nil, frameAnswer, 7, []byte(`{"a":1}`))
	big := appendFrame(nil, frameAnswer, 8, bytes.Repeat([]byte("x"), 100))
	c := appendFrame(nil, frameLogs, 9, nil)
	s := &scripted{steps: []any{
		a[:5], cut, a[5 : headerSize+2], cut, cut, a[headerSize+2:],
		big[:headerSize+10], cut, big[headerSize+10 : headerSize+60], cut, big[headerSize+60:],
		c[:3], cut, c[3:],
		[]byte{0, 0}, // a header cut short by the end
	}}
	fr := frameReader{r: bufio.NewReaderSize(s, 16), maxFor: func(byte) int { return 50 }}
	next := func() (byte, uint64, []byte, error) {
		for {
			typ, id, payload, err := fr.next()
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return typ, id, payload, err
			}
		}
	}
	typ, id, payload, err := next()
	require.NoError(t, err)
	assert.Equal(t, frameAnswer, typ)
	assert.Equal(t, uint64(7), id)
	assert.Equal(t, `{"a":1}`, string(payload))
	_, id, _, err = next()
	var tl *tooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, uint64(8), id)
	assert.Equal(t, 100, tl.size)
	typ, id, payload, err = next()
	require.NoError(t, err)
	assert.Equal(t, frameLogs, typ)
	assert.Equal(t, uint64(9), id)
	assert.Empty(t, payload)
	_, _, _, err = next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	// Cut at each step, it reads nothing.
	s = &scripted{steps: []any{cut, a}}
	fr = frameReader{r: bufio.NewReader(s), maxFor: func(byte) int { return 50 }}
	_, _, _, err = fr.next()
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	_, id, _, err = fr.next()
	require.NoError(t, err)
	assert.Equal(t, uint64(7), id)
	_, _, _, err = fr.next()
	assert.ErrorIs(t, err, io.EOF)
}
