package crds

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
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
}

// Install creates each CRD of crds that does not exist and, when
// replace, updates each that differs from the chart's; then waits,
// briefly, for those written to be Established. An error (a refused
// write: apierrors.IsForbidden tells the writer may not) stops it; what
// was written before it stays.
func (i Installer) Install(ctx context.Context, crds []*unstructured.Unstructured, replace bool) (Outcome, error) {
	var out Outcome
	var written []*unstructured.Unstructured
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
				out.Created = append(out.Created, desired.GetName())
				written = append(written, desired)
			}
		case err != nil:
			return out, fmt.Errorf("read CustomResourceDefinition %s: %w", desired.GetName(), err)
		case replace && !Holds(live.Object, desired.Object):
			apply := desired.DeepCopy()
			apply.SetResourceVersion("")
			if err := i.Writer.Patch(ctx, apply, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				return out, &WriteError{Name: desired.GetName(), Verb: "patch", Err: err}
			}
			out.Updated = append(out.Updated, desired.GetName())
			written = append(written, desired)
		}
	}
	out.Pending = applyset.WaitEstablished(ctx, i.Reader, written)
	return out, nil
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
