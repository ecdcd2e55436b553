package applyset

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
		in.status.Outputs = nil
		for k, v := range st {
			if statusFields[k] {
				continue
			}
			if raw, err := json.Marshal(v); err == nil {
				if in.status.Outputs == nil {
					in.status.Outputs = map[string]apiextensionsv1.JSON{}
				}
				in.status.Outputs[k] = apiextensionsv1.JSON{Raw: raw}
			}
		}
	}
	return in
}

// statusFields are the JSON names of a Composition's status fields: an
// instance's other status fields are the Bundle's outputs, which it holds
// at the top of its status (see InstanceStatus).
var statusFields = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(v1alpha1.CompositionStatus{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "outputs" {
			out[name] = true
		}
	}
	return out
}()

// InstanceStatus is st as an instance of a published kind holds it: a
// Composition's status with the outputs at its top, not under outputs.
func InstanceStatus(st v1alpha1.CompositionStatus) (map[string]any, error) {
	outs := st.Outputs
	st.Outputs = nil
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, err
	}
	for name, raw := range outs {
		if statusFields[name] {
			continue // never in place of stencil's own fields
		}
		var v any
		if err := json.Unmarshal(raw.Raw, &v); err != nil {
			return nil, fmt.Errorf("output %s: %w", name, err)
		}
		content[name] = v
	}
	return content, nil
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
