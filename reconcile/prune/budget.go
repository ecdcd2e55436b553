package prune

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// ProtectedKinds are the kinds whose members prune never deletes unless
// allowed (see Budget): their loss is data (a volume claim, a volume), a
// whole namespace, or every object of a kind (a CRD).
var ProtectedKinds = []schema.GroupKind{
	{Kind: "PersistentVolumeClaim"},
	{Kind: "PersistentVolume"},
	{Kind: "Namespace"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
}

// DefaultPruneBudget is the most of a set's members one pass may prune
// when the Bundle sets no budget: a quarter, and always one.
var DefaultPruneBudget = intstr.FromString("25%")

// Budget is what one pass may prune: at most Max of the set's members
// (at least one), and no member of a ProtectedKinds kind but those
// AllowDelete lists. Unlimited lifts both (stencil.dev/allow-prune).
type Budget struct {
	Max         *intstr.IntOrString
	AllowDelete []v1alpha1.GroupKind
	Unlimited   bool
}

// BudgetOf is the budget of a Bundle's pruning policy (nil: defaults).
func BudgetOf(p *v1alpha1.PrunePolicy) Budget {
	if p == nil {
		return Budget{}
	}
	return Budget{Max: p.Budget, AllowDelete: p.AllowDelete}
}

// BudgetError says why a pass prunes nothing: it would prune more
// members than its budget, or a member of a protected kind.
type BudgetError struct {
	// Members names every member the pass would prune (Kind/namespace/name).
	Members []string
	// Protected names those of a protected kind.
	Protected []string
	// Size is the set's size, Allowed how many the budget lets one pass prune.
	Size, Allowed int
}

func (e *BudgetError) Error() string {
	var why []string
	if len(e.Members) > e.Allowed {
		why = append(why, fmt.Sprintf("it would prune %d of the set's %d members, past the prune budget of %d", len(e.Members), e.Size, e.Allowed))
	}
	if len(e.Protected) > 0 {
		why = append(why, fmt.Sprintf("it would prune %s, of a protected kind", strings.Join(e.Protected, ", ")))
	}
	return fmt.Sprintf("nothing is pruned: %s; it would prune: %s. Annotate the parent or its Bundle %s: \"true\" to prune them (or set the Bundle's spec.pruning)",
		strings.Join(why, "; "), strings.Join(e.Members, ", "), v1alpha1.AnnotationAllowPrune)
}

// Check returns a *BudgetError when the pass may not prune members out of
// a set of size members (those rendered and those to prune), nil when it
// may.
func (b Budget) Check(members []applyset.Member, size int) error {
	if b.Unlimited || len(members) == 0 {
		return nil
	}
	limit := DefaultPruneBudget
	if b.Max != nil {
		limit = *b.Max
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(&limit, size, false)
	if err != nil {
		allowed = 0
	}
	allowed = max(allowed, 1)
	e := &BudgetError{Size: size, Allowed: allowed}
	for _, m := range members {
		e.Members = append(e.Members, m.Ref())
		if b.protected(m.GVK.GroupKind()) {
			e.Protected = append(e.Protected, m.Ref())
		}
	}
	if len(members) <= allowed && len(e.Protected) == 0 {
		return nil
	}
	slices.Sort(e.Members)
	slices.Sort(e.Protected)
	return e
}

// protected reports a protected kind the budget does not allow.
func (b Budget) protected(gk schema.GroupKind) bool {
	if !slices.Contains(ProtectedKinds, gk) {
		return false
	}
	return !slices.ContainsFunc(b.AllowDelete, func(a v1alpha1.GroupKind) bool {
		return a.Group == gk.Group && (a.Kind == gk.Kind || a.Kind == "*")
	})
}
