package host

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/digest"
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

// checkSuffix names the file beside a compile cache entry that keeps what
// the module's permhost_check_config said of the configuration it last
// loaded with (<root>/<sha256>.check.json), or that it has no such export.
const checkSuffix = ".check.json"

// cachedCheck is a checkSuffix file.
type cachedCheck struct {
	Checks   bool                `json:"checks"`
	Config   string              `json:"config,omitempty"` // sha256 of the compacted configuration
	Problems []abi.ConfigProblem `json:"problems,omitempty"`
}

// keepCheck remembers whether the entry's module checks its configuration
// and, when it does, what it found in config.
func (c *compileCache) keepCheck(checks bool, config json.RawMessage, problems []abi.ConfigProblem) error {
	cc := cachedCheck{Checks: checks}
	if checks {
		cc.Config, cc.Problems = digest.Bytes(config), problems
	}
	b, err := json.Marshal(cc)
	if err != nil {
		return err
	}
	return writeAtomic(c.dir+checkSuffix, b)
}

// CachedConfigCheck returns what [Plugin.ConfigProblems] would return for
// the module whose sha256 (hex) is sha loaded with config, without loading
// it: known when the module last loaded with the compile cache in cacheDir
// and either has no permhost_check_config export or was then given the
// same configuration; false otherwise. Like [CachedInfo] it is a hint.
func CachedConfigCheck(cacheDir, sha string, config json.RawMessage) ([]abi.ConfigProblem, bool) {
	dir, ok := cacheRoot(cacheDir, sha)
	if !ok {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(dir, sha+checkSuffix))
	if err != nil {
		return nil, false
	}
	var cc cachedCheck
	if json.Unmarshal(b, &cc) != nil {
		return nil, false
	}
	if !cc.Checks {
		return nil, true
	}
	var compact json.RawMessage
	if config != nil {
		c, _, err := parseConfig(config)
		if err != nil {
			return nil, false
		}
		compact = c
	}
	if digest.Bytes(compact) != cc.Config {
		return nil, false
	}
	if len(cc.Problems) == 0 {
		return nil, true
	}
	return cleanProblems(cc.Problems), true
}

// cacheRoot is the cache root for cacheDir as [Options] takes it; false
// when there is none or sha is not one.
func cacheRoot(cacheDir, sha string) (string, bool) {
	if cacheDir == "off" || len(sha) != 64 {
		return "", false
	}
	if cacheDir == "" {
		root, err := defaultCacheRoot()
		if err != nil {
			return "", false
		}
		return root, true
	}
	return cacheDir, true
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
