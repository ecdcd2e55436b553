package authority

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Parent is what Judge needs of a parent.
type Parent struct {
	// Describe names the parent in messages: "Composition team-a/web".
	Describe string
	// Created is its metadata.creationTimestamp, set by the API server.
	Created time.Time
	// Generation is its metadata.generation.
	Generation int64
	// Labels and Annotations are its labels and annotations.
	Labels, Annotations map[string]string
	// Named is the ServiceAccount the parent names itself (a Composition's
	// spec.serviceAccountName, an instance's annotation), "" none.
	Named string
	// Shard is its stencil.dev/shard label, "" none.
	Shard string
	// Account is the ServiceAccount the controller would act as for it,
	// "" when it acts as nobody's (as itself, or not at all).
	Account string
	// Deleting: its metadata.deletionTimestamp is set. The DELETE that
	// set it bumped its generation (the API server does so for an object
	// with finalizers), and no one checked that request against the
	// account.
	Deleting bool
	// Record is its status.admission, nil none.
	Record *v1alpha1.AdmissionStatus
	// Legacy: its status is one an earlier version of stencil wrote,
	// which checked parents with a fail-closed webhook and kept no record
	// (see EarlierStencil). Only Compositions may say so: the published
	// kinds' webhook had windows (see docs/security.md). Judge admits it
	// only when it was created before stencil's admission policy was
	// installed (Coverage.Installed).
	Legacy bool
}

// EarlierStencil reports whether st is the status of a parent that a
// version of stencil before the admission record reconciled: it has
// conditions and a bundleRevision (a render of the Bundle), and no
// status.admission. This controller never writes such a status: every
// status it writes carries a record (Carried), and it records a
// bundleRevision only in a pass that judged the parent's admission. A
// status this controller wrote before it could judge (a stall
// NoServiceAccount, a start-up whose admission cache was not started)
// has a record, or, written by a build before Carried, no
// bundleRevision. Only stencil's controller may write a parent's status
// (stencil's admission policy refuses anyone else).
func EarlierStencil(st v1alpha1.CompositionStatus) bool {
	return st.Admission == nil && len(st.Conditions) > 0 && st.BundleRevision != ""
}

// Carried is the status.admission a pass starts from, before Judge: the
// record st holds; when it holds none, an empty one (a record of no
// check), so that every status the controller writes has a record, even
// one of a pass that ends before Judge (a parent stalled NoServiceAccount,
// an error reading the check); but none still when st is an earlier
// stencil's and the parent a Composition (legacy), so that a pass that
// ends before Judge leaves it to be judged as one.
func Carried(st v1alpha1.CompositionStatus, legacy bool) *v1alpha1.AdmissionStatus {
	switch {
	case st.Admission != nil:
		return st.Admission.DeepCopy()
	case legacy && EarlierStencil(st):
		return nil
	}
	return &v1alpha1.AdmissionStatus{}
}

// Verdict is Judge's answer.
type Verdict struct {
	// Admitted: the controller may act as the parent's account.
	Admitted bool
	// Record, when not nil, is the status.admission to write.
	Record *v1alpha1.AdmissionStatus
	// Lock: Record must be written only over the parent as it was read
	// (its resourceVersion as a precondition).
	Lock bool
	// Pending: not admitted until the parent changes (a record waits for
	// the change); otherwise the check is missing or settling, and
	// RetryAfter says when to look again.
	Pending bool
	// RetryAfter, when not zero, is when to look again.
	RetryAfter time.Duration
	// Message says why the parent is not admitted and what admits it.
	Message string
}

// Judge says whether the controller may act as parent p's ServiceAccount,
// given the check cov the API server makes of its kind, now, when a policy
// or parameter change takes effect in the API server within margin:
//
//   - p acts as no account (Account ""): yes, there is nothing to check.
//   - the check is missing or not stencil's: no, until it is back.
//   - the check would test another account than the controller would use
//     (the parameters lag behind a Bundle or the controller's flags): no,
//     until they agree.
//   - p's record is of this check and its epoch: yes when it says
//     admitted, or when p changed by a checked request since it was made
//     (see checkedSince: its labels or annotations, or its generation
//     beyond the bump of its DELETE); no otherwise.
//   - p was created margin after the epoch: yes, its creation and every
//     change since were checked against this account.
//   - p is Legacy, has no record and was created before stencil's
//     admission policy was installed: yes. Legacy, when the parameters do
//     not say yet when that was: not yet, no record written.
//   - otherwise p predates the check of its account: a record of p as it
//     is now is written (Lock: only over p as read, and only margin after
//     the epoch, so that any later change of p was checked), and p waits
//     for a change made by someone who may use the account. A parent
//     being deleted can get no such change (the policy refuses it): the
//     caller lets it go, its members left in place.
func Judge(cov Coverage, p Parent, margin time.Duration, now time.Time) Verdict {
	if p.Account == "" {
		return Verdict{Admitted: true}
	}
	if cov.Problem() != "" {
		return Verdict{RetryAfter: retryMissing, Message: fmt.Sprintf("stencil cannot tell that the use of ServiceAccount %s by %s was admitted: %s", p.Account, p.Describe, cov.Problem())}
	}
	sa, epoch, problem := cov.Check(p.Named, p.Shard)
	switch {
	case problem != "":
		return Verdict{RetryAfter: retryMissing, Message: fmt.Sprintf("stencil cannot tell that the use of ServiceAccount %s by %s was admitted: %s", p.Account, p.Describe, problem)}
	case sa != p.Account:
		return Verdict{RetryAfter: retryMissing, Message: fmt.Sprintf("stencil's admission policy checks %s for ServiceAccount %q, not %q, which the controller would use: waiting for its parameters to follow the Bundle and the controller", p.Describe, sa, p.Account)}
	}
	rec, id := p.Record, cov.ID()
	digest := Digest(p.Labels, p.Annotations)
	admitted := &v1alpha1.AdmissionStatus{Policy: id, Epoch: ptr.To(metav1.NewTime(epoch)), Admitted: true}
	if rec != nil && rec.Policy == id && rec.Epoch != nil && rec.Epoch.Time.Equal(epoch) {
		switch {
		case rec.Admitted:
			return Verdict{Admitted: true}
		case checkedSince(rec, p, digest):
			return Verdict{Admitted: true, Record: admitted}
		}
		return pending(p, nil, false)
	}
	if !p.Created.Before(epoch.Add(margin)) {
		return Verdict{Admitted: true, Record: admitted}
	}
	if p.Legacy && rec == nil {
		installed, known := cov.Installed()
		switch {
		case !known:
			// A record now would end its legacy for good.
			return Verdict{RetryAfter: retryMissing, Message: fmt.Sprintf("stencil cannot tell yet whether %s was reconciled by an earlier version of stencil: "+
				"waiting for the controller to record, in the parameters of stencil's admission policy, when the policy was installed", p.Describe)}
		case p.Created.Before(installed):
			return Verdict{Admitted: true, Record: admitted}
		}
	}
	switch {
	case now.Before(epoch.Add(margin)):
		// A record made now could miss a change the API server did not
		// check yet.
		return Verdict{RetryAfter: epoch.Add(margin).Sub(now) + time.Second,
			Message: fmt.Sprintf("stencil's admission policy changed at %s: waiting %s for every API server to apply it", epoch.Format(time.RFC3339), margin)}
	}
	return pending(p, &v1alpha1.AdmissionStatus{Policy: id, Epoch: ptr.To(metav1.NewTime(epoch)), Generation: p.Generation, Metadata: digest}, true)
}

// checkedSince reports whether p changed, by a request stencil's policy
// checked, since rec was made of it: its labels or annotations differ
// (the ApplySet's own aside, see Digest), or its generation moved. The
// policy checks no DELETE, yet the API server bumps the generation of an
// object with finalizers once, when a DELETE sets its deletionTimestamp;
// and it refuses any change of a parent being deleted. So, of a parent
// being deleted, one move of its generation is its deletion's: only more
// is a checked change, made before its deletion began (a record made
// after it began has its generation as it is).
func checkedSince(rec *v1alpha1.AdmissionStatus, p Parent, digest string) bool {
	if rec.Metadata != digest {
		return true
	}
	if p.Deleting {
		return p.Generation > rec.Generation+1
	}
	return p.Generation != rec.Generation
}

// retryMissing is how often a parent whose check is missing looks again
// (the Watcher's notices bring it back sooner).
const retryMissing = 30 * time.Second

// pending is the Verdict of a parent waiting for a change.
func pending(p Parent, record *v1alpha1.AdmissionStatus, lock bool) Verdict {
	return Verdict{Pending: true, Record: record, Lock: lock, Message: fmt.Sprintf(
		"stencil cannot tell that the use of ServiceAccount %s by %s was admitted: it predates the check of stencil's admission policy that now applies to it "+
			"(the policy is new, or the default ServiceAccount it uses changed since); any change of its spec, labels or annotations by someone who may use the account admits it, "+
			"e.g. `kubectl annotate` it with stencil.dev/readmitted=<date> --overwrite", p.Account, p.Describe)}
}

// Digest is a digest of labels and annotations but those the controller
// writes on a parent (the ApplySet's): what Judge compares to tell that a
// parent changed.
func Digest(labels, annotations map[string]string) string {
	strip := func(m map[string]string, own []string) map[string]string {
		out := maps.Clone(m)
		for _, k := range own {
			delete(out, k)
		}
		if out == nil {
			out = map[string]string{}
		}
		return out
	}
	raw, _ := json.Marshal([2]map[string]string{strip(labels, ownLabels), strip(annotations, ownAnnotations)})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
