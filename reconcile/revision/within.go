package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// What a revision may create: what it recorded and what its Bundle allows
// now, both. A revision keeps the permissions and crds policy its Bundle
// had (they are part of its content, and of its hash), and its Bundle's
// author narrows them by editing the Bundle: a parent pinned to an older
// revision, or held on one, renders within the narrowing, never with a
// permission the author removed.

// Within is loaded, the content of a revision of a Bundle, rendering
// within the Bundle's policy perms and crds (its current spec's, or a new
// version's a review previews): the permissions both the revision and
// perms allow (Permissions) and the narrower crds policy (CRDs). Its
// content and revision are loaded's; a loaded already narrowed is
// narrowed from its content's own policy again, not further.
func Within(loaded *templates.Bundle, perms v1alpha1.BundlePermissions, crds v1alpha1.CRDPolicy) *templates.Bundle {
	own := loaded.Own()
	return loaded.Within(Permissions(perms, own.Permissions()), CRDs(crds, own.CRDPolicy()))
}

// Narrows reports whether perms and crds take anything from what loaded's
// content allows itself: whether Within changes what it may render.
func Narrows(loaded *templates.Bundle, perms v1alpha1.BundlePermissions, crds v1alpha1.CRDPolicy) bool {
	own := loaded.Own()
	mine := own.Permissions()
	return !equality.Semantic.DeepEqual(Permissions(mine, perms), mine) || CRDs(own.CRDPolicy(), crds) != own.CRDPolicy()
}

// Permissions is what both a and b allow: the cluster-scoped kinds and the
// kinds to adopt both list (a kind of "*" is every kind of its group, so
// {apps, *} and {apps, Deployment} give {apps, Deployment}), and the
// namespaces both list ("*" is every namespace).
func Permissions(a, b v1alpha1.BundlePermissions) v1alpha1.BundlePermissions {
	return v1alpha1.BundlePermissions{
		ClusterScoped: kinds(a.ClusterScoped, b.ClusterScoped),
		Namespaces:    namespaces(a.Namespaces, b.Namespaces),
		Adopt:         kinds(a.Adopt, b.Adopt),
	}
}

// kinds is the kinds both a and b allow, in a's order (then b's, for a
// kind a allows by "*"), each once.
func kinds(a, b []v1alpha1.GroupKind) []v1alpha1.GroupKind {
	var out []v1alpha1.GroupKind
	add := func(gk v1alpha1.GroupKind) {
		if !slices.Contains(out, gk) {
			out = append(out, gk)
		}
	}
	for _, x := range a {
		for _, y := range b {
			switch {
			case x.Group != y.Group:
			case x.Kind == y.Kind, y.Kind == "*":
				add(x)
			case x.Kind == "*":
				add(y)
			}
		}
	}
	return out
}

// namespaces is the namespaces both a and b allow, in a's order.
func namespaces(a, b []string) []string {
	switch {
	case slices.Contains(a, "*"):
		return slices.Clone(b)
	case slices.Contains(b, "*"):
		return slices.Clone(a)
	}
	var out []string
	for _, ns := range a {
		if slices.Contains(b, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// CRDs is the narrower of two crds policies: Skip leaves crds/ out,
// Create ("", the default) only creates, CreateReplace also updates.
func CRDs(a, b v1alpha1.CRDPolicy) v1alpha1.CRDPolicy {
	if crdRank(b) < crdRank(a) {
		return b
	}
	return a
}

// crdRank orders the crds policies from the narrowest.
func crdRank(p v1alpha1.CRDPolicy) int {
	switch p {
	case v1alpha1.CRDsSkip:
		return 0
	case v1alpha1.CRDsCreateReplace:
		return 2
	}
	return 1
}

// RenderKey is what a render of loaded depends on of it: its revision,
// and the policy it renders within (a pinned parent's render changes when
// its Bundle's author narrows the Bundle, its revision does not).
func RenderKey(loaded *templates.Bundle) string {
	policy, _ := json.Marshal([]any{loaded.Permissions(), loaded.CRDPolicy()})
	sum := sha256.Sum256(policy)
	return loaded.Revision() + "+" + hex.EncodeToString(sum[:8])
}
