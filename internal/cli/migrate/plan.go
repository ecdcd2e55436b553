package migrate

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Target is what migrate rewrites documents for: the Bundle, the kind it
// publishes and how its instances and values convert.
type Target struct {
	// Bundle is the Bundle's name, as Compositions name it.
	Bundle string
	// Kind is the group and kind the Bundle publishes; empty when it
	// publishes none (then only Compositions are migrated).
	Kind schema.GroupKind
	// To is the version instances are rewritten in.
	To string
	// Served lists the versions the Bundle serves, in its order.
	Served []string
	// Convert converts an instance's whole object to a version (the
	// engine's (*conversion.Converter).Convert); nil when Kind is empty.
	Convert func(obj map[string]any, to string) (map[string]any, error)
	// Values returns values the Bundle's current schema accepts, and the
	// names of the valuesMigrations that made them so (none when the
	// values were accepted as they are); nil when the Bundle has no
	// valuesMigrations.
	Values func(values map[string]any) (map[string]any, []string, error)
}

// Change is one document a migration changes.
type Change struct {
	// File is the file's path.
	File string
	// Line is the line of the file the document starts on.
	Line int
	// Object names the document's object: "AppService team-a/web".
	Object string
	// From and To say what changed: apiVersions, or "values" and the
	// migrations that applied.
	From, To string
	// Fields lists the fields moved, changed, added and removed.
	Fields string
}

// String is the change as migrate prints it.
func (c Change) String() string {
	s := fmt.Sprintf("%s: %s: %s → %s", c.File, c.Object, c.From, c.To)
	if c.Fields != "" {
		s += " (" + c.Fields + ")"
	}
	return s
}

// planFile plans every document of f and records the new bodies; it
// returns the changes, or the first error, naming the file and line.
func planFile(f *file, t *Target) ([]Change, error) {
	var out []Change
	for _, d := range f.docs {
		c, err := planDocument(d, t)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", f.path, d.line, err)
		}
		if c != nil {
			c.File, c.Line = f.path, d.line
			out = append(out, *c)
		}
	}
	return out, nil
}

// head is what identifies a document's object.
type head struct {
	gvk             schema.GroupVersionKind
	name, namespace string
}

// describe names the object: "AppService team-a/web", or "AppService web"
// without a namespace.
func (h head) describe() string {
	if h.namespace == "" {
		return h.gvk.Kind + " " + h.name
	}
	return h.gvk.Kind + " " + h.namespace + "/" + h.name
}

// readHead reads a document's apiVersion, kind, name and namespace.
func readHead(obj map[string]any) head {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	gv, _ := schema.ParseGroupVersion(str(obj, "apiVersion"))
	meta, _ := obj["metadata"].(map[string]any)
	return head{gvk: gv.WithKind(str(obj, "kind")), name: str(meta, "name"), namespace: str(meta, "namespace")}
}

// planDocument plans one document: nil when it needs no change.
func planDocument(d *document, t *Target) (*Change, error) {
	if d.node == nil {
		return nil, nil
	}
	v, err := decodeYAML(d.body)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil // not an object: not ours
	}
	h := readHead(obj)
	var c *Change
	switch {
	case t.Kind.Kind != "" && h.gvk.GroupKind() == t.Kind:
		c, err = planInstance(d, obj, h, t)
	case h.gvk.GroupVersion() == v1alpha1.GroupVersion && h.gvk.Kind == "Composition" && t.Values != nil:
		c, err = planComposition(d, obj, h, t)
	}
	if err != nil || c == nil {
		return nil, err
	}
	if d.edited, err = d.encode(); err != nil {
		return nil, fmt.Errorf("%s: %w", h.describe(), err)
	}
	return c, nil
}

// planInstance converts an instance of the published kind to t.To.
func planInstance(d *document, obj map[string]any, h head, t *Target) (*Change, error) {
	from := h.gvk.Version
	if !slices.Contains(t.Served, from) {
		return nil, fmt.Errorf("%s: %s is not a version Bundle %s serves (it serves %s)", h.describe(), h.gvk.GroupVersion(), t.Bundle, strings.Join(t.Served, ", "))
	}
	if from == t.To {
		return nil, nil
	}
	converted, err := t.Convert(obj, t.To)
	if err != nil {
		return nil, fmt.Errorf("%s: convert %s to %s: %w", h.describe(), from, t.To, err)
	}
	e := &edits{}
	if err := sync(d.node, converted, "", e); err != nil {
		return nil, fmt.Errorf("%s: %w", h.describe(), err)
	}
	e.changed = slices.DeleteFunc(e.changed, func(p string) bool { return p == "apiVersion" })
	e.pairMoves(obj, converted)
	return &Change{Object: h.describe(), From: h.gvk.GroupVersion().String(), To: t.To, Fields: e.String()}, nil
}

// planComposition migrates the values of a Composition of t.Bundle that
// the Bundle's schema refuses.
func planComposition(d *document, obj map[string]any, h head, t *Target) (*Change, error) {
	spec, _ := obj["spec"].(map[string]any)
	if b, _ := spec["bundle"].(string); b != t.Bundle {
		return nil, nil
	}
	values, _ := spec["values"].(map[string]any)
	migrated, applied, err := t.Values(values)
	if err != nil {
		return nil, fmt.Errorf("%s: spec.values: %w", h.describe(), err)
	}
	if len(applied) == 0 {
		return nil, nil
	}
	node, err := kyaml.NewRNode(d.node.Content[0]).Pipe(kyaml.LookupCreate(kyaml.MappingNode, "spec", "values"))
	if err != nil || node == nil {
		return nil, fmt.Errorf("%s: spec.values not found in the document", h.describe())
	}
	e := &edits{}
	if err := sync(node.YNode(), migrated, "spec.values", e); err != nil {
		return nil, fmt.Errorf("%s: %w", h.describe(), err)
	}
	if e.empty() {
		return nil, nil
	}
	e.pairMoves(map[string]any{"spec": map[string]any{"values": values}}, map[string]any{"spec": map[string]any{"values": migrated}})
	return &Change{Object: h.describe(), From: "values", To: "valuesMigrations " + strings.Join(applied, ", "), Fields: e.String()}, nil
}
