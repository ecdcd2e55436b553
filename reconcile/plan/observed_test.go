package plan_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/observed"
)

// TestObservedPlan: offline, with nothing observed, a plan holds back
// the object that waits for a value and says so (Plan.Held, HoldsBack);
// given the value by its Observe, NewObservedPlan renders again at once
// and holds nothing back.
func TestObservedPlan(t *testing.T) {
	ctx := context.Background()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "obs"}, Spec: v1alpha1.BundleSpec{Files: suite.WaiterFiles()}})
	if err != nil {
		t.Fatal(err)
	}
	in := plan.RenderInput(suite.Composition("ns", "c", "obs", `{"wait":true}`), nil, cluster.OfflineCapabilities())

	p, err := plan.NewPlan(ctx, testenv.InProcess{}, b, in, cluster.OfflineAPIs())
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	if len(p.Objects) != 1 || len(p.Held) != 1 || !p.HoldsBack(cm, "ns", "waiter", "ns") || p.HoldsBack(cm, "other", "waiter", "ns") {
		t.Fatalf("plan of %d objects holding back %v; want the Service alone, the ConfigMap waiter held back in ns", len(p.Objects), p.Held)
	}

	renders := 0
	observe := func(_ context.Context, p *plan.Plan, _ []observed.HeldObject, ids []string) map[string]map[string]any {
		renders++
		if _, ok := p.Addressed()["Service/web"]; !ok || len(ids) != 1 || ids[0] != "Service/web" {
			t.Errorf("observe asked for %v of a plan addressing %v", ids, p.Addressed())
		}
		return map[string]map[string]any{"Service/web": {"metadata": map[string]any{"labels": map[string]any{"go": "yes"}}}}
	}
	p, obs, err := plan.NewObservedPlan(ctx, testenv.InProcess{}, b, in, cluster.OfflineAPIs(), observe, nil)
	if err != nil {
		t.Fatal(err)
	}
	if renders != 2 || len(p.Objects) != 2 || len(p.Held) != 0 || len(obs.Reads) != 1 {
		t.Errorf("%d observes, %d objects, held %v, reads %v: want a second render with the value, both objects, nothing held", renders, len(p.Objects), p.Held, obs.Reads)
	}
}

// TestMemberIDsAgree: templates' observed and a Bundle's outputs address
// a member by one id.
func TestMemberIDsAgree(t *testing.T) {
	if observed.AnnotationID != outputs.AnnotationID {
		t.Fatalf("observed.AnnotationID %q, outputs.AnnotationID %q", observed.AnnotationID, outputs.AnnotationID)
	}
	for _, ann := range []map[string]string{nil, {observed.AnnotationID: "db"}} {
		u := &unstructured.Unstructured{}
		u.SetKind("StatefulSet")
		u.SetName("x-db")
		u.SetAnnotations(ann)
		if observed.MemberID(u) != outputs.ID(u) {
			t.Errorf("observed.MemberID %q, outputs.ID %q", observed.MemberID(u), outputs.ID(u))
		}
	}
}
