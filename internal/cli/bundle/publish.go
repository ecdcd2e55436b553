package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// lintAPI builds and checks the CRD of the kind the bundle folder
// publishes, if it publishes one, and prints each problem under the file
// it comes from; it returns how many there were.
func lintAPI(dir string, b *templates.Bundle, out io.Writer) int {
	spec := b.Spec()
	if spec.API == nil {
		return 0
	}
	crd, err := publish.CRD(b.Name(), spec)
	if err == nil {
		fmt.Fprintf(out, "%s (api): CustomResourceDefinition %s ok\n", dir, crd.Name)
		if publish.ReservedGroup(crd.Spec.Group) {
			fmt.Fprintf(out, "%s (api): note: group %s is Kubernetes' own: stencil serves the kind only once a cluster admin creates CustomResourceDefinition %s with the annotation %s and the label %s: %s\n",
				dir, crd.Spec.Group, crd.Name, publish.AnnotationAPIApproved, publish.LabelBundle, b.Name())
		}
		return 0
	}
	var pe *publish.Error
	if !errors.As(err, &pe) {
		fmt.Fprintf(out, "%s (api): %v\n", dir, err)
		return 1
	}
	for _, line := range folderProblems(pe) {
		fmt.Fprintf(out, "%s (api): %s\n", dir, line)
	}
	return len(pe.Errs)
}

// lintParent is what lint renders the bundle for: an instance named lint
// of the kind the bundle publishes, with values as its spec, so templates
// see .Composition.Kind and .APIVersion as its instances will; or a
// Composition named lint when it publishes none.
func lintParent(b *templates.Bundle, namespace string, values *apiextensionsv1.JSON) (applyset.Parent, error) {
	api := b.Spec().API
	if api == nil {
		return &v1alpha1.Composition{
			ObjectMeta: metav1.ObjectMeta{Name: "lint", Namespace: namespace},
			Spec:       v1alpha1.CompositionSpec{Bundle: b.Name(), Values: values},
		}, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	// In the render version: the version the controller reads instances in.
	gvk := publish.GVK(*api)
	gvk.Version = publish.RenderVersion(publish.Defaulted(*api))
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName("lint")
	spec, err := publish.InstanceSpec(b.Name(), api, u)
	if err != nil {
		return nil, err
	}
	spec.Values = values // the instance's spec, byte for byte
	return applyset.NewInstance(u, spec), nil
}

// instanceValues reads a lint values file that is an instance of the
// kind the bundle publishes (its apiVersion and kind say so, in any
// version the api lists) as its spec, converted to the render version
// first as the API server converts it for the controller; any other file
// is values as it is.
func instanceValues(b *templates.Bundle, js []byte) ([]byte, error) {
	api := b.Spec().API
	if api == nil {
		return js, nil
	}
	obj := &unstructured.Unstructured{}
	// A file that is no object is values, which the render refuses.
	isObject := obj.UnmarshalJSON(js) == nil
	if !isObject || obj.GetKind() != api.Kind {
		return js, nil
	}
	gvk := obj.GroupVersionKind()
	if gvk.Group != api.Group || !slices.Contains(session.ServedVersions(publish.Defaulted(*api)), gvk.Version) {
		return js, nil
	}
	obj, err := session.ToRenderVersion(b, obj)
	if err != nil {
		return nil, err
	}
	spec, ok := obj.Object["spec"]
	if !ok || spec == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(spec)
}

// folderProblems lists the problems of a published kind as
// "file field: type: rule", the fields named as a folder holds them.
func folderProblems(pe *publish.Error) []string {
	lines := make([]string, 0, len(pe.Errs))
	for _, fe := range pe.Errs {
		line := folderField(fe.Field) + ": " + fe.Type.String()
		if d := strings.TrimSpace(fe.Detail); d != "" {
			line += ": " + d
		}
		lines = append(lines, line)
	}
	return lines
}

// folderField names a field of a Bundle the way a bundle folder holds
// it: spec.schema is values.schema.yaml, spec.api is api: in stencil.yaml,
// metadata.name is the folder's name.
func folderField(p string) string {
	switch {
	case p == "spec.schema" || strings.HasPrefix(p, "spec.schema.") || strings.HasPrefix(p, "spec.schema["):
		return templates.SchemaFileYAML + " " + strings.TrimPrefix(strings.TrimPrefix(p, "spec.schema"), ".")
	case strings.HasPrefix(p, "spec.api"):
		return templates.OptionsFile + " " + strings.TrimPrefix(p, "spec.")
	case strings.HasPrefix(p, templates.SchemaFileJSON+"#"):
		return p
	case strings.HasPrefix(p, templates.SchemaFileJSON):
		return templates.SchemaFileJSON + " " + strings.TrimPrefix(strings.TrimPrefix(p, templates.SchemaFileJSON), ".")
	case p == "metadata.name":
		return "the bundle's name (--name, or the folder's name)"
	}
	return p
}
