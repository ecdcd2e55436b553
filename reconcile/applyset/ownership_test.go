package applyset

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// TestOwns: the one ownership test, case by case. Only the set's record
// proves membership (issue 37): the label and stencil's field manager,
// which anyone who may patch an object can write, do not.
func TestOwns(t *testing.T) {
	const id = "applyset-x-v1"
	parent := "compositions.stencil.dev/team-a/web"
	stencil := []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	other := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	rec := NewRecord([]types.UID{"recorded"}, nil)
	legacy := RecordOf(&v1alpha1.Composition{Status: v1alpha1.CompositionStatus{ObservedGeneration: 2}})
	tests := []struct {
		name    string
		uid     types.UID
		rec     *Record
		labels  map[string]string
		ann     map[string]string
		fields  []metav1.ManagedFieldsEntry
		consent Consent
		want    Ownership
	}{
		{"member", "recorded", rec, map[string]string{LabelPartOf: id}, nil, stencil, Consent{}, Ours},
		{"member another writer took every field of", "recorded", rec, map[string]string{LabelPartOf: id}, nil, other, Consent{}, Ours},
		{"label and manager forged", "other", rec, map[string]string{LabelPartOf: id}, nil, stencil, Consent{}, NotOurs},
		{"label forged, consenting", "other", rec, map[string]string{LabelPartOf: id}, map[string]string{AnnotationAdopt: parent}, stencil, Consent{Parent: parent}, Adoptable},
		{"label forged, kind allowed by the Bundle", "other", rec, map[string]string{LabelPartOf: id}, nil, stencil, Consent{Kinds: []v1alpha1.GroupKind{{Kind: "ConfigMap"}}}, Adoptable},
		{"no record at all", "recorded", nil, map[string]string{LabelPartOf: id}, nil, stencil, Consent{}, NotOurs},
		{"recorded, label removed by hand", "recorded", rec, nil, nil, stencil, Consent{}, NotOurs},
		{"recorded, relabelled another set's", "recorded", rec, map[string]string{LabelPartOf: "applyset-y-v1"}, nil, stencil, Consent{}, Foreign},
		{"legacy record: the earlier rule", "any", legacy, map[string]string{LabelPartOf: id}, nil, stencil, Consent{}, Ours},
		{"legacy record: our label copied by another tool", "any", legacy, map[string]string{LabelPartOf: id}, nil, other, Consent{Parent: parent}, NotOurs},
		{"another set's", "recorded", rec, map[string]string{LabelPartOf: "applyset-y-v1"}, map[string]string{AnnotationAdopt: parent}, stencil, Consent{Parent: parent, Kinds: []v1alpha1.GroupKind{{Kind: "*"}}}, Foreign},
		{"unlabelled, no consent", "other", rec, nil, nil, other, Consent{Parent: parent}, NotOurs},
		{"unlabelled, annotated for this parent", "other", rec, nil, map[string]string{AnnotationAdopt: parent}, other, Consent{Parent: parent}, Adoptable},
		{"unlabelled, annotated for another parent", "other", rec, nil, map[string]string{AnnotationAdopt: "compositions.stencil.dev/team-a/other"}, other, Consent{Parent: parent}, NotOurs},
		{"empty annotation, no parent", "other", rec, nil, map[string]string{AnnotationAdopt: ""}, other, Consent{}, NotOurs},
		{"kind allowed by the Bundle", "other", rec, nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Kind: "ConfigMap"}}}, Adoptable},
		{"group allowed by the Bundle", "other", rec, nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Kind: "*"}}}, Adoptable},
		{"another group allowed", "other", rec, nil, nil, other, Consent{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "*"}}}, NotOurs},
	}
	for _, tt := range tests {
		live := &metav1.ObjectMeta{UID: tt.uid, Labels: tt.labels, Annotations: tt.ann, ManagedFields: tt.fields}
		if got := Owns(live, cm, id, tt.rec, tt.consent); got != tt.want {
			t.Errorf("%s: Owns = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestRefusal: the refusal names a forged member as one the record does
// not hold, and how to consent.
func TestRefusal(t *testing.T) {
	const id = "applyset-x-v1"
	forged := &metav1.ObjectMeta{Labels: map[string]string{LabelPartOf: id}}
	err := Refusal("ConfigMap/team-a/settings", forged, id, Consent{Parent: "compositions.stencil.dev/team-a/web"})
	var refused *AdoptionRefusedError
	if !errors.As(err, &refused) || !refused.Unrecorded || !strings.Contains(err.Error(), "never recorded") ||
		!strings.Contains(err.Error(), AnnotationAdopt+": compositions.stencil.dev/team-a/web") {
		t.Errorf("Refusal = %v, want an AdoptionRefusedError saying the record does not hold it and how to consent", err)
	}
	var foreign *ForeignMemberError
	if err := Refusal("ConfigMap/team-a/x", &metav1.ObjectMeta{Labels: map[string]string{LabelPartOf: "applyset-y-v1"}}, id, Consent{}); !errors.As(err, &foreign) {
		t.Errorf("Refusal of another set's member = %v, want a ForeignMemberError", err)
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
