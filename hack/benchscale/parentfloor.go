package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// nsParents holds the floor with parents: Compositions of a shard no
// controller serves, and their members.
const nsParents = "bench-parents"

// nobodyShard is a shard no controller of the run serves: its
// Compositions are only written by the harness.
const nobodyShard = "bench-nobody"

// serveNobody publishes, in the parameters of stencil's admission policy
// (package reconcile/authority), nobodyShard's default ServiceAccount as
// the run's controller has it ("": --write-as-controller): the API server
// then admits its Compositions with the same check as the converge's
// (without it, it refuses them: no controller serves the shard).
func (h *harness) serveNobody(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "stencil-system", Name: authority.ParamsName}}
	patch := []byte(`{"data":{"` + authority.DefaultKey(nobodyShard) + `":""}}`)
	err := h.admin.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		cm.Data = map[string]string{authority.DefaultKey(nobodyShard): ""}
		err = h.admin.Create(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("publish a default ServiceAccount for shard %s: %w", nobodyShard, err)
	}
	return nil
}

// parentFloor measures what a Composition costs whatever its controller
// does: the bare client of the floor creates each set's Composition
// (through the admission webhooks, as the cold converge's creates go),
// applies its members and writes its status once, as the controller
// writes it (a merge patch at the created resourceVersion). No controller
// reconciles these Compositions (a shard nobody serves). The cold
// converge cannot take less than this with any controller; the floor
// lacks the parent's two writes. p's CPU over it is its webhooks'.
// Everything is deleted afterwards, as the floor's objects are.
func (h *harness) parentFloor(ctx context.Context, p *controllerProc) error {
	sets, err := renderSets(ctx, benchBundle(benchBundleName, h.o.children), nsParents, h.o.n)
	if err != nil {
		return err
	}
	if err := h.serveNobody(ctx); err != nil {
		return err
	}
	cfg := rest.CopyConfig(h.adminRC)
	cfg.QPS, cfg.Burst = float32(h.o.qps), h.o.burst
	created := make([]*v1alpha1.Composition, h.o.n)
	parents := &parentWrites{
		create: func(ctx context.Context, c client.Client, i int) error {
			comp := &v1alpha1.Composition{
				ObjectMeta: metav1.ObjectMeta{Name: compositionName(i), Namespace: nsParents, Labels: map[string]string{shard.Label: nobodyShard}},
				Spec:       v1alpha1.CompositionSpec{Bundle: benchBundleName},
			}
			created[i] = comp
			return c.Create(ctx, comp)
		},
		status: func(ctx context.Context, c client.Client, i int) error {
			comp := created[i]
			orig := comp.DeepCopy()
			comp.Status = compositionStatus(nsParents, compositionName(i))
			return c.Status().Patch(ctx, comp, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		},
	}
	ips, ipsKnown := h.ipAddresses(ctx)
	if err := h.plane.waitIdle(ctx, "floor with parents", time.Minute); err != nil {
		return err
	}
	profs, err := h.startProfiles(ctx)
	if err != nil {
		return err
	}
	logf("floor with parents: %d Compositions, %d objects", h.o.n, len(sets)*len(sets[0]))
	plane := h.plane.cpu()
	cpu, workers := p.cpu()
	h.res.parents, err = applyFloor(ctx, cfg, sets, h.o.concurrency, h.o.applyConcurrency, parents)
	h.res.parents.plane = h.plane.cpu().since(plane)
	cpuEnd, workersEnd := p.cpu()
	h.res.parentsWebhooks = pass{cpu: cpuEnd - cpu, workersCPU: workersEnd - workers}
	if err != nil {
		return err
	}
	if err := h.stopProfiles(ctx, profs, "the floor with parents", ".parents"); err != nil {
		return err
	}
	logf("floor with parents: done in %s; deleting its objects", h.res.parents.elapsed.Round(time.Millisecond))
	if err := h.deleteSets(ctx, sets, ips, ipsKnown); err != nil {
		return err
	}
	// The webhook gave each stencil's finalizer, which only a controller
	// serving the shard would remove.
	return forEach(ctx, 16, h.o.n, func(ctx context.Context, i int) error {
		comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: compositionName(i), Namespace: nsParents}}
		if err := h.admin.Patch(ctx, comp, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := h.admin.Delete(ctx, comp); client.IgnoreNotFound(err) != nil {
			return err
		}
		err := poll(ctx, time.Minute, func() (bool, error) {
			err := h.admin.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("Composition %s/%s not deleted: %w", nsParents, comp.Name, err)
		}
		return nil
	})
}

// deleteSets deletes the objects of sets and waits until the cluster holds
// as many Service IPs as before they were applied (ips, when ipsKnown).
func (h *harness) deleteSets(ctx context.Context, sets [][]*unstructured.Unstructured, ips int, ipsKnown bool) error {
	err := forEach(ctx, 16, len(sets), func(ctx context.Context, i int) error {
		for _, o := range sets[i] {
			if err := h.admin.Delete(ctx, o.DeepCopy()); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		return nil
	})
	if err != nil || !ipsKnown {
		return err
	}
	if err := poll(ctx, 2*time.Minute, func() (bool, error) {
		n, _ := h.ipAddresses(ctx)
		return n <= ips, nil
	}); err != nil {
		return fmt.Errorf("the deleted Services' ClusterIPs were not released: %w", err)
	}
	return nil
}
