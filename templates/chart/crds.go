package chart

import (
	"path"
	"slices"
	"strings"
)

// CRDFiles returns the bundle paths of the files of the crds/ folders of
// the charts a render uses, as Helm installs them: every file under a
// chart's crds/ named *.yaml, *.yml or *.json (never templated), the
// root chart's first, sorted, then each enabled subchart's, depth first
// in the order the tree lists them; a chart used under two aliases gives
// its files once. enabled is the tree Resolve gave (nil: the root alone,
// a bundle without subcharts).
func CRDFiles(enabled *Instance, sources map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		prefix := "crds/"
		if dir != "" {
			prefix = dir + "/crds/"
		}
		var files []string
		for p := range sources {
			rel, ok := strings.CutPrefix(p, prefix)
			if !ok || (dir == "" && strings.HasPrefix(p, "charts/")) {
				continue
			}
			switch path.Ext(rel) {
			case ".yaml", ".yml", ".json":
				files = append(files, p)
			}
		}
		slices.Sort(files)
		out = append(out, files...)
	}
	var walk func(in *Instance)
	walk = func(in *Instance) {
		for _, ch := range in.Children {
			add(ch.Chart.Dir)
			walk(ch)
		}
	}
	add("")
	if enabled != nil {
		walk(enabled)
	}
	return out
}
