package host

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/permhost/permhost/abi"
)

// infoSuffix names the file beside a compile cache entry that keeps what
// the module's permhost_describe said (<root>/<sha256>.describe.json). It
// lies outside the entry, whose files must all be wazero's or the
// instrumented module.
const infoSuffix = ".describe.json"

// keepInfo remembers info for the entry's module.
func (c *compileCache) keepInfo(info abi.Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	return writeAtomic(c.dir+infoSuffix, b)
}

// CachedInfo returns what permhost_describe said when the module whose
// sha256 (hex) is sha last loaded with the compile cache in cacheDir (""
// for the default, as in [Options]), without loading it; false when it
// never did, or the cache is "off". It lets a caller check a plugin's
// configuration keys at once instead of after a compile. It is a hint: only
// [Plugin.Info] of a loaded plugin is authoritative.
func CachedInfo(cacheDir, sha string) (abi.Info, bool) {
	if cacheDir == "off" || len(sha) != 64 {
		return abi.Info{}, false
	}
	if cacheDir == "" {
		root, err := defaultCacheRoot()
		if err != nil {
			return abi.Info{}, false
		}
		cacheDir = root
	}
	b, err := os.ReadFile(filepath.Join(cacheDir, sha+infoSuffix))
	if err != nil {
		return abi.Info{}, false
	}
	var info abi.Info
	if json.Unmarshal(b, &info) != nil {
		return abi.Info{}, false
	}
	return info, true
}
