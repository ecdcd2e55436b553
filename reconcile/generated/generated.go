package generated

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// AnnotationStore marks the Secret that keeps a set's generated values.
const AnnotationStore = plan.AnnotationGeneratedStore

// SecretGVK is the kind of the store.
var SecretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// Name is the name of the store of the set setID: stencil-generated-
// and a digest of the id (the parent's name may be too long for a
// Secret's with a suffix, and a chart's own objects never take it).
func Name(setID string) string {
	sum := sha256.Sum256([]byte(setID))
	return "stencil-generated-" + hex.EncodeToString(sum[:10])
}

// Object is the store of set setID in namespace, holding values.
func Object(setID, namespace string, values map[string]string) *unstructured.Unstructured {
	data := make(map[string]any, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		data[k] = base64.StdEncoding.EncodeToString([]byte(values[k]))
	}
	u := &unstructured.Unstructured{Object: map[string]any{"type": "Opaque", "data": data}}
	u.SetGroupVersionKind(SecretGVK)
	u.SetNamespace(namespace)
	u.SetName(Name(setID))
	u.SetAnnotations(map[string]string{AnnotationStore: "true"})
	return u
}

// Add adds the store of plan p's set, in namespace and holding values,
// to p: first, labelled as a member, and to its inventory. A render that
// made an object of the store's name is refused.
func Add(p *plan.Plan, namespace string, values map[string]string) error {
	store := Object(p.ID, namespace, values)
	for _, o := range p.Objects {
		if plan.ObjectKey(o) == plan.ObjectKey(store) {
			return &templates.RenderError{Msg: fmt.Sprintf("%s is the name of the Secret that keeps the set's generated values; the bundle may not render it", applyset.Ref(o))}
		}
	}
	store.SetLabels(map[string]string{applyset.LabelPartOf: p.ID})
	p.Objects = append([]*unstructured.Unstructured{store}, p.Objects...)
	p.Inventory = p.Inventory.Union(applyset.Inventory{GroupKinds: []schema.GroupKind{SecretGVK.GroupKind()}, Namespaces: []string{namespace}}).Normalize(namespace)
	return nil
}

// IsStore reports whether obj is a store of generated values.
func IsStore(obj metav1.Object) bool {
	return obj.GetAnnotations()[AnnotationStore] == "true"
}

// Values are the values the live store of set setID holds, nil when live
// is not its member: when the set's record rec does not name it
// (applyset.Owns), whatever its labels and field managers say, so that a
// store another writer of the namespace planted is never read.
func Values(live *unstructured.Unstructured, setID string, rec *applyset.Record) map[string]string {
	if live == nil || applyset.Owns(live, SecretGVK.GroupKind(), setID, rec, applyset.Consent{}) != applyset.Ours || !IsStore(live) {
		return nil
	}
	return Held(live)
}

// Held are the values store holds, read with no check of whose it is
// (the store a plan holds, made by Object).
func Held(store *unstructured.Unstructured) map[string]string {
	data, _, _ := unstructured.NestedMap(store.Object, "data")
	out := make(map[string]string, len(data))
	for k, v := range data {
		s, ok := v.(string)
		if !ok {
			continue
		}
		raw, err := decode(s)
		if err != nil {
			continue
		}
		out[k] = raw
	}
	return out
}

// Merge returns kept with made added (a value kept is never replaced).
func Merge(kept, made map[string]string) map[string]string {
	out := maps.Clone(kept)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range made {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// decode decodes a Secret's data value.
func decode(s string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	return string(raw), err
}
