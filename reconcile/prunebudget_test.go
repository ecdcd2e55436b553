package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// budgetFiles render a ConfigMap per name in .Values.names and, while
// .Values.claim, a PersistentVolumeClaim.
var budgetFiles = map[string]string{
	"values.yaml": "names: [a, b, c, d]\nclaim: false\n",
	"templates/cms.yaml": `{{- range .Values.names }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ . }}
{{- end }}
`,
	"templates/pvc.yaml": `{{- if .Values.claim }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
{{- end }}
`,
}

// TestPruneBudget: a pass that would prune more than a quarter of its set,
// or a PersistentVolumeClaim, prunes nothing and stalls naming what it
// would delete, until the parent or the Bundle allows it.
func TestPruneBudget(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "budget-"+ns, budgetFiles)
	comp := composition(ns, "set", b.Name, `{"claim": true}`)
	mustCreate(t, comp)
	for _, n := range []string{"a", "b", "c", "d"} {
		exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-" + n}})
	}
	exists(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}})

	// 3 of 5 members: past the budget (a quarter: 1).
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"claim": true, "names": ["a"]}`) })
	compositionWith(t, ns, "set", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonPruneBlocked},
		Message: testenv.Says("3 of the set's 5 members", "ConfigMap/"+ns+"/cm-d")})
	for _, n := range []string{"b", "c", "d"} {
		if err := k.Get(ctx, key(ns, "cm-"+n), &corev1.ConfigMap{}); err != nil {
			t.Errorf("cm-%s: %v; want it kept", n, err)
		}
	}
	eventually(t, "a PruneBlocked event", func() (bool, error) { return hasEvent(ns, v1alpha1.ReasonPruneBlocked, "cm-b") })

	// The parent allows it (an annotation of its own, beside stencil's,
	// as kubectl annotate adds it), and then no more.
	update(t, comp, func(c *v1alpha1.Composition) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[v1alpha1.AnnotationAllowPrune] = "true"
	})
	for _, n := range []string{"b", "c", "d"} {
		gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-" + n}})
	}
	update(t, comp, func(c *v1alpha1.Composition) { delete(c.Annotations, v1alpha1.AnnotationAllowPrune) })

	// A claim is protected, even alone.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"claim": false, "names": ["a"]}`) })
	compositionWith(t, ns, "set", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonPruneBlocked},
		Message: testenv.Says("PersistentVolumeClaim/" + ns + "/data, of a protected kind")})
	env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) {
		s.Pruning = &v1alpha1.PrunePolicy{AllowDelete: []v1alpha1.GroupKind{{Kind: "PersistentVolumeClaim"}}}
	})
	eventually(t, "the claim pruned once the Bundle allows it", func() (bool, error) {
		pvc := &corev1.PersistentVolumeClaim{}
		err := k.Get(ctx, key(ns, "data"), pvc)
		// The API server keeps a claim with its protection finalizer
		// until no pod uses it: being deleted is pruned.
		return apierrors.IsNotFound(err) || err == nil && pvc.DeletionTimestamp != nil, err
	})
}

// hasEvent reports whether an event of reason in ns says contains.
func hasEvent(ns, reason, contains string) (bool, error) {
	list := &eventsv1.EventList{}
	if err := k.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return false, err
	}
	for _, e := range list.Items {
		if e.Reason == reason && strings.Contains(e.Note, contains) {
			return true, nil
		}
	}
	return false, fmt.Errorf("no %s event in %s saying %q", reason, ns, contains)
}
