package plan

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// APIs is what planning asks of the cluster about kinds. The API
// server's kinds win: a kind's scope is the one the cluster serves it
// with (or, offline, the built-in list's), and a CustomResourceDefinition
// in the render is believed only for a kind nothing serves.
// cluster.NewAPIs answers from discovery and the API server,
// cluster.OfflineAPIs from the built-in list.
type APIs interface {
	// RESTMapper maps a served kind to its resource and scope; a kind
	// nothing serves fails with a NoKindMatch error.
	meta.RESTMapper
	// BuiltIn says whether the API server serves gk by itself.
	BuiltIn(gk schema.GroupKind) bool
	// ServedGroup says what, besides CustomResourceDefinitions, serves
	// group (the API server itself, an aggregated API server, stencil),
	// or "": no CRD may define a kind of a group it names.
	ServedGroup(ctx context.Context, group string) (string, error)
	// CRD returns the labels of the CustomResourceDefinition named name
	// and whether it exists.
	CRD(ctx context.Context, name string) (labels map[string]string, exists bool, err error)
}

// isCRD says whether u is a CustomResourceDefinition.
func isCRD(u *unstructured.Unstructured) bool {
	return u.GetKind() == "CustomResourceDefinition" && u.GroupVersionKind().Group == "apiextensions.k8s.io"
}

// crdKind is the group-kind a rendered CustomResourceDefinition defines.
func crdKind(u *unstructured.Unstructured) schema.GroupKind {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}
}

// checkCRDs refuses every rendered CustomResourceDefinition that would
// define a kind the cluster already serves otherwise, so that no render
// can shadow a kind or lie about its scope: a built-in kind, a kind
// served by a CustomResourceDefinition that is not a member of the set id
// (one made by hand, by a Bundle, by another set), a kind of a group that
// something besides CRDs serves (the API server itself, an aggregated API
// server, stencil), a CustomResourceDefinition of that name that another
// owns, and one that would be a cluster admin's opt-in for a Bundle to
// publish its kind (notDefinable).
//
// A group of Kubernetes' own (k8s.io, kubernetes.io and their
// subdomains) that nothing but CRDs serves is no exception: its CRDs
// (the Gateway API's, external-dns's DNSEndpoint) are applied as any
// other, as the parent's account, whose RBAC decides; the API server
// requires of them the annotation api-approved.kubernetes.io, and
// refuses one without it (Invalid), as it refuses it to anyone.
func checkCRDs(ctx context.Context, objs []*unstructured.Unstructured, apis APIs, id string) error {
	for _, u := range objs {
		if !isCRD(u) {
			continue
		}
		if reason, err := crdConflict(ctx, u, apis, id); err != nil || reason != "" {
			if err != nil {
				return err
			}
			return &RefusedError{Object: "CustomResourceDefinition/" + u.GetName(), Reason: reason, Conflict: true}
		}
	}
	return nil
}

// notDefinable says why no CRD may be u, whatever the cluster serves,
// or "": the first checks of a rendered CRD (crdConflict) and of a
// chart's crds/ CRD (chartCRDConflict). It refuses
//
//   - a built-in kind;
//   - a kind of a group something besides CRDs serves (APIs.ServedGroup),
//     checked before discovery, which may not answer for an aggregated
//     group;
//   - in a group of Kubernetes' own, a CRD labelled publish.LabelBundle:
//     there an approved CRD with that label is a cluster admin's opt-in
//     for a Bundle to publish its kind (package reconcile/published),
//     which a Bundle's render may not give itself.
func notDefinable(ctx context.Context, u *unstructured.Unstructured, apis APIs) (string, error) {
	gk := crdKind(u)
	kind := applyset.FormatGroupKind(gk)
	if apis.BuiltIn(gk) {
		return fmt.Sprintf("it would define %s, which the API server serves itself (a built-in kind)", kind), nil
	}
	served, err := apis.ServedGroup(ctx, gk.Group)
	if err != nil {
		return "", err
	}
	if served != "" {
		return fmt.Sprintf("it would define %s, and group %s is %s", kind, gk.Group, served), nil
	}
	if b := u.GetLabels()[publish.LabelBundle]; b != "" && publish.ReservedGroup(gk.Group) {
		return fmt.Sprintf("it would define %s in group %s, one of Kubernetes' own, labelled %s: %s, which only a cluster admin gives a CustomResourceDefinition there (the opt-in for Bundle %s to publish the kind), never a render", kind, gk.Group, publish.LabelBundle, b, b), nil
	}
	return "", nil
}

// crdConflict says why the rendered CRD u may not be applied by the set
// id, or "".
func crdConflict(ctx context.Context, u *unstructured.Unstructured, apis APIs, id string) (string, error) {
	gk := crdKind(u)
	kind := applyset.FormatGroupKind(gk)
	if conflict, err := notDefinable(ctx, u, apis); conflict != "" || err != nil {
		return conflict, err
	}
	mapping, err := apis.RESTMapping(gk)
	switch {
	case err == nil:
		name := mapping.Resource.Resource + "." + gk.Group
		labels, exists, err := apis.CRD(ctx, name)
		switch {
		case err != nil:
			return "", err
		case !exists:
			return fmt.Sprintf("it would define %s, which the cluster already serves without a CustomResourceDefinition", kind), nil
		case labels[applyset.LabelPartOf] != id:
			return fmt.Sprintf("it would define %s, which CustomResourceDefinition %s serves and this set does not own", kind, name), nil
		}
	case !meta.IsNoMatchError(err):
		return "", fmt.Errorf("find the API of %s: %w", kind, err)
	}
	labels, exists, err := apis.CRD(ctx, u.GetName())
	if err != nil || !exists || labels[applyset.LabelPartOf] == id {
		return "", err
	}
	return fmt.Sprintf("CustomResourceDefinition %s exists and this set does not own it", u.GetName()), nil
}

// renderedCRDScopes maps the group-kinds defined by CRDs in the render to
// whether they are namespaced. It is consulted only for kinds the cluster
// does not serve (see isNamespaced); checkCRDs has refused the rest.
func renderedCRDScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	scopes := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if !isCRD(u) {
			continue
		}
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		scopes[crdKind(u)] = scope != "Cluster"
	}
	return scopes
}

// isNamespaced says whether u's kind is namespaced: as the cluster serves
// it (apis), or, for a kind nothing serves, as a CRD of the render
// declares it.
func isNamespaced(u *unstructured.Unstructured, apis APIs, crdScopes map[schema.GroupKind]bool) (bool, error) {
	gvk := u.GroupVersionKind()
	m, err := apis.RESTMapping(gvk.GroupKind())
	if err == nil {
		return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
	if namespaced, ok := crdScopes[gvk.GroupKind()]; ok && meta.IsNoMatchError(err) {
		return namespaced, nil
	}
	return false, fmt.Errorf("find the API of %s %s: %w", gvk.Kind, u.GetName(), err)
}

// ConditionReason is the reason of the Stalled condition a refusal sets:
// KindConflict for a CustomResourceDefinition that would define a kind
// the cluster serves otherwise, Refused for the rest.
func (e *RefusedError) ConditionReason() string {
	if e.Conflict {
		return v1alpha1.ReasonKindConflict
	}
	return v1alpha1.ReasonRefused
}
