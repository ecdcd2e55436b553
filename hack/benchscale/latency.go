package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// latency rolls the Deployment of a Composition -samples times and times,
// for each, the Deployment being Current to the Composition being Ready.
func (h *harness) latency(ctx context.Context) error {
	comp := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Name: rollName, Namespace: nsRoll},
		Spec:       v1alpha1.CompositionSpec{Bundle: rollBundleName, Values: &apiextensionsv1.JSON{Raw: []byte(`{"image":"registry.example/app:0"}`)}},
	}
	if err := h.admin.Create(ctx, comp); err != nil {
		return err
	}
	key := nsRoll + "/" + rollName
	if err := h.watch.waitFor(ctx, 2*time.Minute, "the rolling Composition Ready", func() bool {
		_, ok := h.watch.readySince(key, comp.Generation)
		return ok
	}); err != nil {
		return err
	}
	logf("status latency: %d rollouts", h.o.samples)
	for i := 1; i <= h.o.samples; i++ {
		d, err := h.rollOnce(ctx, comp, i)
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		h.res.latencies = append(h.res.latencies, d)
	}
	// Gone before the unrelated objects load the cluster: kwok's node
	// heartbeats may then lag, and the node controller mark its pods not
	// ready, which no measurement after this one is about.
	if err := h.admin.Delete(ctx, comp); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		err := h.admin.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// rollOnce gives the Deployment a new image and returns the time from its
// being Current with that image to the Composition being Ready for the
// generation that set it.
func (h *harness) rollOnce(ctx context.Context, comp *v1alpha1.Composition, i int) (time.Duration, error) {
	image := fmt.Sprintf("registry.example/app:%d", i)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"values": map[string]string{"image": image}}})
	if err := h.admin.Patch(ctx, comp, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return 0, err
	}
	key, gen := nsRoll+"/"+rollName, comp.Generation
	var current, ready time.Time
	err := h.watch.waitFor(ctx, 2*time.Minute, "the rollout and the Composition's Ready", func() bool {
		var okC, okR bool
		current, okC = h.watch.currentSince(key, image)
		ready, okR = h.watch.readySince(key, gen)
		return okC && okR
	})
	if err != nil {
		return 0, err
	}
	return ready.Sub(current), nil
}

// unrelated creates ConfigMaps and Secrets stencil has no business caching,
// forces a no-op pass so the controller works with them present, and
// reads its memory again.
func (h *harness) unrelated(ctx context.Context, p *controllerProc) error {
	logf("unrelated objects: creating %d ConfigMaps and %d Secrets", h.o.unrelatedConfigMaps, h.o.unrelatedSecrets)
	payload := strings.Repeat("x", 1024)
	total := h.o.unrelatedConfigMaps + h.o.unrelatedSecrets
	err := forEach(ctx, 32, total, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%06d", i), Namespace: nsUnrelated, Labels: map[string]string{"app": "unrelated"}}
		var obj client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"payload": payload}}
		if i >= h.o.unrelatedConfigMaps {
			obj = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"payload": []byte(payload)}}
		}
		return h.admin.Create(ctx, obj)
	})
	if err != nil {
		return err
	}
	if h.res.noopAfter, err = h.noopPass(ctx, p, "2"); err != nil {
		return err
	}
	h.res.memAfter, err = p.memory()
	return err
}

// outputLatency times, -samples times, a change of a member's field (the
// ConfigMap's data.extra, which the template leaves to other writers)
// until the Composition's status.outputs.extra shows it: from the change's
// answer to the harness's watch seeing the parent's status with it. It
// also counts what the controller spent over the samples: each is one
// pass that changes only an output.
func (h *harness) outputLatency(ctx context.Context, p *controllerProc) error {
	comp := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Name: outputsName, Namespace: nsRoll},
		Spec:       v1alpha1.CompositionSpec{Bundle: outputsBundleName},
	}
	if err := h.admin.Create(ctx, comp); err != nil {
		return err
	}
	key := nsRoll + "/" + outputsName
	if err := h.watch.waitFor(ctx, 2*time.Minute, "the outputs Composition Ready with its output", func() bool {
		_, ready := h.watch.readySince(key, comp.Generation)
		_, out := h.watch.outputSince(key, `""`)
		return ready && out
	}); err != nil {
		return err
	}
	logf("outputs latency: %d changes of a member", h.o.samples)
	w, err := h.begin(ctx, p)
	if err != nil {
		return err
	}
	cpu, _ := p.cpu()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: outputsName, Namespace: nsRoll}}
	for i := 1; i <= h.o.samples; i++ {
		value := fmt.Sprintf("v%d", i)
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{"extra": value}})
		if err := h.admin.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		changed := time.Now()
		want, _ := json.Marshal(value)
		var seen time.Time
		if err := h.watch.waitFor(ctx, 2*time.Minute, "the parent's output", func() bool {
			var ok bool
			seen, ok = h.watch.outputSince(key, string(want))
			return ok
		}); err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		h.res.outputs = append(h.res.outputs, max(seen.Sub(changed), 0))
	}
	cpuEnd, _ := p.cpu()
	h.res.outputsPass.cpu = cpuEnd - cpu
	if h.res.outputsPass.requests, err = h.end(ctx, p, w); err != nil {
		return err
	}
	if err := h.admin.Delete(ctx, comp); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		err := h.admin.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
