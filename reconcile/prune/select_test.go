package prune_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/prune"
)

const setID = "applyset-test-v1"

// member is a listed ConfigMap of set (its part-of label), with uid.
func member(name, set string, uid types.UID, annotations map[string]string) applyset.Member {
	m := applyset.Member{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}
	m.Meta.SetName(name)
	m.Meta.SetNamespace("ns")
	m.Meta.SetUID(uid)
	m.Meta.SetLabels(map[string]string{applyset.LabelPartOf: set})
	m.Meta.SetAnnotations(annotations)
	return m
}

func names(ms []applyset.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Meta.Name)
	}
	slices.Sort(out)
	return out
}

// TestSelect: of the listed members, only the set's own (label and
// record agree), not applied this pass, not held back, not a spared hook,
// not being deleted, are deleted; those kept by helm.sh/resource-policy
// are orphaned; the others the set did not apply stay recorded; what the
// pass applied is neither.
func TestSelect(t *testing.T) {
	deleting := member("deleting", setID, "u-deleting", nil)
	deleting.Meta.DeletionTimestamp = &metav1.Time{}
	listed := []applyset.Member{
		member("applied", setID, "u-applied", nil),
		member("gone-from-render", setID, "u-gone", nil),
		member("kept", setID, "u-kept", map[string]string{plan.AnnotationResourcePolicy: "keep"}),
		member("held", setID, "u-held", nil),
		member("hook", setID, "u-hook", nil),
		member("unrecorded", setID, "u-unrecorded", nil),
		member("foreign", "applyset-other-v1", "u-foreign", nil),
		member("prune-disabled", setID, "u-disabled", map[string]string{applyset.AnnotationPrune: "disabled"}),
		deleting,
	}
	record := applyset.NewRecord([]types.UID{"u-applied", "u-gone", "u-kept", "u-held", "u-hook", "u-foreign", "u-disabled", "u-deleting"}, nil)
	sel := prune.Select(listed, prune.Set{
		ID: setID, Record: record,
		Applied:  map[types.UID]bool{"u-applied": true},
		HeldBack: func(m applyset.Member) bool { return m.Meta.Name == "held" },
		Spared:   map[types.UID]bool{"u-hook": true},
	})
	if got, want := names(sel.Delete), []string{"gone-from-render"}; !slices.Equal(got, want) {
		t.Errorf("Delete = %v, want %v", got, want)
	}
	if got, want := names(sel.Orphan), []string{"kept"}; !slices.Equal(got, want) {
		t.Errorf("Orphan = %v, want %v", got, want)
	}
	if got, want := names(sel.Keep), []string{"deleting", "foreign", "held", "hook", "prune-disabled", "unrecorded"}; !slices.Equal(got, want) {
		t.Errorf("Keep = %v, want %v", got, want)
	}
	// Nothing recorded: nothing is the set's, so nothing is deleted.
	if sel := prune.Select(listed, prune.Set{ID: setID, Record: applyset.NewRecord(nil, nil)}); len(sel.Delete) > 0 || len(sel.Orphan) > 0 {
		t.Errorf("with an empty record: Delete %v, Orphan %v, want none", names(sel.Delete), names(sel.Orphan))
	}
}

// TestGate: the gate is open only when nothing closes it, and names every
// reason that does.
func TestGate(t *testing.T) {
	if why := (prune.Gate{}).Closed(); why != "" {
		t.Errorf("zero gate closed: %q", why)
	}
	for _, g := range []prune.Gate{{Suspended: true}, {Failed: true}, {Partial: true}, {Moved: true}, {Disabled: true}} {
		if g.Closed() == "" {
			t.Errorf("%+v: open, want closed", g)
		}
	}
	if why := (prune.Gate{Failed: true, Disabled: true}).Closed(); why != "an apply failed, spec.prune is false" {
		t.Errorf("Closed() = %q", why)
	}
}

// TestUnseenAndForget: a recorded member neither listed nor applied is
// unseen, and forgotten only when a live listing of every kind does not
// find it either; a listing that could not list a kind forgets nothing.
func TestUnseenAndForget(t *testing.T) {
	rec := applyset.NewRecord([]types.UID{"a", "b", "c", "d"}, nil)
	cached := applyset.ListResult{Members: []applyset.Member{member("a", setID, "a", nil), member("d", setID, "d", nil)}}
	unseen := prune.Unseen(rec, cached, map[types.UID]bool{"b": true}, map[types.UID]bool{"d": true})
	slices.Sort(unseen)
	if want := []types.UID{"c", "d"}; !slices.Equal(unseen, want) {
		t.Fatalf("Unseen = %v, want %v (c not listed, d deleted this pass)", unseen, want)
	}
	if got := prune.Unseen(rec, applyset.ListResult{Unlisted: []schema.GroupKind{{Kind: "ConfigMap"}}}, nil, nil); got != nil {
		t.Errorf("Unseen over a partial listing = %v, want nil", got)
	}
	prune.Forget(rec, unseen, applyset.ListResult{Members: []applyset.Member{member("c", setID, "c", nil)}, Unlisted: []schema.GroupKind{{Kind: "Secret"}}})
	if !rec.Has("c") || !rec.Has("d") {
		t.Errorf("a partial live listing forgot members: %v", rec.UIDs())
	}
	prune.Forget(rec, unseen, applyset.ListResult{Members: []applyset.Member{member("c", setID, "c", nil)}})
	if !rec.Has("c") || rec.Has("d") || !rec.Has("a") || !rec.Has("b") {
		t.Errorf("after a live listing finding c: record %v, want a, b, c", rec.UIDs())
	}
}
