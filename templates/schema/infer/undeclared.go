package infer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/templates"
)

// Warning is a .Values path a template reads that neither a values.yaml
// sets nor the bundle's schema declares: a misspelling renders an empty
// string, silently.
type Warning struct {
	// File and Line are where the template reads it.
	File string
	Line int
	// Path is the path as the template spells it, from its chart's
	// .Values (.Values.replicaCount).
	Path string
	// Suggestion is the declared path nearest by edit distance, "" when
	// none is near.
	Suggestion string
	// Schemas names the schema files the bundle has, "" when none.
	Schemas string
}

// String is the warning as lint prints it:
// templates/deploy.yaml:12: .Values.replicaCount is read but neither
// values.yaml nor values.schema.json declares it (did you mean
// .Values.replicas?).
func (w Warning) String() string {
	return w.say([]string{w.Path})
}

// say is the warning of paths read at w's file and line.
func (w Warning) say(paths []string) string {
	var b strings.Builder
	verb, it := "is", "it"
	if len(paths) > 1 {
		verb, it = "are", "them"
	}
	fmt.Fprintf(&b, "%s:%d: %s %s read but ", w.File, w.Line, strings.Join(paths, ", "), verb)
	if w.Schemas == "" {
		fmt.Fprintf(&b, "values.yaml does not set %s", it)
	} else {
		fmt.Fprintf(&b, "neither values.yaml nor %s declares %s", w.Schemas, it)
	}
	if w.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", w.Suggestion)
	}
	return b.String()
}

// Lines are the warnings as lint prints them: one a line, but those of
// one file and line that suggest nothing in one, naming every path (a
// helper reading .fullnameOverride of each component it is called for).
func Lines(ws []Warning) []string {
	type at struct {
		file    string
		line    int
		schemas string
	}
	group := map[at]int{} // the index in heads of a line's warning without a suggestion
	var heads []Warning
	var paths [][]string
	for _, w := range ws {
		if w.Suggestion == "" {
			k := at{w.File, w.Line, w.Schemas}
			if i, ok := group[k]; ok {
				paths[i] = append(paths[i], w.Path)
				continue
			}
			group[k] = len(heads)
		}
		heads = append(heads, w)
		paths = append(paths, []string{w.Path})
	}
	out := make([]string, len(heads))
	for i, w := range heads {
		out[i] = w.say(paths[i])
	}
	return out
}

// Undeclared lists, by file and line, the .Values paths b's templates
// read (through a value known to be that path: not one of the
// alternatives of default or coalesce, not a key computed at render
// time, not below what a template sets itself or writes out whole with
// toYaml, toJson or tpl) that no values.yaml sets
// and, when b has a schema (values.schema.json, or spec.schema:
// values.schema.yaml), the schema does not declare either. A path
// below a value values.yaml sets to {} or null, or below an object the
// schema leaves open, is declared. A template that does not parse is its
// RenderError.
func Undeclared(b *templates.Bundle) ([]Warning, error) {
	r, err := Bundle(b)
	if err != nil {
		return nil, err
	}
	spec := b.Spec()
	var docs []schemaDoc
	var names []string
	if s, ok := spec.Files[templates.SchemaFileJSON]; ok {
		names = append(names, templates.SchemaFileJSON)
		docs = appendDoc(docs, []byte(s), nil)
	}
	if spec.Schema != nil {
		names = append(names, templates.SchemaFileYAML)
		docs = appendDoc(docs, spec.Schema.Raw, nil)
	}
	for _, u := range r.parsed.Charts[1:] {
		if u.JSONSchema != "" {
			docs = appendDoc(docs, []byte(u.JSONSchema), u.Path)
		}
	}
	c := &checker{t: r.tree, docs: docs, schemas: names}
	return c.warnings(r), nil
}

// schemaDoc is a schema of the values at path (a subchart's own).
type schemaDoc struct {
	doc  any
	path []string
}

func appendDoc(docs []schemaDoc, raw []byte, path []string) []schemaDoc {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return docs // a schema that does not load fails the bundle's load
	}
	return append(docs, schemaDoc{doc: doc, path: path})
}

type checker struct {
	t    *tree
	docs []schemaDoc
	// schemas names the root's schema files; a subchart's file names
	// its own values.schema.json too.
	schemas []string
	uses    []templates.ChartUse
}

// warnings are the undeclared reads of r, the longest path of each line.
func (c *checker) warnings(r *Result) []Warning {
	c.uses = r.parsed.Charts
	type at struct {
		file string
		line int
	}
	byLine := map[at][]Read{}
	var order []at
	for _, rd := range r.Reads {
		if !rd.Definite || rd.node.unchecked() || c.declared(rd.Path) {
			continue
		}
		k := at{rd.File, rd.Line}
		if byLine[k] == nil {
			order = append(order, k)
		}
		byLine[k] = append(byLine[k], rd)
	}
	var out []Warning
	for _, k := range order {
		seen := map[string]bool{}
		reads := byLine[k]
		for _, rd := range reads {
			if slices.ContainsFunc(reads, func(o Read) bool { return len(o.Path) > len(rd.Path) && slices.Equal(o.Path[:len(rd.Path)], rd.Path) }) {
				continue // a longer chain of this line says it
			}
			base, use := c.base(rd.File, rd.Path)
			w := Warning{File: rd.File, Line: rd.Line, Path: spell(rd.Path[len(base):]), Schemas: c.schemaNames(use)}
			if s := c.suggest(rd.Path); s != nil {
				w.Suggestion = spell(s[len(base):])
			}
			if !seen[w.Path] {
				seen[w.Path] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// base is the path of the .Values of the chart file belongs to, when
// path is below it (a subchart's global is the root's: not below), and
// that chart's use; the root's when none.
func (c *checker) base(file string, path []string) ([]string, templates.ChartUse) {
	var base []string
	use := c.uses[0]
	for _, u := range c.uses[1:] {
		if !strings.HasPrefix(file, u.Dir+"/") || len(u.Dir) < len(use.Dir) {
			continue
		}
		use = u
		if len(u.Path) <= len(path) && slices.Equal(path[:len(u.Path)], u.Path) {
			base = u.Path
		}
	}
	return base, use
}

// schemaNames names the schema files that could declare what a
// template of use reads: the root's, and use's values.schema.json.
func (c *checker) schemaNames(use templates.ChartUse) string {
	names := c.schemas
	if use.Dir != "" && use.JSONSchema != "" && !slices.Contains(names, templates.SchemaFileJSON) {
		names = append([]string{templates.SchemaFileJSON}, names...)
	}
	return strings.Join(names, " nor ")
}

// declared reports whether a values.yaml sets path or a schema declares
// it.
func (c *checker) declared(path []string) bool {
	if c.byValues(c.t.root, path) {
		return true
	}
	for _, d := range c.docs {
		if len(d.path) <= len(path) && slices.Equal(path[:len(d.path)], d.path) &&
			declares(d.doc, d.doc, path[len(d.path):], 0) {
			return true
		}
		// Every chart's global is the root's: a subchart's schema may
		// declare it.
		if len(d.path) > 0 && len(path) > 0 && path[0] == "global" && declares(d.doc, d.doc, path, 0) {
			return true
		}
	}
	return false
}

// byValues reports whether the values.yaml files set path below n: each
// key set, or a value set to {}, [] or null on the way (what is below
// is the user's).
func (c *checker) byValues(n *node, path []string) bool {
	if len(path) == 0 {
		return n.fromValues || n == c.t.root
	}
	if n != c.t.root && !n.fromValues {
		return false
	}
	if n.emptyMap || n.null || n.emptyList && path[0] == itemKey {
		return true
	}
	if path[0] != itemKey {
		ch := n.props[path[0]]
		return ch != nil && c.byValues(ch, path[1:])
	}
	if n.items != nil && c.byValues(n.items, path[1:]) {
		return true
	}
	for _, ch := range n.props { // an entry of a map
		if ch.fromValues && c.byValues(ch, path[1:]) {
			return true
		}
	}
	return false
}

// maxRefDepth bounds the references followed while checking a path.
const maxRefDepth = 32

// declares reports whether schema s (of document doc) declares path:
// listed in properties (or matched by patternProperties), or below an
// object with an additionalProperties schema or true, one listing no
// properties at all, or x-kubernetes-preserve-unknown-fields; through
// $ref and any branch of allOf, anyOf, oneOf.
func declares(doc, s any, path []string, depth int) bool {
	if depth > maxRefDepth {
		return true
	}
	m, ok := s.(map[string]any)
	if !ok {
		b, isBool := s.(bool)
		return !isBool || b
	}
	if len(path) == 0 || m["x-kubernetes-preserve-unknown-fields"] == true {
		return true
	}
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := resolvePointer(doc, strings.TrimPrefix(ref, "#")); ok && strings.HasPrefix(ref, "#") && declares(doc, target, path, depth+1) {
			return true
		}
	}
	combined := false
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, sub := range list {
			combined = true
			if declares(doc, sub, path, depth+1) {
				return true
			}
		}
	}
	return declaresKey(doc, m, path, depth, combined || m["$ref"] != nil)
}

// declaresKey is declares for the node m itself; only is set when m's
// branches or reference were tried: then m declares only what it lists.
func declaresKey(doc any, m map[string]any, path []string, depth int, only bool) bool {
	k, rest := path[0], path[1:]
	props, hasProps := m["properties"].(map[string]any)
	if k == itemKey {
		if items, ok := m["items"]; ok {
			if list, tuple := items.([]any); tuple {
				return slices.ContainsFunc(list, func(s any) bool { return declares(doc, s, rest, depth+1) })
			}
			return declares(doc, items, rest, depth+1)
		}
		for _, p := range props {
			if declares(doc, p, rest, depth+1) {
				return true
			}
		}
	} else if p, ok := props[k]; ok {
		return declares(doc, p, rest, depth+1)
	}
	pattern, hasPattern := m["patternProperties"].(map[string]any)
	for pat, ps := range pattern {
		if re, err := regexp.Compile(pat); err == nil && re.MatchString(k) && declares(doc, ps, rest, depth+1) {
			return true
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		return ap
	case map[string]any:
		return declares(doc, ap, rest, depth+1)
	}
	if hasProps || hasPattern || only {
		return false
	}
	_, hasItems := m["items"]
	return !hasItems && !scalarOnly(m["type"])
}

// scalarOnly reports whether a schema's type allows no object nor list.
func scalarOnly(t any) bool {
	switch t := t.(type) {
	case string:
		return t != "object" && t != "array"
	case []any:
		for _, x := range t {
			if x == "object" || x == "array" {
				return false
			}
		}
		return len(t) > 0
	}
	return false
}

// resolvePointer is the value at JSON pointer ptr in doc.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
