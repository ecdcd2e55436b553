package versions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// valuesMigration is step 6: a Composition of a plain Bundle, written
// for its first values (examples/versions/compositions/appservice.yaml:
// size, ports as a list), keeps rendering when the Bundle's next revision
// renames them (v2's schema refuses size): Ready on the new revision,
// with status.valuesMigrations naming the example's migrations, and its
// children unchanged.
func (r *run) valuesMigration(ctx context.Context) error {
	h := r.h
	if err := h.Admin.Create(ctx, bundle(valuesBundleName, r.ex.valuesFirstSpec())); err != nil {
		return fmt.Errorf("create Bundle %s: %w", valuesBundleName, err)
	}
	first, err := revision(ctx, h.Admin, valuesBundleName, "")
	if err != nil {
		return err
	}
	comp := r.ex.composition.DeepCopy()
	comp.Namespace, comp.Spec.Bundle = valuesNamespace, valuesBundleName
	// Written as the controller (--write-as-controller): the example's
	// ServiceAccount is the namespace's, which this one has not.
	comp.Spec.ServiceAccountName = ""
	if err := h.Admin.Create(ctx, comp); err != nil {
		return fmt.Errorf("create Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	if _, err := compositionOn(ctx, h.Admin, client.ObjectKeyFromObject(comp), first); err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	before, err := children(ctx, h.Admin, valuesNamespace)
	if err != nil {
		return err
	}
	progress.Logf("versions: Bundle %s's next revision renames size to replicas, with values migrations", valuesBundleName)
	from := time.Now()
	if err := setBundle(ctx, h.Admin, valuesBundleName, r.ex.valuesNextSpec()); err != nil {
		return err
	}
	next, err := revision(ctx, h.Admin, valuesBundleName, first)
	if err != nil {
		return err
	}
	c, err := compositionOn(ctx, h.Admin, client.ObjectKeyFromObject(comp), next)
	if err != nil {
		return err
	}
	r.v.Values = time.Since(from)
	if err := r.settle(ctx); err != nil {
		return err
	}
	after, err := children(ctx, h.Admin, valuesNamespace)
	if err != nil {
		return err
	}
	var want []string
	for _, m := range r.ex.migrations {
		want = append(want, m.Name)
	}
	r.v.Check("the Composition's status.valuesMigrations on the next revision", strings.Join(want, ", "), strings.Join(c.Status.ValuesMigrations, ", "))
	r.v.Check("the Composition's children", fmt.Sprint(wantChildren(1)), fmt.Sprint(len(before)))
	r.v.Check("its children whose resourceVersion moved", "0", count(moved(before, after)))
	return nil
}

// compositionOn waits until the Composition key is Ready for its
// generation on the Bundle revision rev and returns it.
func compositionOn(ctx context.Context, c client.Client, key client.ObjectKey, rev string) (*v1alpha1.Composition, error) {
	comp := &v1alpha1.Composition{}
	var last string
	err := wait.Poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, key, comp); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionReady)
		if cond != nil {
			last = fmt.Sprintf("on %s, Ready=%s %s: %s", comp.Status.BundleRevision, cond.Status, cond.Reason, cond.Message)
		}
		return comp.Status.ObservedGeneration == comp.Generation && cond != nil && cond.Status == "True" &&
			cond.ObservedGeneration == comp.Generation && comp.Status.BundleRevision == rev, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the Composition %s Ready on revision %s: %w (%s)", key, rev, err, last)
	}
	return comp, nil
}
