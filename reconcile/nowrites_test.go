package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// TestNoWritesForExamples: once an example Composition is Ready, passes
// brought by events on its members (another manager labels each member in
// turn) send no apply, status patch or event; the only writes are the
// server-side dry runs that settle, once per member, fields the server
// defaults (at most one per member over the set's whole life), and a
// second round of such events sends no write request at all. Counted on
// the controller's transport, so an apply that changed nothing on the
// server would count too. cloudmanager holds a Secret written with
// stringData and a StatefulSet whose volumeClaimTemplates the server
// defaults. (The pass after the one that created the members decides
// nothing locally: the members are as stencil's own applies left them,
// nochange.Applied; a member's first drift check may then ask the server.)
func TestNoWritesForExamples(t *testing.T) {
	ctx := context.Background()
	for name, ex := range examples(t) {
		t.Run(name, func(t *testing.T) {
			ns := testenv.Namespace(t, k)
			spec := ex.bundle.Spec()
			b := bundle(t, ex.comp.Spec.Bundle+"-"+ns, spec.Files, func(s *v1alpha1.BundleSpec) { *s = spec })
			comp := composition(ns, ex.comp.Name, b.Name, "")
			comp.Spec.Values = ex.comp.Spec.Values
			from := controller.Mark()
			mustCreate(t, comp)
			eventually(t, name+" Ready", func() (bool, error) {
				if err := env.MarkWorkloadsReady(ctx, ns); err != nil {
					return false, err
				}
				got := &v1alpha1.Composition{}
				if err := k.Get(ctx, client.ObjectKeyFromObject(comp), got); err != nil {
					return false, err
				}
				c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
				if c == nil {
					return false, fmt.Errorf("no Ready condition")
				}
				comp = got
				return c.Status == metav1.ConditionTrue && got.Status.ObservedGeneration == got.Generation, fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			})
			// The convergence's events are sent asynchronously: let them
			// go out before counting.
			controller.Settle(t, ns)
			members := comp.Status.Members
			if len(members) == 0 {
				t.Fatal("a Ready Composition lists no members")
			}
			for round := range 2 {
				before := controller.Mark()
				for _, m := range members {
					env.TouchAndPass(t, controller, ns, comp.Name, suite.MemberObject(m))
				}
				// Counted in the test's namespace only: other tests'
				// parents, gone or going, have passes of their own. A
				// write that is no dry run (an apply that changed nothing
				// on the server, applyset.Reapplied, among them) fails the
				// round.
				all := writesIn(controller, before, ns)
				writes, asked := len(all), 0
				for _, w := range all {
					if strings.Contains(w, "dryRun=All") {
						asked++
					}
				}
				if round == 1 && writes != 0 {
					t.Errorf("round 2: the controller sent %d write requests over %d passes with nothing to change, want 0: %v", writes, len(members), all)
				}
				if writes != asked {
					t.Errorf("round %d: the controller sent %d write requests over %d passes with nothing to change, %v of them dry runs: want only dry runs: %v", round+1, writes, len(members), asked, all)
				}
			}
			dryRuns := 0
			for _, w := range writesIn(controller, from, ns) {
				if strings.Contains(w, "dryRun=All") {
					dryRuns++
				}
			}
			if dryRuns > len(members) {
				t.Errorf("%d dry runs over the set's life, want at most one per member (%d)", dryRuns, len(members))
			}
		})
	}
}
