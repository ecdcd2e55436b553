package applyset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// TestOwns: the one ownership test, case by case.
func TestOwns(t *testing.T) {
	const id = "applyset-x-v1"
	parent := "compositions.stencil.dev/team-a/web"
	stencil := []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	other := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	tests := []struct {
		name    string
		labels  map[string]string
		ann     map[string]string
		fields  []metav1.ManagedFieldsEntry
		consent Consent
		want    Ownership
	}{
		{"member", map[string]string{LabelPartOf: id}, nil, stencil, Consent{}, Ours},
		{"our label copied by another tool", map[string]string{LabelPartOf: id}, nil, other, Consent{Parent: parent}, NotOurs},
		{"another set's", map[string]string{LabelPartOf: "applyset-y-v1"}, map[string]string{AnnotationAdopt: parent}, stencil, Consent{Parent: parent, Kinds: []v1alpha1.GroupKind{{Kind: "*"}}}, Foreign},
		{"unlabelled, no consent", nil, nil, other, Consent{Parent: parent}, NotOurs},
		{"unlabelled, annotated for this parent", nil, map[string]string{AnnotationAdopt: parent}, other, Consent{Parent: parent}, Adoptable},
		{"unlabelled, annotated for another parent", nil, map[string]string{AnnotationAdopt: "compositions.stencil.dev/team-a/other"}, other, Consent{Parent: parent}, NotOurs},
		{"empty annotation, no parent", nil, map[string]string{AnnotationAdopt: ""}, other, Consent{}, NotOurs},
		{"kind allowed by the Bundle", nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Kind: "ConfigMap"}}}, Adoptable},
		{"group allowed by the Bundle", nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Kind: "*"}}}, Adoptable},
		{"another group allowed", nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "*"}}}, NotOurs},
	}
	for _, tt := range tests {
		live := &metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.ann, ManagedFields: tt.fields}
		if got := Owns(live, cm, id, tt.consent); got != tt.want {
			t.Errorf("%s: Owns = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestRecorded: prune and deletion act on the status record, whatever the
// annotations name (more, or less); with no record, on the annotations
// only for a parent an earlier version reconciled.
func TestRecorded(t *testing.T) {
	comp := func(annotated string, st v1alpha1.CompositionStatus) *v1alpha1.Composition {
		c := &v1alpha1.Composition{Status: st}
		c.Namespace = "team-a"
		c.Annotations = map[string]string{AnnotationGroupKinds: annotated, AnnotationNamespaces: "other,team-b"}
		return c
	}
	record := &v1alpha1.InventoryStatus{GroupKinds: []string{"ConfigMap", "Deployment.apps"}, Namespaces: []string{"team-b"}}
	inv, ignored := Recorded(comp("ConfigMap,Secret,Deployment.apps", v1alpha1.CompositionStatus{Inventory: record}))
	if a, b := inv.Annotations(); a != "ConfigMap,Deployment.apps" || b != "team-b" {
		t.Errorf("recorded %q %q, want ConfigMap,Deployment.apps and team-b", a, b)
	}
	if a, b := ignored.Annotations(); a != "Secret" || b != "other" {
		t.Errorf("ignored %q %q, want Secret and other", a, b)
	}
	// Emptied by hand (issue 37): the record still names the members.
	emptied := comp("", v1alpha1.CompositionStatus{Inventory: record})
	emptied.Annotations[AnnotationNamespaces] = ""
	if inv, _ := Recorded(emptied); len(inv.GroupKinds) != 2 || len(inv.Namespaces) != 1 {
		t.Errorf("annotations emptied by hand: recorded %+v, want the record's two group-kinds and one namespace", inv)
	}
	if Mirrors(emptied) {
		t.Error("emptied annotations mirror the record")
	}
	mirror := comp("Deployment.apps,ConfigMap", v1alpha1.CompositionStatus{Inventory: record})
	mirror.Annotations[AnnotationNamespaces] = "team-b"
	if !Mirrors(mirror) {
		t.Errorf("annotations %v do not mirror the record %+v", mirror.Annotations, record)
	}
	legacy := v1alpha1.CompositionStatus{ObservedGeneration: 3}
	if inv, ignored := Recorded(comp("Secret", legacy)); len(inv.GroupKinds) != 1 || !ignored.Empty() {
		t.Errorf("a parent of an earlier version: %+v, ignored %+v; want its annotations", inv, ignored)
	}
	if inv, ignored := Recorded(comp("Secret", v1alpha1.CompositionStatus{})); !inv.Empty() || len(ignored.GroupKinds) != 1 {
		t.Errorf("a parent never reconciled: %+v, ignored %+v; want nothing recorded", inv, ignored)
	}
}
