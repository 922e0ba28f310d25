package grants

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/permhost/permhost/abi"
	"github.com/permhost/permhost/internal/jsontext"
)

// Errors of a store.
var (
	// ErrNotFound: no grant has that id.
	ErrNotFound = errors.New("grants: no such grant")
	// ErrUntrusted is wrapped by the error of a grants file permhost will
	// not act on: not strict JSON of the format, a grant that does not
	// validate, another owner, writable by others.
	ErrUntrusted = errors.New("grants: file not trusted")
)

// FileName is the grants file inside permhost's state directory.
const FileName = "grants.json"

// fileVersion is the format of the grants file.
const fileVersion = 1

type file struct {
	Version int     `json:"version"`
	Grants  []Grant `json:"grants"`
}

// DefaultPath is $XDG_STATE_HOME/permhost/grants.json, or
// ~/.local/state/permhost/grants.json without XDG_STATE_HOME.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("grants: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "permhost", FileName), nil
}

// Store is a grants file. Its methods are safe for concurrent use, also
// by several processes on one file.
type Store struct {
	path string
	now  func() time.Time

	mu     sync.Mutex
	stamp  stamp // of the file last read
	grants []Grant
	err    error // of the file last read
}

// stamp identifies one version of the file: a write renames a new file in
// place, so inode, size and time change.
type stamp struct {
	ok    bool
	ino   uint64
	size  int64
	mtime time.Time
}

// Open returns the store of the file at path (created on the first Add).
// It does no I/O.
func Open(path string) *Store { return &Store{path: path, now: time.Now} }

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// List returns every grant, oldest first.
func (s *Store) List() ([]Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return slices.Clone(s.grants), nil
}

// Match returns the oldest grant req falls inside. A file that cannot be
// read or trusted matches nothing, and the error says why.
func (s *Store) Match(req abi.Request) (Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Grant{}, false, err
	}
	q := newQuery(req)
	for _, g := range s.grants {
		if g.matches(q) {
			return g, true, nil
		}
	}
	return Grant{}, false, nil
}

// Add records g with a new id and the time, and returns it as stored.
func (s *Store) Add(g Grant) (Grant, error) {
	err := s.change(func(list []Grant) ([]Grant, error) {
		for {
			g.ID = newID()
			if !slices.ContainsFunc(list, func(x Grant) bool { return x.ID == g.ID }) {
				break
			}
		}
		g.Created = s.now().UTC().Truncate(time.Second)
		if err := g.Validate(); err != nil {
			return nil, err
		}
		return append(list, g), nil
	})
	if err != nil {
		return Grant{}, err
	}
	return g, nil
}

// Revoke removes the grant with id and returns it; ErrNotFound when there
// is none.
func (s *Store) Revoke(id string) (Grant, error) {
	var gone Grant
	err := s.change(func(list []Grant) ([]Grant, error) {
		i := slices.IndexFunc(list, func(g Grant) bool { return g.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		gone = list[i]
		return slices.Delete(list, i, i+1), nil
	})
	return gone, err
}

// Clear removes every grant of project (absolute; "" for every project)
// and returns those removed.
func (s *Store) Clear(project string) ([]Grant, error) {
	if project != "" {
		project = filepath.Clean(project)
	}
	var gone []Grant
	err := s.change(func(list []Grant) ([]Grant, error) {
		kept := list[:0:0]
		for _, g := range list {
			if project == "" || g.Project == project {
				gone = append(gone, g)
			} else {
				kept = append(kept, g)
			}
		}
		return kept, nil
	})
	return gone, err
}

// change applies f to the grants under the file's lock and writes the
// result atomically. A file that cannot be trusted is not changed: the
// person must look at it (or remove it) first.
func (s *Store) change(f func([]Grant) ([]Grant, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Dir(s.path)
	if err := ensureDir(dir); err != nil {
		return err
	}
	unlock, err := lock(s.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	s.stamp = stamp{} // read again under the lock
	if err := s.refresh(); err != nil {
		return err
	}
	list, err := f(slices.Clone(s.grants))
	if err != nil {
		return err
	}
	if list == nil {
		list = []Grant{}
	}
	data, err := json.MarshalIndent(file{Version: fileVersion, Grants: list}, "", "  ")
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := writeAtomic(s.path, append(data, '\n')); err != nil {
		return err
	}
	s.stamp = stamp{}
	return s.refresh()
}

// refresh re-reads the file when it changed since the last read.
func (s *Store) refresh() error {
	st, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.stamp, s.grants, s.err = stamp{ok: true}, nil, nil
		return nil
	}
	if err != nil {
		s.stamp, s.grants, s.err = stamp{}, nil, fmt.Errorf("grants: %w", err)
		return s.err
	}
	now := stamp{ok: true, size: st.Size(), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		now.ino = sys.Ino
	}
	if now == s.stamp {
		return s.err
	}
	s.stamp = now
	s.grants, s.err = read(s.path)
	return s.err
}

// read reads and checks the grants file.
func read(path string) ([]Grant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	if err := trusted(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrUntrusted, path, maxFileBytes)
	}
	list, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}

// maxFileBytes bounds the grants file: thousands of grants.
const maxFileBytes = 8 << 20

// Decode reads a grants file strictly: one JSON object of the format with
// its keys spelt exactly (no unknown field, no key twice in any case at any
// depth, nothing Go would read another way than it is written), every
// grant valid, no id twice.
func Decode(data []byte) ([]Grant, error) {
	if err := jsontext.Check(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if v := bytes.TrimLeft(data, " \t\r\n"); v[0] != '{' {
		// null would decode as an empty file; say what is wrong.
		return nil, fmt.Errorf("%w: want a JSON object {\"version\": %d, \"grants\": [...]}, got %s", ErrUntrusted, fileVersion, jsonKind(v[0]))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the object", ErrUntrusted)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the object", ErrUntrusted)
	}
	// encoding/json matches keys without regard to case: what it read
	// must encode back to what is written.
	if again, err := json.Marshal(f); err != nil || !sameJSON(data, again) {
		return nil, fmt.Errorf("%w: not in the grants format as permhost writes it (a key spelt differently, an empty field written out, a time not in UTC seconds)", ErrUntrusted)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrUntrusted, f.Version, fileVersion)
	}
	seen := map[string]bool{}
	for _, g := range f.Grants {
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUntrusted, err)
		}
		if seen[g.ID] {
			return nil, fmt.Errorf("%w: id %s twice", ErrUntrusted, g.ID)
		}
		seen[g.ID] = true
	}
	return f.Grants, nil
}

// trusted refuses a file another user owns or others may write: its
// grants would be someone else's decisions.
func trusted(path string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by others (mode %v)", ErrUntrusted, path, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to uid %d", ErrUntrusted, path, sys.Uid)
	}
	return nil
}

// ensureDir makes dir with mode 0700, and narrows it to 0700 when it
// exists wider (it is permhost's own state directory).
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("grants: %s has mode %v and cannot be made 0700: %w", dir, st.Mode().Perm(), err)
		}
	}
	return nil
}

// writeAtomic replaces path with data: a new 0600 file in the same
// directory, synced, renamed over it, and the directory synced.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("grants: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// lock takes an exclusive lock on the lock file at path.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("grants: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("grants: lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&x) == nil && db.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

func newID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "g-" + hex.EncodeToString(b[:])
}
