package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/opencontainers/go-digest"
)

// Cache keeps pulled bundles by digest, and for each reference the last
// one admitted, so that a bundle outlives its registry's outages and a
// start with the registry down still has its last good revision. Nothing
// in it is trusted: what is taken from it is admitted again (LoadArchive).
type Cache struct{ dir string }

// DefaultCacheDir is the user's cache directory's permhost/bundles.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "permhost", "bundles"), nil
}

// OpenCache uses the directory dir (created on first write).
func OpenCache(dir string) *Cache { return &Cache{dir: dir} }

func (c *Cache) blobPath(d string) (string, error) {
	dg, err := digest.Parse(d)
	if err != nil || dg.Algorithm() != digest.SHA256 {
		return "", fmt.Errorf("bundle cache: digest %q", d)
	}
	return filepath.Join(c.dir, "blobs", "sha256", dg.Encoded()), nil
}

// Dir is the directory an archive of digest d stands for in messages:
// where `tar -x` of its blob would put it.
func (c *Cache) Dir(d string) string {
	p, err := c.blobPath(d)
	if err != nil {
		return filepath.Join(c.dir, "blobs", "invalid")
	}
	return p + ".d"
}

// blob returns the archive of digest d, checked against it.
func (c *Cache) blob(d string) ([]byte, error) {
	p, err := c.blobPath(d)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if got := digest.FromBytes(b).String(); got != d {
		return nil, fmt.Errorf("bundle cache: %s holds %s", p, got)
	}
	return b, nil
}

func (c *Cache) putBlob(d string, b []byte) error {
	p, err := c.blobPath(d)
	if err != nil {
		return err
	}
	return writeAtomic(p, b)
}

// last is what the cache remembers of a reference.
type last struct {
	Ref      string `json:"ref"`
	Manifest string `json:"manifest"`
	Layer    string `json:"layer"`
}

func (c *Cache) refPath(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(c.dir, "refs", hex.EncodeToString(sum[:])+".json")
}

// Remember records p as ref's last good bundle (once admitted).
func (c *Cache) Remember(ref string, p *Pulled) error {
	if err := c.putBlob(p.Layer, p.Archive); err != nil {
		return err
	}
	data, _ := json.Marshal(last{Ref: ref, Manifest: p.Manifest, Layer: p.Layer})
	return writeAtomic(c.refPath(ref), data)
}

// ErrNotCached is a reference with no bundle in the cache.
var ErrNotCached = errors.New("bundle cache: no bundle remembered")

// Last returns ref's last good bundle, for the caller to admit again.
func (c *Cache) Last(ref string) (*Pulled, error) {
	data, err := os.ReadFile(c.refPath(ref))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w for %s", ErrNotCached, ref)
	}
	if err != nil {
		return nil, err
	}
	var l last
	if err := json.Unmarshal(data, &l); err != nil || l.Ref != ref {
		return nil, fmt.Errorf("bundle cache: %s damaged", c.refPath(ref))
	}
	b, err := c.blob(l.Layer)
	if err != nil {
		return nil, err
	}
	return &Pulled{Manifest: l.Manifest, Layer: l.Layer, Archive: b}, nil
}

func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := p + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
