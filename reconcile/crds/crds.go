package crds

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// GroupKind is the group-kind of a CustomResourceDefinition.
var GroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// FieldManager is the field manager of the CRDs stencil updates under
// CreateReplace (its own, apart from the members').
const FieldManager = "stencil-crds"

// Outcome is what Install did.
type Outcome struct {
	// Created and Updated name the CRDs written.
	Created, Updated []string
	// NotOwned names the CRDs CreateReplace would have updated but left
	// as they are: the set did not create them (see Installer.Record).
	NotOwned []string
	// Pending names those written that are not Established yet: the
	// objects of their kinds wait.
	Pending []string
}

// WriteError is a write of a CRD the API server refused.
type WriteError struct {
	// Name is the CRD's; Verb is create or patch.
	Name, Verb string
	// Err is the API server's answer.
	Err error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("%s CustomResourceDefinition %s (crds/): %v", e.Verb, e.Name, e.Err)
}

// Unwrap returns the API server's answer.
func (e *WriteError) Unwrap() error { return e.Err }

// Installer installs CRDs for one pass.
type Installer struct {
	// Writer writes as the parent's ServiceAccount.
	Writer client.Client
	// Reader reads as the controller, live.
	Reader client.Reader
	// Record is the set's record (status.inventory.members.crds): the
	// CRDs it created, the only ones CreateReplace updates. What Install
	// creates is added to it; a recorded CRD no longer in the chart, or
	// made again by someone else (another UID), is dropped.
	Record *applyset.Record
	// Consent is the value of the stencil.dev/adopt annotation that lets
	// a CRD the set did not create be updated (and recorded) under
	// CreateReplace, as for any member (see applyset.AdoptValue).
	Consent string
}

// Install creates each CRD of crds that does not exist and, when
// replace, updates each that differs from the chart's and that the set
// created (or that consents); then waits, briefly, for those written to
// be Established. A CRD the set did not create (another set's, an
// admin's, one of stencil's published kinds) is never written: it is
// named in Outcome.NotOwned when it differs from the chart's. An error (a
// refused write: apierrors.IsForbidden tells the writer may not) stops
// it; what was written before it stays.
func (i Installer) Install(ctx context.Context, crds []*unstructured.Unstructured, replace bool) (Outcome, error) {
	var out Outcome
	var written []*unstructured.Unstructured
	var kept []types.UID
	for _, desired := range crds {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		err := i.Reader.Get(ctx, client.ObjectKeyFromObject(desired), live)
		switch {
		case apierrors.IsNotFound(err):
			create := desired.DeepCopy()
			if err := i.Writer.Create(ctx, create, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
				return out, &WriteError{Name: desired.GetName(), Verb: "create", Err: err}
			} else if err == nil {
				i.Record.AddCRD(create.GetUID())
				kept = append(kept, create.GetUID())
				out.Created = append(out.Created, desired.GetName())
				written = append(written, desired)
			}
			continue
		case err != nil:
			return out, fmt.Errorf("read CustomResourceDefinition %s: %w", desired.GetName(), err)
		}
		mine := i.owns(live)
		if mine {
			kept = append(kept, live.GetUID())
		}
		switch {
		case !replace || Holds(live.Object, desired.Object):
		case !mine:
			out.NotOwned = append(out.NotOwned, desired.GetName())
		default:
			apply := desired.DeepCopy()
			apply.SetResourceVersion("")
			// Only over the CRD judged the set's (see applyset's precondition).
			apply.SetUID(live.GetUID())
			if err := i.Writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				return out, &WriteError{Name: desired.GetName(), Verb: "patch", Err: err}
			}
			i.Record.AddCRD(live.GetUID())
			out.Updated = append(out.Updated, desired.GetName())
			written = append(written, desired)
		}
	}
	// Every CRD of the chart was looked at: the record keeps those that
	// are the set's.
	i.Record.KeepCRDs(kept)
	out.Pending = applyset.WaitEstablished(ctx, i.Reader, written)
	return out, nil
}

// owns reports whether the live CRD is the set's to update: one it
// created (its UID recorded), one that consents (its stencil.dev/adopt
// annotation names the parent), or, in the pass that seeds the record of
// a parent an earlier stencil reconciled (see applyset.Record.SeedingCRDs),
// one the crds/ field manager wrote, that version's rule.
func (i Installer) owns(live *unstructured.Unstructured) bool {
	switch {
	case i.Record.HasCRD(live.GetUID()):
		return true
	case i.Consent != "" && live.GetAnnotations()[applyset.AnnotationAdopt] == i.Consent:
		return true
	}
	return i.Record.SeedingCRDs() && slices.ContainsFunc(live.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager })
}

// Holds reports whether live holds every field desired sets, with the
// same value (numbers compared as JSON numbers; a list must be the same
// length, item by item): a server-side apply of desired would change
// nothing the chart says.
func Holds(live, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range d {
			if !Holds(l[k], v) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !Holds(l[i], d[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(jsonValue(live), jsonValue(desired))
}

// jsonValue is a scalar as JSON decodes it (every number a float64).
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}

// Record counts o's writes (stencil_applies_total) and records them as
// events on parent: a Normal one per CRD created or updated, a Warning
// one per CRD left as it is because the set does not own it (consent is
// the value of the stencil.dev/adopt annotation that would let it).
func (o Outcome) Record(rec events.EventRecorder, parent runtime.Object, consent string) {
	for _, name := range o.Created {
		metrics.Applies.WithLabelValues(string(applyset.Created)).Inc()
		rec.Eventf(parent, nil, "Normal", "CRDCreated", "Apply", "CustomResourceDefinition %s created (crds/)", name)
	}
	for _, name := range o.Updated {
		metrics.Applies.WithLabelValues(string(applyset.Configured)).Inc()
		rec.Eventf(parent, nil, "Normal", "CRDUpdated", "Apply", "CustomResourceDefinition %s updated (crds/, spec.crds CreateReplace)", name)
	}
	for _, name := range o.NotOwned {
		rec.Eventf(parent, nil, "Warning", "CRDNotReplaced", "Apply",
			"CustomResourceDefinition %s (crds/) differs from the chart's and is left as it is: spec.crds CreateReplace updates only the CRDs this set created (to let this set update it, annotate it %s: %s)",
			name, applyset.AnnotationAdopt, consent)
	}
}
