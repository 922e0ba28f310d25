package leader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of Listen about the socket's place.
var (
	// ErrInUse means another leader is answering on the socket.
	ErrInUse = errors.New("leader: a leader is already listening on this socket")
	// ErrUnsafeDir means the socket's directory can be entered or changed
	// by someone else, or does not belong to the user.
	ErrUnsafeDir = errors.New("leader: socket directory is not private")
)

// maxSocketPath is the longest path a Unix socket address may hold on
// Linux (sun_path is 108 bytes, NUL included).
const maxSocketPath = 107

// checkSocketPath refuses paths no Unix socket can have.
func checkSocketPath(path string) error {
	switch {
	case path == "":
		return errors.New("leader: empty socket path")
	case len(path) > maxSocketPath:
		return fmt.Errorf("leader: socket path %q is %d bytes; a Unix socket path holds at most %d", path, len(path), maxSocketPath)
	}
	return nil
}

// privateDir makes sure dir exists, belongs to uid and only its owner may
// enter it: it creates it 0700 when missing and refuses an existing one
// that others can enter, list or write.
func privateDir(dir string, uid int) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("leader: creating socket directory: %w", err)
		}
		// MkdirAll is subject to the umask, which only removes bits;
		// chmod makes the mode exact all the same.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("leader: socket directory: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("leader: socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d", ErrUnsafeDir, dir, st.Uid, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: others can enter %s (mode %04o); use a directory only you can enter (chmod 700)", ErrUnsafeDir, dir, perm)
	}
	return nil
}

// lockFile takes an advisory lock beside the socket, held for the leader's
// lifetime.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("leader: lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by a running leader", ErrInUse, path)
		}
		return nil, fmt.Errorf("leader: lock file %s: %w", path, err)
	}
	return f, nil
}

// clearStale removes the file at path when it is a socket nobody answers
// on, and refuses when someone does or when it is not a socket at all.
func clearStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("leader: %s exists and is not a socket (%v); refusing to replace it", path, fi.Mode().Type())
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("%w: %s", ErrInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("leader: %s exists and cannot be checked (%v); refusing to replace it", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("leader: removing stale socket: %w", err)
	}
	return nil
}

// listen creates the socket at path (absolute), 0600, in a private
// directory, replacing a stale one. The lock file must be closed after the
// listener.
func listen(ctx context.Context, path string) (*net.UnixListener, *os.File, error) {
	uid := os.Getuid()
	if err := privateDir(filepath.Dir(path), uid); err != nil {
		return nil, nil, err
	}
	// Lock first, then look at the socket: two leaders starting at once
	// must not both find it stale and remove each other's.
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, nil, err
	}
	if err := clearStale(ctx, path); err != nil {
		lock.Close()
		return nil, nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("leader: %w", err)
	}
	// The socket is created with the umask's mode; the directory is
	// private, so nobody else can reach it before the chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		lock.Close()
		return nil, nil, fmt.Errorf("leader: %w", err)
	}
	return l, lock, nil
}

// peerCred returns the credentials of the process at the other end of c,
// as the kernel recorded them when it connected.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, credErr
}
