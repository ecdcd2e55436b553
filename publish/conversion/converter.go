package conversion

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// AnnotationPrefix starts the annotation that keeps what a version
// cannot hold of an instance written in another: the instance converted
// from version v1 to v2 carries conversion.stencil.dev/v1, and converting
// it back to v1 restores those fields (and removes the annotation).
const AnnotationPrefix = "conversion.stencil.dev/"

// MaxAnnotationBytes bounds an object's annotations together, as the API
// server does: a conversion whose annotation would exceed it fails.
const MaxAnnotationBytes = 256 << 10

// Converter converts instances of one published kind between its
// versions, through the storage version (the hub). It is safe for
// concurrent use.
type Converter struct {
	group    string
	storage  string
	versions map[string]*kindVersion
}

// kindVersion is one version: its rules and its spec's schema.
type kindVersion struct {
	compiled
	schema *structuralschema.Structural // nil: any object, nothing pruned
}

// InvalidError is an api New cannot convert with: the problems, each
// with its field path under spec.api.
type InvalidError struct {
	// Errs are the problems.
	Errs field.ErrorList
}

func (e *InvalidError) Error() string {
	return "the published kind's versions cannot convert: " + e.Errs.ToAggregate().Error()
}

// New builds the converter of api's kind. specs are each version's spec
// schema, by version name (a missing or nil one holds any object); a
// version's instances are pruned to it after conversion, as the API
// server prunes them. A problem of api is an *InvalidError; a schema
// that is not structural is an error naming the version.
func New(api v1alpha1.BundleAPI, specs map[string]*apiextensionsv1.JSONSchemaProps) (*Converter, error) {
	progs, errs := compileVersions(api)
	if len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	c := &Converter{group: api.Group, storage: StorageVersion(api), versions: map[string]*kindVersion{}}
	for _, v := range Versions(api) {
		kv := &kindVersion{compiled: progs[v.Name]}
		if s := specs[v.Name]; s != nil {
			st, err := structural(s)
			if err != nil {
				return nil, fmt.Errorf("version %s: the spec's schema: %w", v.Name, err)
			}
			kv.schema = st
		}
		c.versions[v.Name] = kv
	}
	return c, nil
}

// structural converts a CRD schema to its structural form.
func structural(s *apiextensionsv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil); err != nil {
		return nil, err
	}
	return structuralschema.NewStructural(&internal)
}

// StorageVersion is the version instances are stored in.
func (c *Converter) StorageVersion() string { return c.storage }

// Convert converts obj, an instance's whole content (apiVersion names its
// version), to the version to and returns the new object; obj is never
// changed. Only spec, apiVersion and the conversion.stencil.dev/
// annotations change: metadata and status are kept as they are. The
// spec goes through the storage version (the source's toStorage, then
// the target's fromStorage) and is pruned to the target's schema; what
// the target cannot hold of the source's spec is kept in the annotation
// AnnotationPrefix+<source version>, and the annotation of the target
// version, when obj has one, is restored over the result and removed.
// An error names the versions and, for a rule that fails, the rule (an
// *Error).
func (c *Converter) Convert(obj map[string]any, to string) (map[string]any, error) {
	budget := uint64(TotalCostLimit)
	return c.convert(context.Background(), obj, to, &budget)
}

// ConvertContext is Convert, stopping when ctx ends.
func (c *Converter) ConvertContext(ctx context.Context, obj map[string]any, to string) (map[string]any, error) {
	budget := uint64(TotalCostLimit)
	return c.convert(ctx, obj, to, &budget)
}

func (c *Converter) convert(ctx context.Context, obj map[string]any, to string, budget *uint64) (map[string]any, error) {
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, err
	}
	if c.versions[to] == nil {
		return nil, fmt.Errorf("convert to %s: the kind has no version %s", to, to)
	}
	out, _ := deepCopy(obj).(map[string]any)
	out["apiVersion"] = c.apiVersion(to)
	if from == to {
		return out, nil
	}
	spec, hadSpec, err := specOf(obj)
	if err != nil {
		return nil, err
	}
	cv := &conversion{c: c, ctx: ctx, budget: budget, records: records(obj), visited: map[string]bool{}}
	result, err := cv.reconstruct(spec, from, to)
	if err != nil {
		return nil, fmt.Errorf("convert %s to %s: %w", from, to, err)
	}
	lost, err := cv.lost(spec, result, from, to)
	if err != nil {
		return nil, fmt.Errorf("convert %s to %s: find what %s cannot hold: %w", from, to, to, err)
	}
	if hadSpec || len(result) > 0 {
		out["spec"] = result
	}
	if err := annotate(out, from, to, lost, cv.consumed); err != nil {
		return nil, fmt.Errorf("convert %s to %s: %w", from, to, err)
	}
	return out, nil
}

// apiVersion is the apiVersion of version v.
func (c *Converter) apiVersion(v string) string {
	if c.group == "" {
		return v
	}
	return c.group + "/" + v
}

// versionOf is the version obj's apiVersion names.
func (c *Converter) versionOf(obj map[string]any) (string, error) {
	av, _ := obj["apiVersion"].(string)
	group, v, ok := strings.Cut(av, "/")
	if !ok {
		group, v = "", av
	}
	if group != c.group || c.versions[v] == nil {
		return "", fmt.Errorf("the object's apiVersion %q is not a version of group %s", av, c.group)
	}
	return v, nil
}

// specOf returns obj's spec (an empty map when it has none).
func specOf(obj map[string]any) (map[string]any, bool, error) {
	raw, ok := obj["spec"]
	if !ok || raw == nil {
		return map[string]any{}, false, nil
	}
	spec, isMap := raw.(map[string]any)
	if !isMap {
		return nil, true, fmt.Errorf("the object's spec is %s, not an object", jsonType(raw))
	}
	return spec, true, nil
}

// conversion is the state of one Convert.
type conversion struct {
	c        *Converter
	ctx      context.Context
	budget   *uint64
	records  map[string]*record
	visited  map[string]bool
	consumed []string // versions whose records were restored
}

// forward converts spec from one version to another through the storage
// version, with no annotation.
func (cv *conversion) forward(spec map[string]any, from, to string) (map[string]any, error) {
	if from == to {
		out, _ := deepCopy(spec).(map[string]any)
		return out, nil
	}
	var err error
	if from != cv.c.storage {
		if spec, err = cv.c.versions[from].toStorage.apply(cv.ctx, spec, cv.budget); err != nil {
			return nil, err
		}
	}
	if to != cv.c.storage {
		if spec, err = cv.c.versions[to].fromStorage.apply(cv.ctx, spec, cv.budget); err != nil {
			return nil, err
		}
	}
	if from == cv.c.storage && to == cv.c.storage {
		spec, _ = deepCopy(spec).(map[string]any)
	}
	return spec, nil
}

// prune drops what version v's schema does not hold.
func (cv *conversion) prune(spec map[string]any, v string) {
	if s := cv.c.versions[v].schema; s != nil {
		pruning.Prune(spec, s, false)
	}
}

// reconstruct converts spec (in from) to the version to, restoring the
// record of to when the object has one. A record written when the
// object went from to into a version other than from is restored over
// that version's reconstruction, so that a chain (v1 to v2 to v3, then
// v1) returns what v1 held.
func (cv *conversion) reconstruct(spec map[string]any, from, to string) (map[string]any, error) {
	r := cv.records[to]
	if r == nil || cv.visited[to] {
		out, err := cv.forward(spec, from, to)
		if err == nil {
			cv.prune(out, to)
		}
		return out, err
	}
	cv.visited[to] = true
	base, baseVersion := spec, from
	if r.To != from && cv.c.versions[r.To] != nil && !cv.visited[r.To] {
		mid, err := cv.reconstruct(spec, from, r.To)
		if err != nil {
			return nil, err
		}
		base, baseVersion = mid, r.To
	}
	out, err := cv.forward(base, baseVersion, to)
	if err != nil {
		return nil, err
	}
	r.restore(out)
	cv.consumed = append(cv.consumed, to)
	cv.prune(out, to)
	return out, nil
}

// lost is what converting result (in to) back to from does not return
// of src: the fields to restore when the object converts back.
func (cv *conversion) lost(src, result map[string]any, from, to string) (*record, error) {
	back, err := cv.forward(result, to, from)
	if err != nil {
		return nil, err
	}
	cv.prune(back, from)
	var fields []lostField
	diff(src, back, nil, func(path []string, s, b any, inSrc, inBack bool) {
		f := lostField{Path: path, Value: s, Absent: !inSrc, Base: hashOf(b, inBack)}
		if !inSrc {
			f.Value = nil
		}
		fields = append(fields, f)
	})
	if len(fields) == 0 {
		return nil, nil
	}
	return &record{To: to, Fields: fields}, nil
}

// diff calls fn for every path where a and b differ: maps are compared
// key by key, anything else whole.
func diff(a, b any, path []string, fn func(path []string, a, b any, inA, inB bool)) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !equal(a, b) {
			fn(path, a, b, true, true)
		}
		return
	}
	keys := make([]string, 0, len(am)+len(bm))
	for k := range am {
		keys = append(keys, k)
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := append(append([]string(nil), path...), k)
		av, inA := am[k]
		bv, inB := bm[k]
		if inA && inB {
			diff(av, bv, p, fn)
			continue
		}
		fn(p, av, bv, inA, inB)
	}
}

// RoundTrip converts obj to the version via and back, and returns the
// paths (spec.x.y) where what comes back differs from obj's spec, and
// metadata.annotations.conversion.stencil.dev/<version> for a conversion
// annotation left behind that obj did not have. A good conversion loses
// nothing: the list is empty.
func (c *Converter) RoundTrip(obj map[string]any, via string) ([]string, error) {
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, err
	}
	mid, err := c.Convert(obj, via)
	if err != nil {
		return nil, err
	}
	back, err := c.Convert(mid, from)
	if err != nil {
		return nil, fmt.Errorf("back: %w", err)
	}
	src, _, _ := specOf(obj)
	got, _, err := specOf(back)
	if err != nil {
		return nil, err
	}
	lost := paths("spec", src, got)
	before := annotations(obj)
	for k, v := range annotations(back) {
		if strings.HasPrefix(k, AnnotationPrefix) && !equal(before[k], v) {
			lost = append(lost, "metadata.annotations."+k)
		}
	}
	sort.Strings(lost)
	return lost, nil
}

// AnnotatedFields lists the paths (spec.x.y) of obj's spec that
// converting it to the version to keeps only in the annotation: fields
// to cannot hold, or that the rules do not carry over. A round trip
// restores them, but the target version (and the templates, when it is
// the render version) never sees them: `stencil bundle lint` warns of
// them.
func (c *Converter) AnnotatedFields(obj map[string]any, to string) ([]string, error) {
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, err
	}
	out, err := c.Convert(obj, to)
	if err != nil || from == to {
		return nil, err
	}
	r := records(out)[from]
	if r == nil {
		return nil, nil
	}
	var paths []string
	for _, f := range r.Fields {
		if !f.Absent {
			paths = append(paths, strings.Join(append([]string{"spec"}, f.Path...), "."))
		}
	}
	sort.Strings(paths)
	return paths, nil
}
