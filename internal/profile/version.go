package profile

import (
	"strconv"
	"strings"
)

// parseVersion reads "MAJOR.MINOR.PATCH" (missing parts are 0, a leading
// "v" and a pre-release or build suffix are ignored).
func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if v == "" || len(parts) > 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

func compareVersions(a, b [3]int) int {
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// inRange reports whether version is at least min and below max (each
// ignored when empty). A version that does not parse is taken to be in
// range: the name is the strong signal.
func inRange(version, min, max string) bool {
	v, ok := parseVersion(version)
	if !ok {
		return true
	}
	if lo, ok := parseVersion(min); ok && min != "" && compareVersions(v, lo) < 0 {
		return false
	}
	if hi, ok := parseVersion(max); ok && max != "" && compareVersions(v, hi) >= 0 {
		return false
	}
	return true
}
