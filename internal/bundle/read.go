package bundle

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/permhost/permhost/internal/config"
)

// maxBytes bounds what a bundle directory may hold in all: it is read into
// memory at once.
const maxBytes = 1 << 30

// files is a bundle directory as read once: every regular file but the
// signature, by slash-separated path, and the signature. Everything checked
// (the manifest's digests, the signature, the plugins' pins) and everything
// used (bundle.toml, the plugins' modules) comes from these bytes, so that
// a file replaced while a bundle loads is either in what was verified or
// not loaded at all.
type files struct {
	dir  string            // absolute
	data map[string][]byte // slash-separated path -> contents
	sig  []byte            // nil when there is no signature
	// mem is set when the files are not on disk under dir (an archive
	// pulled from a registry): bundle.toml's paths are checked in data.
	mem bool
}

// readDir reads every file of the bundle in dir. Symbolic links and other
// non-regular files are refused: they could make the signed bytes differ
// from what another reader of the directory sees.
func readDir(dir string) (*files, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	f := &files{dir: abs, data: map[string][]byte{}}
	left := int64(maxBytes)
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(abs, p)
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%w: %s is not a regular file", ErrLayout, rel)
		}
		name := filepath.ToSlash(rel)
		if strings.ContainsAny(name, "\n\r") {
			return fmt.Errorf("%w: file name %q", ErrLayout, name)
		}
		b, err := readRegular(p, rel, left)
		if err != nil {
			return err
		}
		left -= int64(len(b))
		if name == SignatureFile {
			f.sig = b
		} else {
			f.data[name] = b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readRegular reads the file at p (rel in the bundle), at most limit bytes,
// refusing one that is no longer a regular file once opened.
func readRegular(p, rel string, limit int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrLayout, rel)
	}
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: the bundle holds more than %d bytes", ErrLayout, int64(maxBytes))
	}
	return b, nil
}

// parse validates the bundle.toml read.
func (f *files) parse() (*config.BundleManifest, error) {
	data, ok := f.data[config.BundleFile]
	if !ok {
		return nil, config.ErrorList{{File: filepath.Join(f.dir, config.BundleFile), Msg: "cannot read: no such file or directory"}}
	}
	if f.mem {
		return config.ParseBundleFS(f.dir, data, memFS(f.data))
	}
	return config.ParseBundle(f.dir, data)
}

// module returns the bytes read of the file at path (absolute, inside the
// bundle, as bundle.toml's validation made it).
func (f *files) module(path string) ([]byte, bool) {
	rel, err := filepath.Rel(f.dir, path)
	if err != nil {
		return nil, false
	}
	b, ok := f.data[filepath.ToSlash(rel)]
	return b, ok
}
