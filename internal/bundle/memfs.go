package bundle

import (
	"bytes"
	"io/fs"
	"strings"
	"time"
)

// memFS is a bundle's files held in memory, by slash-separated path, as an
// fs.FS for config.ParseBundleFS: directories are implied by the paths.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	info, err := m.Stat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err.(*fs.PathError).Err}
	}
	return &memFile{info: info.(memInfo), r: bytes.NewReader(m[name])}, nil
}

func (m memFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if b, ok := m[name]; ok {
		return memInfo{name: name, size: int64(len(b))}, nil
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	for p := range m {
		if strings.HasPrefix(p, prefix) {
			return memInfo{name: name, dir: true}, nil
		}
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name[strings.LastIndex(i.name, "/")+1:] }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type memFile struct {
	info memInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(b []byte) (int, error) {
	if f.info.dir {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: fs.ErrInvalid}
	}
	return f.r.Read(b)
}
