package versions

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// warnings counts the warnings the API server sent the instances' client
// (every write in v1 is warned: v1 is deprecated), instead of printing
// them.
type warnings struct{ n atomic.Int64 }

var _ rest.WarningHandler = (*warnings)(nil)

// HandleWarningHeader counts a warning (299, Kubernetes' warning code).
func (w *warnings) HandleWarningHeader(code int, _, _ string) {
	if code == 299 {
		w.n.Add(1)
	}
}

// instances are the kind's instances, through a dynamic client of their
// own: as a GitOps tool would, the benchmark writes them in v1.
type instances struct {
	dyn    dynamic.Interface
	warned *warnings
	// n instances in nss namespaces.
	n, nss int
}

func newInstances(cfg *rest.Config, n, nss int) (*instances, error) {
	cfg = rest.CopyConfig(cfg)
	w := &warnings{}
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &instances{dyn: dyn, warned: w, n: n, nss: nss}, nil
}

// apply server-side applies instance i's v1 YAML as fieldManager, a dry
// run when dryRun.
func (in *instances) apply(ctx context.Context, i int, dryRun bool) error {
	u := &unstructured.Unstructured{Object: v1Instance(i, in.nss)}
	opts := metav1.ApplyOptions{FieldManager: fieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := in.dyn.Resource(gvr("v1")).Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u, opts); err != nil {
		return fmt.Errorf("apply %s %s/%s in v1: %w", kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// applyAll applies every instance's v1 YAML, 16 at a time.
func (in *instances) applyAll(ctx context.Context) error {
	return parallel.ForEach(ctx, 16, in.n, func(ctx context.Context, i int) error { return in.apply(ctx, i, false) })
}

// list lists every instance, read in version.
func (in *instances) list(ctx context.Context, version string) ([]unstructured.Unstructured, error) {
	l, err := in.dyn.Resource(gvr(version)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", plural, version, err)
	}
	return l.Items, nil
}

// waitReady waits until every instance, read in version, is Ready for
// its generation on the Bundle revision rev, listing every 2 seconds.
func (in *instances) waitReady(ctx context.Context, version, rev string, timeout time.Duration) error {
	last := ""
	err := wait.PollEvery(ctx, 2*time.Second, timeout, fmt.Sprintf("every instance Ready on revision %s", rev), func() (bool, error) {
		items, err := in.list(ctx, version)
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // a LIST that fails (the API server swapping the CRD's storage) is tried again until the wait ends
		}
		n := readyOn(items, rev)
		last = fmt.Sprintf("%d of %d Ready on it", n, in.n)
		return n == in.n, nil
	})
	if err != nil {
		return fmt.Errorf("%w (%s)", err, last)
	}
	return nil
}

// readyOn counts the items Ready for their generation on revision rev.
func readyOn(items []unstructured.Unstructured, rev string) int {
	n := 0
	for i := range items {
		if r, ok := ready(&items[i]); ok && r == rev {
			n++
		}
	}
	return n
}

// ready reports whether instance u is Ready for its generation (its
// status.observedGeneration and its Ready condition's), and the Bundle
// revision it rendered (status.bundleRevision).
func ready(u *unstructured.Unstructured) (revision string, ok bool) {
	revision, _, _ = unstructured.NestedString(u.Object, "status", "bundleRevision")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	b, err := json.Marshal(raw)
	if err != nil {
		return revision, false
	}
	var conds []metav1.Condition
	if err := json.Unmarshal(b, &conds); err != nil {
		return revision, false
	}
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	return revision, observed == u.GetGeneration() && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == u.GetGeneration()
}

// stamps are what must not move, by object ("ns/name"): resourceVersions,
// or generations.
type stamps map[string]string

// instanceStamps are the items' resourceVersions and generations.
func instanceStamps(items []unstructured.Unstructured) (rvs, generations stamps) {
	rvs, generations = stamps{}, stamps{}
	for _, u := range items {
		key := u.GetNamespace() + "/" + u.GetName()
		rvs[key], generations[key] = u.GetResourceVersion(), fmt.Sprint(u.GetGeneration())
	}
	return rvs, generations
}

// moved names the keys whose stamp differs between before and after (or
// that only one of them has), sorted.
func moved(before, after stamps) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// count is moved's result for a check: how many, with the first few.
func count(keys []string) string {
	if len(keys) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(keys), strings.Join(keys[:min(3, len(keys))], ", "))
}

// notAsWritten names the items (read in v1) whose spec is not the one
// their v1 YAML gave (v1Spec, the n instances in nss namespaces),
// compared as JSON, or that show a conversion.stencil.dev/ annotation
// (what a conversion keeps for the way back, never shown in the version
// it was kept for).
func notAsWritten(items []unstructured.Unstructured, n, nss int) []string {
	written := map[string]string{}
	for i := range n {
		obj := v1Instance(i, nss)
		md := obj["metadata"].(map[string]any)
		b, _ := json.Marshal(obj["spec"]) // maps of strings and integers always encode
		written[fmt.Sprintf("%s/%s", md["namespace"], md["name"])] = string(b)
	}
	var out []string
	for _, u := range items {
		key := u.GetNamespace() + "/" + u.GetName()
		b, err := json.Marshal(u.Object["spec"])
		kept := slices.ContainsFunc(slices.Collect(maps.Keys(u.GetAnnotations())), func(k string) bool { return strings.HasPrefix(k, "conversion.stencil.dev/") })
		if err != nil || string(b) != written[key] || kept {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}
