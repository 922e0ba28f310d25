package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/permhost/permhost/internal/config"
)

// Media types of a bundle in an OCI registry (docs/bundles.md): an OCI
// image manifest whose artifactType is ArtifactType, with the empty config
// and one layer, the bundle directory as a tar archive (Pack), signature
// included. The signature is the bundle's own (bundle.sig): a registry is
// only transport.
const (
	ArtifactType   = "application/vnd.permhost.bundle.v1"
	LayerMediaType = "application/vnd.permhost.bundle.layer.v1.tar"
)

// Annotations of a bundle's manifest, informative only: what is trusted
// is what the signed bundle.toml inside the layer says.
const (
	annotationName     = "dev.permhost.bundle.name"
	annotationRevision = "dev.permhost.bundle.revision"
)

// maxManifest bounds a bundle's manifest as fetched.
const maxManifest = 1 << 20

// ErrRegistry is a registry that could not be reached or did not serve a
// bundle: the caller keeps its last good revision.
var ErrRegistry = errors.New("bundle: registry")

// ErrArtifact is an artifact that is not a permhost bundle.
var ErrArtifact = errors.New("bundle: not a permhost bundle artifact")

// Registry reaches one bundle reference in an OCI registry.
type Registry struct {
	// Ref is "REGISTRY/REPO:TAG" or "REGISTRY/REPO@DIGEST", no scheme.
	Ref string
	// PlainHTTP talks HTTP without TLS (a loopback registry only; the
	// configuration checks it).
	PlainHTTP bool
	// Timeout bounds each operation; 0 means 30s.
	Timeout time.Duration
}

func (r Registry) repo() (*remote.Repository, error) {
	if err := config.CheckOCIReference(r.Ref); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRegistry, r.Ref, err)
	}
	repo, err := remote.NewRepository(r.Ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRegistry, r.Ref, err)
	}
	repo.PlainHTTP = r.PlainHTTP
	repo.ManifestMediaTypes = []string{ocispec.MediaTypeImageManifest}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	// No retries: a refresh that fails is tried again at the next one,
	// and a start waits for no backoff before taking the cached bundle.
	client := &auth.Client{Client: &http.Client{Timeout: timeout}, Cache: auth.NewCache()}
	client.SetUserAgent("permhost")
	// Credentials as docker and oras keep them (~/.docker/config.json,
	// $DOCKER_CONFIG, credential helpers); none when there is no file.
	if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, nil
}

// Push packs the bundle in dir (Pack) and pushes it as r.Ref's tag,
// returning the manifest's digest.
func (r Registry) Push(ctx context.Context, dir string, b *config.BundleManifest) (string, error) {
	archive, err := Pack(dir)
	if err != nil {
		return "", err
	}
	repo, err := r.repo()
	if err != nil {
		return "", err
	}
	if repo.Reference.Reference == "" || repo.Reference.ValidateReferenceAsDigest() == nil {
		return "", fmt.Errorf("%w: push to a tag (REGISTRY/REPO:TAG), not %s", ErrRegistry, r.Ref)
	}
	layer := content.NewDescriptorFromBytes(LayerMediaType, archive)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: "bundle.tar"}
	if err := repo.Push(ctx, layer, bytes.NewReader(archive)); err != nil {
		return "", fmt.Errorf("%w: push %s: %v", ErrRegistry, r.Ref, err)
	}
	desc, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{layer},
		ManifestAnnotations: map[string]string{
			annotationName:     b.Name,
			annotationRevision: strconv.FormatInt(b.Revision, 10),
			// Fixed, so that the same bundle pushed twice is the same
			// manifest.
			ocispec.AnnotationCreated: "1970-01-01T00:00:00Z",
		},
	})
	if err != nil {
		return "", fmt.Errorf("%w: push %s: %v", ErrRegistry, r.Ref, err)
	}
	if err := repo.Tag(ctx, desc, repo.Reference.Reference); err != nil {
		return "", fmt.Errorf("%w: tag %s: %v", ErrRegistry, r.Ref, err)
	}
	return desc.Digest.String(), nil
}

// Resolve returns the digest of the manifest r.Ref names now.
func (r Registry) Resolve(ctx context.Context) (string, error) {
	repo, err := r.repo()
	if err != nil {
		return "", err
	}
	desc, err := repo.Resolve(ctx, repo.Reference.Reference)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrRegistry, r.Ref, err)
	}
	return desc.Digest.String(), nil
}

// Pulled is a bundle as pulled: its manifest's digest and its layer.
type Pulled struct {
	Manifest string // digest of the manifest
	Layer    string // digest of the archive
	Archive  []byte // the bundle (Pack), not yet verified
}

// Pull fetches the bundle r.Ref names. The layer is taken from c when it
// holds it (c may be nil), else fetched and put there. Nothing is
// verified here but the registry's digests: the caller admits the archive
// (LoadArchive) as it would a directory.
func (r Registry) Pull(ctx context.Context, c *Cache) (*Pulled, error) {
	repo, err := r.repo()
	if err != nil {
		return nil, err
	}
	desc, rc, err := repo.FetchReference(ctx, repo.Reference.Reference)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRegistry, r.Ref, err)
	}
	data, err := content.ReadAll(io.LimitReader(rc, maxManifest+1), desc)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: manifest: %v", ErrRegistry, r.Ref, err)
	}
	layer, err := bundleLayer(desc, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Ref, err)
	}
	p := &Pulled{Manifest: desc.Digest.String(), Layer: layer.Digest.String()}
	if c != nil {
		if b, err := c.blob(p.Layer); err == nil {
			p.Archive = b
			return p, nil
		}
	}
	p.Archive, err = content.FetchAll(ctx, repo, layer)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: layer %s: %v", ErrRegistry, r.Ref, layer.Digest, err)
	}
	if c != nil {
		if err := c.putBlob(p.Layer, p.Archive); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// bundleLayer checks that a manifest is a permhost bundle's and returns
// its one layer.
func bundleLayer(desc ocispec.Descriptor, data []byte) (ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, fmt.Errorf("%w: manifest media type %q, want %q", ErrArtifact, desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: manifest: %v", ErrArtifact, err)
	}
	switch {
	case m.MediaType != ocispec.MediaTypeImageManifest:
		return ocispec.Descriptor{}, fmt.Errorf("%w: manifest media type %q", ErrArtifact, m.MediaType)
	case m.ArtifactType != ArtifactType:
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifact type %q, want %q", ErrArtifact, m.ArtifactType, ArtifactType)
	case len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType:
		return ocispec.Descriptor{}, fmt.Errorf("%w: want one layer of type %q", ErrArtifact, LayerMediaType)
	case m.Layers[0].Size < 0 || m.Layers[0].Size > 2*maxBytes:
		return ocispec.Descriptor{}, fmt.Errorf("%w: layer of %d bytes", ErrArtifact, m.Layers[0].Size)
	case m.Layers[0].Digest.Algorithm() != digest.SHA256 || m.Layers[0].Digest.Validate() != nil:
		return ocispec.Descriptor{}, fmt.Errorf("%w: layer digest %q, want sha256", ErrArtifact, m.Layers[0].Digest)
	}
	return m.Layers[0], nil
}
