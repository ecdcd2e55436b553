package applyset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Parent is an ApplySet parent stencil reconciles: a Composition, or an
// instance of a kind a Bundle publishes (Instance). The pipeline reads the
// parent's metadata, effective spec and last status through it, and never
// its concrete type, except where it reads or writes the parent itself
// (Reread, readParent, writeParent, writeStatus).
type Parent interface {
	client.Object
	// ParentGVK is the parent's kind: its group and kind name the ApplySet id.
	ParentGVK() schema.GroupVersionKind
	// ParentSpec is what to reconcile: the Bundle, the values and the knobs.
	ParentSpec() *v1alpha1.CompositionSpec
	// ParentStatus is the status the parent holds, as last written.
	ParentStatus() *v1alpha1.CompositionStatus
}

var (
	_ Parent = (*v1alpha1.Composition)(nil)
	_ Parent = (*Instance)(nil)
)

// Instance is an instance of a kind a Bundle publishes, as a Parent: its
// spec is the values, and its knobs come from the Bundle's api.defaults and
// the instance's stencil.dev/* annotations (see publish.InstanceSpec); its
// status is stencil's CompositionStatus.
type Instance struct {
	*unstructured.Unstructured
	spec   v1alpha1.CompositionSpec
	status v1alpha1.CompositionStatus
}

// NewInstance wraps obj, an instance of a published kind, with its
// effective spec. Its status is decoded from obj; a status stencil cannot
// decode counts as none (stencil rebuilds it each pass).
func NewInstance(obj *unstructured.Unstructured, spec v1alpha1.CompositionSpec) *Instance {
	in := &Instance{Unstructured: obj, spec: spec}
	if st, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(st, &in.status); err != nil {
			in.status = v1alpha1.CompositionStatus{}
		}
	}
	return in
}

// ParentGVK returns the instance's published kind.
func (in *Instance) ParentGVK() schema.GroupVersionKind { return in.GroupVersionKind() }

// ParentSpec returns the instance's effective spec.
func (in *Instance) ParentSpec() *v1alpha1.CompositionSpec { return &in.spec }

// ParentStatus returns the instance's status, as last written.
func (in *Instance) ParentStatus() *v1alpha1.CompositionStatus { return &in.status }

// Describe names a parent in messages: "Composition team-a/shop".
func Describe(p Parent) string {
	return p.ParentGVK().Kind + " " + p.GetNamespace() + "/" + p.GetName()
}

// ParentID is the ApplySet id of a parent.
func ParentID(p Parent) string {
	return ID(p.GetName(), p.GetNamespace(), p.ParentGVK().GroupKind())
}

// Reread reads p again through reader, as the same kind of Parent.
func Reread(ctx context.Context, reader client.Reader, p Parent) (Parent, error) {
	switch p := p.(type) {
	case *v1alpha1.Composition:
		live := &v1alpha1.Composition{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil {
			return nil, err
		}
		return live, nil
	case *Instance:
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(p.GroupVersionKind())
		if err := reader.Get(ctx, client.ObjectKeyFromObject(p), live); err != nil {
			return nil, err
		}
		return NewInstance(live, *p.ParentSpec()), nil
	}
	return nil, fmt.Errorf("read %s: unknown kind of parent %T", Describe(p), p)
}
