package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/templates"
)

// LoadBundle loads the bundle named name: from a folder, a Bundle
// manifest or a chart in a registry (oci://..., URL#CHART[@VERSION],
// pulled as the controller pulls it) when from is set, else from the
// cluster.
func (s *Session) LoadBundle(ctx context.Context, from, name string) (*templates.Bundle, error) {
	if src, _, ok, err := pull.ParseSource(from); ok {
		if err != nil {
			return nil, err
		}
		p := s.Pull
		if p == nil {
			p = &pull.Flags{}
		}
		return p.Load(ctx, from, name, src)
	}
	if from == "" {
		if s.Client == nil {
			return nil, fmt.Errorf("no --bundle given and no cluster to read Bundle %q from", name)
		}
		b := &v1alpha1.Bundle{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			return nil, fmt.Errorf("read Bundle %s: %w", name, err)
		}
		return templates.LoadObject(b)
	}
	info, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return LoadFolder(from, name)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict(data, b); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if b.Kind != "Bundle" {
		return nil, fmt.Errorf("%s is a %s, want a Bundle manifest or a bundle folder", from, b.Kind)
	}
	if b.Spec.Source != nil && len(b.Spec.Files) == 0 {
		// A Bundle of a chart in a registry: pulled as the controller
		// pulls it (its verify checked with --verify-key), with the
		// command's credentials (its Secrets are the controller's).
		p := s.Pull
		if p == nil {
			if b.Spec.Source.Verify != nil {
				return nil, fmt.Errorf("%s: spec.source.verify is set and this command takes no --verify-key to check the chart's signature with; use stencil render --bundle %s --verify-key FILE", from, from)
			}
			p = &pull.Flags{}
		}
		return p.Load(ctx, from, name, b.Spec.Source)
	}
	b.Name = name
	return templates.LoadObject(b)
}

// BundleName is the name a folder's bundle gets by default.
func BundleName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Base(dir)
	}
	return filepath.Base(abs)
}

// BundleNameAt is the name of the Bundle at from: a folder's name, a
// manifest's metadata.name, or a pulled chart's name.
func BundleNameAt(from string) (string, error) {
	if _, name, ok, err := pull.ParseSource(from); ok {
		return name, err
	}
	info, err := os.Stat(from)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		return BundleName(from), nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return "", err
	}
	var m metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	if m.Name == "" {
		return "", fmt.Errorf("%s: the Bundle manifest has no metadata.name", from)
	}
	return m.Name, nil
}

// LoadFolder loads the bundle folder dir through an os.Root: no file
// outside dir can be read, even through a link made while it is read
// (templates.Load refuses links it sees).
func LoadFolder(dir, name string) (*templates.Bundle, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// Only read from: a failed close loses nothing, and the load's
	// result and error are what the caller needs.
	defer func() { _ = root.Close() }()
	return templates.Load(root.FS(), templates.LoadOptions{Name: name})
}
