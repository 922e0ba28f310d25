package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openChecked opens the absolute, clean, resolved path real, following no
// symlink: each directory is opened from the one before with O_NOFOLLOW,
// and the file itself too, so that a symlink swapped into any component
// after real was checked fails the open (ELOOP, ENOTDIR) instead of being
// followed (RATIONALE.md, "Paths are judged as the OS opens them"). It
// works on every Unix, unlike openat2's RESOLVE_NO_SYMLINKS (Linux 5.6).
func openChecked(real string, flag int, perm uint32) (*os.File, error) {
	if !filepath.IsAbs(real) || filepath.Clean(real) != real {
		return nil, &os.PathError{Op: "open", Path: real, Err: unix.EINVAL}
	}
	dir, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	names := strings.Split(strings.TrimPrefix(real, "/"), "/")
	for i, name := range names {
		if name == "" {
			unix.Close(dir)
			return nil, &os.PathError{Op: "open", Path: real, Err: unix.EISDIR}
		}
		var fd int
		if i < len(names)-1 {
			fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		} else {
			fd, err = unix.Openat(dir, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		}
		unix.Close(dir)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: real, Err: err}
		}
		dir = fd
	}
	return os.NewFile(uintptr(dir), real), nil
}

// swapped is the error of an open that met a symlink where the checked
// path had none.
func swapped(path, real string) *fileError {
	return &fileError{CodeInvalidParams, fmt.Sprintf("permhost: %s changed after it was checked: %s now holds a symlink", path, real)}
}
