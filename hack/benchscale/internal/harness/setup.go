package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/watch"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// setup installs the CRDs, the namespaces and the Bundles, and starts the
// harness's watches.
func (h *Harness) setup(ctx context.Context, kubeconfig string) error {
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "-k", filepath.Join(h.Root, "config", "crd"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("install the CRDs: %w", err)
	}
	scheme, err := engine.NewScheme()
	if err != nil {
		return err
	}
	if h.Admin, err = client.New(h.AdminRC, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := h.waitEstablished(ctx, "bundles.stencil.dev", "compositions.stencil.dev"); err != nil {
		return err
	}
	if len(h.Ctrl.Webhook) > 0 {
		// As `make run`: config/webhook, which the controller points at
		// itself and gives its CA.
		cmd := exec.CommandContext(ctx, filepath.Join(h.Root, "hack", "webhook-loopback.sh"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("install the webhook configurations: %w", err)
		}
	}
	for _, ns := range []string{fixture.NSBench, fixture.NSFloor, fixture.NSParents, fixture.NSRoll, fixture.NSUnrelated} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := h.Admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, b := range []*v1alpha1.Bundle{fixture.BenchBundle(fixture.BenchBundleName, h.Options.Children), fixture.RollBundle(fixture.RollBundleName), fixture.OutputsBundle(fixture.OutputsBundleName)} {
		if err := h.Admin.Create(ctx, b); apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the Bundle %s exists: the cluster holds an earlier run; delete the Bundles %s and %s and the namespaces %s, %s, %s, %s and %s",
				b.Name, fixture.BenchBundleName, fixture.RollBundleName, fixture.NSBench, fixture.NSFloor, fixture.NSParents, fixture.NSRoll, fixture.NSUnrelated)
		} else if err != nil {
			return fmt.Errorf("create Bundle %s: %w", b.Name, err)
		}
	}
	c, err := cache.New(h.AdminRC, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{fixture.NSBench: {}, fixture.NSRoll: {}}})
	if err != nil {
		return err
	}
	h.Watch, err = watch.Start(ctx, c)
	return err
}

func (h *Harness) waitEstablished(ctx context.Context, names ...string) error {
	for _, name := range names {
		err := wait.Poll(ctx, time.Minute, func() (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := h.Admin.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
	}
	return nil
}
