package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

func init() {
	commands["version"] = command{summary: "print permhost's version and the commit it was built from", run: runVersion}
}

const versionUsage = `usage: permhost version   (or permhost --version)

Prints the module version permhost was built as (a release tag, a
pseudo-version naming the commit, or "(devel)"), the VCS revision and
commit time when the build recorded them, and the Go toolchain.`

func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), versionUsage) }
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "permhost version: takes no arguments")
		return exitUsage
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(bi))
	return exitOK
}

// versionText describes the build: the first line is "permhost VERSION".
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		return "permhost unknown (no build information in the binary)\n"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "permhost %s\n", moduleVersion(bi))
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if settings["vcs.modified"] == "true" {
			b.WriteString(" (with uncommitted changes)")
		}
		b.WriteString("\n")
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "commit time %s\n", t)
		}
	} else {
		b.WriteString("revision unknown (built without VCS information, e.g. -buildvcs=false or outside a checkout)\n")
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	fmt.Fprintf(&b, "built with %s", bi.GoVersion)
	if goos != "" {
		fmt.Fprintf(&b, " for %s/%s", goos, goarch)
	}
	b.WriteString("\n")
	return b.String()
}

// moduleVersion is the module version permhost was built as: a tag or
// pseudo-version for `go install ...@VERSION` and for builds in a checkout
// with VCS stamping, "(devel)" otherwise.
func moduleVersion(bi *debug.BuildInfo) string {
	if bi == nil || bi.Main.Version == "" {
		return "unknown"
	}
	return bi.Main.Version
}

// permhostVersion is the version permhost gives its peers (ACP
// clientInfo).
func permhostVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return moduleVersion(bi)
}
