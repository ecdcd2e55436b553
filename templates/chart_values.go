package templates

import (
	"fmt"
	"strings"
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

// instance is a chart as a render uses it: enabled, under its name.
type instance struct {
	chart    *chartNode
	name     string
	dep      *dependency
	path     []string // keys from the root's values to the chart's, nil for the root
	defaults map[string]any
	children []*instance
}

// fullTree is the tree of every chart, each with its values.yaml, for
// step 1.
func fullTree(c *chartNode, name string, path []string) *instance {
	in := &instance{chart: c, name: name, path: path, defaults: c.defaults}
	for _, ch := range c.children {
		in.children = append(in.children, fullTree(ch.chart, ch.name, appendPath(path, ch.name)))
		in.children[len(in.children)-1].dep = ch.dep
	}
	return in
}

func appendPath(p []string, name string) []string {
	return append(append([]string(nil), p...), name)
}

// resolveCharts returns the enabled tree, with each chart's defaults
// (steps 2 and 3), for the Composition's values user.
func resolveCharts(root *chartNode, rootDefaults map[string]any, user map[string]any) (*instance, error) {
	full := fullTree(root, "", nil)
	full.defaults = rootDefaults
	cvals, err := coalesceTree(full, deepCopy(user).(map[string]any), false)
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

// pruneDisabled returns in without the disabled subcharts.
func pruneDisabled(in *instance, cvals, tags map[string]any) *instance {
	out := *in
	out.children = nil
	for _, ch := range in.children {
		if dependencyEnabled(ch.dep, cvals, tags, strings.Join(in.path, ".")) {
			out.children = append(out.children, pruneDisabled(ch, cvals, tags))
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
func importValues(in *instance) error {
	for _, ch := range in.children {
		if err := importValues(ch); err != nil {
			return err
		}
	}
	if len(in.children) == 0 {
		return nil
	}
	cvals, err := coalesceTree(&instance{defaults: in.defaults, children: in.children}, map[string]any{}, true)
	if err != nil {
		return err
	}
	imported := map[string]any{}
	for _, ch := range in.children {
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
			table, ok := lookupPath(cvals, ch.name+"."+child).(map[string]any)
			if !ok {
				continue // Helm warns and goes on
			}
			table = deepCopy(table).(map[string]any)
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

// coalesceTree coalesces dest (which wins) with the defaults of in and,
// under their names, of its subcharts, copying globals down (step 1 and
// 4). merge keeps nulls (Helm's MergeValues) instead of deleting the keys
// they name.
func coalesceTree(in *instance, dest map[string]any, merge bool) (map[string]any, error) {
	subs := map[string]bool{}
	for _, ch := range in.children {
		subs[ch.name] = true
	}
	for k, dv := range deepCopy(in.defaults).(map[string]any) {
		uv, ok := dest[k]
		switch {
		case !ok:
			if dv != nil || merge {
				if m, isMap := dv.(map[string]any); isMap && !merge {
					dropNulls(m)
				}
				dest[k] = dv
			}
		case uv == nil && !merge:
			delete(dest, k)
		default:
			um, uok := uv.(map[string]any)
			dm, dok := dv.(map[string]any)
			if uok && dok {
				if !merge && !subs[k] {
					dropNulls(dm)
				}
				coalesceTables(um, dm, merge || subs[k])
			}
		}
	}
	for _, ch := range in.children {
		v, ok := dest[ch.name]
		if !ok || v == nil {
			v = map[string]any{}
			dest[ch.name] = v
		}
		sub, ok := v.(map[string]any)
		if !ok {
			return nil, &RenderError{Path: valuesPath2(ch.path), Msg: fmt.Sprintf("%s: must be an object: it holds the values of the subchart %s", valuesPath2(ch.path), ch.name)}
		}
		copyGlobals(sub, dest)
		if _, err := coalesceTree(ch, sub, merge); err != nil {
			return nil, err
		}
	}
	return dest, nil
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
			cp := deepCopy(pm).(map[string]any)
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
		sg[k] = deepCopy(pv)
	}
	sub[globalKey] = sg
}
