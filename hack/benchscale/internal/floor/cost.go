package floor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// costBodies are the bodies of the writes MeasureCosts times.
type costBodies struct {
	// status and noMembers are a Composition's status as the controller
	// writes it, with and without status.members; metadata its ApplySet
	// metadata; configMap a ConfigMap patch as large as status.
	status, noMembers, metadata, configMap []byte
}

// newCostBodies builds the bodies: the status of a Composition of the
// bench Bundle (five members, three conditions, the inventory).
func newCostBodies() (costBodies, error) {
	var b costBodies
	status := fixture.CompositionStatus(fixture.NSBench, "c-00001")
	var err error
	if b.status, err = json.Marshal(map[string]any{"status": status}); err != nil {
		return b, err
	}
	status.Members = nil
	if b.noMembers, err = json.Marshal(map[string]any{"status": status}); err != nil {
		return b, err
	}
	b.metadata, err = json.Marshal(map[string]any{"metadata": map[string]any{
		"labels": map[string]string{"applyset.kubernetes.io/id": "applyset-" + strings.Repeat("x", 43) + "-v1"},
		"annotations": map[string]string{"applyset.kubernetes.io/tooling": "stencil/v0",
			"applyset.kubernetes.io/contains-group-kinds":  "ConfigMap,Role.rbac.authorization.k8s.io,Secret,Service,ServiceAccount",
			"applyset.kubernetes.io/additional-namespaces": ""},
		"finalizers": []string{"stencil.dev/finalizer"}}})
	if err != nil {
		return b, err
	}
	b.configMap, _ = json.Marshal(map[string]any{"data": map[string]string{"v": strings.Repeat("x", len(b.status))}})
	return b, nil
}

// costName names the i-th object of one kind of write.
func costName(set string, i int) string { return fmt.Sprintf("cost-%s-%05d", set, i) }

// MeasureCosts measures, into res.Costs, what the API server and etcd
// spend on a write of a Composition's status as the controller writes it
// (five members, three conditions, the inventory), on the same without
// the members list, on the ApplySet metadata patch the controller makes
// without the mutating webhook, and on a write of a ConfigMap carrying as
// many bytes as the first: -n objects of each are created, then each is
// patched once, and the control plane's CPU over the patches is what each
// row reports. The Compositions are of a shard no controller serves, so
// the controller writes nothing to them. It measures nothing on an
// existing cluster, whose control plane's CPU it cannot read.
func MeasureCosts(ctx context.Context, h *harness.Harness, res *table.Results) error {
	if h.Plane == nil {
		return nil
	}
	if err := h.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixture.NSCost}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := serveNobody(ctx, h.Admin); err != nil {
		return err
	}
	bodies, err := newCostBodies()
	if err != nil {
		return err
	}
	n := h.Options.N
	progress.Logf("parent cost: %d writes of each kind", n)
	if err := createCostObjects(ctx, h.Admin, n); err != nil {
		return err
	}
	measure := func(what string, bytes int, write func(ctx context.Context, i int) error) error {
		before := h.Plane.CPU()
		if err := parallel.ForEach(ctx, 16, n, write); err != nil {
			return err
		}
		res.Costs = append(res.Costs, table.Cost{What: what, Bytes: bytes, Plane: h.Plane.CPU().Since(before)})
		return nil
	}
	patch := func(obj func(name string) client.Object, set string, status bool, body []byte) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			o, p := obj(costName(set, i)), client.RawPatch("application/merge-patch+json", body)
			if status {
				return h.Admin.Status().Patch(ctx, o, p, client.FieldOwner("stencil"))
			}
			return h.Admin.Patch(ctx, o, p, client.FieldOwner("stencil"))
		}
	}
	composition := func(name string) client.Object {
		return &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixture.NSCost}}
	}
	configMap := func(name string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixture.NSCost}}
	}
	if err := measure("Composition status patch", len(bodies.status), patch(composition, "full", true, bodies.status)); err != nil {
		return err
	}
	if err := measure("Composition status patch without status.members", len(bodies.noMembers), patch(composition, "nomembers", true, bodies.noMembers)); err != nil {
		return err
	}
	// Through the admission webhooks, as the controller's own metadata
	// write goes (the mutating one lets it through unrendered).
	if err := measure("Composition ApplySet metadata patch", len(bodies.metadata), patch(composition, "metadata", false, bodies.metadata)); err != nil {
		return err
	}
	return measure("ConfigMap patch", len(bodies.configMap), patch(configMap, "cm", false, bodies.configMap))
}

// createCostObjects creates n Compositions of each set of MeasureCosts
// (of a shard nobody serves) and n ConfigMaps.
func createCostObjects(ctx context.Context, admin client.Client, n int) error {
	for _, set := range []string{"full", "nomembers", "metadata"} {
		if err := parallel.ForEach(ctx, 16, n, func(ctx context.Context, i int) error {
			return admin.Create(ctx, &v1alpha1.Composition{
				ObjectMeta: metav1.ObjectMeta{Name: costName(set, i), Namespace: fixture.NSCost, Labels: map[string]string{shard.Label: fixture.NobodyShard}},
				Spec:       v1alpha1.CompositionSpec{Bundle: fixture.BenchBundleName},
			})
		}); err != nil {
			return err
		}
	}
	return parallel.ForEach(ctx, 16, n, func(ctx context.Context, i int) error {
		return admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: costName("cm", i), Namespace: fixture.NSCost}, Data: map[string]string{"v": "0"}})
	})
}
