package config

import (
	"errors"
	"net"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry"
)

// OCIScheme starts a [[bundle]] path naming a bundle in an OCI registry.
const OCIScheme = "oci://"

// Bounds of an OCI bundle's refresh: often enough to follow a team's
// releases, rarely enough not to hammer a registry.
const (
	DefaultBundleRefresh = 5 * time.Minute
	minBundleRefresh     = time.Second
	maxBundleRefresh     = 24 * time.Hour
)

// CheckOCIReference validates ref, "REGISTRY/REPO:TAG" or
// "REGISTRY/REPO@sha256:…" (without the scheme).
func CheckOCIReference(ref string) error {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return err
	}
	if r.Reference == "" {
		return errors.New("want a tag or a digest (REGISTRY/REPO:TAG)")
	}
	return nil
}

// LoopbackRegistry reports whether ref's registry is on this machine: the
// only place permhost talks to without TLS.
func LoopbackRegistry(ref string) bool {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return false
	}
	host := r.Registry
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return loopbackHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

// loopbackHost reports whether host (no port, no brackets) is this
// machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *checker) boolean(k string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		c.fail(k, "want true or false, got %s", typeName(v))
	}
	return b
}

// String names the bundle as configured.
func (b *Bundle) String() string {
	if b.OCI != "" {
		return OCIScheme + b.OCI
	}
	return b.Path
}
