package host

// CacheDir returns the compile cache directory that [Options].CacheDir
// names ("" for the default), and false when there is none ("off", or no
// user cache directory).
func CacheDir(cacheDir string) (string, bool) {
	if cacheDir == "off" {
		return "", false
	}
	if cacheDir == "" {
		root, err := defaultCacheRoot()
		return root, err == nil
	}
	return cacheDir, true
}
