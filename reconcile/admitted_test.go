package reconcile_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestRequestsOfAnAdmittedPass: with the mutating webhook, a Composition is
// created with its ApplySet metadata (id label, tooling, the group-kinds
// its render holds, stencil's finalizer) before the controller sees it. A
// controller down between admission and the first member apply (a crash
// there) finds every member it then applies named by the parent's
// annotations, and its first pass writes the parent once, its status: no
// GET of the parent, no metadata patch, no event; its deletion deletes
// the members and drops the finalizer.
func TestRequestsOfAnAdmittedPass(t *testing.T) {
	name := "stencil-mutating-" + rand.String(6)
	env.StartAdmission(t, name, "admission-requests", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ns := env.AdmissionNamespace(t)
	b := bundle(t, "admitted-"+ns, fourKinds())
	// A first Composition starts the watches of the four kinds.
	mustCreate(t, composition(ns, "warm", b.Name, ""))
	condition(t, ns, "warm", v1alpha1.ConditionReady, metav1.ConditionTrue)
	eventually(t, "the mutating webhook to serve", func() (bool, error) {
		probe := composition(ns, "probe", b.Name, "")
		err := k.Create(context.Background(), probe, client.DryRunAll)
		return err == nil && probe.Labels[applyset.LabelApplySetID] != "", err
	})

	restartController(t, func() {
		cold := composition(ns, "cold", b.Name, "")
		mustCreate(t, cold)
		gks := applyset.ParseInventory(cold.Annotations)
		var kinds []string
		for _, gk := range gks.GroupKinds {
			kinds = append(kinds, gk.Kind)
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, []string{"ConfigMap", "Secret", "Service", "ServiceAccount"}) {
			t.Errorf("admitted with group-kinds %v, want the four the render holds", kinds)
		}
		if cold.Labels[applyset.LabelApplySetID] != applyset.ID("cold", ns, applyset.CompositionGroupKind) ||
			!slices.Contains(cold.Finalizers, v1alpha1.Finalizer) || cold.Annotations[applyset.AnnotationTooling] == "" {
			t.Errorf("admitted without its ApplySet metadata: labels %v, annotations %v, finalizers %v", cold.Labels, cold.Annotations, cold.Finalizers)
		}
		// Nothing is applied while the controller is down.
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cold"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("a member exists before any pass: %v", err)
		}
	})

	condition(t, ns, "cold", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	all := requestsFor(controller, 0, ns, "cold")
	// The first pass ends with its status write; a later pass (the
	// members' own events) may find the cache behind that write and read
	// the parent live, as it always did.
	first := slices.IndexFunc(all, func(r string) bool {
		return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold/status")
	})
	reqs := all[:first+1]
	checks := []struct {
		what  string
		match func(string) bool
		want  int
	}{
		{"parent GETs", func(r string) bool { return strings.HasPrefix(r, "GET ") && strings.Contains(r, "/compositions/cold") }, 0},
		{"parent metadata writes", func(r string) bool {
			return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold") && !strings.Contains(r, "/status")
		}, 0},
		{"status writes", func(r string) bool {
			return strings.HasPrefix(r, "PATCH ") && strings.Contains(r, "/compositions/cold/status")
		}, 1},
		{"member applies", func(r string) bool {
			return strings.HasPrefix(r, "PATCH ") && !strings.Contains(r, "/compositions/")
		}, 4},
	}
	for _, c := range checks {
		if got := count(reqs, c.match); got != c.want {
			t.Errorf("admitted first pass: %d %s, want %d; requests:\n%s", got, c.what, c.want, strings.Join(all, "\n"))
		}
	}
	// No later pass writes anything.
	if got := count(all[first+1:], func(r string) bool { return !strings.HasPrefix(r, "GET ") }); got != 0 {
		t.Errorf("admitted cold converge: %d writes after the first pass, want none; requests:\n%s", got, strings.Join(all, "\n"))
	}
	if got := count(controller.Requests(), func(r string) bool {
		return strings.HasPrefix(r, "POST /apis/events.k8s.io/v1/namespaces/"+ns+"/events")
	}); got != 0 {
		t.Errorf("admitted cold converge: %d event writes, want none", got)
	}
	// Every member is named by the parent's annotations and recorded.
	c := mustGet(t, ns, "cold")
	inv := applyset.ParseInventory(c.Annotations)
	if c.Status.Inventory == nil || len(c.Status.Inventory.GroupKinds) != 4 || len(inv.GroupKinds) != 4 {
		t.Errorf("after the pass: annotations %v, record %+v; want the four kinds in both", c.Annotations, c.Status.Inventory)
	}
	// Its deletion deletes the members and drops the finalizer admission
	// added (owned by the Composition's creator, not by stencil's apply).
	if err := k.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cold"}})
}
