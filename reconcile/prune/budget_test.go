package prune_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/prune"
)

func members(kinds ...string) []applyset.Member {
	var out []applyset.Member
	for i, k := range kinds {
		m := applyset.Member{GVK: schema.GroupVersionKind{Version: "v1", Kind: k}}
		m.Meta.SetNamespace("ns")
		m.Meta.SetName(string(rune('a' + i)))
		out = append(out, m)
	}
	return out
}

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  prune.Budget
		prune   []applyset.Member
		size    int
		blocked bool
	}{
		// A quarter of the set by default, and always one.
		{"one of one", prune.Budget{}, members("ConfigMap"), 1, false},
		{"two of eight", prune.Budget{}, members("ConfigMap", "Secret"), 8, false},
		{"three of eight", prune.Budget{}, members("ConfigMap", "Secret", "Service"), 8, true},
		{"half of a set", prune.Budget{}, members("ConfigMap", "Secret"), 4, true},
		{"a budget of the Bundle's", prune.Budget{Max: ptr.To(intstr.FromString("50%"))}, members("ConfigMap", "Secret"), 4, false},
		{"a count", prune.Budget{Max: ptr.To(intstr.FromInt32(3))}, members("ConfigMap", "Secret", "Service"), 4, false},
		// Protected kinds, whatever the count.
		{"a claim", prune.Budget{}, members("PersistentVolumeClaim"), 10, true},
		{"a namespace", prune.Budget{}, members("Namespace"), 10, true},
		{"a claim allowed", prune.Budget{AllowDelete: []v1alpha1.GroupKind{{Kind: "PersistentVolumeClaim"}}}, members("PersistentVolumeClaim"), 10, false},
		{"allowed by annotation", prune.Budget{Unlimited: true}, members("PersistentVolumeClaim", "Namespace"), 2, false},
		{"nothing to prune", prune.Budget{}, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.budget.Check(tc.prune, tc.size)
			var be *prune.BudgetError
			if got := errors.As(err, &be); got != tc.blocked {
				t.Fatalf("blocked %v (%v), want %v", got, err, tc.blocked)
			}
			if be != nil && len(be.Members) != len(tc.prune) {
				t.Errorf("the error names %v, want every member it would prune", be.Members)
			}
		})
	}
}
