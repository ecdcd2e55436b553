package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/gitops"
	"github.com/stencil-dev/stencil/internal/testenv"
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
	condition(t, k, comps["stalled"], testenv.Condition{Type: "Stalled", Reasons: []string{"BundleNotFound"}})
	expectHealth(t, k, argo, []*unstructured.Unstructured{object(t, "Composition", "default", "gitops-stalled")}, gitops.Degraded, "Failed")
	condition(t, k, comps["pending"], testenv.Condition{Type: "Reconciling", Reasons: []string{"Progressing"}})
	expectHealth(t, k, argo, []*unstructured.Unstructured{object(t, "Composition", "default", "gitops-pending")}, gitops.Progressing, "InProgress")

	// The controller writes the parent's status and metadata too: the
	// suspension is written again on a conflict.
	c := comps["pending"]
	testenv.Update(t, k, c, func() { c.Spec.Suspend = true })
	condition(t, k, c, testenv.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reasons: []string{"Suspended"}})
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

// condition waits until c has want, written for its generation, as long
// as a few passes of the local cluster's controller may take.
func condition(t *testing.T, k client.Client, c *v1alpha1.Composition, want testenv.Condition) {
	t.Helper()
	testenv.WaitFor(t, k, c.DeepCopy(), 3*time.Minute, want)
}

// expectHealth waits until Argo CD shows each live object as argo, and
// Flux reads each parent (Bundles aside: Flux reads them too, but their
// status is no parent's) as flux, and fails t with what they showed last
// when they do not. Each object was waited for in the state asserted;
// what the tools read is waited for too: a pass since (a resync, a
// member's status moving) may show a parent otherwise for a moment.
func expectHealth(t *testing.T, k client.Client, argo *gitops.ArgoCD, objs []*unstructured.Unstructured, argoStatus, flux string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 0, fmt.Sprintf("Argo CD to show %d objects %s and Flux to read their parents %s", len(objs), argoStatus, flux), func() (bool, error) {
		var parents []*unstructured.Unstructured
		var wrong []string
		for _, ref := range objs {
			live := ref.DeepCopy()
			if err := k.Get(ctx, client.ObjectKeyFromObject(ref), live); err != nil {
				return false, err
			}
			h, err := argo.Health(live)
			if err != nil || h == nil || h.Status != argoStatus {
				wrong = append(wrong, fmt.Sprintf("Argo CD shows %s %s as %+v (%v)", live.GetKind(), live.GetName(), h, err))
			}
			if live.GetKind() != "Bundle" {
				parents = append(parents, live)
			}
		}
		got, err := gitops.FluxStatus(ctx, k, k.RESTMapper(), parents)
		if err != nil {
			return false, err
		}
		for _, p := range parents {
			key := fmt.Sprintf("%s/%s/%s", p.GetKind(), p.GetNamespace(), p.GetName())
			if r := got[key]; r.Status != flux {
				wrong = append(wrong, fmt.Sprintf("Flux reads %s as %s (%s)", key, r.Status, r.Message))
			}
		}
		if len(wrong) > 0 {
			return false, errors.New(strings.Join(wrong, "; "))
		}
		return true, nil
	})
}
