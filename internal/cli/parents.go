package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/published"
	"github.com/stencil-dev/stencil/templates"
)

// document is one parent of a -f file: a Composition, or an instance of a
// kind a Bundle publishes (whose Bundle is found by its kind).
type document struct {
	comp *v1alpha1.Composition
	obj  *unstructured.Unstructured
}

// describe names the document's object: "AppService team-a/web".
func (d document) describe() string {
	if d.comp != nil {
		return "Composition " + d.comp.Namespace + "/" + d.comp.Name
	}
	return d.obj.GetKind() + " " + d.obj.GetNamespace() + "/" + d.obj.GetName()
}

// describeParent names a parent as document.describe does.
func describeParent(p applyset.Parent) string {
	return p.ParentGVK().Kind + " " + p.GetNamespace() + "/" + p.GetName()
}

// readParents reads every Composition and instance of a published kind in
// a multi-document YAML file ("-" is stdin), in file order. Empty
// documents are skipped; a document without a name, or one of stencil's
// other kinds, is an error.
func readParents(path string, stdin io.Reader, defaultNamespace string) ([]document, error) {
	data, err := readFile(path, stdin)
	if err != nil {
		return nil, err
	}
	var out []document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		d, err := readDocument(doc, defaultNamespace)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no Composition and no instance of a published kind", path)
	}
	return out, nil
}

// objectHead is what identifies an object of a YAML document.
type objectHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// readHead reads the head of one YAML document, and the document as JSON.
func readHead(doc []byte) (objectHead, []byte, error) {
	var head objectHead
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return head, nil, err
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return head, nil, fmt.Errorf("%w: %w", errNotObject, err)
	}
	return head, js, nil
}

// errNotObject: a YAML document that is not an object (a list, a scalar).
var errNotObject = errors.New("not a Kubernetes object")

// readDocument reads one YAML document; nil when it holds only comments.
func readDocument(doc []byte, defaultNamespace string) (*document, error) {
	head, js, err := readHead(doc)
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	switch {
	case head.Kind == "" && head.APIVersion == "" && head.Metadata.Name == "":
		return nil, nil // only comments
	case err != nil || head.APIVersion == "" || head.Kind == "":
		return nil, fmt.Errorf("has no apiVersion or kind: want a %s Composition or an instance of a published kind", v1alpha1.GroupVersion)
	case head.Metadata.Name == "":
		return nil, fmt.Errorf("%s has no metadata.name", head.Kind)
	case gv.Group == v1alpha1.GroupVersion.Group && (head.Kind != "Composition" || gv != v1alpha1.GroupVersion):
		return nil, fmt.Errorf("is %s %s, want a %s Composition or an instance of a published kind", head.APIVersion, head.Kind, v1alpha1.GroupVersion)
	case gv.Group == v1alpha1.GroupVersion.Group:
		c := &v1alpha1.Composition{}
		if err := yaml.UnmarshalStrict(doc, c); err != nil {
			return nil, err
		}
		if c.Namespace == "" {
			c.Namespace = defaultNamespace
		}
		return &document{comp: c}, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(defaultNamespace)
	}
	return &document{obj: u}, nil
}

// resolve gives the Parent a document stands for and the Bundle it
// renders: a Composition's Bundle by name, an instance's by its kind:
// the --bundle folder or manifest (whose api must publish that kind), or
// else the cluster's Bundle publishing it.
func resolve(ctx context.Context, s *session, from string, d document) (applyset.Parent, *templates.Bundle, error) {
	if d.comp != nil {
		b, err := loadBundle(ctx, s, from, d.comp.Spec.Bundle)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.describe(), err)
		}
		return d.comp, b, nil
	}
	gvk := d.obj.GroupVersionKind()
	var b *templates.Bundle
	var err error
	if from != "" {
		b, err = loadPublishing(ctx, s, from, gvk)
	} else {
		b, err = clusterBundleFor(ctx, s, gvk)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", d.describe(), err)
	}
	api := b.Spec().API
	spec, err := publish.InstanceSpec(b.Name(), api, d.obj)
	if err != nil {
		return nil, nil, err
	}
	return applyset.NewInstance(d.obj, spec), b, nil
}

// loadPublishing loads the --bundle folder or manifest, which must
// publish gvk. A folder's Bundle is named after the folder, a manifest's
// as it says.
func loadPublishing(ctx context.Context, s *session, from string, gvk schema.GroupVersionKind) (*templates.Bundle, error) {
	name, err := bundleNameAt(from)
	if err != nil {
		return nil, err
	}
	b, err := loadBundle(ctx, s, from, name)
	if err != nil {
		return nil, err
	}
	api := b.Spec().API
	switch {
	case api == nil:
		return nil, fmt.Errorf("--bundle %s publishes no kind (api: in stencil.yaml, spec.api of a Bundle), so it cannot render a %s", from, gvkString(gvk))
	case !publish.Serves(api, gvk):
		return nil, fmt.Errorf("--bundle %s publishes %s, not %s", from, gvkString(publish.GVK(*api)), gvkString(gvk))
	}
	return b, nil
}

// clusterBundleFor finds the cluster's Bundle that publishes gvk. When two
// claim it, the one the kind's CRD is labelled with (the one the
// controller serves it for) wins.
func clusterBundleFor(ctx context.Context, s *session, gvk schema.GroupVersionKind) (*templates.Bundle, error) {
	if s.client == nil {
		return nil, fmt.Errorf("no --bundle given and no cluster to find the Bundle publishing %s in", gvkString(gvk))
	}
	b, claimants, err := published.PublishingBundle(ctx, s.client, s.client, gvk)
	switch {
	case err != nil:
		return nil, fmt.Errorf("find the Bundle publishing %s: %w", gvkString(gvk), err)
	case b == nil && len(claimants) > 0:
		return nil, fmt.Errorf("Bundles %s all publish %s and its CRD names none of them (pass --bundle)", strings.Join(claimants, ", "), gvkString(gvk))
	case b == nil:
		return nil, fmt.Errorf("no Bundle in the cluster publishes %s (pass --bundle DIR to render with a bundle folder)", gvkString(gvk))
	}
	return templates.LoadObject(b)
}

// bundleNameAt is the name of the Bundle at from: a folder's name, a
// manifest's metadata.name, or a pulled chart's name.
func bundleNameAt(from string) (string, error) {
	if _, name, ok, err := pull.ParseSource(from); ok {
		return name, err
	}
	info, err := os.Stat(from)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		return bundleName(from), nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return "", err
	}
	var m metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	if m.Name == "" {
		return "", fmt.Errorf("%s: the Bundle manifest has no metadata.name", from)
	}
	return m.Name, nil
}

// gvkString writes a kind as a manifest says it: "app.example.com/v1 AppService".
func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// consentFor is the consent the controller would apply parent with (see
// applyset.Owns): the stencil.dev/adopt annotation naming it, and the
// kinds its Bundle's spec.permissions.adopt lists.
func consentFor(s *session, parent applyset.Parent, b *templates.Bundle) applyset.Consent {
	resource := ""
	gvk := parent.ParentGVK()
	if s.mapper != nil {
		if m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			resource = m.Resource.Resource
		}
	}
	return applyset.ConsentOf(parent, resource, b.Permissions().Adopt)
}
