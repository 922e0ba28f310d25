//go:build unix

package host

import (
	"errors"
	"os"
	"syscall"
)

// entryLock is the lock file of one compile cache entry, locked with
// flock(2): a lock belongs to the open file, so two loads in one process
// exclude each other as two processes do, and the kernel drops it when its
// holder dies.
type entryLock struct{ f *os.File }

func openEntryLock(path string) (*entryLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !ownedByMe(fi) {
		f.Close()
		if err == nil {
			err = errors.New("not a regular file of this user")
		}
		return nil, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	return &entryLock{f: f}, nil
}

// try takes the lock, shared or exclusive, without waiting; false when
// another holds it the other way. (Do not convert a lock held: flock drops
// the old one first, so a failed conversion leaves none; unlock first.)
func (l *entryLock) try(exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(l.f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

// unlock releases the lock and keeps the file open.
func (l *entryLock) unlock() error { return syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

// close releases the lock.
func (l *entryLock) close() error { return l.f.Close() }
