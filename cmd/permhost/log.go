package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/permhost/permhost/internal/auditlog"
	"github.com/permhost/permhost/internal/edkey"
)

func init() {
	commands["log"] = command{summary: "create the decision log's signing key; verify a signed decision log", run: runLog}
}

const logUsage = `usage:
  permhost log keygen --out FILE             write a new ed25519 private key to FILE (0600), print its public key
  permhost log verify [--key KEY]... FILE... check a signed decision log: its chain and seals, across rotated files

With [log] key = "FILE" in permhost.toml the decision log is hash-chained
and sealed with that key (permhost help audit-log).
verify orders the files by their chain; --key is a trusted public key
("ed25519:…", as keygen prints it) or the private key file; without it each
seal is checked against the key it names, which shows the log is intact
but not who signed it. Exit status: 0 intact, 1 tampered or cut short
(the first problem is named), 2 usage or unreadable files.`

func runLog(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if code, done := subcommandOrHelp(args, logUsage, stdout, stderr); done {
		return code
	}
	fs := newFlagSet("log "+args[0], stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), logUsage) }
	out := fs.String("out", "", "keygen: file for the private key")
	var keys stringList
	fs.Var(&keys, "key", "verify: trusted public key, or the private key file (repeatable)")
	if code, ok := parseFlags(fs, args[1:], stdout); !ok {
		return code
	}
	switch args[0] {
	case "keygen":
		if *out == "" || fs.NArg() != 0 || len(keys) > 0 {
			fmt.Fprintln(stderr, "permhost log keygen: --out FILE is required (the private key is never printed)")
			return exitUsage
		}
		if err := keygen(*out, stdout); err != nil {
			fmt.Fprintln(stderr, "permhost log keygen:", err)
			return exitFail
		}
		return exitOK
	case "verify":
		if fs.NArg() == 0 || *out != "" {
			fmt.Fprintf(stderr, "permhost log verify: want the log's files\n%s\n", logUsage)
			return exitUsage
		}
		return logVerify(keys, fs.Args(), stdout, stderr)
	}
	fmt.Fprintf(stderr, "permhost log: unknown subcommand %q\n%s\n", args[0], logUsage)
	return exitUsage
}

func logVerify(keys, names []string, stdout, stderr io.Writer) int {
	trusted := []ed25519.PublicKey{}
	for _, k := range keys {
		pub, err := trustedKey(k)
		if err != nil {
			fmt.Fprintf(stderr, "permhost log verify: --key %s: %v\n", k, err)
			return exitUsage
		}
		trusted = append(trusted, pub)
	}
	var files []auditlog.File
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(stderr, "permhost log verify:", err)
			return exitUsage
		}
		files = append(files, auditlog.File{Name: name, Data: b})
	}
	r := auditlog.Verify(files, trusted)
	if p := r.Problem; p != nil {
		loc := p.File
		if p.Line > 0 {
			loc = fmt.Sprintf("%s:%d", p.File, p.Line)
		}
		fmt.Fprintf(stdout, "%s: %s: %s\n", loc, p.Kind, p.Msg)
		return exitFail
	}
	how := "seals checked against the keys they name (no --key: intact, but not who signed)"
	if len(trusted) > 0 {
		how = "seals signed by a trusted key"
	}
	from := ""
	if r.FirstSeq > 1 {
		from = fmt.Sprintf(" (from seq %d: earlier files not given)", r.FirstSeq)
	}
	entries := fmt.Sprintf("%d entries", r.Lines-r.Seals)
	if r.Lines-r.Seals == 1 {
		entries = "1 entry"
	}
	fmt.Fprintf(stdout, "ok: %s, %s in %s%s; %s\n", entries, count(r.Seals, "seal"), count(len(files), "file"), from, how)
	return exitOK
}

// trustedKey reads a --key: a public key's text, or the private key
// file (a public key and a seed are both 32 bytes: text cannot tell them
// apart, so a file is taken for what keygen writes).
func trustedKey(arg string) (ed25519.PublicKey, error) {
	if strings.HasPrefix(arg, edkey.Prefix) {
		return edkey.ParsePublic(arg)
	}
	priv, err := edkey.ReadPrivate(arg)
	if err != nil {
		return nil, err
	}
	return priv.Public().(ed25519.PublicKey), nil
}
