package edkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Prefix starts every key in text form.
const Prefix = "ed25519:"

// ErrMalformed is wrapped by every error about a key's text.
var ErrMalformed = errors.New("edkey: malformed key")

// maxFile bounds a key file: a key is one short line.
const maxFile = 4096

// Generate returns a new key pair in text form.
func Generate() (public, private string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return FormatPublic(pub), Prefix + base64.StdEncoding.EncodeToString(priv.Seed()), nil
}

// FormatPublic is pub in text form.
func FormatPublic(pub ed25519.PublicKey) string {
	return Prefix + base64.StdEncoding.EncodeToString(pub)
}

// Decode returns the size bytes that text (surrounding space ignored)
// encodes.
func Decode(text string, size int) ([]byte, error) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, Prefix) {
		return nil, fmt.Errorf("%w: want %q followed by base64", ErrMalformed, Prefix)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(text, Prefix))
	if err != nil || len(b) != size {
		return nil, fmt.Errorf("%w: want %d base64 bytes", ErrMalformed, size)
	}
	return b, nil
}

// ParsePrivate decodes a private key (its seed).
func ParsePrivate(text string) (ed25519.PrivateKey, error) {
	seed, err := Decode(text, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ParsePublic decodes a public key.
func ParsePublic(text string) (ed25519.PublicKey, error) {
	b, err := Decode(text, ed25519.PublicKeySize)
	if err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}

// ReadPrivate reads the private key file at path, as `permhost bundle
// keygen` and `permhost log keygen` write it.
func ReadPrivate(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxFile+1)
	n, _ := f.Read(b)
	if n > maxFile {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrMalformed, path, maxFile)
	}
	return ParsePrivate(string(b[:n]))
}
