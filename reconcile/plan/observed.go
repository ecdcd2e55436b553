package plan

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/observed"
)

// MaxObservedRenders bounds the renders of one plan with observed values
// and lookups (NewObservedPlan): a render whose reads name values other
// than those it was given renders again with them, at most this many
// times in all.
const MaxObservedRenders = 3

// Observe returns the observed values (templates.Input.Observed) of the
// members ids name, for plan p of a render that held back held: the
// controller reads them from its cache, `stencil render` live as the
// user; a member not found, or not one stencil applied, is left out.
type Observe func(ctx context.Context, p *Plan, held []observed.HeldObject, ids []string) map[string]map[string]any

// Answer returns the answers to a render's lookups
// (templates.Input.Lookups; package templates/lookup): the controller
// reads them from its cache as the parent's ServiceAccount may, `stencil
// render` live as the user; an error stops the plan (the pass retries).
type Answer func(ctx context.Context, reads []lookup.Read) (lookup.Table, error)

// NewObservedPlan is NewPlan with observed values and lookups: it renders
// with in.Observed and in.Lookups, reads through observe the members the
// render's reads name and through answer (when not nil) what its lookups
// name, and while a value or an answer differs from the one the render
// got, renders again with those (at most MaxObservedRenders renders).
// What a render generates (templates.Observations.Generated) is given to
// the next one, so every render of the plan makes the same values. It
// returns the last plan with what its render read, held back and
// generated, the values of in.Generated included. A render that fails
// having looked up what answer answers otherwise renders again with the
// answers; the error returned comes with the observations of the render
// that made it.
func NewObservedPlan(ctx context.Context, r Renderer, b *templates.Bundle, in templates.Input, apis APIs, observe Observe, answer Answer) (*Plan, templates.Observations, error) {
	kept := maps.Clone(in.Generated)
	for i := 1; ; i++ {
		var obs templates.Observations
		in.Observations = &obs
		in.Generated = kept
		p, err := NewPlan(ctx, r, b, in, apis)
		if err != nil {
			// A render may fail for want of an answer (a chart that
			// requires what it looks up): with the answers to its
			// lookups, it is tried again.
			if i < MaxObservedRenders && len(obs.Lookups) > 0 && answer != nil {
				table, aerr := answer(ctx, obs.Lookups)
				if aerr != nil {
					return nil, obs, aerr
				}
				if len(lookup.Changed(obs.Lookups, table)) > 0 {
					in.Lookups = table
					continue
				}
			}
			return nil, obs, err
		}
		for k, v := range obs.Generated {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
		obs.Generated = kept
		changed, err := reobserve(ctx, p, obs, &in, observe, answer)
		if err != nil {
			return nil, obs, err
		}
		if i == MaxObservedRenders || !changed {
			return p, obs, nil
		}
	}
}

// reobserve reads anew, into in, what the render of p read and looked
// up, and reports whether any of it changed since.
func reobserve(ctx context.Context, p *Plan, obs templates.Observations, in *templates.Input, observe Observe, answer Answer) (bool, error) {
	changed := false
	if ids := ReadIDs(obs.Reads); len(ids) > 0 {
		next := observe(ctx, p, obs.Held, ids)
		changed = len(ChangedReads(obs.Reads, next)) > 0
		in.Observed = next
	}
	if len(obs.Lookups) > 0 && answer != nil {
		table, err := answer(ctx, obs.Lookups)
		if err != nil {
			return false, err
		}
		changed = changed || len(lookup.Changed(obs.Lookups, table)) > 0
		in.Lookups = table
	}
	return changed, nil
}

// Addressed maps the ids (observed.MemberID) of the plan's ordinary
// objects to them: the members a template may observe. A template never
// reads an object that is not one of its own set's.
func (p *Plan) Addressed() map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(p.Objects))
	for _, o := range p.Objects {
		if !IsHook(o) {
			out[observed.MemberID(o)] = o
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
// setID, whose record is rec: the object without its managedFields, or nil
// when it is not a member of that set (applyset.Owns: its part-of label,
// and its UID in the set's record). An object someone labelled into the
// set feeds no value into its render.
func ObservedView(u *unstructured.Unstructured, setID string, rec *applyset.Record) map[string]any {
	if applyset.Owns(u, u.GroupVersionKind().GroupKind(), setID, rec, applyset.Consent{}) != applyset.Ours {
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
func ChangedReads(reads []observed.ObservedRead, observed map[string]map[string]any) []string {
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
func ReadIDs(reads []observed.ObservedRead) []string {
	var ids []string
	for _, r := range reads {
		if len(ids) == 0 || ids[len(ids)-1] != r.ID {
			ids = append(ids, r.ID)
		}
	}
	return ids
}
