package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// noopPass annotates the Bundle, which changes no generation but brings
// every Composition of the Bundle a pass, and counts what those passes
// cost; mark tells the passes of a run apart.
func noopPass(ctx context.Context, h *harness.Harness, p *controller.Process, mark string) (table.Pass, error) {
	n := h.Options.N
	before, err := p.Scrape(ctx)
	if err != nil {
		return table.Pass{}, err
	}
	reconciles := before.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "composition"})
	w, err := h.Begin(ctx, p)
	if err != nil {
		return table.Pass{}, err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"bench.stencil.dev/pass": mark}}})
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: fixture.BenchBundleName}}
	if err := h.Admin.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return table.Pass{}, err
	}
	done, err := p.Idle(ctx, reconciles+float64(n), 10*time.Minute+time.Duration(n)*100*time.Millisecond)
	if err != nil {
		return table.Pass{}, err
	}
	res := table.Pass{Elapsed: done.Sub(w.From)}
	res.Requests, err = h.End(ctx, p, w)
	progress.Logf("no-op pass %s: %s", mark, res.Elapsed.Round(time.Millisecond))
	return res, err
}

// unrelated creates ConfigMaps and Secrets stencil has no business
// caching, forces a no-op pass so the controller works with them present
// (res.NoopAfter), and reads its memory again (res.MemAfter).
func unrelated(ctx context.Context, h *harness.Harness, p *controller.Process, res *table.Results) error {
	o := h.Options
	progress.Logf("unrelated objects: creating %d ConfigMaps and %d Secrets", o.UnrelatedConfigMaps, o.UnrelatedSecrets)
	payload := strings.Repeat("x", 1024)
	err := parallel.ForEach(ctx, 32, o.UnrelatedConfigMaps+o.UnrelatedSecrets, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%06d", i), Namespace: fixture.NSUnrelated, Labels: map[string]string{"app": "unrelated"}}
		var obj client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"payload": payload}}
		if i >= o.UnrelatedConfigMaps {
			obj = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"payload": []byte(payload)}}
		}
		return h.Admin.Create(ctx, obj)
	})
	if err != nil {
		return err
	}
	if res.NoopAfter, err = noopPass(ctx, h, p, "2"); err != nil {
		return err
	}
	res.MemAfter, err = p.Memory()
	return err
}
