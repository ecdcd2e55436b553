package reconcile_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestDryRunUsesTheOwnershipTest: a preview (the admission webhook's dry
// runs, stencil diff) of an object that exists and is not the set's says
// what the controller would do, refuse it, instead of previewing an
// adoption (an object merely labelled a member included); with consent,
// or over a recorded member, it previews the apply.
func TestDryRunUsesTheOwnershipTest(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admins"}, Data: map[string]string{"k": "v"}})
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": "admins", "labels": map[string]any{applyset.LabelPartOf: "applyset-x-v1"}},
		"data":     map[string]any{"k": "tenant's"},
	}}
	pv := applyset.DryRun(ctx, k, "applyset-x-v1", nil, applyset.Consent{}, []*unstructured.Unstructured{desired})[0]
	var refused *applyset.AdoptionRefusedError
	if !errors.As(pv.Err, &refused) || pv.Applied != nil {
		t.Fatalf("dry run over an object of no set, without consent: err %v, applied %v; want AdoptionRefused and no dry-run apply", pv.Err, pv.Applied != nil)
	}
	pv = applyset.DryRun(ctx, k, "applyset-x-v1", nil, applyset.Consent{Kinds: []v1alpha1.GroupKind{{Group: "", Kind: "ConfigMap"}}}, []*unstructured.Unstructured{desired})[0]
	if pv.Err != nil || pv.Applied == nil {
		t.Fatalf("dry run with the Bundle's consent: err %v; want the apply previewed", pv.Err)
	}
	cm := &corev1.ConfigMap{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "admins"}, cm); err != nil || cm.Data["k"] != "v" {
		t.Errorf("the dry runs changed the ConfigMap: %v %v", cm.Data, err)
	}

	// Labelled a member with stencil's field manager by someone who may
	// patch it (issue 37): not the set's unless its record says so.
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Labels: map[string]string{applyset.LabelPartOf: "applyset-x-v1"}}, Data: map[string]string{"k": "v"}}
	if err := k.Create(ctx, forged, client.FieldOwner(applyset.FieldManager)); err != nil {
		t.Fatal(err)
	}
	desired.SetName("forged")
	pv = applyset.DryRun(ctx, k, "applyset-x-v1", applyset.NewRecord(nil, nil), applyset.Consent{}, []*unstructured.Unstructured{desired})[0]
	if !errors.As(pv.Err, &refused) || !refused.Unrecorded || pv.Applied != nil {
		t.Errorf("dry run over a forged member: err %v, applied %v; want AdoptionRefused (not recorded) and no dry-run apply", pv.Err, pv.Applied != nil)
	}
	pv = applyset.DryRun(ctx, k, "applyset-x-v1", applyset.NewRecord([]types.UID{forged.UID}, nil), applyset.Consent{}, []*unstructured.Unstructured{desired})[0]
	if pv.Err != nil || pv.Applied == nil || !pv.Member {
		t.Errorf("dry run over a recorded member: err %v, member %v; want the apply previewed over a member", pv.Err, pv.Member)
	}
}
