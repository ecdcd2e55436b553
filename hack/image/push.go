package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push pushes the image build wrote to dir to image (REGISTRY/REPO, with
// the tag given or the image's version) and returns REGISTRY/REPO@DIGEST.
// Credentials come from the Docker config (~/.docker/config.json,
// $DOCKER_CONFIG), as docker, crane and ko read them; a registry on
// localhost or 127.0.0.1 is spoken to over plain HTTP.
func Push(ctx context.Context, dir, image string) (string, error) {
	img, version, err := FromLayout(dir)
	if err != nil {
		return "", err
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("-image %q: %w", image, err)
	}
	if _, ok := ref.(name.Digest); ok {
		return "", fmt.Errorf("-image %q: give a repository (and a tag), not a digest", image)
	}
	tag := ref.(name.Tag)
	if i := strings.LastIndex(image, "/"); !strings.Contains(image[i+1:], ":") {
		tag = ref.Context().Tag(tagOf(version))
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("push %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(digest.String()).String(), nil
}

// FromLayout reads the image and its version from the OCI layout build
// wrote under dir.
func FromLayout(dir string) (v1.Image, string, error) {
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		return nil, "", fmt.Errorf("read the image in %s (run make image first): %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s holds %d images, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", err
	}
	return img, m.Manifests[0].Annotations["org.opencontainers.image.ref.name"], nil
}
