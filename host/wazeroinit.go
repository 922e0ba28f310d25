package host

import (
	"context"

	"github.com/tetratelabs/wazero"
)

// wazero v1.12 caches its own version in an unguarded package variable the
// first time a runtime or a compilation cache is created; two plugins
// loading in parallel raced on it (seen under -race in the proxy). Creating
// one runtime here, before any goroutine can, makes every later access a
// read.
func init() {
	ctx := context.Background()
	_ = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig()).Close(ctx)
}
