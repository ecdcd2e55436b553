package applyset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func withRefs(refs ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("x")
	if refs != nil {
		u.SetOwnerReferences(refs)
	}
	return u
}

// TestSettleOwners: the parent's reference claims the controller only
// where the live object names none, and keeps the bit the live object
// holds once written.
func TestSettleOwners(t *testing.T) {
	ours := func(controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Name: "web", UID: "p", Controller: controller}
	}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: "o", Controller: new(true)}
	otherNot := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: "o"}
	for _, tc := range []struct {
		name string
		live *unstructured.Unstructured
		want []metav1.OwnerReference
	}{
		{"nothing live", nil, []metav1.OwnerReference{ours(new(true))}},
		{"no owner live", withRefs(), []metav1.OwnerReference{ours(new(true))}},
		{"another owner, no controller", withRefs(otherNot), []metav1.OwnerReference{ours(new(true))}},
		{"another controller", withRefs(other), []metav1.OwnerReference{ours(nil)}},
		{"ours, no controller, written earlier", withRefs(ours(nil)), []metav1.OwnerReference{ours(nil)}},
		{"ours as controller, written earlier", withRefs(ours(new(true)), otherNot), []metav1.OwnerReference{ours(new(true))}},
		{"ours at an earlier version of the kind", withRefs(func() metav1.OwnerReference { o := ours(new(true)); o.APIVersion = "stencil.dev/v1alpha0"; return o }()),
			[]metav1.OwnerReference{func() metav1.OwnerReference { o := ours(new(true)); o.APIVersion = "stencil.dev/v1alpha0"; return o }()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settleOwners(withRefs(ours(new(true))), tc.live).GetOwnerReferences()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settled references (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWithoutNewOwners: the references live lacks are what a write
// would only add.
func TestWithoutNewOwners(t *testing.T) {
	a := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "a"}
	b := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: "b"}
	if _, adds := withoutNewOwners(withRefs(a), withRefs(a)); adds {
		t.Errorf("a reference live holds is reported new")
	}
	bare, adds := withoutNewOwners(withRefs(a, b), withRefs(a))
	if !adds || cmp.Diff([]metav1.OwnerReference{a}, bare.GetOwnerReferences()) != "" {
		t.Errorf("withoutNewOwners = %v, %v; want [a], true", bare.GetOwnerReferences(), adds)
	}
	bare, adds = withoutNewOwners(withRefs(a), withRefs())
	if _, found, _ := unstructured.NestedFieldNoCopy(bare.Object, "metadata", "ownerReferences"); !adds || found {
		t.Errorf("withoutNewOwners of the only new reference leaves %v (adds %v), want no ownerReferences", bare.GetOwnerReferences(), adds)
	}
}
