package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/budget"
	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Bounds of the objects of one render. Exceeding one is a RenderError of
// Reason ReasonTooLarge, never a crash.
const (
	// MaxObjectBytes is the largest object a render may produce, serialized as
	// JSON: 1.5 MiB, what the API server stores (etcd's default request limit,
	// --max-request-bytes; the API server's own request body limit is 3 MiB).
	MaxObjectBytes = 3 << 19
	// MaxObjects is the most objects one render may produce.
	MaxObjects = 2000
)

// maxListNesting bounds Lists in Lists.
const maxListNesting = 10

// Parse splits one template's output into YAML documents (Split), drops
// the empty ones, parses the rest strictly (a duplicate key is an error
// with its line) and expands Lists into their items, as kubectl does.
// It returns, for each object, the line of out where its document starts.
// Each object is within MaxObjectBytes, and they are at most MaxObjects.
func Parse(file, out string) ([]*unstructured.Unstructured, []int, error) {
	if err := CheckUTF8(file, out); err != nil {
		return nil, nil, err
	}
	var objs []*unstructured.Unstructured
	var lines []int
	for _, d := range Split(out) {
		v, size, err := strictyaml.DecodeSized(d.Text, budget.MaxOutputBytes)
		if err != nil {
			ye := strictyaml.AsError(err)
			re := &fault.RenderError{File: file, Line: d.Line, Msg: "rendered output is not valid YAML: " + ye.Msg}
			if ye.Line > 0 {
				re.Line += ye.Line - 1
			}
			if strings.Contains(ye.Msg, "Max") || strings.Contains(ye.Msg, "alias") {
				re.Reason = fault.ReasonTooLarge
			}
			return nil, nil, re
		}
		obj, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, nil, &fault.RenderError{File: file, Line: d.Line, Msg: "rendered document is not an object"}
		}
		if len(obj) == 0 {
			continue
		}
		if !isList(obj) && size > MaxObjectBytes { // else it is smaller
			if n := objectSize(obj); n > MaxObjectBytes {
				return nil, nil, objectTooLarge(file, d.Line, "rendered object", n)
			}
		}
		if objs, err = appendObjects(objs, file, d.Line, obj, "rendered object", 0); err != nil {
			return nil, nil, err
		}
		if len(objs) > MaxObjects {
			return nil, nil, TooManyObjects(file, d.Line, len(objs))
		}
		for len(lines) < len(objs) {
			lines = append(lines, d.Line)
		}
	}
	return objs, lines, nil
}

// CheckUTF8 refuses a template's output that is not valid UTF-8, naming
// the line of the output and the column of the first invalid byte: YAML
// would read it and the API server would store U+FFFD in its place.
func CheckUTF8(file, out string) error {
	if line, col, b, bad := InvalidUTF8(out); bad {
		return &fault.RenderError{File: file, Line: line,
			Msg: fmt.Sprintf("rendered output is not valid UTF-8: byte %#x at column %d", b, col)}
	}
	return nil
}

// InvalidUTF8 finds the first byte of s that is not UTF-8: its line and
// column (from 1) and the byte; bad is false when s is valid.
func InvalidUTF8(s string) (line, col int, b byte, bad bool) {
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
			return nil, &fault.RenderError{File: file, Line: line, Msg: what + " needs apiVersion, kind and metadata.name"}
		}
		if nesting > 0 {
			if n := objectSize(obj); n > MaxObjectBytes {
				return nil, objectTooLarge(file, line, what, n)
			}
		}
		return append(objs, u), nil
	}
	if nesting >= maxListNesting {
		return nil, &fault.RenderError{File: file, Line: line, Msg: fmt.Sprintf("%s: Lists nest more than %d deep", what, maxListNesting)}
	}
	items, _ := obj["items"].([]any)
	for i, item := range items {
		itemWhat := fmt.Sprintf("item %d of the List", i)
		if nesting > 0 {
			itemWhat = fmt.Sprintf("%s of %s", itemWhat, what)
		}
		m, ok := item.(map[string]any)
		if !ok {
			return nil, &fault.RenderError{File: file, Line: line, Msg: itemWhat + " is not an object"}
		}
		var err error
		if objs, err = appendObjects(objs, file, line, m, itemWhat, nesting+1); err != nil {
			return nil, err
		}
		if len(objs) > MaxObjects {
			return nil, TooManyObjects(file, line, len(objs))
		}
	}
	return objs, nil
}

// TooManyObjects is the error of file rendering n objects, more than
// MaxObjects, at line (0 for the file as a whole).
func TooManyObjects(file string, line, n int) *fault.RenderError {
	return &fault.RenderError{File: file, Line: line, Reason: fault.ReasonTooLarge, Msg: fmt.Sprintf("the template renders %d objects, more than %d (MaxObjects)", n, MaxObjects)}
}

func objectTooLarge(file string, line int, what string, n int64) *fault.RenderError {
	return &fault.RenderError{File: file, Line: line, Reason: fault.ReasonTooLarge,
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

// Document is one YAML document of a template's output.
type Document struct {
	// Text is the document, with a newline added at its end.
	Text string
	// Line is the line of the output where the document starts, from 1.
	Line int
}

// Split splits a template's output into documents as Helm does
// (releaseutil.SplitManifests, then each document printed with a newline
// after it): a line that starts with "---" ends a document, and what
// follows the dashes and blanks on that line begins the next one; each
// document is read with a newline added at its end, so a block scalar
// that ends a template's output keeps its last line break ("{}\n", not
// "{}"), as `helm template` and `helm install` give it.
func Split(out string) []Document {
	var docs []Document
	lines := strings.SplitAfter(out, "\n")
	var text strings.Builder
	line := 1
	flush := func() {
		if strings.TrimSpace(text.String()) != "" {
			docs = append(docs, Document{Text: text.String() + "\n", Line: line})
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
