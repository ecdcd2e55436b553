package published

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/source"
)

// maxRetry bounds the wait before a failed resolve is tried again.
const maxRetry = time.Minute

// resolveSource keeps status.source of a Bundle with a source: when the
// Bundle changed since the recorded resolve, or its interval passed (a
// digest-pinned reference is resolved once per generation), it resolves
// spec.source again, as the controller, and records what it pulled; a
// resolve that fails keeps the recorded chart (parents keep rendering
// it) and says so in SourceReady. It returns when to look again.
func (r *BundleReconciler) resolveSource(ctx context.Context, b *v1alpha1.Bundle, st *v1alpha1.BundleStatus) time.Duration {
	interval := source.Interval(*b.Spec.Source)
	pinned := isPinned(*b.Spec.Source)
	if prev := st.Source; prev != nil && prev.SourceGeneration == b.Generation {
		if pinned {
			return 0
		}
		if left := interval - time.Since(prev.ResolvedAt.Time); left > 0 {
			return left
		}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionSourceReady, ObservedGeneration: b.Generation}
	a, err := r.puller.Resolve(ctx, b)
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, source.Reason(err), err.Error()
		if prev := st.Source; prev != nil && prev.Digest != "" {
			cond.Message += fmt.Sprintf("; parents keep rendering the chart pulled before: version %s (%s), resolved at %s", prev.Version, prev.Digest, prev.ResolvedAt.UTC().Format(time.RFC3339))
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		log.FromContext(ctx).Info("Bundle source not pulled", "bundle", b.Name, "reason", cond.Reason)
		return min(interval, maxRetry)
	}
	st.Source = &v1alpha1.SourceStatus{URL: a.URL, Version: a.Version, Digest: a.Digest, Size: a.Size, ResolvedAt: metav1.Now(), SourceGeneration: b.Generation}
	if v := b.Spec.Source.Verify; v != nil {
		st.Source.Verified = v.Provider
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonPulled
	cond.Message = fmt.Sprintf("pulled version %s (%s) from %s", a.Version, a.Digest, a.URL)
	meta.SetStatusCondition(&st.Conditions, cond)
	if pinned {
		return 0
	}
	return interval
}

// isPinned reports a source that names one digest: it resolves to the
// same chart every time.
func isPinned(src v1alpha1.BundleSource) bool {
	ref, err := source.ParseOCI(src.OCI)
	if err != nil {
		return false
	}
	_, ok := ref.(name.Digest)
	return ok
}

// sourceFailure is the reason of a Bundle's Ready=False when its chart is
// not at hand: a Bundle never pulled has its last pull's reason, one whose
// recorded chart could not be pulled again (a restart, the registry
// down) that pull's.
func sourceFailure(err error, st v1alpha1.BundleStatus) string {
	var notPulled *pull.NotPulledError
	if errors.As(err, &notPulled) {
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSourceReady); c != nil && c.Status == metav1.ConditionFalse {
			return c.Reason
		}
		return v1alpha1.ReasonSourceNotReady
	}
	return source.Reason(err)
}

// sourced is b as parents render it: for a Bundle with a source, a copy
// holding the chart of the digest st records (pulled again if this
// process lost it), else b.
func (r *BundleReconciler) sourced(ctx context.Context, b *v1alpha1.Bundle, st *v1alpha1.BundleStatus) (*v1alpha1.Bundle, error) {
	if !pull.HasSource(b) {
		return b, nil
	}
	c := b.DeepCopy()
	c.Status = *st.DeepCopy()
	return r.puller.Files(ctx, c)
}
