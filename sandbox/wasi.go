package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The WASI functions whose work grows with their arguments, replacing
// wazero's: a guest could otherwise keep its goroutine in one host call for
// as long as its memory allows (fd_write of a million iovecs, each scanned;
// random_get of 32 MiB in a loop), past its deadline, where no check runs.
// Each checks the deadline and the caller's context before and during its
// work (Charge), charges what it does to the guest's budget, and bounds what
// one call may do. The rest of WASI does constant work (or fails at once:
// nothing is granted) and is wazero's.

// Bounds of one call.
const (
	// maxIovecs is POSIX's IOV_MAX: more iovecs in one call is EINVAL, as
	// for Linux's writev.
	maxIovecs = 1024
	// maxWriteBytes is the most one fd_write passes on; the rest is a short
	// write, which writers (Go's os.File among them) retry with the
	// remainder: each retry is a call of the guest's, between its checks.
	maxWriteBytes = 1 << 20
	// hostChunk is how much work a host function does between two checks
	// of its deadline: 64 KiB of copying or random bytes, tens of
	// microseconds.
	hostChunk = 64 << 10
	// maxSubscriptions bounds one poll_oneoff.
	maxSubscriptions = 1024
)

// WASI errnos.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoIO      = 29
	errnoNotsup  = 58
)

type stdioKey struct{}

// stdio is where a guest's stdout and stderr go.
type stdio struct{ stdout, stderr io.Writer }

// WithStdio returns a context under which guests' writes to stdout and
// stderr go to the given writers (nil discards), for the calls made with it
// (InstantiateModule's start function included). Each fd_write passes at
// most 1 MiB on, in writes of at most 64 KiB; the writers should be cheap
// and bounded (keep the first bytes, count the rest): they run inside the
// guest's call.
func WithStdio(ctx context.Context, stdout, stderr io.Writer) context.Context {
	return context.WithValue(ctx, stdioKey{}, &stdio{stdout: stdout, stderr: stderr})
}

// stdioWriter is the writer of fd (1 or 2) under ctx, nil for none.
func stdioWriter(ctx context.Context, fd uint32) io.Writer {
	s, _ := ctx.Value(stdioKey{}).(*stdio)
	switch {
	case s == nil:
		return nil
	case fd == 1:
		return s.stdout
	}
	return s.stderr
}

// exportBoundedWASI adds the bounded functions to b, a builder of the WASI
// module that already has wazero's: later exports replace earlier ones.
func exportBoundedWASI(b wazero.HostModuleBuilder) {
	i32 := api.ValueTypeI32
	i64 := api.ValueTypeI64
	for _, f := range []struct {
		name   string
		fn     api.GoModuleFunc
		params []api.ValueType
	}{
		{"fd_write", fdWrite, []api.ValueType{i32, i32, i32, i32}},
		{"fd_pwrite", fdPositioned, []api.ValueType{i32, i32, i32, i64, i32}},
		{"fd_read", fdRead, []api.ValueType{i32, i32, i32, i32}},
		{"fd_pread", fdPositioned, []api.ValueType{i32, i32, i32, i64, i32}},
		{"random_get", randomGet, []api.ValueType{i32, i32}},
		{"poll_oneoff", pollOneoff, []api.ValueType{i32, i32, i32, i32}},
	} {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, []api.ValueType{i32}).Export(f.name)
	}
}

// hostStop ends a host function's work at the guest's deadline: it panics
// with Charge's error, which ends the guest's call.
func hostStop(ctx context.Context, mod api.Module, units uint64) {
	if err := Charge(ctx, mod, units); err != nil {
		panic(err)
	}
}

// iovecs reads count iovecs at off, or reports a fault.
func iovecs(mem api.Memory, off, count uint32) ([]byte, bool) {
	return mem.Read(off, count*8)
}

// fdWrite is fd_write(fd, iovs, iovs_len, nwritten) -> errno for stdout and
// stderr (other descriptors are EBADF: nothing else is open for writing).
// At most maxIovecs iovecs, and maxWriteBytes bytes, per call.
func fdWrite(ctx context.Context, mod api.Module, s []uint64) {
	fd, iovs, count, result := uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])
	s[0] = errnoSuccess
	hostStop(ctx, mod, uint64(count))
	mem := memoryOf(mod)
	switch {
	case fd != 1 && fd != 2:
		s[0] = errnoBadf
		return
	case count > maxIovecs:
		s[0] = errnoInval
		return
	case mem == nil:
		s[0] = errnoFault
		return
	}
	vec, ok := iovecs(mem, iovs, count)
	if !ok {
		s[0] = errnoFault
		return
	}
	w := stdioWriter(ctx, fd)
	var written uint32
	for i := uint32(0); i < count && written < maxWriteBytes; i++ {
		off, n := binary.LittleEndian.Uint32(vec[8*i:]), binary.LittleEndian.Uint32(vec[8*i+4:])
		b, ok := mem.Read(off, n)
		if !ok {
			s[0] = errnoFault
			return
		}
		b = b[:min(uint32(len(b)), maxWriteBytes-written)]
		for len(b) > 0 {
			chunk := b[:min(len(b), hostChunk)]
			hostStop(ctx, mod, uint64(len(chunk))>>memoryBulkShift)
			if w != nil {
				if _, err := w.Write(chunk); err != nil {
					s[0] = errnoIO
					return
				}
			}
			written += uint32(len(chunk))
			b = b[len(chunk):]
		}
	}
	if !mem.WriteUint32Le(result, written) {
		s[0] = errnoFault
	}
}

// fdRead is fd_read(fd, iovs, iovs_len, nread) -> errno: stdin is empty (0
// bytes read, end of file), stdout and stderr are not readable and nothing
// else is open: EBADF.
func fdRead(ctx context.Context, mod api.Module, s []uint64) {
	fd, result := uint32(s[0]), uint32(s[3])
	hostStop(ctx, mod, 0)
	mem := memoryOf(mod)
	switch {
	case fd != 0:
		s[0] = errnoBadf
	case mem == nil || !mem.WriteUint32Le(result, 0):
		s[0] = errnoFault
	default:
		s[0] = errnoSuccess
	}
}

// fdPositioned is fd_pread and fd_pwrite: no open descriptor has a
// position (the standard streams are not files), so EBADF, as wazero
// answers for them.
func fdPositioned(ctx context.Context, mod api.Module, s []uint64) {
	hostStop(ctx, mod, 0)
	s[0] = errnoBadf
}

// randomGet is random_get(buf, len) -> errno, from crypto/rand in chunks,
// checking the deadline between them and charging a unit per byte.
func randomGet(ctx context.Context, mod api.Module, s []uint64) {
	buf, n := uint32(s[0]), uint32(s[1])
	hostStop(ctx, mod, 0)
	mem := memoryOf(mod)
	if mem == nil {
		s[0] = errnoFault
		return
	}
	b, ok := mem.Read(buf, n)
	if !ok {
		s[0] = errnoFault
		return
	}
	for len(b) > 0 {
		chunk := b[:min(len(b), hostChunk)]
		hostStop(ctx, mod, uint64(len(chunk)))
		if _, err := io.ReadFull(rand.Reader, chunk); err != nil {
			s[0] = errnoIO
			return
		}
		b = b[len(chunk):]
	}
	s[0] = errnoSuccess
}

// pollOneoff is poll_oneoff(in, out, nsubscriptions, nevents) -> errno
// without waiting: sleeping is not real in the sandbox (see ModuleConfig),
// so every relative clock subscription fires at once; stdin is always
// readable (it is empty); the standard streams cannot be polled for writing
// (ENOTSUP in the event) and other descriptors are not open (EBADF in the
// event). Absolute clocks are ENOTSUP, as in wazero. At most
// maxSubscriptions per call.
func pollOneoff(ctx context.Context, mod api.Module, s []uint64) {
	in, out, count, result := uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])
	hostStop(ctx, mod, uint64(count)*4)
	mem := memoryOf(mod)
	switch {
	case count == 0 || count > maxSubscriptions:
		s[0] = errnoInval
		return
	case mem == nil:
		s[0] = errnoFault
		return
	}
	subs, ok1 := mem.Read(in, count*48)
	events, ok2 := mem.Read(out, count*32)
	if !ok1 || !ok2 {
		s[0] = errnoFault
		return
	}
	le := binary.LittleEndian
	for i := uint32(0); i < count; i++ {
		sub, ev := subs[48*i:48*i+48], events[32*i:32*i+32]
		kind := sub[8]
		var errno uint16
		switch kind {
		case 0: // clock: flags at 8+8+24
			switch le.Uint16(sub[40:]) {
			case 0:
			case 1:
				s[0] = errnoNotsup
				return
			default:
				s[0] = errnoInval
				return
			}
		case 1, 2: // fd_read, fd_write: the descriptor at 8+8
			switch fd := int32(le.Uint32(sub[16:])); {
			case fd < 0:
				s[0] = errnoBadf
				return
			case fd > 2:
				errno = errnoBadf
			case kind == 2 || fd != 0:
				errno = errnoNotsup
			}
		default:
			s[0] = errnoInval
			return
		}
		clear(ev)
		copy(ev[0:8], sub[0:8]) // userdata
		le.PutUint16(ev[8:], errno)
		ev[10] = kind
	}
	if !mem.WriteUint32Le(result, count) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}
