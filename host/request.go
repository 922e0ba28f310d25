package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/permhost/permhost/abi"
)

// encodedRequest is one request encoded once for every plugin of a
// decision. The encoding leaves out Config, which differs between plugins:
// each plugin's own config (or, for a plugin without one, the request's)
// is spliced in as the last member, where encoding/json puts it, so that a
// plugin receives the same bytes as if the whole request had been encoded
// for it. Each plugin checks the size it would receive against its
// MaxInput before anything is copied for it. The bytes are never changed
// once made: instances of several plugins may read them.
type encodedRequest struct {
	req abi.Request // Config as given, for the plugins without their own
	// base is the request without Config, in buf; err is why it could not
	// be encoded.
	base []byte
	err  error
	// abandoned is set when a call that read base directly failed: its
	// guest may not have stopped yet and may still read it, so that buf
	// is never reused.
	abandoned bool
	// buf and cbuf are reused from decision to decision (encodings): a
	// fresh buffer per decision would allocate what the instance's own
	// buffer used to reuse.
	buf, cbuf []byte
	// config is the request's Config encoded as encoding/json would;
	// configErr is why it could not be (only a plugin without a config of
	// its own receives it).
	config    []byte
	configErr error
}

// configKey is what precedes the config member.
const configKey = `,"config":`

// testHookEncode, when set, is called for every request encoded.
var testHookEncode func()

var encodings = sync.Pool{New: func() any { return &encodedRequest{} }}

// maxPooledEncoding bounds the buffers kept for reuse, as instances bound
// their own.
const maxPooledEncoding = 1 << 20

// newEncodedRequest encodes req; release gives its buffer back.
func newEncodedRequest(req abi.Request) *encodedRequest {
	if testHookEncode != nil {
		testHookEncode()
	}
	r := encodings.Get().(*encodedRequest)
	r.req = req
	bare := req
	bare.Config = nil
	r.buf, r.err = appendRequest(r.buf[:0], &bare)
	if r.err != nil {
		return r
	}
	r.base = r.buf
	if len(req.Config) > 0 {
		// Not into buf: base keeps its bytes.
		r.cbuf, r.configErr = appendRawOmit(r.cbuf[:0], "", req.Config)
		if r.configErr != nil {
			return r
		}
		r.config = r.cbuf
	}
	return r
}

// release gives r back for reuse once no call can read it: never after a
// call on the shared bytes was abandoned. r must not be used after it.
func (r *encodedRequest) release() {
	if r.abandoned || cap(r.buf) > maxPooledEncoding || cap(r.cbuf) > maxPooledEncoding {
		return
	}
	r.req, r.base, r.err, r.config, r.configErr = abi.Request{}, nil, nil, nil, nil
	encodings.Put(r)
}

// forPlugin returns the config member p receives (nil for none) and the
// size of its input.
func (r *encodedRequest) forPlugin(p *Plugin) (config []byte, size int) {
	config = r.config
	if p.config != nil {
		config = p.config // compacted and checked at load
	}
	size = len(r.base)
	if len(config) > 0 {
		size += len(configKey) + len(config)
	}
	return config, size
}

// setInput makes inst's input for a plugin receiving config: the shared
// bytes themselves when there is no config to splice in (shared is then
// true: the instance's own buffer must be given back after a clean call),
// else a copy into the instance's own buffer.
func (r *encodedRequest) setInput(inst *instance, config []byte) (shared bool) {
	if len(config) == 0 {
		inst.input = r.base[:len(r.base):len(r.base)]
		return true
	}
	own := inst.input
	if cap(own) > 1<<20 {
		own = nil
	}
	b := append(own[:0], r.base[:len(r.base)-1]...)
	b = append(b, configKey...)
	b = append(b, config...)
	inst.input = append(b, '}')
	return false
}

// callEncoded runs one decision on r, as Call does.
func (p *Plugin) callEncoded(ctx context.Context, r *encodedRequest) Result {
	start := time.Now()
	var logs []Log
	d, e := p.call(ctx, start, r, &logs)
	res := Result{Decision: d, Logs: logs, Duration: time.Since(start)}
	if e != nil {
		res.Err = e
	}
	return res
}

// checkInput refuses r for p before any instance is taken when it cannot
// be encoded or is larger than p's MaxInput.
func (p *Plugin) checkInput(r *encodedRequest) *Error {
	err := r.err
	if err == nil && p.config == nil {
		err = r.configErr
	}
	if err != nil {
		return p.fail(KindInputTooLarge, fmt.Errorf("encode request: %w", err))
	}
	if _, n := r.forPlugin(p); n > p.limits.MaxInput {
		return p.fail(KindInputTooLarge, fmt.Errorf("request of %d bytes exceeds the limit of %d", n, p.limits.MaxInput))
	}
	return nil
}
