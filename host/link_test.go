package host

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/hostlink"
	"github.com/permhost/permhost/sandbox"
)

// The process wall's child runs its guests on the goroutine that calls
// (hostlink.OnCallersGoroutine): a call still decides, and a runaway guest
// is still stopped at its deadline by its own checks (sandbox.Watch), with
// kind timeout, the instance replaced.
func TestOnCallersGoroutineLink(t *testing.T) {
	p := load(t, "constant", Options{PoolSize: 1})
	hostlink.OnCallersGoroutine(p)
	require.True(t, p.onCallersGoroutine)
	_, err := p.Decide(context.Background(), request("x"))
	require.NoError(t, err)

	loop, err := Load(context.Background(), Options{Path: filepath.Join("..", "testdata", "wasm", "infinite_loop.wasm"),
		CacheDir: "off", PoolSize: 1, Limits: sandbox.Limits{Timeout: 30 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, loop.Close(context.Background())) })
	hostlink.OnCallersGoroutine(loop)
	for range 2 {
		d, err := loop.Decide(context.Background(), request("x"))
		e := requireKind(t, err, KindTimeout)
		assert.Contains(t, e.Err.Error(), "stopped at the")
		assert.Equal(t, abi.Decision{}, d)
	}
}
