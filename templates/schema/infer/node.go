package infer

import (
	"slices"
	"strings"
)

// This file holds the tree of values paths the inference builds: one
// node per path that a values.yaml sets or a template reads, with what
// each says of it. emit.go writes it as a schema, undeclared.go checks
// the reads against the bundle's own schema and values.

// kind is a set of JSON types a node's values take in values.yaml.
type kind uint8

const (
	kObject kind = 1 << iota
	kArray
	kString
	kInteger
	kNumber
	kBoolean
)

// itemKey is the key of a node's items in paths: an element of a list,
// or any entry of a map whose keys are computed.
const itemKey = "[]"

// node is one values path.
type node struct {
	id     int
	parent *node
	key    string // its key in parent; itemKey for parent's items
	props  map[string]*node
	items  *node

	// What values.yaml files say.
	kinds      kind // the types they give it
	fromValues bool // a values.yaml sets it (to null too)
	emptyMap   bool // to {} somewhere: its keys are the user's
	emptyList  bool // to [] somewhere
	null       bool // to null somewhere: its shape is not given
	defaultSet bool // def holds the first scalar or list a values.yaml gives
	def        any

	// What the templates do with it.
	read       bool // a template reads it
	objectUse  bool // a template reads a field of it
	ranged     bool // a template ranges over it (or takes an element)
	dynamic    bool // a template reads it by computed keys: its keys are the user's
	free       bool // passed whole to toYaml, toJson, tpl...: any content below
	anyType    bool // a template tests its type, or passes it to tpl: any type
	written    bool // a template sets it (set, merge into it)
	chartRoot  bool // a chart's .Values, which has AsMap, Table and PathValue
	tplDefault any  // the literal a template's default gives it
	tplDefSet  bool // tplDefault is set
	tplDefBad  bool // templates give it different literal defaults
}

// tree is the nodes of one inference.
type tree struct {
	ids    int
	root   *node
	global *node // the root's global, which every subchart's global is
}

func newTree() *tree {
	t := &tree{}
	t.root = t.newNode(nil, "")
	t.root.kinds = kObject
	return t
}

func (t *tree) newNode(parent *node, key string) *node {
	t.ids++
	return &node{id: t.ids, parent: parent, key: key}
}

// child returns n's child k, made when missing.
func (t *tree) child(n *node, k string) *node {
	if c := n.props[k]; c != nil {
		return c
	}
	if n.props == nil {
		n.props = map[string]*node{}
	}
	c := t.newNode(n, k)
	n.props[k] = c
	return c
}

// item returns n's items, made when missing.
func (t *tree) item(n *node) *node {
	if n.items == nil {
		n.items = t.newNode(n, itemKey)
	}
	return n.items
}

// at returns the node at path from n, made when missing.
func (t *tree) at(n *node, path []string) *node {
	for _, k := range path {
		n = t.child(n, k)
	}
	return n
}

// addValue records what a values.yaml gives n: v, as chart.ParseValues
// reads it. The first value given is the default (the root's
// values.yaml comes before its subcharts', and wins, as in Helm).
func (t *tree) addValue(n *node, v any) {
	n.fromValues = true
	switch x := v.(type) {
	case nil:
		n.null = true
	case map[string]any:
		n.kinds |= kObject
		if len(x) == 0 {
			n.emptyMap = true
		}
		for _, k := range sortedKeys(x) {
			t.addValue(t.child(n, k), x[k])
		}
	case []any:
		n.kinds |= kArray
		if len(x) == 0 {
			n.emptyList = true
		}
		n.setDefault(x)
		for _, e := range x {
			t.addValue(t.item(n), e)
		}
	case string:
		n.kinds |= kString
		n.setDefault(x)
	case bool:
		n.kinds |= kBoolean
		n.setDefault(x)
	case int64, int, int32, uint64:
		n.kinds |= kInteger
		n.setDefault(x)
	case float64, float32:
		n.kinds |= kNumber
		n.setDefault(x)
	default:
		n.null = true // nothing else comes out of values.yaml
	}
}

func (n *node) setDefault(v any) {
	if !n.defaultSet {
		n.defaultSet, n.def = true, v
	}
}

// path is the keys from the root to n.
func (n *node) path() []string {
	var p []string
	for c := n; c.parent != nil; c = c.parent {
		p = append(p, c.key)
	}
	slices.Reverse(p)
	return p
}

// unchecked reports whether what a template reads at n is no misspelling
// to warn of: a template writes n or a node above it (what it reads may
// be what a template put), or writes out whole a node above it (toYaml:
// a free-form value, a Kubernetes field such as
// podSecurityContext.seLinuxOptions read below it is the user's to set).
func (n *node) unchecked() bool {
	for c := n; c != nil; c = c.parent {
		if c.written || c != n && c.free {
			return true
		}
	}
	return false
}

// spell writes path as a template spells it: .Values.a.b, an element
// as a[].
func spell(path []string) string {
	var b strings.Builder
	b.WriteString(".Values")
	for _, k := range path {
		if k == itemKey {
			b.WriteString(itemKey)
			continue
		}
		b.WriteByte('.')
		b.WriteString(k)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
