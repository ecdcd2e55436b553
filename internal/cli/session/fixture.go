package session

import (
	"context"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/observed"
)

// Fixture stands in for the cluster in an offline session: what
// `stencil test`'s cases give a render in place of what the controller
// would read. A render made with one goes through the same planning as
// any other (Plan, PlanObserved); only the answers differ.
type Fixture struct {
	// Capabilities replaces cluster.OfflineCapabilities when not nil.
	// Every group/version/Kind it lists that the offline list does not
	// know is placed as a namespaced kind, or as a cluster-scoped one
	// when its ClusterScopedKinds names its group/Kind.
	Capabilities *templates.Capabilities
	// Objects are what the templates' lookups see, answered as the API
	// server answers a get (apiVersion, kind, namespace and name) or a
	// list (apiVersion, kind and, when given, namespace).
	Objects []*unstructured.Unstructured
	// Observed are the set's members as they are live, by id
	// (observed.MemberID): what observed reads, each merged over the
	// member the render makes (maps merge, other values replace). An id
	// the render makes no object for is not observed, as in the
	// controller.
	Observed map[string]map[string]any
	// Upgrade renders as the controller renders after its first pass:
	// .Release.IsUpgrade true.
	Upgrade bool
}

// UseFixture makes an offline session answer with f: its capabilities,
// lookups and observed members, and the kinds its capabilities add.
func (s *Session) UseFixture(f *Fixture) {
	s.Fixture = f
	if f == nil || f.Capabilities == nil {
		return
	}
	clusterScoped := map[string]bool{}
	for _, gk := range f.Capabilities.ClusterScopedKinds {
		clusterScoped[gk] = true
	}
	var kinds []schema.GroupVersionKind
	var versions []schema.GroupVersion
	for _, v := range f.Capabilities.APIVersions {
		gvk, ok := parseGVK(v)
		if !ok {
			continue
		}
		if _, err := s.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			continue
		}
		kinds = append(kinds, gvk)
		if !slices.Contains(versions, gvk.GroupVersion()) {
			versions = append(versions, gvk.GroupVersion())
		}
	}
	if len(kinds) == 0 {
		return
	}
	extra := meta.NewDefaultRESTMapper(versions)
	for _, gvk := range kinds {
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Group+"/"+gvk.Kind] {
			scope = meta.RESTScopeRoot
		}
		extra.Add(gvk, scope)
	}
	mapper := meta.MultiRESTMapper{s.Mapper, extra}
	apis := cluster.OfflineAPIs()
	apis.RESTMapper = mapper
	s.Mapper, s.APIs = mapper, apis
}

// parseGVK reads a group/version/Kind of .Capabilities.APIVersions
// ("apps/v1/Deployment", "v1/Pod"); a bare group/version is no kind.
func parseGVK(s string) (schema.GroupVersionKind, bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(s[:i])
	kind := s[i+1:]
	if err != nil || kind == "" || kind[0] < 'A' || kind[0] > 'Z' {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(kind), true
}

// answer answers lookups from the fixture's objects.
func (f *Fixture) answer(_ context.Context, reads []lookup.Read) (lookup.Table, error) {
	table := make(lookup.Table, len(reads))
	for _, r := range reads {
		var obj map[string]any
		var items []any
		for _, o := range f.Objects {
			if o.GetAPIVersion() != r.Key.APIVersion || o.GetKind() != r.Key.Kind {
				continue
			}
			switch {
			case r.Key.List() && (r.Key.Namespace == "" || o.GetNamespace() == r.Key.Namespace):
				items = append(items, lookup.DeepCopy(o.Object))
			case !r.Key.List() && o.GetNamespace() == r.Key.Namespace && o.GetName() == r.Key.Name:
				obj = lookup.DeepCopy(o.Object).(map[string]any)
			}
		}
		if len(items) > 0 {
			obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		}
		table[r.Key.String()] = obj
	}
	return table, nil
}

// observe answers observed reads from the fixture's members, merged
// over the plan's objects of those ids.
func (f *Fixture) observe(_ context.Context, pl *plan.Plan, _ []observed.HeldObject, ids []string) map[string]map[string]any {
	addressed := pl.Addressed()
	var out map[string]map[string]any
	for _, id := range ids {
		live, given := f.Observed[id]
		o, planned := addressed[id]
		if !given || !planned {
			continue
		}
		if out == nil {
			out = map[string]map[string]any{}
		}
		out[id] = mergeOver(lookup.DeepCopy(o.Object).(map[string]any), live)
	}
	return out
}

// mergeOver merges src over dst, maps key by key, and returns dst.
func mergeOver(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sm, ok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if ok && dok {
			dst[k] = mergeOver(maps.Clone(dm), sm)
			continue
		}
		dst[k] = lookup.DeepCopy(v)
	}
	return dst
}
