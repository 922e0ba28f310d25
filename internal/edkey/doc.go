// Package edkey is the text form of permhost's ed25519 keys, shared by
// policy bundles (internal/bundle) and the signed decision log
// (internal/auditlog): "ed25519:" followed by the standard base64 of the
// 32-byte public key, or of the 32-byte seed for a private key. It imports
// nothing of permhost, so that the configuration can check a key where it
// is written.
package edkey
