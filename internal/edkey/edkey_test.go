package edkey_test

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/permhost/permhost/internal/edkey"
)

func TestRoundTrip(t *testing.T) {
	pub, priv, err := edkey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte(priv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := edkey.ReadPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := edkey.FormatPublic(k.Public().(ed25519.PublicKey)); got != pub {
		t.Errorf("public key of the private key = %s, want %s", got, pub)
	}
	p, err := edkey.ParsePublic(pub)
	if err != nil || !p.Equal(k.Public()) {
		t.Errorf("ParsePublic(%s) = %v, %v", pub, p, err)
	}
}

func TestMalformed(t *testing.T) {
	pub, priv, _ := edkey.Generate()
	for _, tt := range []struct {
		name, text string
		private    bool
	}{
		{"no prefix", pub[len(edkey.Prefix):], false},
		{"not base64", edkey.Prefix + "!!!", false},
		{"private as public", priv + "AAAA", false},
		{"public is not a seed", pub + "AAAA", true},
		{"empty", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.private {
				_, err = edkey.ParsePrivate(tt.text)
			} else {
				_, err = edkey.ParsePublic(tt.text)
			}
			if !errors.Is(err, edkey.ErrMalformed) {
				t.Errorf("err = %v, want ErrMalformed", err)
			}
		})
	}
}
