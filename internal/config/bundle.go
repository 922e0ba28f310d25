package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// BundleFile is the name of a bundle's manifest inside its directory.
const BundleFile = "bundle.toml"

// BundleManifest is a validated bundle.toml: a named, versioned set of
// pinned plugins with their configuration and tests, run at one layer.
type BundleManifest struct {
	// Dir is the bundle directory, absolute.
	Dir         string
	Name        string
	Revision    int64
	Layer       string
	Description string
	// Plugins are the bundle's plugins; each has a sha256 pin and runs at
	// the bundle's layer.
	Plugins []Plugin
	// Tests are test files, absolute, for `permhost test`.
	Tests []string
}

// LoadBundle reads and validates dir/bundle.toml (see [ParseBundle]).
func LoadBundle(dir string) (*BundleManifest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, ErrorList{{File: dir, Msg: err.Error()}}
	}
	path := filepath.Join(abs, BundleFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: "cannot read: " + unwrapPathError(err)}}
	}
	return ParseBundle(abs, data)
}

// ParseBundle validates data, the bundle.toml of the bundle directory dir,
// already read: whoever checks a bundle's signature parses the very bytes
// it verified (internal/bundle). Plugin paths are relative to the bundle
// directory and must stay inside it; every plugin must be pinned by sha256.
func ParseBundle(dir string, data []byte) (*BundleManifest, error) {
	return ParseBundleFS(dir, data, nil)
}

// ParseBundleFS is [ParseBundle] for a bundle whose files are in fsys (a
// bundle pulled from a registry, held in memory) rather than on disk under
// dir: dir still makes the plugins' and tests' paths absolute, and
// fsys answers for the files they name. A nil fsys is the disk.
func ParseBundleFS(dir string, data []byte, fsys fs.FS) (*BundleManifest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, ErrorList{{File: dir, Msg: err.Error()}}
	}
	path := filepath.Join(abs, BundleFile)
	doc, err := decodeTOML(data, path)
	if err != nil {
		return nil, err
	}
	c := &checker{file: path, dir: abs, lines: keyLines(data), fsys: fsys}
	b := &BundleManifest{Dir: abs, Layer: LayerTeam}
	c.table("", doc, map[string]func(string, any){
		"name": func(k string, v any) {
			b.Name = c.str(k, v)
			if !c.failed(k) && !validBundleName(b.Name) {
				c.fail(k, "%q is not a bundle name (letters, digits, '.', '-', '_'; 1 to 64)", b.Name)
			}
		},
		"revision": func(k string, v any) {
			n, ok := v.(int64)
			if !ok {
				c.fail(k, "want an integer, got %s", typeName(v))
			} else if n < 0 {
				c.fail(k, "must not be negative")
			}
			b.Revision = n
		},
		"layer":       func(k string, v any) { b.Layer = c.enum(k, v, Layers...) },
		"description": func(k string, v any) { b.Description = c.str(k, v) },
		"tests": func(k string, v any) {
			list, ok := v.([]any)
			if !ok {
				c.fail(k, "want an array of strings, got %s", typeName(v))
				return
			}
			for i, e := range list {
				key := fmt.Sprintf("%s[%d]", k, i)
				p := c.inside(key, c.str(key, e), abs)
				if !c.failed(key) {
					c.existingFile(key, p)
				}
				b.Tests = append(b.Tests, p)
			}
		},
		"plugin": func(k string, v any) {
			for i, t := range c.tables(k, v) {
				key := fmt.Sprintf("%s[%d]", k, i)
				if l, ok := t["layer"]; ok {
					c.fail(key+".layer", "a bundle's plugins run at the bundle's layer; set layer at the top (got %v)", l)
					continue
				}
				if _, ok := t["isolation"]; ok {
					c.fail(key+".isolation", "where a bundle's plugins run is the user's choice, not the bundle's: set isolation on the [[bundle]] entry of permhost.toml")
					return
				}
				p := c.plugin(key, t)
				if p.Path != "" && p.Std == "" {
					c.inside(key+".path", p.Path, abs)
				}
				if _, given := t["sha256"]; !given {
					c.fail(key, "missing key \"sha256\": a bundle's plugins must be pinned")
				}
				b.Plugins = append(b.Plugins, p)
			}
		},
	})
	if !docHas(doc, "name") {
		c.fail("name", "missing key \"name\"")
	}
	if !docHas(doc, "revision") {
		c.fail("revision", "missing key \"revision\" (an integer that grows with every release)")
	}
	if err := Errors(c.errs); err != nil {
		return nil, err
	}
	for i := range b.Plugins {
		b.Plugins[i].Layer = b.Layer
		// Until the user's [[bundle]] entry says otherwise.
		b.Plugins[i].Isolation = IsolationProcess
		b.Plugins[i].Name = b.Name + "/" + b.Plugins[i].Name
	}
	return b, nil
}

func docHas(doc map[string]any, k string) bool { _, ok := doc[k]; return ok }

// inside resolves p against dir and fails unless the result stays inside dir.
func (c *checker) inside(key, p, dir string) string {
	if c.failed(key) {
		return p
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		c.fail(key, "%s is outside the bundle directory", p)
	}
	return p
}

func validBundleName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
