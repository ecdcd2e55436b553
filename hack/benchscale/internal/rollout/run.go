package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// Run runs the rollout benchmark into res.Rollout.
func Run(ctx context.Context, h *harness.Harness, res *table.Results) error {
	if h.Audit == nil {
		return errors.New("the rollout benchmark counts requests in the API server's audit log: run it on the local cluster, or give -audit-log and -audit-user")
	}
	o := h.Options
	r := &table.Rollout{N: o.N, Namespaces: o.RolloutNamespaces, Soak: o.RolloutSoak}
	res.Rollout = r
	p, err := controller.Start(ctx, h.Ctrl, 1)
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	progress.Logf("controller started (pid %d); its log is in %s", p.PID(), h.Ctrl.LogDir)
	if err := h.WaitAdmission(ctx); err != nil {
		return err
	}
	w, err := startWatch(ctx, h)
	if err != nil {
		return err
	}
	first, err := createParents(ctx, h, w)
	if err != nil {
		return err
	}
	if err := h.Plane.WaitIdle(ctx, "all at once", time.Minute); err != nil {
		return err
	}

	// 1. All at once.
	progress.Logf("rollout: a new image to every parent at once")
	if r.AllAtOnce, err = rollTo(ctx, h, w, first, files("registry.example/app:2", "type: kwok"), nil); err != nil {
		return fmt.Errorf("all at once: %w", err)
	}

	// 2. In waves of 1, 10, 100 and the rest.
	if err := h.Plane.WaitIdle(ctx, "waves", time.Minute); err != nil {
		return err
	}
	before, err := currentHash(ctx, h, "")
	if err != nil {
		return err
	}
	pol := wavesPolicy(o.RolloutSoak, 30*time.Minute)
	progress.Logf("rollout: another image in waves of 1, 10, 100 and the rest, soaking %s", o.RolloutSoak)
	if r.Waves, err = rollTo(ctx, h, w, before, files("registry.example/app:3", "type: kwok"), pol); err != nil {
		return fmt.Errorf("waves: %w", err)
	}

	// 3. A revision whose pods are never scheduled.
	if err := h.Plane.WaitIdle(ctx, "failing revision", time.Minute); err != nil {
		return err
	}
	progress.Logf("rollout: a revision whose pods are never scheduled, in waves with a progress deadline of %s", o.RolloutDeadline)
	r.Failing, err = rollFailing(ctx, h, w, wavesPolicy(o.RolloutSoak, o.RolloutDeadline))
	return err
}

// createParents adds the nodes, the namespaces, the Bundle and the -n
// parents, and waits until every parent is Ready on the Bundle's first
// revision, which it returns.
func createParents(ctx context.Context, h *harness.Harness, w *watcher) (string, error) {
	o := h.Options
	if err := addNodes(ctx, h.Admin, o.N/100+1); err != nil {
		return "", err
	}
	for i := range o.RolloutNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace(i)}}
		if err := h.Admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	if err := h.Admin.Create(ctx, fixture.NewBundle(bundleName, files("registry.example/app:1", "type: kwok"))); err != nil {
		return "", fmt.Errorf("create Bundle %s: %w", bundleName, err)
	}
	progress.Logf("rollout: creating %d parents in %d namespaces", o.N, o.RolloutNamespaces)
	if err := parallel.ForEach(ctx, 16, o.N, func(ctx context.Context, i int) error {
		return h.Admin.Create(ctx, &v1alpha1.Composition{
			ObjectMeta: metav1.ObjectMeta{Name: fixture.CompositionName(i), Namespace: namespace(i % o.RolloutNamespaces)},
			Spec:       v1alpha1.CompositionSpec{Bundle: bundleName},
		})
	}); err != nil {
		return "", err
	}
	first, err := currentHash(ctx, h, "")
	if err != nil {
		return "", err
	}
	return first, w.until(ctx, 20*time.Minute, "every parent Ready on the first revision", func() bool { return w.readyOn(first) == o.N })
}

// addNodes adds kwok nodes until there are n, as hack/local-cluster.sh
// makes its own (110 pods each: a pod per parent, the old one going
// before the new one comes), and waits until they are Ready.
func addNodes(ctx context.Context, admin client.Client, n int) error {
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-rollout-%d", i),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("kwok-rollout-%d", i),
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		if err := admin.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	progress.Logf("rollout: %d kwok nodes added; waiting for them to be Ready", n)
	return wait.Poll(ctx, 5*time.Minute, func() (bool, error) {
		list := &corev1.NodeList{}
		if err := admin.List(ctx, list, client.MatchingLabels{"type": "kwok"}); err != nil {
			return false, err
		}
		ready := 0
		for _, node := range list.Items {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
}

// wavesPolicy is the benchmark's rollout in waves: 1, 10, 100 and the
// rest, soaking soak, failing a wave past deadline.
func wavesPolicy(soak, deadline time.Duration) *v1alpha1.RolloutPolicy {
	one := intstr.FromInt32(1)
	return &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves,
		Batch:            v1alpha1.RolloutBatch{Size: &one, Growth: v1alpha1.GrowthExponential, Factor: 10},
		Soak:             &metav1.Duration{Duration: soak},
		ProgressDeadline: &metav1.Duration{Duration: deadline},
		OnFailure:        v1alpha1.FailureRollback}
}

// currentHash waits until the Bundle's status holds the revision of its
// generation, other than not, and returns it.
func currentHash(ctx context.Context, h *harness.Harness, not string) (string, error) {
	var hash string
	err := wait.Poll(ctx, 2*time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := h.Admin.Get(ctx, client.ObjectKey{Name: bundleName}, b); err != nil {
			return false, err
		}
		hash = b.Status.Revision
		return b.Status.ObservedGeneration == b.Generation && hash != "" && hash != not, nil
	})
	return hash, err
}

// setBundle writes the rollout Bundle's files and policy.
func setBundle(ctx context.Context, h *harness.Harness, files map[string]string, pol *v1alpha1.RolloutPolicy) error {
	return wait.Poll(ctx, time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := h.Admin.Get(ctx, client.ObjectKey{Name: bundleName}, b); err != nil {
			return false, err
		}
		b.Spec.Files, b.Spec.Rollout = files, pol
		err := h.Admin.Update(ctx, b)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}
