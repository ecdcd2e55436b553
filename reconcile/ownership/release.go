package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Holds reports whether a listed member carries parent's owner
// reference.
func Holds(m applyset.Member, parent types.UID) bool {
	return slices.ContainsFunc(m.Meta.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == parent })
}

// Release takes parent's owner reference off m, a member of set id as it
// was listed, and with unlabel its part-of label too (orphaning it), in
// one JSON patch made through writer (the parent's ServiceAccount). The
// patch first tests the member's uid, and the reference's and the label's
// place and value as listed: a member deleted and made again, or changed
// in those fields since the listing, is not written (the API server
// refuses the patch, and the caller lists again on its next pass). It
// reports whether it wrote: a member with neither is left as it is, with
// no request. A member already gone is no error.
func Release(ctx context.Context, writer client.Client, m applyset.Member, parent types.UID, id string, unlabel bool) (bool, error) {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": m.Meta.UID}}
	if i := slices.IndexFunc(m.Meta.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == parent }); i >= 0 {
		at := "/metadata/ownerReferences/" + strconv.Itoa(i)
		ops = append(ops, map[string]any{"op": "test", "path": at + "/uid", "value": parent}, map[string]any{"op": "remove", "path": at})
	}
	if label, ok := m.Meta.Labels[applyset.LabelPartOf]; unlabel && ok && label == id {
		at := "/metadata/labels/" + pointer(applyset.LabelPartOf)
		ops = append(ops, map[string]any{"op": "test", "path": at, "value": id}, map[string]any{"op": "remove", "path": at})
	}
	if len(ops) == 1 {
		return false, nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.GVK)
	obj.SetNamespace(m.Meta.Namespace)
	obj.SetName(m.Meta.Name)
	switch err := writer.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body)); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("release %s: %w", m.Ref(), err)
	}
	return true, nil
}

// pointer escapes a key for a JSON pointer (RFC 6901).
func pointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
