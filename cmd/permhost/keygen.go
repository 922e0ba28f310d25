package main

import (
	"fmt"
	"io"
	"os"

	"github.com/permhost/permhost/internal/edkey"
)

// keygen writes a new ed25519 private key to out (0600, never over an
// existing file) and prints its public key: `permhost bundle keygen` and
// `permhost log keygen`.
func keygen(out string, stdout io.Writer) error {
	pub, priv, err := edkey.Generate()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, priv); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, pub)
	return nil
}
