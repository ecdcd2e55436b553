package migrate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// edits are the field paths one rewrite of a document changed.
type edits struct {
	removed, added, changed []string
	// moved pairs a removed path with the added one holding its value.
	moved [][2]string
}

// empty reports whether nothing changed.
func (e *edits) empty() bool {
	return len(e.removed)+len(e.added)+len(e.changed)+len(e.moved) == 0
}

// String lists the edits: moves (a → b), then changed, added and removed
// fields.
func (e *edits) String() string {
	var parts []string
	for _, m := range e.moved {
		parts = append(parts, m[0]+" → "+m[1])
	}
	for _, group := range []struct {
		label string
		paths []string
	}{{"changed", e.changed}, {"added", e.added}, {"removed", e.removed}} {
		if len(group.paths) > 0 {
			parts = append(parts, group.label+" "+strings.Join(group.paths, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// pairMoves turns a removed path and an added one that hold the same
// value (before and after) into a move.
func (e *edits) pairMoves(before, after any) {
	for i := 0; i < len(e.removed); i++ {
		old, ok := lookup(before, e.removed[i])
		if !ok {
			continue
		}
		for j, a := range e.added {
			if v, ok := lookup(after, a); ok && equal(old, v) {
				e.moved = append(e.moved, [2]string{e.removed[i], a})
				e.removed = slices.Delete(e.removed, i, i+1)
				e.added = slices.Delete(e.added, j, j+1)
				i--
				break
			}
		}
	}
}

// lookup returns the value at a dot-separated path of v.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// sync makes node hold want, changing as few nodes as it can: a mapping
// keeps its keys' order, comments and styles, drops the keys want lacks
// and appends those it adds (a key renamed within a mapping, its value
// unchanged, keeps its place and comments); a sequence of the same length
// is synced item by item; a scalar equal to want is kept as written.
// Every other node is replaced by want encoded, keeping its comments.
func sync(node *kyaml.Node, want any, path string, e *edits) error {
	if node.Kind == kyaml.DocumentNode && len(node.Content) == 1 {
		return sync(node.Content[0], want, path, e)
	}
	switch w := want.(type) {
	case map[string]any:
		if node.Kind == kyaml.MappingNode {
			return syncMap(node, w, path, e)
		}
	case []any:
		if node.Kind == kyaml.SequenceNode && len(node.Content) == len(w) {
			for i, item := range node.Content {
				if err := sync(item, w[i], fmt.Sprintf("%s[%d]", path, i), e); err != nil {
					return err
				}
			}
			return nil
		}
	}
	have, err := nodeValue(node)
	if err != nil {
		return err
	}
	if equal(have, want) {
		return nil
	}
	if err := replace(node, want); err != nil {
		return err
	}
	e.changed = append(e.changed, path)
	return nil
}

// syncMap syncs a mapping node with want.
func syncMap(node *kyaml.Node, want map[string]any, path string, e *edits) error {
	have := map[string]bool{}
	var gone []int // indexes of keys want lacks
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i].Value
		have[k] = true
		if v, ok := want[k]; ok {
			if err := sync(node.Content[i+1], v, join(path, k), e); err != nil {
				return err
			}
			continue
		}
		gone = append(gone, i)
	}
	var added []string
	for k := range want {
		if !have[k] {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	added, gone, err := renameInPlace(node, want, added, gone, path, e)
	if err != nil {
		return err
	}
	for _, i := range slices.Backward(gone) {
		e.removed = append(e.removed, join(path, node.Content[i].Value))
		node.Content = slices.Delete(node.Content, i, i+2)
	}
	for _, k := range added {
		v := &kyaml.Node{}
		if err := v.Encode(want[k]); err != nil {
			return fmt.Errorf("%s: %w", join(path, k), err)
		}
		node.Content = append(node.Content, &kyaml.Node{Kind: kyaml.ScalarNode, Tag: "!!str", Value: k}, v)
		e.added = append(e.added, join(path, k))
	}
	return nil
}

// renameInPlace renames, in place, a key want lacks whose value is the
// value of a key want adds: the field moved within the mapping and keeps
// its place and comments. It returns the added keys and gone indexes
// left.
func renameInPlace(node *kyaml.Node, want map[string]any, added []string, gone []int, path string, e *edits) ([]string, []int, error) {
	for gi := 0; gi < len(gone); gi++ {
		i := gone[gi]
		old, err := nodeValue(node.Content[i+1])
		if err != nil {
			return nil, nil, err
		}
		for ai, k := range added {
			if equal(old, want[k]) {
				e.moved = append(e.moved, [2]string{join(path, node.Content[i].Value), join(path, k)})
				node.Content[i].Value = k
				added = slices.Delete(added, ai, ai+1)
				gone = slices.Delete(gone, gi, gi+1)
				gi--
				break
			}
		}
	}
	return added, gone, nil
}

// replace makes node hold v, encoded, keeping the node's comments.
func replace(node *kyaml.Node, v any) error {
	n := &kyaml.Node{}
	if err := n.Encode(v); err != nil {
		return err
	}
	n.HeadComment, n.LineComment, n.FootComment = node.HeadComment, node.LineComment, node.FootComment
	*node = *n
	return nil
}

// join appends key k to a dot-separated path.
func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// nodeValue is the JSON value a node stands for, as kubectl reads YAML
// (sigs.k8s.io/yaml: YAML 1.1 scalars such as y and on are booleans, a
// timestamp stays a string, integers are int64), so that a node is
// compared with what the object it was read into holds.
func nodeValue(n *kyaml.Node) (any, error) {
	text, err := kyaml.Marshal(n)
	if err != nil {
		return nil, err
	}
	return decodeYAML(text)
}

// decodeYAML reads one YAML document as kubectl does.
func decodeYAML(text []byte) (any, error) {
	js, err := sigsyaml.YAMLToJSON(text)
	if err != nil {
		return nil, err
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// equal compares two JSON values, whatever Go types hold their numbers.
func equal(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var na, nb any
	if utiljson.Unmarshal(ja, &na) != nil || utiljson.Unmarshal(jb, &nb) != nil {
		return false
	}
	ca, _ := json.Marshal(na)
	cb, _ := json.Marshal(nb)
	return string(ca) == string(cb)
}
