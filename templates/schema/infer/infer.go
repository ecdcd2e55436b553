package infer

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates"
)

// Result is what Bundle inferred of a bundle's values.
type Result struct {
	// Schema is the values schema: JSON Schema draft-07, as a Helm
	// chart's values.schema.json, in the subset package publish makes a
	// structural CRD schema of.
	Schema map[string]any
	// Reads are the .Values paths the templates read, by file, line and
	// path (from the root's .Values; itemKey "[]" an element).
	Reads []Read
	// Notes say, by file and line, what the walk could not follow (an
	// include of a name computed at render time).
	Notes []string
	// Incomplete is set when the walk stopped at one of its bounds: the
	// schema then closes no object.
	Incomplete bool

	tree   *tree
	parsed *templates.Parsed
}

// Read is a .Values path a template reads.
type Read struct {
	// File and Line are where: the template or helper file, and the
	// line of the field, index or function reading it.
	File string
	Line int
	// Path is the keys from the root's .Values; "[]" is an element of a
	// list (or of a map whose keys the templates compute).
	Path []string
	// Definite is set when what was read from is known to be that one
	// node (not one of several: default .Values.a .Values.b).
	Definite bool

	node *node
}

// Bundle infers the schema of b's values from its values.yaml files
// (the root's and every subchart's, under its alias) and from every
// .Values path its templates read (templates.Bundle.Parse: every chart,
// enabled or not). A template that does not parse is its RenderError.
func Bundle(b *templates.Bundle) (*Result, error) {
	p, err := b.Parse()
	if err != nil {
		return nil, err
	}
	t := newTree()
	w := &walker{p: p, t: t, lines: map[string][]int{}, reads: map[readKey]*Read{}, walked: map[string]bool{}, notes: map[string]bool{}}
	data := chartsData(t, p.Charts)
	for i, u := range p.Charts {
		for _, file := range u.Templates {
			w.unit(file, data[i])
		}
	}
	e := &emitter{t: t, open: w.incomplete, interesting: map[*node]bool{}}
	r := &Result{Schema: e.document(), Reads: w.sortedReads(), Incomplete: w.incomplete, tree: t, parsed: p}
	for n := range w.notes {
		r.Notes = append(r.Notes, n)
	}
	slices.Sort(r.Notes)
	return r, nil
}

// chartsData adds every chart use's values.yaml to t, at its path, and
// returns the data its templates see. A subchart's global is the
// root's: what its values.yaml sets there, and what it reads, is the
// root's global, which Helm copies down.
func chartsData(t *tree, uses []templates.ChartUse) []*value {
	if len(uses) > 1 {
		t.global = t.child(t.root, "global")
	}
	data := make([]*value, len(uses))
	byPath := map[string]*value{}
	for i, u := range uses {
		n := t.at(t.root, u.Path)
		n.chartRoot = true
		if i > 0 {
			if n.props == nil {
				n.props = map[string]*node{}
			}
			n.props["global"] = t.global
		}
		t.addValue(n, u.Defaults)
		// A chart's values are its values.yaml's keys, even when it has
		// none (or its parent's values.yaml gives it {}): not the user's.
		n.emptyMap, n.null = false, false
		subcharts := dictValue()
		data[i] = chartData(u, n, subcharts)
		byPath[strings.Join(u.Path, "\x00")] = subcharts
		if i > 0 {
			parent := byPath[strings.Join(u.Path[:len(u.Path)-1], "\x00")]
			if parent != nil {
				parent.fields[u.Name] = data[i]
			}
		}
	}
	return data
}

// JSON is the schema as a values.schema.json holds it: indented, keys
// sorted, ending in a newline.
func (r *Result) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Schema); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
