package valuestore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// AnnotationStore marks a Secret that keeps a set's generated values.
const AnnotationStore = plan.AnnotationGeneratedStore

// AnnotationKey, on a store, is the ID (Key.ID) of the controller's key
// its keys were made with. A store without it was written before keys
// were keyed: only its legacy keys are read.
const AnnotationKey = "stencil.dev/generated-key"

// SecretGVK is the kind of the stores.
var SecretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// Name is the name of the stores of the set setID in the namespaces its
// objects are in: stencil-generated- and a digest of the id (the
// parent's name may be too long for a Secret's with a suffix, and a
// chart's own objects never take it).
func Name(setID string) string {
	sum := sha256.Sum256([]byte(setID))
	return "stencil-generated-" + hex.EncodeToString(sum[:10])
}

// ControllerName is the name of the set's store in the controller's
// namespace: Name with -controller, so that it is another object than
// the store of a set whose objects are in that namespace too.
func ControllerName(setID string) string { return Name(setID) + "-controller" }

// Object is a store named name in namespace, holding values, its keys
// made with the key of ID keyID ("" for none: a legacy store, in tests).
func Object(name, namespace, keyID string, values map[string]string) *unstructured.Unstructured {
	data := make(map[string]any, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		data[k] = base64.StdEncoding.EncodeToString([]byte(values[k]))
	}
	u := &unstructured.Unstructured{Object: map[string]any{"type": "Opaque", "data": data}}
	u.SetGroupVersionKind(SecretGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	ann := map[string]string{AnnotationStore: "true"}
	if keyID != "" {
		ann[AnnotationKey] = keyID
	}
	u.SetAnnotations(ann)
	return u
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

// ControllerValues are the values the live store of set setID in the
// controller's namespace holds, nil when it is not the set's store
// (another set's part-of label, or none; no store annotation). That
// namespace's Secrets are written only by the controller and cluster
// admins, so the label is the set's own there: the store is no member,
// never in the record, written and deleted as the controller.
func ControllerValues(live *unstructured.Unstructured, setID string) map[string]string {
	if live == nil || setID == "" || live.GetLabels()[applyset.LabelPartOf] != setID || !IsStore(live) {
		return nil
	}
	return Held(live)
}

// Held are the values store holds, read with no check of whose it is
// (a store made by Object).
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
