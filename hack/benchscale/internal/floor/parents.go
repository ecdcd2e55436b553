package floor

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// serveNobody publishes, in the parameters of stencil's admission policy
// (package reconcile/authority), fixture.NobodyShard's default
// ServiceAccount as the run's controller has it ("": --write-as-controller):
// the API server then admits its Compositions with the same check as the
// converge's (without it, it refuses them: no controller serves the shard).
func serveNobody(ctx context.Context, admin client.Client) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stencil-system", Name: authority.ParamsName}}
	patch := []byte(`{"data":{"` + authority.DefaultKey(fixture.NobodyShard) + `":""}}`)
	err := admin.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		cm.Data = map[string]string{authority.DefaultKey(fixture.NobodyShard): ""}
		err = admin.Create(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("publish a default ServiceAccount for shard %s: %w", fixture.NobodyShard, err)
	}
	return nil
}

// MeasureParents measures, into res.Parents, what a Composition costs
// whatever its controller does: the bare client of the floor creates each
// set's Composition (through the admission webhooks, as the cold
// converge's creates go), applies its members and writes its status once,
// as the controller writes it (a merge patch at the created
// resourceVersion). No controller reconciles these Compositions (a shard
// nobody serves). The cold converge cannot take less than this with any
// controller; the floor lacks the parent's two writes. p's CPU over it is
// its webhooks' (res.ParentsWebhooks). Everything is deleted afterwards,
// as the floor's objects are.
func MeasureParents(ctx context.Context, h *harness.Harness, p *controller.Process, res *table.Results) error {
	o := h.Options
	sets, err := renderSets(ctx, fixture.BenchBundle(fixture.BenchBundleName, o.Children), fixture.NSParents, o.N)
	if err != nil {
		return err
	}
	if err := serveNobody(ctx, h.Admin); err != nil {
		return err
	}
	cfg := clientConfig(h)
	created := make([]*v1alpha1.Composition, o.N)
	parents := &parentWrites{
		create: func(ctx context.Context, c client.Client, i int) error {
			comp := &v1alpha1.Composition{
				ObjectMeta: metav1.ObjectMeta{Name: fixture.CompositionName(i), Namespace: fixture.NSParents, Labels: map[string]string{shard.Label: fixture.NobodyShard}},
				Spec:       v1alpha1.CompositionSpec{Bundle: fixture.BenchBundleName},
			}
			created[i] = comp
			return c.Create(ctx, comp)
		},
		status: func(ctx context.Context, c client.Client, i int) error {
			comp := created[i]
			orig := comp.DeepCopy()
			comp.Status = fixture.CompositionStatus(fixture.NSParents, fixture.CompositionName(i))
			return c.Status().Patch(ctx, comp, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		},
	}
	ips, ipsKnown := h.IPAddresses(ctx)
	if err := h.Plane.WaitIdle(ctx, "floor with parents", time.Minute); err != nil {
		return err
	}
	profs, err := h.StartProfiles(ctx)
	if err != nil {
		return err
	}
	progress.Logf("floor with parents: %d Compositions, %d objects", o.N, len(sets)*len(sets[0]))
	plane := h.Plane.CPU()
	cpu, workers := p.CPU()
	res.Parents, err = apply(ctx, cfg, sets, o.Concurrency, o.ApplyConcurrency, parents)
	res.Parents.Plane = h.Plane.CPU().Since(plane)
	cpuEnd, workersEnd := p.CPU()
	res.ParentsWebhooks = table.Pass{CPU: cpuEnd - cpu, WorkersCPU: workersEnd - workers}
	if err != nil {
		return err
	}
	if err := h.StopProfiles(ctx, profs, "the floor with parents", ".parents"); err != nil {
		return err
	}
	progress.Logf("floor with parents: done in %s; deleting its objects", res.Parents.Elapsed.Round(time.Millisecond))
	if err := deleteSets(ctx, h, sets, ips, ipsKnown); err != nil {
		return err
	}
	return deleteParents(ctx, h.Admin, o.N)
}

// deleteParents deletes the floor with parents' n Compositions. The
// webhook gave each stencil's finalizer, which only a controller serving
// the shard would remove: it is removed first.
func deleteParents(ctx context.Context, admin client.Client, n int) error {
	return parallel.ForEach(ctx, 16, n, func(ctx context.Context, i int) error {
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: fixture.CompositionName(i), Namespace: fixture.NSParents}}
		if err := admin.Patch(ctx, comp, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := admin.Delete(ctx, comp); client.IgnoreNotFound(err) != nil {
			return err
		}
		err := wait.Poll(ctx, time.Minute, func() (bool, error) {
			err := admin.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("the Composition %s/%s was not deleted: %w", fixture.NSParents, comp.Name, err)
		}
		return nil
	})
}
