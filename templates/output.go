package templates

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
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
func parseDocuments(file, out string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, d := range splitDocuments(out) {
		js, err := yamlToJSON([]byte(d.text), MaxOutputBytes)
		if err != nil {
			ye := err.(*yamlError)
			re := &RenderError{File: file, Line: d.line, Msg: "rendered output is not valid YAML: " + ye.msg}
			if ye.line > 0 {
				re.Line += ye.line - 1
			}
			if strings.Contains(ye.msg, "Max") || strings.Contains(ye.msg, "alias") {
				re.Reason = ReasonTooLarge
			}
			return nil, re
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return nil, &RenderError{File: file, Line: d.line, Msg: "rendered document is not an object"}
		}
		if len(obj) == 0 {
			continue
		}
		if !isList(obj) && len(js) > MaxObjectBytes {
			return nil, objectTooLarge(file, d.line, "rendered object", int64(len(js)))
		}
		if objs, err = appendObjects(objs, file, d.line, obj, "rendered object", 0); err != nil {
			return nil, err
		}
		if len(objs) > MaxObjects {
			return nil, tooManyObjects(file, d.line, len(objs))
		}
	}
	return objs, nil
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
		Msg: fmt.Sprintf("%s is %s as JSON, more than the %d the API server stores (MaxObjectBytes)", what, sizeText(n), MaxObjectBytes)}
}

// objectSize is an object's size as JSON: measure's bound, exact (by
// encoding it) when the bound is near MaxObjectBytes.
func objectSize(obj map[string]any) int64 {
	s, err := newMeasurer("object", MaxObjectBytes).measure(obj)
	if err == nil && s.bytes <= MaxObjectBytes {
		return s.bytes
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return s.bytes
	}
	return int64(len(data))
}

type document struct {
	text string
	line int // 1-based line of the output where the document starts
}

// splitDocuments splits at lines that are exactly "---" (as YAML streams).
func splitDocuments(out string) []document {
	var docs []document
	lines := strings.SplitAfter(out, "\n")
	start := 0
	flush := func(end int) {
		text := strings.Join(lines[start:end], "")
		if strings.TrimSpace(text) != "" {
			docs = append(docs, document{text: text, line: start + 1})
		}
	}
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- ") {
			flush(i)
			start = i + 1
		}
	}
	flush(len(lines))
	return docs
}

// checkObjects enforces the object bounds (MaxObjects, MaxObjectBytes)
// and refuses duplicates; sources names the file each object came from.
func checkObjects(objs []*unstructured.Unstructured, sources []string) error {
	if len(objs) > MaxObjects {
		return &RenderError{Reason: ReasonTooLarge, Msg: fmt.Sprintf("render produced %d objects, more than %d (MaxObjects)", len(objs), MaxObjects)}
	}
	seen := map[string]string{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		if n := objectSize(o.Object); n > MaxObjectBytes {
			return objectTooLarge(sources[i], 0, fmt.Sprintf("%s %q", gvk.Kind, o.GetName()), n)
		}
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if first, ok := seen[key]; ok {
			return &RenderError{File: sources[i], Msg: fmt.Sprintf("%s %q is rendered twice (first by %s)", gvk.Kind, o.GetName(), first)}
		}
		seen[key] = sources[i]
	}
	return nil
}
