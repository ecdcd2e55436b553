package published

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	ctrlsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/source"
)

// maxRetry bounds the wait before a failed resolve is tried again.
const maxRetry = time.Minute

// resolveSource keeps status.source of a Bundle with a source: when the
// Bundle changed since the recorded resolve, or its interval passed (a
// digest-pinned reference is resolved once per generation), or the
// record's verification no longer holds (see verifiedFor), it resolves
// spec.source again, as the controller, and records what it pulled. A
// resolve that fails keeps the recorded chart (parents keep rendering
// it) and says so in SourceReady; with spec.source.verify, the recorded
// chart must then pass the check again (reverify). It returns when to
// look again.
func (r *BundleReconciler) resolveSource(ctx context.Context, b *v1alpha1.Bundle, st *v1alpha1.BundleStatus) time.Duration {
	interval := source.Interval(*b.Spec.Source)
	pinned := isPinned(*b.Spec.Source)
	keys, keysErr := r.puller.Fingerprint(ctx, b)
	if prev := st.Source; prev != nil && prev.SourceGeneration == b.Generation && keysErr == nil && verifiedFor(prev, b, keys) {
		switch {
		case pinned && b.Spec.Source.Verify == nil:
			return 0
		case pinned:
			// Its keys' fingerprint is compared again every interval (and
			// when its Secret changes, see sourceSecrets).
			return interval
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
			if b.Spec.Source.Verify != nil && (keysErr != nil || !verifiedFor(prev, b, keys)) {
				r.reverify(ctx, b, st, &cond)
			} else {
				cond.Message += fmt.Sprintf("; parents keep rendering the chart pulled before: version %s (%s), resolved at %s", prev.Version, prev.Digest, prev.ResolvedAt.UTC().Format(time.RFC3339))
			}
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		log.FromContext(ctx).Info("Bundle source not pulled", "bundle", b.Name, "reason", cond.Reason)
		return min(interval, maxRetry)
	}
	st.Source = &v1alpha1.SourceStatus{URL: a.URL, Version: a.Version, Digest: a.Digest, Size: a.Size, ResolvedAt: metav1.Now(), SourceGeneration: b.Generation}
	if v := b.Spec.Source.Verify; v != nil {
		st.Source.Verified, st.Source.KeysFingerprint, st.Source.VerifiedGeneration = v.Provider, a.KeysFingerprint, b.Generation
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonPulled
	cond.Message = fmt.Sprintf("pulled version %s (%s) from %s", a.Version, a.Digest, a.URL)
	meta.SetStatusCondition(&st.Conditions, cond)
	if pinned && b.Spec.Source.Verify == nil {
		return 0
	}
	return interval
}

// verifiedFor reports whether rec records that its chart passed b's
// spec.source.verify for b's generation with the keys of fingerprint
// keys (always, for a Bundle without verify).
func verifiedFor(rec *v1alpha1.SourceStatus, b *v1alpha1.Bundle, keys string) bool {
	v := b.Spec.Source.Verify
	return v == nil || rec.Verified == v.Provider && rec.KeysFingerprint == keys && keys != "" && rec.VerifiedGeneration == b.Generation
}

// reverify checks the recorded chart of b again after a resolve failed
// (cond, its SourceReady, says how) while the record's verification no
// longer holds (the keys or the Bundle changed). A chart that passes is
// recorded as verified with the current keys for this generation, and
// parents keep rendering it; one refused with a verdict (see
// source.IsVerdict) is recorded as unverified, is dropped from the
// cache, and its parents stall (SourceReady gives the verdict); when no
// verdict could be had (a registry down), parents wait until one is.
func (r *BundleReconciler) reverify(ctx context.Context, b *v1alpha1.Bundle, st *v1alpha1.BundleStatus, cond *metav1.Condition) {
	prev := st.Source
	recorded := fmt.Sprintf("the chart recorded before, version %s (%s)", prev.Version, prev.Digest)
	c := b.DeepCopy()
	c.Status = *st.DeepCopy()
	a, err := r.puller.Reverify(ctx, c)
	switch {
	case err == nil:
		prev.Verified, prev.KeysFingerprint, prev.VerifiedGeneration = b.Spec.Source.Verify.Provider, a.KeysFingerprint, b.Generation
		cond.Message += "; " + recorded + " verified again with the current keys: parents keep rendering it"
	case source.IsVerdict(source.Reason(err)):
		prev.Verified, prev.KeysFingerprint, prev.VerifiedGeneration = "", "", 0
		resolved := cond.Reason
		cond.Reason = source.Reason(err)
		cond.Message = recorded + " fails spec.source.verify now: " + err.Error() + "; parents stop rendering it (the resolve of spec.source failed too: " + resolved + ")"
	default:
		prev.KeysFingerprint = ""
		cond.Message += "; " + recorded + " could not be verified again (" + err.Error() + "): parents wait until it is"
	}
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
// down) that pull's, one whose recorded chart failed its verification
// the verification's.
func sourceFailure(err error, st v1alpha1.BundleStatus) string {
	var notPulled *pull.NotPulledError
	var unverified *pull.UnverifiedError
	if errors.As(err, &unverified) {
		return unverified.Reason
	}
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

// sourceSecrets is a source of the Bundles whose spec.source names a
// Secret that changed: a metadata watch (no data is cached) of the
// Secrets of the controller's namespace labelled for Bundle sources. A
// rotated key (or credential) is checked at once, not at the next
// interval.
func sourceSecrets(md metadata.Interface, namespace string, bundles client.Reader) ctrlsource.Source {
	return cluster.NamespacedMetadataSource(md, corev1.SchemeGroupVersion.WithResource("secrets"), namespace,
		"the Secrets of Bundle sources",
		func(o *metav1.ListOptions) {
			o.LabelSelector = v1alpha1.LabelSecretType + "=" + v1alpha1.SecretTypeBundleSource
		},
		func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], m metav1.Object) {
			list := &v1alpha1.BundleList{}
			if err := bundles.List(ctx, list); err != nil {
				log.FromContext(ctx).Error(err, "list Bundles for a changed Secret", "secret", m.GetName())
				return
			}
			for i := range list.Items {
				if namesSecret(list.Items[i].Spec.Source, m.GetName()) {
					q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
				}
			}
		})
}

// namesSecret reports a source naming the Secret name.
func namesSecret(src *v1alpha1.BundleSource, name string) bool {
	if src == nil {
		return false
	}
	for _, ref := range []*corev1.LocalObjectReference{src.SecretRef, src.CASecretRef} {
		if ref != nil && ref.Name == name {
			return true
		}
	}
	return src.Verify != nil && src.Verify.SecretRef.Name == name
}
