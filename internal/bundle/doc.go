// Package bundle signs, verifies and tracks policy bundles: a directory
// with bundle.toml, its pinned plugins and their tests, distributed to a
// team as one unit.
//
// A bundle's signature (bundle.sig) is an ed25519 signature over a canonical
// manifest that lists the sha256 of every file in the directory, so that
// changing, adding or removing any file breaks it. The directory is read
// once (read.go): the bytes hashed are the bytes parsed and compiled. The
// highest revision
// accepted for each bundle name is remembered in the user's state directory,
// and a lower one is refused, so an old, signed bundle cannot be put back.
//
// A bundle can also be carried by an OCI registry (oci.go): the directory
// packed as one tar layer (archive.go), signature inside, pulled into
// memory and admitted by the same checks as a directory (LoadArchive);
// pulled layers are cached by digest with each reference's last good one
// (cache.go). docs/bundles.md describes the artifact.
package bundle
