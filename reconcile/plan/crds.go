package plan

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// This file plans the CustomResourceDefinitions of a chart's crds/
// folders (templates.Bundle.CRDs): Helm's CRDs, applied before anything
// else and never members of the set (no part-of label, no inventory,
// never pruned nor deleted with it).

// crdGroupKind is the group-kind of a CustomResourceDefinition.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// chartCRDs returns b's crds/ CRDs for in, checked as rendered CRDs are:
// the Bundle's permissions must allow CustomResourceDefinitions, none may
// define a kind the cluster serves otherwise (built in, in a group the
// API server or an aggregated API server serves, or by a CRD of another
// name) nor be a Bundle's opt-in (notDefinable), none may be one of the
// rendered objects too, and under CreateReplace none may be another set's
// member. A group of Kubernetes' own is no exception, as for rendered
// CRDs (checkCRDs).
func chartCRDs(ctx context.Context, b *templates.Bundle, in templates.Input, objs []*unstructured.Unstructured, apis APIs) ([]*unstructured.Unstructured, error) {
	crds, err := b.CRDs(in.Values)
	if err != nil || len(crds) == 0 {
		return nil, err
	}
	perms := b.Permissions()
	if !slices.ContainsFunc(perms.ClusterScoped, func(p v1alpha1.GroupKind) bool {
		return p.Group == crdGroupKind.Group && (p.Kind == crdGroupKind.Kind || p.Kind == "*")
	}) {
		return nil, &RefusedError{Object: "CustomResourceDefinition/" + crds[0].GetName(),
			Reason: "the chart's crds/ holds CustomResourceDefinitions, which are cluster-scoped, and the bundle's spec.permissions.clusterScoped does not allow apiextensions.k8s.io/CustomResourceDefinition (or set spec.crds: Skip)"}
	}
	rendered := map[string]bool{}
	for _, o := range objs {
		if isCRD(o) {
			rendered[o.GetName()] = true
		}
	}
	replace := b.CRDPolicy() == v1alpha1.CRDsCreateReplace
	seen := map[string]bool{}
	var out []*unstructured.Unstructured
	for _, u := range crds {
		switch {
		case rendered[u.GetName()]:
			return nil, &templates.RenderError{Msg: fmt.Sprintf("CustomResourceDefinition %s is both in a crds/ folder and rendered by a template", u.GetName())}
		case seen[u.GetName()]:
			continue // a chart used twice, or two charts shipping the same CRD: Helm creates it once
		}
		seen[u.GetName()] = true
		reason, err := chartCRDConflict(ctx, u, apis, replace)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			return nil, &RefusedError{Object: "CustomResourceDefinition/" + u.GetName(), Reason: reason, Conflict: true}
		}
		sanitize(u)
		out = append(out, u)
	}
	return out, nil
}

// chartCRDConflict says why the crds/ CRD u may not be applied, or "".
// A CRD of that name that exists is the one u would create: Create leaves
// it, CreateReplace updates it unless it is a member of a set.
func chartCRDConflict(ctx context.Context, u *unstructured.Unstructured, apis APIs, replace bool) (string, error) {
	gk := crdKind(u)
	kind := applyset.FormatGroupKind(gk)
	if conflict, err := notDefinable(ctx, u, apis); conflict != "" || err != nil {
		return conflict, err
	}
	mapping, err := apis.RESTMapping(gk)
	switch {
	case err == nil:
		if name := mapping.Resource.Resource + "." + gk.Group; name != u.GetName() {
			return fmt.Sprintf("it would define %s, which the cluster serves as %s", kind, name), nil
		}
	case !meta.IsNoMatchError(err):
		return "", fmt.Errorf("find the API of %s: %w", kind, err)
	}
	labels, exists, err := apis.CRD(ctx, u.GetName())
	switch {
	case err != nil:
		return "", err
	case mapping != nil && !exists:
		return fmt.Sprintf("it would define %s, which the cluster already serves without a CustomResourceDefinition", kind), nil
	case replace && labels[applyset.LabelPartOf] != "":
		return fmt.Sprintf("CustomResourceDefinition %s is a member of ApplySet %s: spec.crds CreateReplace would change it under that set", u.GetName(), labels[applyset.LabelPartOf]), nil
	}
	return "", nil
}
