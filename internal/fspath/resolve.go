package fspath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Errors of Resolve, besides those of the file system.
var (
	// ErrNotAbsolute: the path (joined to its directory) is not absolute.
	ErrNotAbsolute = errors.New("fspath: not an absolute path")
	// ErrLoop: more symlinks than the kernel follows (a loop).
	ErrLoop = errors.New("fspath: too many levels of symbolic links")
	// ErrNotDir: a component that is not a directory is followed by more.
	ErrNotDir = errors.New("fspath: not a directory")
	// ErrTooLong: longer than the kernel opens (PATH_MAX).
	ErrTooLong = errors.New("fspath: path too long")
)

// maxLinks is the number of symlinks Linux follows in one lookup
// (MAXSYMLINKS) before it fails with ELOOP.
const maxLinks = 40

// maxPath is Linux's PATH_MAX: the kernel refuses to open a longer path,
// and it bounds the work one untrusted path can cost.
const maxPath = 4096

// Join makes p absolute against dir as the kernel would, without cleaning
// it: a "k/.." in p must stay for Resolve to apply after k's symlink.
// p is returned as is when already absolute; "" when p is empty or dir is
// not absolute.
func Join(dir, p string) string {
	switch {
	case p == "":
		return ""
	case filepath.IsAbs(p):
		return p
	case !filepath.IsAbs(dir):
		return ""
	}
	return strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator) + p
}

// Resolve returns the absolute path p stands for with every symlink
// resolved, component by component as the kernel does: a symlink is
// replaced by its target where it is met (an absolute target restarts
// from the root), and ".." goes to the parent of the directory reached so
// far. The result is clean and holds no symlink. When a component does not
// exist (a file a write creates, or a dangling symlink's target), it and
// what follows are appended as the directories a write creates would make
// them: a ".." undoes the name before it.
// It fails when p is not absolute or longer than the kernel opens, on a
// symlink loop, on a component that is not a directory but has more after
// it, and when a component cannot be examined (permission): a decision
// then has nothing to go on.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q", ErrNotAbsolute, p)
	}
	if len(p) >= maxPath {
		return "", fmt.Errorf("%w: %d bytes", ErrTooLong, len(p))
	}
	sep := string(filepath.Separator)
	done := sep // resolved so far: clean, absolute, no symlink
	rest := p   // still to walk
	// missing are the names below done that do not exist: what a write
	// would create (mkdir -p, then the file). A ".." among them undoes
	// the last, as it would once they are created; one more goes back
	// into what exists, which is walked again.
	var missing []string
	links := 0
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(strings.TrimLeft(rest, sep), sep)
		switch {
		case name == "" || name == ".":
			continue
		case name == ".." && len(missing) > 0:
			missing = missing[:len(missing)-1]
			continue
		case name == "..":
			done = filepath.Dir(done)
			continue
		case len(missing) > 0:
			missing = append(missing, name)
			continue
		}
		next := filepath.Join(done, name)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, name)
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return "", fmt.Errorf("%w: %s", ErrNotDir, done)
		case err != nil:
			return "", fmt.Errorf("fspath: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", fmt.Errorf("%w: %s", ErrLoop, p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("fspath: %w", err)
			}
			if filepath.IsAbs(target) {
				done = sep
			}
			rest = target + sep + rest
			continue
		}
		if !fi.IsDir() && strings.Trim(rest, sep) != "" {
			return "", fmt.Errorf("%w: %s", ErrNotDir, next)
		}
		done = next
	}
	return filepath.Join(append([]string{done}, missing...)...), nil
}
