// Package registrytest starts a real OCI registry for tests: Debian's
// docker-registry (the CNCF distribution registry), on a free loopback
// port with its storage in a temporary directory. Tests that need one skip,
// saying how to install it, only when its binary is missing; .ci/run
// installs it.
package registrytest
