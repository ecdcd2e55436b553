package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// nsCost holds the objects of the parent-cost measurement.
const nsCost = "bench-cost"

// costResult is what one kind of write cost the control plane.
type costResult struct {
	what  string
	bytes int
	plane planeCPU
}

// parentCost measures what the API server and etcd spend on a write of a
// Composition's status as the controller writes it (five members, three
// conditions, the inventory), on the same without the members list, on
// the ApplySet metadata patch the controller makes without the mutating
// webhook, and on a write of a ConfigMap carrying as many bytes as the
// first: -n objects of each are created, then each is patched once, and
// the control plane's CPU over the patches is what each row reports. The Compositions are of a shard no controller serves, so
// the controller writes nothing to them.
func (h *harness) parentCost(ctx context.Context) error {
	if h.plane == nil {
		return nil
	}
	if err := h.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsCost}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := h.serveNobody(ctx); err != nil {
		return err
	}
	status := compositionStatus(nsBench, "c-00001")
	raw, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	status.Members = nil
	rawNoMembers, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	metadata, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels": map[string]string{"applyset.kubernetes.io/id": "applyset-" + strings.Repeat("x", 43) + "-v1"},
		"annotations": map[string]string{"applyset.kubernetes.io/tooling": "stencil/v0",
			"applyset.kubernetes.io/contains-group-kinds":  "ConfigMap,Role.rbac.authorization.k8s.io,Secret,Service,ServiceAccount",
			"applyset.kubernetes.io/additional-namespaces": ""},
		"finalizers": []string{"stencil.dev/finalizer"}}})
	if err != nil {
		return err
	}
	payload := strings.Repeat("x", len(raw))
	logf("parent cost: %d writes of each kind", h.o.n)
	name := func(set string, i int) string { return fmt.Sprintf("cost-%s-%05d", set, i) }
	for _, set := range []string{"full", "nomembers", "metadata"} {
		if err := forEach(ctx, 16, h.o.n, func(ctx context.Context, i int) error {
			return h.admin.Create(ctx, &v1alpha1.Composition{
				ObjectMeta: metav1.ObjectMeta{Name: name(set, i), Namespace: nsCost, Labels: map[string]string{shard.Label: nobodyShard}},
				Spec:       v1alpha1.CompositionSpec{Bundle: benchBundleName},
			})
		}); err != nil {
			return err
		}
	}
	if err := forEach(ctx, 16, h.o.n, func(ctx context.Context, i int) error {
		return h.admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name("cm", i), Namespace: nsCost}, Data: map[string]string{"v": "0"}})
	}); err != nil {
		return err
	}
	measure := func(what string, bytes int, write func(ctx context.Context, i int) error) error {
		before := h.plane.cpu()
		if err := forEach(ctx, 16, h.o.n, write); err != nil {
			return err
		}
		h.res.costs = append(h.res.costs, costResult{what: what, bytes: bytes, plane: h.plane.cpu().since(before)})
		return nil
	}
	statusPatch := func(set string, body []byte) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			c := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: name(set, i), Namespace: nsCost}}
			return h.admin.Status().Patch(ctx, c, client.RawPatch("application/merge-patch+json", body), client.FieldOwner("stencil"))
		}
	}
	if err := measure("Composition status patch", len(raw), statusPatch("full", raw)); err != nil {
		return err
	}
	if err := measure("Composition status patch without status.members", len(rawNoMembers), statusPatch("nomembers", rawNoMembers)); err != nil {
		return err
	}
	// Through the admission webhooks, as the controller's own metadata
	// write goes (the mutating one lets it through unrendered).
	if err := measure("Composition ApplySet metadata patch", len(metadata), func(ctx context.Context, i int) error {
		c := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: name("metadata", i), Namespace: nsCost}}
		return h.admin.Patch(ctx, c, client.RawPatch("application/merge-patch+json", metadata), client.FieldOwner("stencil"))
	}); err != nil {
		return err
	}
	cmPatch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": payload}})
	return measure("ConfigMap patch", len(cmPatch), func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name("cm", i), Namespace: nsCost}}
		return h.admin.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", cmPatch), client.FieldOwner("stencil"))
	})
}

// compositionStatus is a status as the controller writes it for the
// Composition name in namespace of the bench Bundle: five members, Ready
// and its companions, the inventory.
func compositionStatus(namespace, name string) v1alpha1.CompositionStatus {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	st := v1alpha1.CompositionStatus{
		ObservedGeneration: 1,
		BundleRevision:     "sha256:" + strings.Repeat("0", 64),
		Summary:            "5/5 ready",
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now, Reason: "Ready", Message: "5/5 ready"},
			{Type: "Reconciling", Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: now, Reason: "Ready", Message: "5/5 ready"},
			{Type: "Stalled", Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: now, Reason: "Ready", Message: "5/5 ready"},
		},
		Inventory: &v1alpha1.InventoryStatus{GroupKinds: []string{"ConfigMap", "Role.rbac.authorization.k8s.io", "Secret", "Service", "ServiceAccount"},
			Members: &v1alpha1.MemberRecord{}},
	}
	// The record of the five members, by UID.
	for i := range 5 {
		st.Inventory.Members.UIDs = append(st.Inventory.Members.UIDs, types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)))
	}
	for _, m := range []struct{ group, kind string }{{"", "ServiceAccount"}, {"", "ConfigMap"}, {"", "Secret"}, {"rbac.authorization.k8s.io", "Role"}, {"", "Service"}} {
		st.Members = append(st.Members, v1alpha1.MemberStatus{Group: m.group, Version: "v1", Kind: m.kind, Namespace: namespace, Name: name, Status: "Current"})
	}
	return st
}
