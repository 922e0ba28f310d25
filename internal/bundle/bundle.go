package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/permhost/permhost/internal/config"
	"github.com/permhost/permhost/internal/digest"
	"github.com/permhost/permhost/internal/edkey"
)

// SignatureFile holds a bundle's detached signature.
const SignatureFile = "bundle.sig"

const manifestHeader = "permhost-bundle-manifest v1\n"

// Errors.
var (
	ErrUnsigned     = errors.New("bundle: not signed")
	ErrBadSignature = errors.New("bundle: signature does not verify")
	ErrRollback     = errors.New("bundle: revision lower than one already accepted")
	ErrBadKey       = edkey.ErrMalformed // keys are internal/edkey's text form
	ErrLayout       = errors.New("bundle: unsafe file in bundle")
	ErrState        = errors.New("bundle: state file damaged")
)

// Manifest returns the canonical manifest of the bundle in dir: a header,
// the name and revision of its bundle.toml, then "sha256  path" for every
// regular file except the signature, sorted by slash-separated path.
// Symbolic links and other non-regular files are refused: they could make
// the signed bytes differ from what is loaded.
func Manifest(dir string) ([]byte, error) {
	f, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	b, err := f.parse()
	if err != nil {
		return nil, err
	}
	return f.manifest(b), nil
}

// manifest is the canonical manifest of f, whose bundle.toml is b.
func (f *files) manifest(b *config.BundleManifest) []byte {
	names := make([]string, 0, len(f.data))
	for name := range f.data {
		names = append(names, name)
	}
	sort.Strings(names)
	var m bytes.Buffer
	m.WriteString(manifestHeader)
	fmt.Fprintf(&m, "name %s\nrevision %d\n", b.Name, b.Revision)
	for _, name := range names {
		fmt.Fprintf(&m, "%s  %s\n", digest.Bytes(f.data[name]), name)
	}
	return m.Bytes()
}

// GenerateKey returns a new key pair in text form ("ed25519:" and base64).
func GenerateKey() (public, private string, err error) { return edkey.Generate() }

func parseKey(text string, size int) ([]byte, error) { return edkey.Decode(text, size) }

// PublicKeyOf returns the public key of a private key in text form.
func PublicKeyOf(private string) (string, error) {
	k, err := edkey.ParsePrivate(private)
	if err != nil {
		return "", err
	}
	return edkey.FormatPublic(k.Public().(ed25519.PublicKey)), nil
}

// Sign writes dir/bundle.sig, signing the bundle's manifest with private.
func Sign(dir, private string) error {
	seed, err := parseKey(private, ed25519.SeedSize)
	if err != nil {
		return err
	}
	m, err := Manifest(dir)
	if err != nil {
		return err
	}
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(seed), m)
	return os.WriteFile(filepath.Join(dir, SignatureFile), []byte(base64.StdEncoding.EncodeToString(sig)+"\n"), 0o644)
}

// Verify checks dir's signature against the trusted public keys and returns
// the key that verified it.
func Verify(dir string, trusted []string) (string, error) {
	f, err := readDir(dir)
	if err != nil {
		return "", err
	}
	_, key, err := f.verify(trusted)
	return key, err
}

// verify parses f's bundle.toml and checks f's signature against the
// trusted keys: the bundle.toml returned is the one the signature covers.
func (f *files) verify(trusted []string) (*config.BundleManifest, string, error) {
	b, err := f.parse()
	if err != nil {
		return nil, "", err
	}
	if f.sig == nil {
		return nil, "", fmt.Errorf("%w: %s has no %s", ErrUnsigned, f.dir, SignatureFile)
	}
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(f.sig)))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, "", fmt.Errorf("%w: %s is not a base64 ed25519 signature", ErrBadSignature, SignatureFile)
	}
	m := f.manifest(b)
	for _, k := range trusted {
		pub, err := parseKey(k, ed25519.PublicKeySize)
		if err != nil {
			return nil, "", fmt.Errorf("trusted key %q: %w", k, err)
		}
		if ed25519.Verify(pub, m, sig) {
			return b, k, nil
		}
	}
	return nil, "", fmt.Errorf("%w: %s (manifest of %s changed, or signed by a key that is not trusted)", ErrBadSignature, f.dir, f.dir)
}

// State remembers the highest revision accepted for each bundle name.
type State struct {
	path string
	mu   sync.Mutex
}

// DefaultStatePath is $XDG_STATE_HOME/permhost/bundles.json, or
// ~/.local/state/permhost/bundles.json.
func DefaultStatePath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "permhost", "bundles.json"), nil
}

// OpenState uses the file at path (created on first accept).
func OpenState(path string) *State { return &State{path: path} }

func (s *State) read() (map[string]int64, error) {
	seen := map[string]int64{}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return seen, nil
	}
	if err != nil {
		return nil, err
	}
	// A damaged state file must not reopen the door to rollbacks.
	if err := json.Unmarshal(data, &seen); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (remove it to reset)", ErrState, s.path, err)
	}
	if seen == nil { // null
		return nil, fmt.Errorf("%w: %s: want a JSON object of bundle names and revisions, got null (remove it to reset)", ErrState, s.path)
	}
	return seen, nil
}

// Accept records revision rev of name, refusing one lower than the highest
// already accepted.
func (s *State) Accept(name string, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, err := s.read()
	if err != nil {
		return err
	}
	if hi, ok := seen[name]; ok && rev < hi {
		return fmt.Errorf("%w: %s revision %d, already accepted %d", ErrRollback, name, rev, hi)
	}
	if seen[name] == rev && rev != 0 {
		return nil
	}
	seen[name] = rev
	data, _ := json.MarshalIndent(seen, "", "  ")
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp := s.path + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// Load reads the bundle in dir and admits it: when trusted keys are given
// its signature must verify; its revision must not be lower than one
// already accepted (st may be nil to skip that check); every plugin's file
// must match its pin. Every file is read once: the bundle.toml returned and
// its plugins' modules (config.Plugin.Wasm) are the bytes verified, never
// read again from the directory, which may have changed since.
func Load(dir string, trusted []string, st *State) (*config.BundleManifest, error) {
	f, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	return f.admit(trusted, st)
}

// admit is Load for the files read, from a directory or from an archive
// pulled from a registry: both go through the same checks.
func (f *files) admit(trusted []string, st *State) (*config.BundleManifest, error) {
	var (
		b   *config.BundleManifest
		err error
	)
	if len(trusted) > 0 {
		b, _, err = f.verify(trusted)
	} else {
		b, err = f.parse()
	}
	if err != nil {
		return nil, err
	}
	for i := range b.Plugins {
		p := &b.Plugins[i]
		var sum string
		if p.Std != "" {
			if sum, err = p.Digest(); err != nil {
				return nil, fmt.Errorf("bundle %s: plugin %s: %w", b.Name, p.Name, err)
			}
		} else {
			wasm, ok := f.module(p.Path)
			if !ok {
				return nil, fmt.Errorf("bundle %s: plugin %s: %s is not a regular file of the bundle", b.Name, p.Name, p.Path)
			}
			p.Wasm, sum = wasm, digest.Bytes(wasm)
		}
		if sum != p.SHA256 {
			return nil, fmt.Errorf("bundle %s: plugin %s: %s has sha256 %s, bundle.toml pins %s", b.Name, p.Name, p.Path, sum, p.SHA256)
		}
	}
	if st != nil {
		if err := st.Accept(b.Name, b.Revision); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Fingerprint is a cheap summary of the files in dir (paths, sizes,
// modification times) for noticing changes without hashing.
func Fingerprint(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "!%s;", p)
			return nil
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			fmt.Fprintf(&b, "%s:%d:%d;", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}
