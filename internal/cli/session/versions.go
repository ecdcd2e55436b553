package session

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

// ServedVersions lists the versions of api the API server serves, in the
// api's order.
func ServedVersions(api v1alpha1.BundleAPI) []string {
	var out []string
	for _, v := range publish.Versions(api) {
		if v.Served == nil || *v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// publishesKind reports whether api publishes gvk's group and kind, in
// any version.
func publishesKind(api *v1alpha1.BundleAPI, gvk schema.GroupVersionKind) bool {
	return api != nil && api.Group == gvk.Group && api.Kind == gvk.Kind
}

// ToRenderVersion returns the instance u of the kind Bundle b publishes
// as the controller reads it: in the api's render version, converted
// from the version it is written in with the Bundle's own conversion
// rules, the converter the API server's conversion webhook runs
// (publish.Converter). u is returned as it is when written in the render
// version; a version the Bundle does not serve is an error naming those
// it serves.
func ToRenderVersion(b *templates.Bundle, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	api := publish.Defaulted(*b.Spec().API)
	gvk := u.GroupVersionKind()
	served := ServedVersions(api)
	if !slices.Contains(served, gvk.Version) {
		return nil, fmt.Errorf("%s is not a version Bundle %s serves (it serves %s)", parents.KindString(gvk), b.Name(), strings.Join(served, ", "))
	}
	to := publish.RenderVersion(api)
	if gvk.Version == to {
		return u, nil
	}
	conv, err := publish.Converter(b.Name(), b.Spec())
	if err != nil {
		return nil, fmt.Errorf("the conversion of Bundle %s: %w", b.Name(), err)
	}
	obj, err := conv.Convert(u.Object, to)
	if err != nil {
		return nil, fmt.Errorf("convert %s to %s: %w", parents.KindString(gvk), to, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}
