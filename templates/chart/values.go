package chart

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/funcs"
	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/schema"
	"github.com/stencil-dev/stencil/templates/strictyaml"
)

// This file computes a render's values for a chart tree as Helm does
// (helm.sh/helm/v4 pkg/chart/v2/util/dependencies.go and
// pkg/chart/common/util/coalesce.go, read, not copied):
//
//  1. The Composition's values are coalesced with every chart's
//     values.yaml (each subchart's under its name, globals copied down).
//  2. Against these, tags and conditions enable or disable each
//     dependency: tags first (any true tag enables, else any false one
//     disables), then the first condition path holding a boolean,
//     evaluated from the root with the parent's path before it. A
//     disabled chart takes its subcharts with it.
//  3. Bottom up, each chart's defaults become its values.yaml merged with
//     its enabled subcharts' (under their names), and then the values
//     its dependencies' import-values bring, which its own values win
//     over.
//  4. The Composition's values are coalesced with these defaults again:
//     the render's .Values. A subchart's .Values is its parent's at the
//     subchart's name, with global.

// globalKey is the values key copied down to every subchart.
const globalKey = "global"

// Instance is a chart as a render uses it: enabled, under its name.
type Instance struct {
	// Chart is the chart used.
	Chart *Node
	// Name is the name it is used under: its alias, else its name.
	Name     string
	dep      *dependency
	path     []string // keys from the root's values to the chart's, nil for the root
	defaults map[string]any
	// Children are its enabled subcharts.
	Children []*Instance
}

// fullTree is the tree of every chart, each with its values.yaml, for
// step 1.
func fullTree(c *Node, name string, path []string) *Instance {
	in := &Instance{Chart: c, Name: name, path: path, defaults: c.Defaults}
	for _, ch := range c.Children {
		in.Children = append(in.Children, fullTree(ch.chart, ch.name, appendPath(path, ch.name)))
		in.Children[len(in.Children)-1].dep = ch.dep
	}
	return in
}

func appendPath(p []string, name string) []string {
	return append(append([]string(nil), p...), name)
}

// Resolve returns the enabled tree, with each chart's defaults
// (steps 2 and 3), for the Composition's values user.
func Resolve(root *Node, rootDefaults map[string]any, user map[string]any) (*Instance, error) {
	full := fullTree(root, "", nil)
	full.defaults = rootDefaults
	cvals, err := Coalesce(full, DeepCopy(user).(map[string]any), false)
	if err != nil {
		return nil, err
	}
	tags, _ := cvals["tags"].(map[string]any)
	enabled := pruneDisabled(full, cvals, tags)
	if err := importValues(enabled); err != nil {
		return nil, err
	}
	return enabled, nil
}

// Everything returns the tree of every chart under root, each under its
// name and none disabled, whatever the values: for a tool that reads
// every chart a bundle holds (templates.Bundle.Parse), not for a render.
func Everything(root *Node) *Instance {
	return fullTree(root, "", nil)
}

// pruneDisabled returns in without the disabled subcharts.
func pruneDisabled(in *Instance, cvals, tags map[string]any) *Instance {
	out := *in
	out.Children = nil
	for _, ch := range in.Children {
		if dependencyEnabled(ch.dep, cvals, tags, strings.Join(in.path, ".")) {
			out.Children = append(out.Children, pruneDisabled(ch, cvals, tags))
		}
	}
	return &out
}

// dependencyEnabled decides a dependency as Helm: enabled unless its tags
// say otherwise, then its first condition path holding a boolean decides.
func dependencyEnabled(d *dependency, cvals, tags map[string]any, prefix string) bool {
	if d == nil {
		return true
	}
	enabled := true
	var anyTrue, anyFalse bool
	for _, t := range d.Tags {
		if b, ok := tags[t].(bool); ok {
			anyTrue, anyFalse = anyTrue || b, anyFalse || !b
		}
	}
	if !anyTrue && anyFalse {
		enabled = false
	}
	for c := range strings.SplitSeq(strings.TrimSpace(d.Condition), ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		if prefix != "" {
			c = prefix + "." + c
		}
		if b, ok := lookupPath(cvals, c).(bool); ok {
			return b
		}
	}
	return enabled
}

// lookupPath returns the value at a dotted path, nil when there is none.
func lookupPath(v map[string]any, p string) any {
	var cur any = v
	for k := range strings.SplitSeq(p, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// importValues sets, bottom up, each chart's defaults: its values.yaml
// with its subcharts' defaults under their names, under the values its
// dependencies' import-values bring (step 3).
func importValues(in *Instance) error {
	for _, ch := range in.Children {
		if err := importValues(ch); err != nil {
			return err
		}
	}
	if len(in.Children) == 0 {
		return nil
	}
	cvals, err := Coalesce(&Instance{defaults: in.defaults, Children: in.Children}, map[string]any{}, true)
	if err != nil {
		return err
	}
	imported := map[string]any{}
	for _, ch := range in.Children {
		if ch.dep == nil {
			continue
		}
		for _, iv := range ch.dep.ImportValues {
			var child, parent string
			switch x := iv.(type) {
			case string:
				child, parent = "exports."+x, "."
			case map[string]any:
				child, parent = fmt.Sprint(x["child"]), fmt.Sprint(x["parent"])
			default:
				continue
			}
			table, ok := lookupPath(cvals, ch.Name+"."+child).(map[string]any)
			if !ok {
				continue // Helm warns and goes on
			}
			table = DeepCopy(table).(map[string]any)
			if parent != "." {
				keys := strings.Split(parent, ".")
				for i := len(keys) - 1; i >= 0; i-- {
					table = map[string]any{keys[i]: table}
				}
			}
			coalesceTables(imported, table, true) // the first import wins
		}
	}
	in.defaults = coalesceTables(cvals, imported, true)
	return nil
}

// Coalesce coalesces dest (which wins) with the defaults of in and,
// under their names, of its subcharts, copying globals down (step 1 and
// 4). merge keeps nulls (Helm's MergeValues) instead of deleting the keys
// they name.
func Coalesce(in *Instance, dest map[string]any, merge bool) (map[string]any, error) {
	subs := map[string]bool{}
	for _, ch := range in.Children {
		subs[ch.Name] = true
	}
	for k, dv := range DeepCopy(in.defaults).(map[string]any) {
		coalesceDefault(dest, k, dv, merge, subs[k])
	}
	for _, ch := range in.Children {
		v, ok := dest[ch.Name]
		if !ok || v == nil {
			v = map[string]any{}
			dest[ch.Name] = v
		}
		sub, ok := v.(map[string]any)
		if !ok {
			return nil, &fault.RenderError{Path: valuesPath2(ch.path), Msg: fmt.Sprintf("%s: must be an object: it holds the values of the subchart %s", valuesPath2(ch.path), ch.Name)}
		}
		copyGlobals(sub, dest)
		if _, err := Coalesce(ch, sub, merge); err != nil {
			return nil, err
		}
	}
	return dest, nil
}

// coalesceDefault coalesces the default dv of key k into dest: taken when
// dest has no k, dropped with k when dest's k is null (unless merge), and
// table into table otherwise, keeping nulls when merging or when k holds
// a subchart's values (whose own defaults come after).
func coalesceDefault(dest map[string]any, k string, dv any, merge, sub bool) {
	uv, ok := dest[k]
	switch {
	case !ok:
		if dv != nil || merge {
			if m, isMap := dv.(map[string]any); isMap && !merge {
				DropNulls(m)
			}
			dest[k] = dv
		}
	case uv == nil && !merge:
		delete(dest, k)
	default:
		um, uok := uv.(map[string]any)
		dm, dok := dv.(map[string]any)
		if uok && dok {
			if !merge && !sub {
				DropNulls(dm)
			}
			coalesceTables(um, dm, merge || sub)
		}
	}
}

// valuesPath2 writes a chart's values path as a field path.
func valuesPath2(p []string) string {
	return strings.Join(append([]string{"values"}, p...), ".")
}

// coalesceTables fills dst (which wins) with src's keys; maps merge. A
// null in dst deletes the key unless merge.
func coalesceTables(dst, src map[string]any, merge bool) map[string]any {
	for k, sv := range src {
		dv, ok := dst[k]
		switch {
		case !ok:
			dst[k] = sv
		case dv == nil:
			if !merge && sv != nil {
				delete(dst, k)
			}
		default:
			dm, dok := dv.(map[string]any)
			sm, sok := sv.(map[string]any)
			if dok && sok {
				coalesceTables(dm, sm, merge)
			}
		}
	}
	return dst
}

// copyGlobals merges the parent's global into the subchart's, the
// parent's winning; a subchart always has one.
func copyGlobals(sub, parent map[string]any) {
	sg, ok := sub[globalKey].(map[string]any)
	if !ok {
		if _, present := sub[globalKey]; present {
			return // Helm skips a global that is not a table
		}
		sg = map[string]any{}
	}
	pg, ok := parent[globalKey].(map[string]any)
	if !ok && parent[globalKey] != nil {
		return
	}
	for k, pv := range pg {
		if pm, ok := pv.(map[string]any); ok {
			cp := DeepCopy(pm).(map[string]any)
			if sm, ok := sg[k].(map[string]any); ok {
				coalesceTables(cp, sm, true)
			} else if _, present := sg[k]; present {
				continue
			}
			sg[k] = cp
			continue
		}
		if _, isMap := sg[k].(map[string]any); isMap {
			continue
		}
		sg[k] = DeepCopy(pv)
	}
	sub[globalKey] = sg
}

// ParseValues parses values.yaml: strictly (a duplicate key is an
// error with its line), with aliases and nesting bounded, straight to the
// unstructured form (strictyaml.Decode: what YAML → JSON → map gave).
func ParseValues(s string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	v, err := strictyaml.Decode([]byte(s), funcs.MaxFunctionBytes)
	if err != nil {
		var ye *strictyaml.Error
		if !errors.As(err, &ye) {
			return nil, &fault.RenderError{File: ValuesFile, Msg: err.Error()}
		}
		return nil, &fault.RenderError{File: ValuesFile, Line: ye.Line, Msg: ye.Msg}
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		out = x
	default:
		return nil, &fault.RenderError{File: ValuesFile, Msg: "values.yaml must hold an object"}
	}
	if err := CheckValuesDepth(out); err != nil {
		err.File, err.Path = ValuesFile, ""
		return nil, err
	}
	return out, nil
}

// CheckValuesDepth refuses values nested deeper than MaxValueDepth: every
// function walking them would take time and memory in the square of
// their depth (toYaml indents each level), and recursion in the rest.
func CheckValuesDepth(v map[string]any) *fault.RenderError {
	if path, ok := strictyaml.CheckDepth(v, "values", 0); !ok {
		return &fault.RenderError{Path: path, Reason: fault.ReasonTooLarge, Msg: fmt.Sprintf("%s: nested more than %d deep (MaxValueDepth)", path, measure.MaxValueDepth)}
	}
	return nil
}

// ValidateSubcharts validates each subchart's values with its
// values.schema.json, as Helm: a violation's path is from the root's
// values (values.sub.key).
func ValidateSubcharts(in *Instance, merged map[string]any) (msgs []string, first string, err error) {
	if in == nil {
		return nil, "", nil
	}
	for _, ch := range in.Children {
		if section, ok := lookupPath(merged, strings.Join(ch.path, ".")).(map[string]any); ok && ch.Chart.jsonSchema != nil {
			sub, subFirst, err := schema.ValidateJSON(ch.Chart.jsonSchema, section)
			if err != nil {
				return nil, "", err
			}
			prefix := valuesPath2(ch.path)
			for i, m := range sub {
				sub[i] = prefix + strings.TrimPrefix(m, "values")
			}
			if first == "" && subFirst != "" {
				first = prefix + strings.TrimPrefix(subFirst, "values")
			}
			msgs = append(msgs, sub...)
		}
		more, moreFirst, err := ValidateSubcharts(ch, merged)
		if err != nil {
			return nil, "", err
		}
		if first == "" {
			first = moreFirst
		}
		msgs = append(msgs, more...)
	}
	return msgs, first, nil
}

// DropNulls removes null map entries left in defaults (values.yaml's "key:").
func DropNulls(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			DropNulls(x)
		}
	}
}

// DeepCopy copies the maps and lists of a values tree.
func DeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = DeepCopy(e)
		}
		return out
	}
	return v
}
