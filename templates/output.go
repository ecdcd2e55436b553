package templates

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// parseDocuments splits one template's output into YAML documents, drops
// the empty ones and parses the rest.
func parseDocuments(file, out string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, d := range splitDocuments(out) {
		js, err := yaml.YAMLToJSON([]byte(d.text))
		if err != nil {
			line := d.line
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				line += n - 1
			}
			return nil, &RenderError{File: file, Line: line, Msg: "rendered output is not valid YAML (line of the output): " + err.Error(), Err: err}
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return nil, &RenderError{File: file, Line: d.line, Msg: "rendered document is not an object", Err: err}
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, &RenderError{File: file, Line: d.line, Msg: "rendered object needs apiVersion, kind and metadata.name"}
		}
		objs = append(objs, u)
	}
	return objs, nil
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

// checkObjects enforces the object bound and refuses duplicates; sources
// names the file each object came from.
func checkObjects(objs []*unstructured.Unstructured, sources []string) error {
	if len(objs) > MaxObjects {
		return &RenderError{Msg: fmt.Sprintf("render produced %d objects, more than %d", len(objs), MaxObjects)}
	}
	seen := map[string]string{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if first, ok := seen[key]; ok {
			return &RenderError{File: sources[i], Msg: fmt.Sprintf("%s %q is rendered twice (first by %s)", gvk.Kind, o.GetName(), first)}
		}
		seen[key] = sources[i]
	}
	return nil
}
