package plan

import (
	"context"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// MaxObservedRenders bounds the renders of one plan with observed values
// (NewObservedPlan): a render whose reads name values other than those it
// was given renders again with them, at most this many times in all.
const MaxObservedRenders = 3

// Observe returns the observed values (templates.Input.Observed) of the
// members ids name, for plan p of a render that held back held: the
// controller reads them from its cache, `stencil render` live as the
// user; a member not found, or not one stencil applied, is left out.
type Observe func(ctx context.Context, p *Plan, held []templates.HeldObject, ids []string) map[string]map[string]any

// NewObservedPlan is NewPlan with observed values: it renders with
// in.Observed, reads through observe the members the render's reads name,
// and while a value read differs from the one now observed, renders again
// with those (at most MaxObservedRenders renders). It returns the last
// plan with what its render read and held back.
func NewObservedPlan(ctx context.Context, r Renderer, b *templates.Bundle, in templates.Input, apis APIs, observe Observe) (*Plan, templates.Observations, error) {
	for i := 1; ; i++ {
		var obs templates.Observations
		in.Observations = &obs
		p, err := NewPlan(ctx, r, b, in, apis)
		if err != nil {
			return nil, obs, err
		}
		ids := ReadIDs(obs.Reads)
		if len(ids) == 0 {
			return p, obs, nil
		}
		next := observe(ctx, p, obs.Held, ids)
		if i == MaxObservedRenders || len(ChangedReads(obs.Reads, next)) == 0 {
			return p, obs, nil
		}
		in.Observed = next
	}
}

// Addressed maps the ids (templates.MemberID) of the plan's ordinary
// objects to them: the members a template may observe. A template never
// reads an object that is not one of its own set's.
func (p *Plan) Addressed() map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(p.Objects))
	for _, o := range p.Objects {
		if !IsHook(o) {
			out[templates.MemberID(o)] = o
		}
	}
	return out
}

// HoldsBack reports whether the object of group-kind gk, namespace and
// name is one the render held back: never pruned for it. A held object
// rendered without a namespace is the one in the parent's (namespace
// parent), or the cluster-scoped one.
func (p *Plan) HoldsBack(gk schema.GroupKind, namespace, name, parent string) bool {
	for _, h := range p.Held {
		if h.Name != name || schema.FromAPIVersionAndKind(h.APIVersion, h.Kind).GroupKind() != gk {
			continue
		}
		if h.Namespace == namespace || h.Namespace == "" && (namespace == parent || namespace == "") {
			return true
		}
	}
	return false
}

// ObservedView is what templates observe of a live object of the set
// setID: the object without its managedFields, or nil when it is not a
// member of that set that stencil applied (its part-of label, and fields
// of the field manager applyset.FieldManager).
func ObservedView(u *unstructured.Unstructured, setID string) map[string]any {
	if u.GetLabels()[applyset.LabelPartOf] != setID ||
		!slices.ContainsFunc(u.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == applyset.FieldManager }) {
		return nil
	}
	view := maps.Clone(u.Object)
	if md, ok := view["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "managedFields")
		view["metadata"] = md
	}
	return view
}

// ChangedReads names the reads whose value in observed is another than
// the one read.
func ChangedReads(reads []templates.ObservedRead, observed map[string]map[string]any) []string {
	var out []string
	for _, rd := range reads {
		if rd.Changed(observed) {
			out = append(out, rd.String())
		}
	}
	return out
}

// ReadIDs returns the ids reads name, each once, in order (reads are
// sorted by id).
func ReadIDs(reads []templates.ObservedRead) []string {
	var ids []string
	for _, r := range reads {
		if len(ids) == 0 || ids[len(ids)-1] != r.ID {
			ids = append(ids, r.ID)
		}
	}
	return ids
}
