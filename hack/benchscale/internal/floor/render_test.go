package floor

import (
	"context"
	"testing"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestRenderSets: one set per Composition, each its children in the
// namespace given, named after its Composition, without the part-of label
// (so the controller's cache never holds the floor's objects).
func TestRenderSets(t *testing.T) {
	sets, err := renderSets(context.Background(), fixture.BenchBundle(fixture.BenchBundleName, 5), fixture.NSFloor, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 {
		t.Fatalf("%d sets, want 3", len(sets))
	}
	for i, set := range sets {
		if len(set) != 5 {
			t.Errorf("set %d: %d objects, want 5", i, len(set))
		}
		for _, o := range set {
			if o.GetNamespace() != fixture.NSFloor || o.GetName() == "" {
				t.Errorf("set %d: %s %s/%s, want it in %s", i, o.GetKind(), o.GetNamespace(), o.GetName(), fixture.NSFloor)
			}
			if _, ok := o.GetLabels()[applyset.LabelPartOf]; ok {
				t.Errorf("set %d: %s %s has the part-of label", i, o.GetKind(), o.GetName())
			}
		}
	}
	if got, want := sets[2][0].GetName()[:len(fixture.CompositionName(2))], fixture.CompositionName(2); got != want {
		t.Errorf("the third set's first object is named %q, want it to start with %q", sets[2][0].GetName(), want)
	}
}
