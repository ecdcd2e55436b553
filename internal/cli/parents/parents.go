package parents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Document is one parent of a -f file: a Composition, or an instance of a
// kind a Bundle publishes (whose Bundle is found by its kind). One of its
// fields is set.
type Document struct {
	// Composition is the document's Composition, nil for an instance.
	Composition *v1alpha1.Composition
	// Instance is the document's instance of a published kind, nil for a
	// Composition.
	Instance *unstructured.Unstructured
}

// Describe names the document's object: "AppService team-a/web".
func (d Document) Describe() string {
	if d.Composition != nil {
		return "Composition " + d.Composition.Namespace + "/" + d.Composition.Name
	}
	return d.Instance.GetKind() + " " + d.Instance.GetNamespace() + "/" + d.Instance.GetName()
}

// Describe names a parent as Document.Describe does.
func Describe(p applyset.Parent) string {
	return p.ParentGVK().Kind + " " + p.GetNamespace() + "/" + p.GetName()
}

// Read reads every Composition and instance of a published kind in
// a multi-document YAML file ("-" is stdin), in file order. Empty
// documents are skipped; a document without a name, or one of stencil's
// other kinds, is an error.
func Read(path string, stdin io.Reader, defaultNamespace string) ([]Document, error) {
	data, err := ReadFile(path, stdin)
	if err != nil {
		return nil, err
	}
	var out []Document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
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

// Head is what identifies an object of a YAML document.
type Head struct {
	// APIVersion is the document's apiVersion.
	APIVersion string `json:"apiVersion"`
	// Kind is the document's kind.
	Kind string `json:"kind"`
	// Metadata holds the document's metadata.name.
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// ReadHead reads the head of one YAML document, and the document as JSON;
// a document that is not an object is ErrNotObject.
func ReadHead(doc []byte) (Head, []byte, error) {
	var head Head
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return head, nil, err
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return head, nil, fmt.Errorf("%w: %w", ErrNotObject, err)
	}
	return head, js, nil
}

// ErrNotObject is a YAML document that is not an object (a list, a scalar).
var ErrNotObject = errors.New("not a Kubernetes object")

// readDocument reads one YAML document; nil when it holds only comments.
func readDocument(doc []byte, defaultNamespace string) (*Document, error) {
	head, js, err := ReadHead(doc)
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
		return &Document{Composition: c}, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(defaultNamespace)
	}
	return &Document{Instance: u}, nil
}

// KindString writes a kind as a manifest says it: "app.example.com/v1 AppService".
func KindString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// ReadFile reads the file path names, "-" being stdin.
func ReadFile(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
