package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/gitops"
)

// testGitOpsHealth: what GitOps tools read of the examples as the
// controller leaves them, and of parents in the other states (issue 32
// items 4 and 5). Argo CD, with config/argocd's health check, shows every
// Composition, instance of a published kind and Bundle Healthy; Flux's
// health check (kstatus, polled as kustomize-controller polls it) reads
// every parent Current. A Composition naming a Bundle that does not exist
// is Stalled: Degraded, Failed. One whose Deployment cannot be scheduled
// is Reconciling: Progressing, InProgress; suspended, it is Suspended to
// Argo CD and still InProgress to Flux.
func testGitOpsHealth(t *testing.T, k client.Client, root string, parents []*unstructured.Unstructured) {
	ctx := context.Background()
	argo, err := gitops.LoadArgoCD(filepath.Join(root, "config", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bundles := &v1alpha1.BundleList{}
	if err := k.List(ctx, bundles); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, b := range bundles.Items {
		objs = append(objs, object(t, "Bundle", "", b.Name))
	}
	for _, p := range parents {
		objs = append(objs, p.DeepCopy())
	}
	expectHealth(t, k, argo, objs, gitops.Healthy, "Current")

	pending := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "gitops-pending"}, Spec: v1alpha1.BundleSpec{Files: map[string]string{
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: "{{ .Release.Name }}"}}
  template:
    metadata: {labels: {app: "{{ .Release.Name }}"}}
    spec:
      nodeSelector: {stencil.dev/e2e: no-such-node}
      containers: [{name: app, image: nginx:1.27}]
`}}}
	if err := k.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}
	comps := map[string]*v1alpha1.Composition{
		"stalled": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gitops-stalled"}, Spec: v1alpha1.CompositionSpec{Bundle: "no-such-bundle"}},
		"pending": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gitops-pending"}, Spec: v1alpha1.CompositionSpec{Bundle: pending.Name}},
	}
	for _, c := range comps {
		if err := k.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, c := range comps {
			_ = k.Delete(ctx, c)
		}
		_ = k.Delete(ctx, pending)
	})
	condition(t, k, comps["stalled"], "Stalled", "BundleNotFound")
	expectHealth(t, k, argo, []*unstructured.Unstructured{object(t, "Composition", "default", "gitops-stalled")}, gitops.Degraded, "Failed")
	condition(t, k, comps["pending"], "Reconciling", "Progressing")
	expectHealth(t, k, argo, []*unstructured.Unstructured{object(t, "Composition", "default", "gitops-pending")}, gitops.Progressing, "InProgress")

	c := comps["pending"]
	if err := k.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Suspend = true
	if err := k.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	condition(t, k, c, "Ready", "Suspended")
	expectHealth(t, k, argo, []*unstructured.Unstructured{object(t, "Composition", "default", "gitops-pending")}, gitops.Suspended, "InProgress")
}

// object is a reference to a live stencil object or parent.
func object(t *testing.T, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// condition waits until c has condition typ with reason at its generation.
func condition(t *testing.T, k client.Client, c *v1alpha1.Composition, typ, reason string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("Composition %s to have %s with reason %s", c.Name, typ, reason), func() (bool, error) {
		got := &v1alpha1.Composition{}
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(c), got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == typ && cond.Reason == reason { // Reconciling and Stalled are there only while True
				return cond.ObservedGeneration == got.Generation, fmt.Errorf("at generation %d of %d", cond.ObservedGeneration, got.Generation)
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
}

// expectHealth checks that Argo CD shows each live object as argo, and
// that Flux reads each parent (Bundles aside: Flux reads them too, but
// their status is no parent's) as flux.
func expectHealth(t *testing.T, k client.Client, argo *gitops.ArgoCD, objs []*unstructured.Unstructured, argoStatus, flux string) {
	t.Helper()
	ctx := context.Background()
	var parents []*unstructured.Unstructured
	for _, ref := range objs {
		live := ref.DeepCopy()
		if err := k.Get(ctx, client.ObjectKeyFromObject(ref), live); err != nil {
			t.Fatal(err)
		}
		h, err := argo.Health(live)
		if err != nil || h == nil || h.Status != argoStatus {
			t.Errorf("Argo CD shows %s %s as %+v (%v), want %s", live.GetKind(), live.GetName(), h, err, argoStatus)
		}
		if live.GetKind() != "Bundle" {
			parents = append(parents, live)
		}
	}
	got, err := gitops.FluxStatus(ctx, k, k.RESTMapper(), parents)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parents {
		key := fmt.Sprintf("%s/%s/%s", p.GetKind(), p.GetNamespace(), p.GetName())
		if r := got[key]; r.Status != flux {
			t.Errorf("Flux reads %s as %s (%s), want %s", key, r.Status, r.Message, flux)
		}
	}
}
