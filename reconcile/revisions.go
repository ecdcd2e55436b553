package reconcile

import (
	"context"
	"errors"
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
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/templates"
)

// The revision a parent renders (package rollout decides it, package
// revision holds its content): the glue between them and the pass.

// assigned is the revision a parent renders, with its Bundle as the cache
// holds it.
type assigned struct {
	bundle *v1alpha1.Bundle
	rollout.Assignment
}

// revisionNotFoundError is a revision a parent is assigned that its
// Bundle does not have (a pin of no revision, or a revision deleted by
// hand): the parent stalls, nothing is rendered.
type revisionNotFoundError struct{ msg string }

func (e *revisionNotFoundError) Error() string { return e.msg }

// assign reads parent's Bundle (a NotFound error when there is none) and
// decides the revision the parent renders (rollout.Assign): its pin, or
// what the Bundle's rollout of this shard assigns it.
func (r *CompositionReconciler) assign(ctx context.Context, parent applyset.Parent) (*assigned, error) {
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: parent.ParentSpec().Bundle}, b); err != nil {
		return nil, err
	}
	shardName := parent.GetLabels()[shard.Label]
	var order rollout.Order
	if rollout.Ranked(b, shardName) {
		var err error
		if order, err = r.order.Order(ctx); err != nil {
			return nil, fmt.Errorf("the order of Bundle %s's rollout: %w", b.Name, err)
		}
	}
	key := rollout.Key{Kind: parent.ParentGVK().GroupKind().String(), Namespace: parent.GetNamespace(), Name: parent.GetName()}
	// The rollout of the parent's shard: the controller's own in a pass,
	// and the parent's in a review (a webhook serves every shard).
	in := rollout.Inputs{Bundle: b, Shard: shardName, Key: key, Order: order, Pin: parent.ParentSpec().BundleRevision,
		Canary: r.canary(ctx, b, parent),
		Known: func(name string) (int64, bool) {
			rev, err := r.bundleRevision(ctx, b, name)
			if err != nil {
				return 0, false
			}
			return rev.Spec.Number, true
		},
		Accepts: func(name string) (bool, string) {
			loaded, _, err := r.loadAssigned(ctx, &assigned{bundle: b, Assignment: rollout.Assignment{Revision: name, Current: name == rollout.Current(b)}}, false)
			if err != nil {
				return true, "" // the render reports it
			}
			if _, err := templates.MergeValues(loaded, parent.ParentSpec().Values); err != nil {
				return false, err.Error()
			}
			return true, ""
		},
	}
	if h := parent.ParentStatus().BundleRevision; h != "" {
		in.On = revision.Name(b.Name, h)
	}
	return &assigned{bundle: b, Assignment: rollout.Assign(in)}, nil
}

// RolloutOrder keeps the key the rollouts rank parents by: the rollout
// controller and the admission webhook's wave plan rank with it too.
func (r *CompositionReconciler) RolloutOrder() *rollout.OrderKey { return r.order }

// canary reports whether b's rollout canary selects parent (reading its
// namespace from the cache only when b has a canary).
func (r *CompositionReconciler) canary(ctx context.Context, b *v1alpha1.Bundle, parent applyset.Parent) bool {
	if b.Spec.Rollout == nil || b.Spec.Rollout.Canary == nil {
		return false
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: parent.GetNamespace()}, ns); err != nil {
		return false
	}
	return rollout.Canary(b.Spec.Rollout, ns.Labels, parent.GetLabels())
}

// bundleRevision reads revision name of b from the cache: a NotFound
// error when b has none of that name.
func (r *CompositionReconciler) bundleRevision(ctx context.Context, b *v1alpha1.Bundle, name string) (*v1alpha1.BundleRevision, error) {
	rev := &v1alpha1.BundleRevision{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, rev); err != nil {
		return nil, err
	}
	if !revision.Of(rev, b) {
		return nil, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("bundlerevisions").GroupResource(), name)
	}
	return rev, nil
}

// loadAssigned loads the content a parent renders: the Bundle itself
// when it is on its current content, else the BundleRevision's; with the
// chart of a Bundle with a source from this process's cache (cachedOnly:
// the admission webhook, which must not wait on a registry) or pulled by
// digest. A revision is parsed once (recall.Bundles, under its name),
// rendered only if its content hashes to the revision it names, and
// within the Bundle's current permissions and crds policy
// (revision.Within): what the author removed binds every revision.
func (r *CompositionReconciler) loadAssigned(ctx context.Context, a *assigned, cachedOnly bool) (*templates.Bundle, *outputs.Set, error) {
	content, key := a.bundle, a.bundle.Name
	var rev *v1alpha1.BundleRevision
	if !a.Current && a.Revision != "" {
		var err error
		if rev, err = r.bundleRevision(ctx, a.bundle, a.Revision); apierrors.IsNotFound(err) {
			return nil, nil, &revisionNotFoundError{msg: fmt.Sprintf("revision %s of Bundle %s is not found (kubectl get bundlerevisions -l %s=%s): nothing is rendered", a.Revision, a.bundle.Name, v1alpha1.LabelBundle, a.bundle.Name)}
		} else if err != nil {
			return nil, nil, fmt.Errorf("read revision %s: %w", a.Revision, err)
		}
		if content, err = revision.Bundle(a.bundle, rev); err != nil {
			return nil, nil, err
		}
		key = "revision/" + rev.Name
	}
	var err error
	if cachedOnly {
		content, err = r.sources.Cached(content)
	} else {
		content, err = r.sources.Files(ctx, content)
	}
	if err != nil {
		return nil, nil, &sourceError{err}
	}
	loaded, outs, err := r.bundles.LoadKeyed(key, content)
	if err != nil || rev == nil {
		return loaded, outs, err
	}
	if err := revision.Check(rev, loaded.Revision()); err != nil {
		return nil, nil, err
	}
	return revision.Within(loaded, a.bundle.Spec.Permissions, a.bundle.Spec.CRDs), outs, nil
}

// LoadRevision loads revision name of b (its current content included),
// for the rollout controller (rollout.Loader).
func (r *CompositionReconciler) LoadRevision(ctx context.Context, b *v1alpha1.Bundle, name string) (*templates.Bundle, error) {
	loaded, _, err := r.loadAssigned(ctx, &assigned{bundle: b, Assignment: rollout.Assignment{Revision: name, Current: name == rollout.Current(b)}}, false)
	return loaded, err
}

// LoadFor loads what parent renders, as a pass would (its pin, or the
// revision its Bundle's rollout assigns it), from the chart cache only:
// the admission webhook renders through it. A pin of a revision the
// Bundle does not have, or refuses, is an error saying so (PinError).
func (r *CompositionReconciler) LoadFor(ctx context.Context, parent applyset.Parent) (*templates.Bundle, error) {
	a, err := r.assign(ctx, parent)
	if err != nil {
		return nil, err
	}
	if pin := parent.ParentSpec().BundleRevision; pin != "" && (a.NotFound || a.Reason == v1alpha1.ReasonPinRefused) {
		return nil, &PinError{Message: a.Message}
	}
	loaded, _, err := r.loadAssigned(ctx, a, true)
	return loaded, err
}

// sourceError is a chart a parent renders that is not at hand (see
// package pull).
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// PinError is a pin its Bundle does not allow or does not have.
type PinError struct{ Message string }

func (e *PinError) Error() string { return e.Message }

// loadBundle is the render phase's load: the assigned revision, parsed,
// with its outputs. A missing Bundle, a pin of no revision, values the
// assigned revision refuses (where the Bundle holds nobody back) and a
// content that does not load stall the parent; a chart not at hand waits (see
// waitForSource). The assignment is kept for the status (RevisionHeld).
func (r renderer) loadBundle(ctx context.Context, s *scope) (*templates.Bundle, *outputs.Set, bool, error) {
	a, err := r.assign(ctx, s.comp)
	if apierrors.IsNotFound(err) {
		reporter{r.CompositionReconciler}.stall(s, v1alpha1.ReasonBundleNotFound, fmt.Sprintf("Bundle %q not found", s.comp.ParentSpec().Bundle))
		return nil, nil, true, nil
	} else if err != nil {
		return nil, nil, false, fmt.Errorf("read Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	s.assignment = &a.Assignment
	switch {
	case a.NotFound:
		reporter{r.CompositionReconciler}.stall(s, v1alpha1.ReasonRevisionNotFound, a.Message)
		return nil, nil, true, nil
	case a.Refused:
		reporter{r.CompositionReconciler}.stall(s, v1alpha1.ReasonValuesRefused, a.Message)
		return nil, nil, true, nil
	}
	if a.Reason == v1alpha1.ReasonPinRefused {
		r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonPinRefused, "Render", "%s", a.Message)
	}
	loaded, outs, err := r.loadAssigned(ctx, a, false)
	var notFound *revisionNotFoundError
	var notVerified *revision.NotVerifiedError
	var source *sourceError
	switch {
	case errors.As(err, &notFound):
		reporter{r.CompositionReconciler}.stall(s, v1alpha1.ReasonRevisionNotFound, err.Error())
		return nil, nil, true, nil
	case errors.As(err, &notVerified):
		status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonSourceNotReady, err.Error())
		s.done = true
		return nil, nil, true, nil
	case errors.As(err, &source):
		_, err = r.waitForSource(s, source.err)
		return nil, nil, true, err
	case err != nil:
		reporter{r.CompositionReconciler}.stall(s, v1alpha1.ReasonRenderFailed, err.Error())
		return nil, nil, true, nil
	}
	return loaded, outs, false, nil
}
