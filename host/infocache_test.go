package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/internal/digest"
)

// A load through the compile cache remembers the plugin's description, so
// that its configuration keys can be checked before the next load is done.
func TestCachedInfo(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join("..", "testdata", "wasm", "scripted.wasm")
	sha, err := digest.File(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := CachedInfo(root, sha); ok {
		t.Fatal("a description before the module ever loaded")
	}
	p, err := Load(ctx, Options{Path: path, CacheDir: root})
	if err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	info, ok := CachedInfo(root, sha)
	if !ok || info.Name != "scripted" || len(info.ConfigKeys) != 2 || info.ConfigKeys[1] != "delay_ms" {
		t.Fatalf("CachedInfo = %+v, %v", info, ok)
	}
	// The entry itself still verifies: the description lies beside it.
	if _, _, err := verifyEntry(filepath.Join(root, sha)); err != nil {
		t.Errorf("the compile cache entry no longer verifies: %v", err)
	}
	if _, ok := CachedInfo("off", sha); ok {
		t.Error(`a description with the cache "off"`)
	}
	os.WriteFile(filepath.Join(root, sha+infoSuffix), []byte("{not json"), 0o600)
	if _, ok := CachedInfo(root, sha); ok {
		t.Error("a description from a damaged file")
	}
}
