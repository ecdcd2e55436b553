package session

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/templates"
)

// Resolve gives the Parent a document stands for and the Bundle it
// renders: a Composition's Bundle by name, an instance's by its kind:
// the --bundle folder or manifest (whose api must publish that kind), or
// else the cluster's Bundle publishing it. An instance written in a
// version other than the api's render version is converted to it first
// (ToRenderVersion), as the API server converts it for the controller.
func (s *Session) Resolve(ctx context.Context, from string, d parents.Document) (applyset.Parent, *templates.Bundle, error) {
	if d.Composition != nil {
		b, err := s.LoadBundle(ctx, from, d.Composition.Spec.Bundle)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.Describe(), err)
		}
		return d.Composition, b, nil
	}
	gvk := d.Instance.GroupVersionKind()
	var b *templates.Bundle
	var err error
	if from != "" {
		b, err = loadPublishing(ctx, s, from, gvk)
	} else {
		b, err = clusterBundleFor(ctx, s, gvk)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	// Rendered as the controller reads it: in the render version,
	// converted as the API server converts it.
	inst, err := ToRenderVersion(b, d.Instance)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	api := b.Spec().API
	spec, err := publish.InstanceSpec(b.Name(), api, inst)
	if err != nil {
		return nil, nil, err
	}
	return applyset.NewInstance(inst, spec), b, nil
}

// loadPublishing loads the --bundle folder or manifest, which must
// publish gvk. A folder's Bundle is named after the folder, a manifest's
// as it says.
func loadPublishing(ctx context.Context, s *Session, from string, gvk schema.GroupVersionKind) (*templates.Bundle, error) {
	name, err := BundleNameAt(from)
	if err != nil {
		return nil, err
	}
	b, err := s.LoadBundle(ctx, from, name)
	if err != nil {
		return nil, err
	}
	api := b.Spec().API
	switch {
	case api == nil:
		return nil, fmt.Errorf("--bundle %s publishes no kind (api: in stencil.yaml, spec.api of a Bundle), so it cannot render a %s", from, parents.KindString(gvk))
	case !publishesKind(api, gvk):
		return nil, fmt.Errorf("--bundle %s publishes %s, not %s", from, parents.KindString(publish.GVK(*api)), parents.KindString(gvk))
	}
	return b, nil
}

// clusterBundleFor finds the cluster's Bundle that publishes gvk. When two
// claim it, the one the kind's CRD is labelled with (the one the
// controller serves it for) wins.
func clusterBundleFor(ctx context.Context, s *Session, gvk schema.GroupVersionKind) (*templates.Bundle, error) {
	if s.Client == nil {
		return nil, fmt.Errorf("no --bundle given and no cluster to find the Bundle publishing %s in", parents.KindString(gvk))
	}
	b, claimants, err := engine.PublishingBundle(ctx, s.Client, s.Client, gvk)
	switch {
	case err != nil:
		return nil, fmt.Errorf("find the Bundle publishing %s: %w", parents.KindString(gvk), err)
	case b == nil && len(claimants) > 0:
		return nil, fmt.Errorf("the Bundles %s all publish %s and its CRD names none of them (pass --bundle)", strings.Join(claimants, ", "), parents.KindString(gvk))
	case b == nil:
		return nil, fmt.Errorf("no Bundle in the cluster publishes %s (pass --bundle DIR to render with a bundle folder)", parents.KindString(gvk))
	}
	return templates.LoadObject(b)
}

// Consent is the consent the controller would apply parent with (see
// applyset.Owns): the stencil.dev/adopt annotation naming it, and the
// kinds its Bundle's spec.permissions.adopt lists.
func (s *Session) Consent(parent applyset.Parent, b *templates.Bundle) applyset.Consent {
	resource := ""
	gvk := parent.ParentGVK()
	if s.Mapper != nil {
		if m, err := s.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			resource = m.Resource.Resource
		}
	}
	return applyset.ConsentOf(parent, resource, b.Permissions().Adopt)
}
