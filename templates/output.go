package templates

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/kubeapi"
	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MaxObjectBytes is the largest object a render may produce, serialized as
// JSON: 1.5 MiB, what the API server stores (etcd's default request limit,
// --max-request-bytes; the API server's own request body limit is 3 MiB).
const MaxObjectBytes = 3 << 19

// maxListNesting bounds Lists in Lists.
const maxListNesting = 10

// parseDocuments splits one template's output into YAML documents, drops
// the empty ones, parses the rest strictly (a duplicate key is an error
// with its line) and expands Lists into their items, as kubectl does.
// It returns, for each object, the line of out where its document starts.
func parseDocuments(file, out string) ([]*unstructured.Unstructured, []int, error) {
	if err := checkUTF8(file, out); err != nil {
		return nil, nil, err
	}
	var objs []*unstructured.Unstructured
	var lines []int
	for _, d := range splitDocuments(out) {
		v, size, err := strictyaml.DecodeSized(d.text, MaxOutputBytes)
		if err != nil {
			ye := err.(*strictyaml.Error)
			re := &RenderError{File: file, Line: d.line, Msg: "rendered output is not valid YAML: " + ye.Msg}
			if ye.Line > 0 {
				re.Line += ye.Line - 1
			}
			if strings.Contains(ye.Msg, "Max") || strings.Contains(ye.Msg, "alias") {
				re.Reason = ReasonTooLarge
			}
			return nil, nil, re
		}
		obj, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, nil, &RenderError{File: file, Line: d.line, Msg: "rendered document is not an object"}
		}
		if len(obj) == 0 {
			continue
		}
		if !isList(obj) && size > MaxObjectBytes { // else it is smaller
			if n := objectSize(obj); n > MaxObjectBytes {
				return nil, nil, objectTooLarge(file, d.line, "rendered object", n)
			}
		}
		if objs, err = appendObjects(objs, file, d.line, obj, "rendered object", 0); err != nil {
			return nil, nil, err
		}
		if len(objs) > MaxObjects {
			return nil, nil, tooManyObjects(file, d.line, len(objs))
		}
		for len(lines) < len(objs) {
			lines = append(lines, d.line)
		}
	}
	return objs, lines, nil
}

// checkUTF8 refuses a template's output that is not valid UTF-8, naming
// the line of the output and the column of the first invalid byte: YAML
// would read it and the API server would store U+FFFD in its place.
func checkUTF8(file, out string) error {
	if line, col, b, bad := invalidUTF8(out); bad {
		return &RenderError{File: file, Line: line,
			Msg: fmt.Sprintf("rendered output is not valid UTF-8: byte %#x at column %d", b, col)}
	}
	return nil
}

// invalidUTF8 finds the first byte of s that is not UTF-8: its line and
// column (from 1) and the byte; bad is false when s is valid.
func invalidUTF8(s string) (line, col int, b byte, bad bool) {
	if utf8.ValidString(s) {
		return 0, 0, 0, false
	}
	line, start := 1, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return line, i - start + 1, s[i], true
		case r == '\n':
			line, start = line+1, i+1
		}
		i += size
	}
	return 0, 0, 0, false
}

// isList reports a document kubectl expands: a kind ending in List (v1
// List, ConfigMapList, ...) with an items list (or none).
func isList(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	if !strings.HasSuffix(kind, "List") {
		return false
	}
	switch obj["items"].(type) {
	case []any, nil:
		return true
	}
	return false
}

// appendObjects appends obj, or the items of a List (each checked as any
// other object: what permissions judge downstream is the items), to objs.
// what names obj in errors.
func appendObjects(objs []*unstructured.Unstructured, file string, line int, obj map[string]any, what string, nesting int) ([]*unstructured.Unstructured, error) {
	if !isList(obj) {
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, &RenderError{File: file, Line: line, Msg: what + " needs apiVersion, kind and metadata.name"}
		}
		if nesting > 0 {
			if n := objectSize(obj); n > MaxObjectBytes {
				return nil, objectTooLarge(file, line, what, n)
			}
		}
		return append(objs, u), nil
	}
	if nesting >= maxListNesting {
		return nil, &RenderError{File: file, Line: line, Msg: fmt.Sprintf("%s: Lists nest more than %d deep", what, maxListNesting)}
	}
	items, _ := obj["items"].([]any)
	for i, item := range items {
		itemWhat := fmt.Sprintf("item %d of the List", i)
		if nesting > 0 {
			itemWhat = fmt.Sprintf("%s of %s", itemWhat, what)
		}
		m, ok := item.(map[string]any)
		if !ok {
			return nil, &RenderError{File: file, Line: line, Msg: itemWhat + " is not an object"}
		}
		var err error
		if objs, err = appendObjects(objs, file, line, m, itemWhat, nesting+1); err != nil {
			return nil, err
		}
		if len(objs) > MaxObjects {
			return nil, tooManyObjects(file, line, len(objs))
		}
	}
	return objs, nil
}

func tooManyObjects(file string, line, n int) *RenderError {
	return &RenderError{File: file, Line: line, Reason: ReasonTooLarge, Msg: fmt.Sprintf("the template renders %d objects, more than %d (MaxObjects)", n, MaxObjects)}
}

func objectTooLarge(file string, line int, what string, n int64) *RenderError {
	return &RenderError{File: file, Line: line, Reason: ReasonTooLarge,
		Msg: fmt.Sprintf("%s is %s as JSON, more than the %d the API server stores (MaxObjectBytes)", what, measure.SizeText(n), MaxObjectBytes)}
}

// objectSize is an object's size as JSON: measure's bound, exact (by
// encoding it) when the bound is near MaxObjectBytes.
func objectSize(obj map[string]any) int64 {
	s, err := measure.New("object", MaxObjectBytes).Measure(obj)
	if err == nil && s.Bytes <= MaxObjectBytes {
		return s.Bytes
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return s.Bytes
	}
	return int64(len(data))
}

type document struct {
	text string
	line int // 1-based line of the output where the document starts
}

// splitDocuments splits a template's output into documents as Helm does
// (releaseutil.SplitManifests, then each document printed with a newline
// after it): a line that starts with "---" ends a document, and what
// follows the dashes and blanks on that line begins the next one; each
// document is read with a newline added at its end, so a block scalar
// that ends a template's output keeps its last line break ("{}\n", not
// "{}"), as `helm template` and `helm install` give it.
func splitDocuments(out string) []document {
	var docs []document
	lines := strings.SplitAfter(out, "\n")
	var text strings.Builder
	line := 1
	flush := func() {
		if strings.TrimSpace(text.String()) != "" {
			docs = append(docs, document{text: text.String() + "\n", line: line})
		}
		text.Reset()
	}
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "---")
		if !ok {
			if text.Len() == 0 && strings.TrimSpace(l) == "" {
				line = i + 2 // blank lines before a document are not its own
				continue
			}
			text.WriteString(l)
			continue
		}
		flush()
		line = i + 1
		if rest = strings.TrimLeft(rest, " \t"); strings.TrimSpace(rest) != "" {
			text.WriteString(rest)
		} else {
			line = i + 2
		}
	}
	flush()
	return docs
}

// parseOutputs parses the output of each emitted template (in order)
// and checks the objects as a whole (checkObjects).
func parseOutputs(units []unit, outputs map[string]string, namespace string, clusterScoped map[string]bool) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	var sources []source
	for _, u := range units {
		docs, lines, err := parseDocuments(u.file, outputs[u.key])
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
		for _, l := range lines {
			sources = append(sources, source{file: u.file, line: l})
		}
	}
	return objs, checkObjects(objs, sources, namespace, clusterScoped)
}

// source is where an object was rendered: a template and the line of
// its output where its document starts (0 for kustomize's).
type source struct {
	file string
	line int
}

func (s source) String() string {
	if s.line == 0 {
		return s.file
	}
	return s.file + ":" + strconv.Itoa(s.line)
}

// checkObjects enforces the object bounds (MaxObjects, MaxObjectBytes)
// and refuses two objects that are one once placed in namespace (the
// Composition's), naming where each was rendered. reconcile's placement
// catches the rest: kinds whose scope only the cluster knows. The objects of a
// template were measured as they were parsed (parseDocuments,
// appendObjects): only kustomize's are measured here.
//
// A kind is cluster-scoped when it is a built-in one, one of
// clusterScoped (group/Kind: what the cluster serves cluster-scoped, from
// .Capabilities), or one a CustomResourceDefinition of this render
// declares Cluster: the duplicate is named here, with both templates.
// (Which CRD is believed for a kind's scope when they disagree is the
// plan's to decide; here a rendered CRD only finds more duplicates.)
func checkObjects(objs []*unstructured.Unstructured, sources []source, namespace string, clusterScoped map[string]bool) error {
	if len(objs) > MaxObjects {
		return &RenderError{Reason: ReasonTooLarge, Msg: fmt.Sprintf("render produced %d objects, more than %d (MaxObjects)", len(objs), MaxObjects)}
	}
	rendered := renderedClusterKinds(objs)
	seen := map[string]int{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		if sources[i].file == KustomizationFile {
			if n := objectSize(o.Object); n > MaxObjectBytes {
				return objectTooLarge(sources[i].file, 0, fmt.Sprintf("%s %q", gvk.Kind, o.GetName()), n)
			}
		}
		ns := o.GetNamespace()
		switch {
		case kubeapi.ClusterScoped(gvk.Group, gvk.Kind), clusterScoped[gvk.Group+"/"+gvk.Kind], rendered[gvk.Group+"/"+gvk.Kind]:
			ns = "" // placed without one
		case ns == "":
			ns = namespace // where a namespaced object is placed (or a cluster-scoped one, without one either way)
		}
		key := gvk.Group + "/" + gvk.Kind + "/" + ns + "/" + o.GetName()
		if first, ok := seen[key]; ok {
			how := ""
			switch a, b := objs[first].GetNamespace(), o.GetNamespace(); {
			case a == b:
			case a == "" || b == "":
				how = " (once with a namespace, once without)"
			default:
				how = fmt.Sprintf(" (in namespaces %q and %q of a cluster-scoped kind)", a, b)
			}
			return &RenderError{File: sources[i].file, Line: sources[i].line,
				Msg: fmt.Sprintf("%s %q is rendered twice%s: by %s and by %s", gvk.Kind, o.GetName(), how, sources[first], sources[i])}
		}
		seen[key] = i
	}
	return nil
}

// renderedClusterKinds is the set (group/Kind) of the kinds the
// CustomResourceDefinitions among objs declare cluster-scoped.
func renderedClusterKinds(objs []*unstructured.Unstructured) map[string]bool {
	var out map[string]bool
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		if scope == "Cluster" && kind != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[group+"/"+kind] = true
		}
	}
	return out
}
