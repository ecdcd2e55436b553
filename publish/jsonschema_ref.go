package publish

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ref inlines a local reference (#/definitions/NAME, #/$defs/NAME or any
// JSON pointer into the document). It reads the raw document, not the
// schema santhosh-tekuri/jsonschema compiles from it (templates), because
// the CRD needs what the compiled schema drops (x-kubernetes-* keywords,
// the pointer of each keyword for errors); the references it follows are
// those that mean the same JSON pointer to the library in every draft,
// and every other one is an error, never a different reading. Siblings that annotate (description,
// title, default) apply over the target; others are an error, since
// drafts disagree on them. A reference to itself, directly or not, is
// an error: a CRD schema is a tree.
func (c *converter) ref(s map[string]any, ref, ptr string, valueOnly bool) map[string]any {
	at := ptr + "/$ref"
	if !strings.HasPrefix(ref, "#") {
		c.fail(at, "only a reference inside values.schema.json (#/definitions/NAME or #/$defs/NAME) can be inlined into a CRD schema")
		return nil
	}
	if c.ids > 0 {
		// The validator (santhosh-tekuri/jsonschema) resolves it against
		// that $id's document, this pointer lookup against the file's.
		c.fail(at, "a $ref under a nested $id refers into that $id's document: remove the $id so that the reference means the same to the CRD as to the values schema")
		return nil
	}
	target := strings.TrimPrefix(ref, "#")
	if slices.Contains(c.refs, target) {
		c.fail(at, "a recursive reference cannot be expressed in a CRD schema, which is a tree")
		return nil
	}
	v, ok := resolvePointer(c.doc, target)
	if !ok {
		c.fail(at, "the reference points to nothing in values.schema.json")
		return nil
	}
	c.refs = append(c.refs, target)
	out := c.node(v, target, valueOnly)
	c.refs = c.refs[:len(c.refs)-1]
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == "$ref" || annotationKeywords[k] && k != "title":
		case k == "description" || k == "title" || k == "default":
			if out != nil && !valueOnly {
				c.keyword(out, s, k, ptr+"/"+escapePointer(k), false)
			}
		default:
			c.fail(ptr+"/"+escapePointer(k), k+" beside $ref: move it into the schema the reference points to")
		}
	}
	return out
}

// resolvePointer follows a JSON pointer ("" is the whole document).
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
		switch n := cur.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			cur = n[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// escapePointer escapes a JSON pointer token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
