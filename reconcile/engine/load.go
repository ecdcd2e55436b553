package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/templates"
)

// The Bundle and chart loader with its revisions: the revision a parent
// renders (package rollout decides it, package revision holds its
// content), loaded and bounded by its Bundle's current policy.

// Assigned is the revision a parent renders, with its Bundle as the cache
// holds it.
type Assigned struct {
	// Bundle is the parent's Bundle, as the cache holds it.
	Bundle *v1alpha1.Bundle
	rollout.Assignment
}

// RevisionNotFoundError is a revision a parent is assigned that its
// Bundle does not have (a pin of no revision, or a revision deleted by
// hand): the parent stalls, nothing is rendered.
type RevisionNotFoundError struct{ Message string }

func (e *RevisionNotFoundError) Error() string { return e.Message }

// Assign reads parent's Bundle (a NotFound error when there is none) and
// decides the revision the parent renders (rollout.Assign): its pin, or
// what the Bundle's rollout of this shard assigns it.
func (e *Engine) Assign(ctx context.Context, parent applyset.Parent) (*Assigned, error) {
	b := &v1alpha1.Bundle{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: parent.ParentSpec().Bundle}, b); err != nil {
		return nil, err
	}
	shardName := parent.GetLabels()[shard.Label]
	var order rollout.Order
	if rollout.Ranked(b, shardName) {
		var err error
		if order, err = e.Order.Order(ctx); err != nil {
			return nil, fmt.Errorf("the order of Bundle %s's rollout: %w", b.Name, err)
		}
	}
	key := rollout.Key{Kind: parent.ParentGVK().GroupKind().String(), Namespace: parent.GetNamespace(), Name: parent.GetName()}
	// The rollout of the parent's shard: the controller's own in a pass,
	// and the parent's in a review (a webhook serves every shard).
	in := rollout.Inputs{Bundle: b, Shard: shardName, Key: key, Order: order, Pin: parent.ParentSpec().BundleRevision,
		Canary: e.Canary(ctx, b, parent),
		Known: func(name string) (int64, bool) {
			rev, err := e.bundleRevision(ctx, b, name)
			if err != nil {
				return 0, false
			}
			return rev.Spec.Number, true
		},
		Accepts: func(name string) (bool, string) {
			loaded, _, err := e.LoadAssigned(ctx, &Assigned{Bundle: b, Assignment: rollout.Assignment{Revision: name, Current: name == rollout.Current(b)}}, false)
			if err != nil {
				return true, "" // the render reports it
			}
			values, err := e.RenderValues(ctx, parent, loaded)
			if err != nil {
				return true, "" // the render reports it
			}
			if _, err := templates.MergeValues(loaded, values); err != nil {
				return false, err.Error()
			}
			return true, ""
		},
	}
	if h := parent.ParentStatus().BundleRevision; h != "" {
		in.On = revision.Name(b.Name, h)
	}
	return &Assigned{Bundle: b, Assignment: rollout.Assign(in)}, nil
}

// RolloutOrder keeps the key the rollouts rank parents by: the rollout
// controller and the admission webhook's wave plan rank with it too.
func (e *Engine) RolloutOrder() *rollout.OrderKey { return e.Order }

// Canary reports whether b's rollout canary selects parent (reading its
// namespace from the cache only when b has a canary).
func (e *Engine) Canary(ctx context.Context, b *v1alpha1.Bundle, parent applyset.Parent) bool {
	if b.Spec.Rollout == nil || b.Spec.Rollout.Canary == nil {
		return false
	}
	ns := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: parent.GetNamespace()}, ns); err != nil {
		return false
	}
	return rollout.Canary(b.Spec.Rollout, ns.Labels, parent.GetLabels())
}

// bundleRevision reads revision name of b from the cache: a NotFound
// error when b has none of that name.
func (e *Engine) bundleRevision(ctx context.Context, b *v1alpha1.Bundle, name string) (*v1alpha1.BundleRevision, error) {
	rev := &v1alpha1.BundleRevision{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, rev); err != nil {
		return nil, err
	}
	if !revision.Of(rev, b) {
		return nil, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("bundlerevisions").GroupResource(), name)
	}
	return rev, nil
}

// LoadAssigned loads the content a parent renders: the Bundle itself
// when it is on its current content, else the BundleRevision's; with the
// chart of a Bundle with a source from this process's cache (cachedOnly:
// the admission webhook, which must not wait on a registry) or pulled by
// digest. A revision is parsed once (recall.Bundles, under its name),
// rendered only if its content hashes to the revision it names, and
// within the Bundle's current permissions and crds policy
// (revision.Within): what the author removed binds every revision.
func (e *Engine) LoadAssigned(ctx context.Context, a *Assigned, cachedOnly bool) (*templates.Bundle, *outputs.Set, error) {
	content, key := a.Bundle, a.Bundle.Name
	var rev *v1alpha1.BundleRevision
	if !a.Current && a.Revision != "" {
		var err error
		if rev, err = e.bundleRevision(ctx, a.Bundle, a.Revision); apierrors.IsNotFound(err) {
			return nil, nil, &RevisionNotFoundError{Message: fmt.Sprintf("revision %s of Bundle %s is not found (kubectl get bundlerevisions -l %s=%s): nothing is rendered", a.Revision, a.Bundle.Name, v1alpha1.LabelBundle, a.Bundle.Name)}
		} else if err != nil {
			return nil, nil, fmt.Errorf("read revision %s: %w", a.Revision, err)
		}
		if content, err = revision.Bundle(a.Bundle, rev); err != nil {
			return nil, nil, err
		}
		key = "revision/" + rev.Name
	}
	var err error
	if cachedOnly {
		content, err = e.Sources.Cached(content)
	} else {
		content, err = e.Sources.Files(ctx, content)
	}
	if err != nil {
		return nil, nil, &SourceError{Err: err}
	}
	loaded, outs, err := e.Bundles.LoadKeyed(key, content)
	if err != nil || rev == nil {
		return loaded, outs, err
	}
	if err := revision.Check(rev, loaded.Revision()); err != nil {
		return nil, nil, err
	}
	return revision.Within(loaded, a.Bundle.Spec.Permissions, a.Bundle.Spec.CRDs), outs, nil
}

// LoadRevision loads revision name of b (its current content included),
// for the rollout controller (rollout.Loader).
func (e *Engine) LoadRevision(ctx context.Context, b *v1alpha1.Bundle, name string) (*templates.Bundle, error) {
	loaded, _, err := e.LoadAssigned(ctx, &Assigned{Bundle: b, Assignment: rollout.Assignment{Revision: name, Current: name == rollout.Current(b)}}, false)
	return loaded, err
}

// LoadFor loads what parent renders, as a pass would (its pin, or the
// revision its Bundle's rollout assigns it), from the chart cache only:
// the admission webhook renders through it. A pin of a revision the
// Bundle does not have, or refuses, is an error saying so (PinError).
func (e *Engine) LoadFor(ctx context.Context, parent applyset.Parent) (*templates.Bundle, error) {
	a, err := e.Assign(ctx, parent)
	if err != nil {
		return nil, err
	}
	if pin := parent.ParentSpec().BundleRevision; pin != "" && (a.NotFound || a.Reason == v1alpha1.ReasonPinRefused) {
		return nil, &PinError{Message: a.Message}
	}
	loaded, _, err := e.LoadAssigned(ctx, a, true)
	return loaded, err
}

// SourceError is a chart a parent renders that is not at hand (see
// package pull).
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// PinError is a pin its Bundle does not allow or does not have.
type PinError struct{ Message string }

func (e *PinError) Error() string { return e.Message }

// LoadBundle returns b parsed, from the cache when its generation is
// known. A Bundle with a source is loaded with the chart of the digest its
// status records, from this process's chart cache only: one not pulled
// yet is an error (a *pull.NotPulledError when none is recorded).
func (e *Engine) LoadBundle(b *v1alpha1.Bundle) (*templates.Bundle, error) {
	b, err := e.Sources.Cached(b)
	if err != nil {
		return nil, err
	}
	return e.Bundles.Load(b)
}
