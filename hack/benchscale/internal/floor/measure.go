package floor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// Measure applies the rendered objects with the bare client into
// res.Floor, then deletes them, so that the cold converge starts from the
// cluster the floor started from: a Service's ClusterIP costs
// kube-apiserver 1.36 time linear in the Services that exist (its
// allocator counts the IPAddress objects on each allocation), and the
// converge's Services would otherwise each pay for the floor's thousand.
func Measure(ctx context.Context, h *harness.Harness, res *table.Results) error {
	o := h.Options
	sets, err := renderSets(ctx, fixture.BenchBundle(fixture.BenchBundleName, o.Children), fixture.NSFloor, o.N)
	if err != nil {
		return err
	}
	cfg := clientConfig(h)
	ips, ipsKnown := h.IPAddresses(ctx)
	if err := h.Plane.WaitIdle(ctx, "floor", time.Minute); err != nil {
		return err
	}
	prof, err := h.StartAPIServerProfile(ctx)
	if err != nil {
		return err
	}
	progress.Logf("floor: applying %d objects of %d sets", len(sets)*len(sets[0]), len(sets))
	plane := h.Plane.CPU()
	res.Floor, err = apply(ctx, cfg, sets, o.Concurrency, o.ApplyConcurrency, nil)
	res.Floor.Plane = h.Plane.CPU().Since(plane)
	if err != nil {
		return err
	}
	if prof != nil {
		if err := prof.Stop(ctx, o.APIServerProfile+".floor"); err != nil {
			return fmt.Errorf("kube-apiserver CPU profile: %w", err)
		}
		progress.Logf("kube-apiserver's CPU profile of the floor written to %s.floor", o.APIServerProfile)
	}
	progress.Logf("floor: deleting its objects")
	return deleteSets(ctx, h, sets, ips, ipsKnown)
}

// clientConfig is the admin's config with the controller's client-side
// rate limits (-qps, -burst): the bare client's.
func clientConfig(h *harness.Harness) *rest.Config {
	cfg := rest.CopyConfig(h.AdminRC)
	cfg.QPS, cfg.Burst = float32(h.Options.QPS), h.Options.Burst
	return cfg
}

// deleteSets deletes the objects of sets and waits until the cluster holds
// as many Service IPs as before they were applied (ips, when ipsKnown).
func deleteSets(ctx context.Context, h *harness.Harness, sets [][]*unstructured.Unstructured, ips int, ipsKnown bool) error {
	err := parallel.ForEach(ctx, 16, len(sets), func(ctx context.Context, i int) error {
		for _, o := range sets[i] {
			if err := h.Admin.Delete(ctx, o.DeepCopy()); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		return nil
	})
	if err != nil || !ipsKnown {
		return err
	}
	if err := wait.Poll(ctx, 2*time.Minute, func() (bool, error) {
		n, _ := h.IPAddresses(ctx)
		return n <= ips, nil
	}); err != nil {
		return fmt.Errorf("the deleted Services' ClusterIPs were not released: %w", err)
	}
	return nil
}
