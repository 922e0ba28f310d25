package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/permhost/permhost/internal/config"
)

// ErrArchive is a bundle archive (a registry's layer) that is not a plain
// tar of regular files.
var ErrArchive = errors.New("bundle: malformed archive")

// Pack returns the bundle in dir as a tar archive: every regular file,
// the signature included, sorted by path, with fixed modes and times, so
// that the same files give the same bytes (and the same digest). The
// directory is read as Load reads it: links and other non-regular files
// are refused.
func Pack(dir string) ([]byte, error) {
	f, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	all := make(map[string][]byte, len(f.data)+1)
	for name, b := range f.data {
		all[name] = b
	}
	if f.sig != nil {
		all[SignatureFile] = f.sig
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(all[name])), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(all[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpack reads an archive made by Pack into memory, as if it were the
// bundle directory dir. Only regular files with clean, relative names,
// each once, are accepted: anything else could make what is verified
// differ from what a person unpacking the archive sees.
func unpack(dir string, archive []byte) (*files, error) {
	if int64(len(archive)) > 2*maxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrArchive, int64(2*maxBytes))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	f := &files{dir: abs, data: map[string][]byte{}, mem: true}
	tr := tar.NewReader(bytes.NewReader(archive))
	left := int64(maxBytes)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrArchive, err)
		}
		name := hdr.Name
		switch {
		case hdr.Typeflag != tar.TypeReg:
			return nil, fmt.Errorf("%w: %q is not a regular file", ErrArchive, name)
		case !fs.ValidPath(name) || name == "." || strings.Contains(name, "\\") || strings.ContainsAny(name, "\n\r"):
			return nil, fmt.Errorf("%w: file name %q", ErrArchive, name)
		case hdr.Size < 0 || hdr.Size > left:
			return nil, fmt.Errorf("%w: the bundle holds more than %d bytes", ErrArchive, int64(maxBytes))
		}
		if _, dup := f.data[name]; dup || name == SignatureFile && f.sig != nil {
			return nil, fmt.Errorf("%w: %q twice", ErrArchive, name)
		}
		b, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil || int64(len(b)) != hdr.Size {
			return nil, fmt.Errorf("%w: %q truncated", ErrArchive, name)
		}
		left -= hdr.Size
		if name == SignatureFile {
			f.sig = b
		} else {
			f.data[name] = b
		}
	}
	// A file and a directory of the same name cannot both be on disk.
	for name := range f.data {
		for d := name; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			if _, clash := f.data[d]; clash || d == SignatureFile && f.sig != nil {
				return nil, fmt.Errorf("%w: %q is a file and a directory", ErrArchive, d)
			}
		}
	}
	return f, nil
}

// LoadArchive is Load for a bundle held in memory as an archive made by
// Pack (a bundle pulled from a registry): the same checks (signature,
// pins, anti-rollback in st) on the archive's bytes, read once. dir names
// the bundle in messages and makes its paths absolute; nothing is read
// from it.
func LoadArchive(dir string, archive []byte, trusted []string, st *State) (*config.BundleManifest, error) {
	f, err := unpack(dir, archive)
	if err != nil {
		return nil, err
	}
	return f.admit(trusted, st)
}
