package reconcile

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// CompositionGroupKind is the group-kind of every ApplySet parent stencil manages.
var CompositionGroupKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "Composition"}

// Plan is what one render of a Composition asks to be applied: the objects
// in apply order, each placed in its namespace and labelled as a member of
// the Composition's ApplySet. `stencil render` prints exactly these objects.
type Plan struct {
	// ID is the ApplySet id of the Composition.
	ID string
	// Objects are the members in apply order.
	Objects []*unstructured.Unstructured
	// BundleRevision is the revision of the bundle rendered.
	BundleRevision string

	inventory inventory
}

// RefusedError reports a rendered object that the Bundle's permissions do
// not allow: a cluster-scoped kind or another namespace. It is a user error:
// nothing of the Composition is applied until the input changes.
type RefusedError struct {
	// Object names the refused object as Kind/namespace/name.
	Object string
	// Reason says what was outside the bundle's permissions.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused %s: %s", e.Object, e.Reason)
}

// Renderer renders a bundle for one Composition. The controller and the
// CLI use a sandbox.Pool, which bounds every render's time and memory in a
// worker process; a *templates.RenderError is the bundle's or the values'
// fault, any other error may be retried.
type Renderer interface {
	Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error)
}

// RenderInput is what a Composition gives its bundle's templates.
func RenderInput(comp *v1alpha1.Composition) templates.Input {
	return templates.Input{
		Values: comp.Spec.Values,
		Composition: templates.CompositionInfo{
			Name:        comp.Name,
			Namespace:   comp.Namespace,
			UID:         string(comp.UID),
			Labels:      comp.Labels,
			Annotations: comp.Annotations,
		},
		IsUpgrade: comp.Status.BundleRevision != "",
	}
}

// NewPlan renders the Composition's bundle with r and prepares the result
// for apply: it places namespaced objects in the Composition's namespace,
// refuses what the bundle's permissions do not allow, adds the ApplySet
// part-of label, drops fields the server owns (status, managedFields, ...),
// and sorts the objects into apply order. mapper says which kinds are
// namespaced; kinds defined by a CRD in the same render are looked up there.
func NewPlan(ctx context.Context, r Renderer, b *templates.Bundle, comp *v1alpha1.Composition, mapper meta.RESTMapper) (*Plan, error) {
	objs, err := r.Render(ctx, b, RenderInput(comp))
	if err != nil {
		return nil, err
	}
	objs = filterHooks(objs) // Helm test hooks and hook points stencil does not run are never applied
	p := &Plan{
		ID:             ApplySetID(comp.Name, comp.Namespace, CompositionGroupKind),
		BundleRevision: b.Revision(),
	}
	crdScopes := renderedCRDScopes(objs)
	perms := b.Permissions()
	placed := make(map[string]bool, len(objs))
	for _, u := range objs {
		namespaced, err := isNamespaced(u, mapper, crdScopes)
		if err != nil {
			return nil, err
		}
		if err := place(u, namespaced, comp.Namespace, perms); err != nil {
			return nil, err
		}
		// Two objects that only differ before placement (one names the
		// Composition's namespace, one names none) are one object: applied
		// twice, they would flip between two versions on every pass.
		key := objectKey(u)
		if placed[key] {
			return nil, &templates.RenderError{Msg: fmt.Sprintf("%s is rendered twice (once with its namespace, once without)", ref(u))}
		}
		placed[key] = true
		sanitize(u)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelPartOf] = p.ID
		u.SetLabels(labels)
		p.Objects = append(p.Objects, u)
		p.inventory.groupKinds = append(p.inventory.groupKinds, u.GroupVersionKind().GroupKind())
		p.inventory.namespaces = append(p.inventory.namespaces, u.GetNamespace())
	}
	p.inventory = p.inventory.normalize(comp.Namespace)
	sortForApply(p.Objects)
	return p, nil
}

// objectKey identifies an object by group, kind, namespace and name.
func objectKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + u.GetNamespace() + "/" + u.GetName()
}

// renderedCRDScopes maps the group-kinds defined by CRDs in the render to
// whether they are namespaced.
func renderedCRDScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	scopes := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" || u.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		scopes[schema.GroupKind{Group: group, Kind: kind}] = scope != "Cluster"
	}
	return scopes
}

func isNamespaced(u *unstructured.Unstructured, mapper meta.RESTMapper, crdScopes map[schema.GroupKind]bool) (bool, error) {
	gvk := u.GroupVersionKind()
	if namespaced, ok := crdScopes[gvk.GroupKind()]; ok {
		return namespaced, nil
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("find the API of %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// place puts a namespaced object in the Composition's namespace unless it
// names another one, and refuses what the bundle's permissions do not allow.
func place(u *unstructured.Unstructured, namespaced bool, namespace string, perms v1alpha1.BundlePermissions) error {
	gk := u.GroupVersionKind().GroupKind()
	if !namespaced {
		u.SetNamespace("")
		if !slices.ContainsFunc(perms.ClusterScoped, func(p v1alpha1.GroupKind) bool {
			return p.Group == gk.Group && (p.Kind == gk.Kind || p.Kind == "*")
		}) {
			return &RefusedError{Object: gk.Kind + "/" + u.GetName(),
				Reason: fmt.Sprintf("%s is cluster-scoped and the bundle's spec.permissions.clusterScoped does not allow it", formatGroupKind(gk))}
		}
		return nil
	}
	switch ns := u.GetNamespace(); {
	case ns == "":
		u.SetNamespace(namespace)
	case ns != namespace && !slices.Contains(perms.Namespaces, ns) && !slices.Contains(perms.Namespaces, "*"):
		return &RefusedError{Object: gk.Kind + "/" + ns + "/" + u.GetName(),
			Reason: fmt.Sprintf("namespace %q is not the Composition's (%q) and the bundle's spec.permissions.namespaces does not allow it", ns, namespace)}
	}
	return nil
}

// sanitize drops what the server owns, so an apply never claims it:
// status, managedFields, resourceVersion, uid, a null creationTimestamp.
func sanitize(u *unstructured.Unstructured) {
	delete(u.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
}
