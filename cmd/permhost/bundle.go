package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/permhost/permhost/internal/bundle"
	"github.com/permhost/permhost/internal/config"
)

func init() {
	commands["bundle"] = command{summary: "create signing keys, sign and verify policy bundles", run: runBundle}
}

const bundleUsage = `usage:
  permhost bundle keygen --out FILE          write a new ed25519 private key to FILE (0600), print its public key
  permhost bundle sign --key FILE DIR        sign the bundle in DIR (writes DIR/bundle.sig)
  permhost bundle verify [--key PUB]... DIR  check bundle.toml, the plugins' pins and, with keys, the signature
  permhost bundle manifest DIR               print the canonical manifest that is signed
  permhost bundle push [--key PUB]... [--plain-http] DIR oci://REGISTRY/REPO:TAG
                                             push the signed bundle in DIR to an OCI registry under TAG

A bundle is a directory with bundle.toml (name, revision, layer, plugins with
sha256 pins and their config, tests). Keys are text: "ed25519:" and base64.
push checks the bundle as verify does (with --key, its signature) and refuses
an unsigned one; registry credentials come from the docker config file
(~/.docker/config.json, $DOCKER_CONFIG); --plain-http (no TLS) is for a
loopback registry only.`

// subcommandOrHelp handles a command group's arguments before its
// subcommand's flags: none is a usage error, -h prints the usage; done
// reports that the command ends with code.
func subcommandOrHelp(args []string, usage string, stdout, stderr io.Writer) (code int, done bool) {
	switch {
	case len(args) == 0:
		fmt.Fprintln(stderr, usage)
		return exitUsage, true
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		fmt.Fprintln(stdout, usage)
		return exitOK, true
	}
	return 0, false
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runBundle(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if code, done := subcommandOrHelp(args, bundleUsage, stdout, stderr); done {
		return code
	}
	fs := newFlagSet("bundle "+args[0], stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), bundleUsage) }
	out := fs.String("out", "", "keygen: file for the private key")
	var keys stringList
	fs.Var(&keys, "key", "sign: private key file; verify, push: trusted public key (repeatable)")
	plainHTTP := fs.Bool("plain-http", false, "push: talk to a loopback registry without TLS")
	if code, ok := parseFlags(fs, args[1:], stdout); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "permhost bundle:", err)
		return exitFail
	}
	needDir := func() (string, bool) {
		if fs.NArg() != 1 {
			fmt.Fprintf(stderr, "permhost bundle %s: want one bundle directory\n%s\n", args[0], bundleUsage)
			return "", false
		}
		return fs.Arg(0), true
	}
	switch args[0] {
	case "keygen":
		if *out == "" || fs.NArg() != 0 {
			fmt.Fprintln(stderr, "permhost bundle keygen: --out FILE is required (the private key is never printed)")
			return exitUsage
		}
		if err := keygen(*out, stdout); err != nil {
			return fail(err)
		}
		return exitOK
	case "sign":
		dir, ok := needDir()
		if !ok || len(keys) != 1 {
			if ok {
				fmt.Fprintln(stderr, "permhost bundle sign: --key FILE (the private key) is required once")
			}
			return exitUsage
		}
		priv, err := os.ReadFile(keys[0])
		if err != nil {
			return fail(err)
		}
		if err := bundle.Sign(dir, string(priv)); err != nil {
			return fail(err)
		}
		pub, _ := bundle.PublicKeyOf(string(priv))
		fmt.Fprintf(stdout, "signed %s with %s\n", dir, pub)
		return exitOK
	case "verify":
		dir, ok := needDir()
		if !ok {
			return exitUsage
		}
		b, err := bundle.Load(dir, keys, nil)
		if err != nil {
			return fail(err)
		}
		how := "unsigned check (no --key): bundle.toml and plugin pins only"
		if len(keys) > 0 {
			how = "signature verified"
		}
		fmt.Fprintf(stdout, "ok: bundle %s revision %d, layer %s, %s, %s; %s\n", b.Name, b.Revision, b.Layer, count(len(b.Plugins), "plugin"), count(len(b.Tests), "test file"), how)
		return exitOK
	case "push":
		return bundlePush(ctx, fs.Args(), keys, *plainHTTP, stdout, stderr)
	case "manifest":
		dir, ok := needDir()
		if !ok {
			return exitUsage
		}
		m, err := bundle.Manifest(dir)
		if err != nil {
			return fail(err)
		}
		stdout.Write(m)
		return exitOK
	}
	fmt.Fprintf(stderr, "permhost bundle: unknown subcommand %q\n%s\n", args[0], bundleUsage)
	return exitUsage
}

// bundlePush is `permhost bundle push`: the bundle is checked as verify
// checks it, must be signed, and is pushed as an OCI artifact
// (docs/bundles.md).
func bundlePush(ctx context.Context, args []string, keys []string, plainHTTP bool, stdout, stderr io.Writer) int {
	if len(args) != 2 || !strings.HasPrefix(args[1], config.OCIScheme) {
		fmt.Fprintf(stderr, "permhost bundle push: want a bundle directory and oci://REGISTRY/REPO:TAG\n%s\n", bundleUsage)
		return exitUsage
	}
	dir, ref := args[0], strings.TrimPrefix(args[1], config.OCIScheme)
	if err := config.CheckOCIReference(ref); err != nil {
		fmt.Fprintf(stderr, "permhost bundle push: %s: %v\n", args[1], err)
		return exitUsage
	}
	if plainHTTP && !config.LoopbackRegistry(ref) {
		fmt.Fprintln(stderr, "permhost bundle push: --plain-http is allowed only for a loopback registry (localhost, 127.0.0.1, [::1])")
		return exitUsage
	}
	b, err := bundle.Load(dir, keys, nil)
	if err == nil && len(keys) == 0 {
		if _, serr := os.Stat(filepath.Join(dir, bundle.SignatureFile)); errors.Is(serr, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %s has no %s (permhost bundle sign --key FILE %s)", bundle.ErrUnsigned, dir, bundle.SignatureFile, dir)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "permhost bundle push:", err)
		return exitFail
	}
	digest, err := bundle.Registry{Ref: ref, PlainHTTP: plainHTTP}.Push(ctx, dir, b)
	if err != nil {
		fmt.Fprintln(stderr, "permhost bundle push:", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "pushed bundle %s revision %d to %s%s (%s)\n", b.Name, b.Revision, config.OCIScheme, ref, digest)
	return exitOK
}
