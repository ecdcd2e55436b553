package session

import (
	"context"
	"fmt"

	"github.com/stencil-dev/stencil/templates/observed"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// Kept reads, live and as the user, the stores of the values the
// controller keeps of what p's templates generated (package
// reconcile/valuestore) and the controller's key, so a render shows the
// passwords and certificates the cluster holds, not new ones. A store
// the user may not read is left out, as is one the set's record rec
// does not name (a store the controller would not read), and without the key (a user who
// may not read it: only the controller and cluster admins should) no
// value kept under a keyed digest is found: those values are new ones
// in the render, as on a first install, and a note says so.
func (s *Session) Kept(ctx context.Context, p applyset.Parent, rec *applyset.Record) (*valuestore.Stores, error) {
	ns := s.ControllerNamespace
	if ns == "" {
		ns = engine.DefaultNamespace
	}
	src := valuestore.Source{SetID: applyset.ParentID(p), ParentNamespace: p.GetNamespace(), Namespaces: []string{p.GetNamespace()},
		Tenant: s.Client, ControllerNamespace: ns, Controller: s.Client, SkipForbidden: true, Record: rec}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(p.ParentGVK())
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(p), live); err == nil {
		src.Namespaces = append(src.Namespaces, applyset.ParseInventory(live.GetAnnotations()).Namespaces...)
	}
	secret := &corev1.Secret{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: valuestore.KeySecretName}, secret)
	switch {
	case err == nil:
		key, kerr := valuestore.NewKey(secret.Data[valuestore.KeyField])
		if kerr != nil {
			return nil, fmt.Errorf("the key in Secret %s/%s: %w", ns, valuestore.KeySecretName, kerr)
		}
		src.Key = &key
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		if !s.keyNoted {
			fmt.Fprintf(s.Notes, "note: the controller's key for generated values (Secret %s/%s) cannot be read as you: generated values are shown as new ones, not those the cluster keeps\n", ns, valuestore.KeySecretName)
			s.keyNoted = true
		}
	default:
		return nil, fmt.Errorf("read Secret %s/%s: %w", ns, valuestore.KeySecretName, err)
	}
	return valuestore.Read(ctx, src)
}

// RecordOf is the record of p's members (applyset.RecordOf) as the
// cluster holds it: what the controller takes for the set's own. A parent
// listed from the cluster carries it in its status; one from a file (no
// status) is read live, as the user. A parent the cluster does not hold
// has no member yet.
func (s *Session) RecordOf(ctx context.Context, p applyset.Parent) (*applyset.Record, error) {
	if !equality.Semantic.DeepEqual(*p.ParentStatus(), v1alpha1.CompositionStatus{}) {
		return applyset.RecordOf(p), nil
	}
	live, err := applyset.Reread(ctx, s.Client, p)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return applyset.NewRecord(nil, nil), nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", parents.Describe(p), err)
	}
	return applyset.RecordOf(live), nil
}

// Answer answers a render's lookups live and as the user (Helm's lookup:
// the object, or the list of a kind, or nothing). Offline there is no
// answer: every lookup is empty, as in `helm template`. The controller
// answers as the parent's ServiceAccount, which may read more or less
// than the user: the render shows what the user may read.
func (s *Session) Answer(ctx context.Context, reads []lookup.Read) (lookup.Table, error) {
	table := make(lookup.Table, len(reads))
	for _, r := range reads {
		gv, err := schema.ParseGroupVersion(r.Key.APIVersion)
		if err != nil {
			table[r.Key.String()] = nil
			continue
		}
		gvk := gv.WithKind(r.Key.Kind)
		var obj map[string]any
		if r.Key.List() {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(r.Key.Kind + "List"))
			var opts []client.ListOption
			if r.Key.Namespace != "" {
				opts = append(opts, client.InNamespace(r.Key.Namespace))
			}
			if err := s.Client.List(ctx, list, opts...); err == nil && len(list.Items) > 0 {
				items := make([]any, len(list.Items))
				for i := range list.Items {
					list.Items[i].SetManagedFields(nil)
					items[i] = list.Items[i].Object
				}
				obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
			}
		} else {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := s.Client.Get(ctx, client.ObjectKey{Namespace: r.Key.Namespace, Name: r.Key.Name}, u); err == nil {
				u.SetManagedFields(nil)
				obj = u.Object
			}
		}
		table[r.Key.String()] = obj
	}
	return table, nil
}

// Observe reads, live and as the user, the members of plan pl that ids
// name: only objects of the plan, and only the set's members by its
// record rec (plan.ObservedView), as the controller gives its templates.
// Offline nothing is observed. A member the user may not read, or that
// does not exist, is not observed.
func (s *Session) Observe(rec *applyset.Record) plan.Observe {
	return func(ctx context.Context, pl *plan.Plan, _ []observed.HeldObject, ids []string) map[string]map[string]any {
		if s.Client == nil {
			return nil
		}
		addressed := pl.Addressed()
		var out map[string]map[string]any
		for _, id := range ids {
			o, ok := addressed[id]
			if !ok {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			if err := s.Client.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				continue
			}
			if v := plan.ObservedView(u, pl.ID, rec); v != nil {
				if out == nil {
					out = map[string]map[string]any{}
				}
				out[id] = v
			}
		}
		return out
	}
}
