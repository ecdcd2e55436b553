package rollout

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// Key names a parent: its kind (Kind.group, "Composition.stencil.dev"),
// namespace and name.
type Key struct {
	Kind, Namespace, Name string
}

// String is "Kind.group namespace/name".
func (k Key) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// Parent is what a rollout reads of one parent of its Bundle (a
// Composition, or an instance of the published kind), as the
// controller's cache holds it.
type Parent struct {
	Key Key
	UID types.UID
	// Labels are the parent's; NamespaceLabels its namespace's (the
	// canary selectors read them).
	Labels, NamespaceLabels map[string]string
	// Pin is the revision the parent pins (spec.bundleRevision, an
	// instance's stencil.dev/bundle-revision annotation), "" when none.
	Pin string
	// Suspended and Deleting parents render nothing: they never hold a
	// wave back, nor fail it.
	Suspended, Deleting bool
	// Values are the parent's values (a Composition's spec.values, an
	// instance's spec), checked against a new revision's schema.
	Values     *apiextensionsv1.JSON
	Generation int64
	Status     v1alpha1.CompositionStatus
}

// boundAll is the bound of a rollout whose batches moved every parent.
const boundAll = "max"

// within reports whether rank is at most bound ("" none, boundAll all).
func within(rank, bound string) bool {
	switch bound {
	case "":
		return false
	case boundAll:
		return true
	}
	return rank <= bound
}

// On is the revision (a BundleRevision name) p's last render was, ""
// when it has not rendered yet.
func (p *Parent) On(bundle string) string {
	if p.Status.BundleRevision == "" {
		return ""
	}
	return revision.Name(bundle, p.Status.BundleRevision)
}

// Ready reports p Ready for its current generation.
func (p *Parent) Ready() bool {
	return p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady)
}

// Canary reports whether pol's canary selects p: the namespace selector
// (when set) selects its namespace and, where the canary trusts the
// parents' labels (trustParentLabels), the selector (when set) its
// labels. A canary that selects by nothing it may use selects nobody:
// a parent's labels are its tenant's to write, so without the author's
// trust no tenant labels its parent into the canary.
func Canary(pol *v1alpha1.RolloutPolicy, namespaceLabels, parentLabels map[string]string) bool {
	if pol == nil || !hasCanary(*pol) {
		return false
	}
	c := pol.Canary
	return matches(c.NamespaceSelector, namespaceLabels) && (!c.TrustParentLabels || matches(c.Selector, parentLabels))
}

// matches reports whether sel (nil: everything) selects set. A selector
// that does not parse selects nothing.
func matches(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}
